"""The credit settings in the state database (issue 26, item 3): prices and limits set once by an operator,
read by every quote, run, web page and command on every machine. A value not set is the default
(``_config.DEFAULT_PRICES``, ``CreditSettings``' fields). Each is kept as its decimal text, exactly."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from qsolve_pipeline.storage.state._config import CreditSettings, Price
from qsolve_pipeline.storage.state._errors import SettingsDiffer
from qsolve_pipeline.storage.state._rows import now, upsert
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import credit_limits, credit_prices

LIMITS = ("per_run_limit", "history_run_limit", "history_run_seconds")
KEPT_CHARACTERS = 64  # the width of the value columns (credit_limits.value, credit_prices.per_*)


def kept(value: Any, name: str) -> str:
    """``value`` as the decimal text the database keeps; a ValueError naming ``name`` where it has more
    digits than the column holds (1e-70, 1e70: PostgreSQL refuses them, and a price that large overflows a
    quote)."""
    text = f"{value:f}" if isinstance(value, Decimal) else str(value)
    if len(text) > KEPT_CHARACTERS:
        raise ValueError(f"{name} {value} has more digits than the state database keeps ({KEPT_CHARACTERS})")
    return text


def _price_row(target: str, price: Price) -> dict[str, Any]:
    return {
        "target": target,
        "per_circuit": kept(price.per_circuit, f"{target} per_circuit"),
        "per_shot": kept(price.per_shot, f"{target} per_shot"),
        "set_at": now(),
    }


class CreditTable(Store):
    @property
    def settings(self) -> CreditSettings:
        """The credit settings: those given to :func:`connect` (tests), else the database's, read now."""
        return self._settings if self._settings is not None else self.credit_settings()

    def credit_settings(self) -> CreditSettings:
        """The database's prices and limits over the defaults."""
        with self._read() as connection:
            limits = dict(connection.execute(sa.select(credit_limits.c.name, credit_limits.c.value)).all())
            prices = {
                row.target: Price(per_circuit=Decimal(row.per_circuit), per_shot=Decimal(row.per_shot))
                for row in connection.execute(sa.select(credit_prices))
            }
        return CreditSettings(**{k: v for k, v in limits.items() if k in LIMITS}, prices=prices)

    def set_price(self, target: str, price: Price, only: tuple[str, ...] | None = None) -> Price:
        """Set ``target``'s price (a target, or a family such as ``ibm:``) for every machine. ``only`` names
        the parts set where the target has a price of its own already (``per_circuit``, ``per_shot``): an
        operator setting one part never undoes another's setting of the other at the same moment."""
        target = target.strip()
        if not target or len(target) > 200:
            raise ValueError(f"{target!r} is not a target or a family of targets (ibm:, provider:, sim-cpu)")
        row = _price_row(target, price)
        with self._write() as connection:
            upsert(connection, credit_prices, "target", row, None if only is None else (*only, "set_at"))
        return self.credit_settings().price(target)

    def remove_price(self, target: str) -> bool:
        """Take ``target``'s own price off (back to its family's, or the default); whether it had one."""
        with self._write() as connection:
            return bool(
                connection.execute(credit_prices.delete().where(credit_prices.c.target == target)).rowcount
            )

    def set_limits(self, **values: Any) -> CreditSettings:
        """Set limits (``per_run_limit``, ``history_run_limit``, ``history_run_seconds``) for every machine;
        each is checked as :class:`CreditSettings` checks it (a ValueError naming it)."""
        unknown = set(values) - set(LIMITS)
        if unknown:
            raise ValueError(
                f"no credit limit named {', '.join(sorted(unknown))}; the limits: {', '.join(LIMITS)}"
            )
        checked = CreditSettings(**values)
        with self._write() as connection:
            for name in values:
                text = kept(getattr(checked, name), name)
                upsert(connection, credit_limits, "name", {"name": name, "value": text, "set_at": now()})
        return self.credit_settings()

    def import_credits(self, given: CreditSettings, *, replace: bool = False) -> Imported:
        """Set what ``given`` sets (its fields set, its prices, each price whole) in one transaction, where
        the database holds no value of its own for it; one it holds alike is left. One it holds otherwise
        (set since, by ``credits limit``/``price`` or another machine's import) is a :class:`SettingsDiffer`
        naming each, and nothing is set, unless ``replace``: then the file's value is set over it.

        Each value is inserted only where none is (``ON CONFLICT DO NOTHING``) and read back in the same
        transaction, so of two imports at once the database decides which value is there to compare."""
        settings = [
            (
                name,
                credit_limits,
                "name",
                {"name": name, "value": kept(getattr(given, name), name)},
                ("value",),
            )
            for name in LIMITS
            if name in given.model_fields_set
        ]
        settings += [
            (
                f"{target} price",
                credit_prices,
                "target",
                _price_row(target, price),
                ("per_circuit", "per_shot"),
            )
            for target, price in given.prices.items()
        ]
        done = Imported()
        with self._write() as connection:
            for name, table, key, row, parts in settings:
                row = {**row, "set_at": now()}
                held = _insert_or_held(connection, table, key, row, parts)
                mine = tuple(row[p] for p in parts)
                if held is None:
                    done.set.append(name)
                elif all(Decimal(h) == Decimal(m) for h, m in zip(held, mine, strict=True)):
                    done.held.append(name)
                else:
                    done.differ.append((name, _shown(held), _shown(mine)))
                    if replace:
                        upsert(connection, table, key, row)
            if done.differ and not replace:
                said = "; ".join(
                    f"{name} is {held} there, {given} in the file" for name, held, given in done.differ
                )
                raise SettingsDiffer(
                    f"the state database holds other values than the file: {said}", differ=done.differ
                )
        done.settings = self.credit_settings()
        return done


@dataclass
class Imported:
    """What an import did: the settings it set (``set``), those the database held alike (``held``), those
    it held otherwise (``differ``: the name, the database's value, the file's; replaced where asked)."""

    set: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    differ: list[tuple[str, str, str]] = field(default_factory=list)
    settings: CreditSettings | None = None


def _insert_or_held(
    connection: sa.Connection, table: sa.Table, key: str, row: dict[str, Any], parts: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Insert ``row`` where its key has no row; None if it did, else the values of ``parts`` held there."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    statement = insert(table).values(**row).on_conflict_do_nothing(index_elements=[key])
    if connection.execute(statement.returning(table.c[key])).first() is not None:
        return None  # inserted (rowcount is no witness here: psycopg gives -1)
    held = connection.execute(sa.select(*(table.c[p] for p in parts)).where(table.c[key] == row[key])).one()
    return tuple(held)


def _shown(values: tuple[str, ...]) -> str:
    if len(values) == 1:
        return values[0]
    per_circuit, per_shot = values
    return f"{per_circuit} a circuit, {per_shot} a shot"
