"""The credit settings in the state database (issue 26, item 3): prices and limits set once by an operator,
read by every quote, run, web page and command on every machine. A value not set is the default
(``_config.DEFAULT_PRICES``, ``CreditSettings``' fields). Each is kept as its decimal text, exactly."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from storage.state._config import CreditSettings, Price
from storage.state._rows import now, upsert
from storage.state._store import Store
from storage.state._tables import credit_limits, credit_prices

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

    def import_credits(self, given: CreditSettings) -> CreditSettings:
        """Set what ``given`` sets (its fields set, its prices) in one transaction."""
        limits = {name: getattr(given, name) for name in LIMITS if name in given.model_fields_set}
        with self._write() as connection:
            for name, value in limits.items():
                upsert(
                    connection,
                    credit_limits,
                    "name",
                    {"name": name, "value": kept(value, name), "set_at": now()},
                )
            for target, price in given.prices.items():
                upsert(connection, credit_prices, "target", _price_row(target, price))
        return self.credit_settings()
