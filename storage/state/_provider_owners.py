"""Who holds a provider, and whom it allows (issue 33, item 3; DESIGN.md §8 "Owners"; the provider
protocol's §1 and §7: the credential stays with the person, and nothing that is not free is sent without
*the person's* confirmation). Not :mod:`storage.state._holders`, which says which *host's* workers hold a
provider's credential: this says which *account* (a person) it belongs to.

A provider name has one holder, the account that added it first on any machine: the claim is the
primary key of ``provider_owners``, so of two machines adding the same name under different holders at
once, one holds it and the other is refused, naming the holder. The holder re-adding it (on a second
machine) is no claim. The holder allows accounts (``kind`` ``account``) or a workflow's quotes (``kind``
``workflow``: quotes of that workflow, which only its developers and admins ask for); only the holder or
an admin changes them. A quote on ``provider:NAME`` is taken only for the holder or an allowed account
(:meth:`ProviderOwners.check_provider_use`); a provider with no recorded holder (configured before
holders were recorded) takes no quote at all until its holder claims it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._accounts import check_name
from qsolve_pipeline.storage.state._errors import NotFound, StateError
from qsolve_pipeline.storage.state._ledger import refuse_platform_account
from qsolve_pipeline.storage.state._rows import now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import account_roles, provider_allowances, provider_owners

KINDS = ("account", "workflow")


@dataclass
class ProviderHeld(StateError):
    """An add (or claim) of a provider name another account holds."""

    provider: str = ""
    holder: str = ""


@dataclass
class ProviderNotAllowed(StateError):
    """A quote on a provider by an account its holder has not allowed, or an allowance changed by an
    account that is neither its holder nor an admin."""

    provider: str = ""
    holder: str = ""
    account: str = ""


@dataclass(frozen=True)
class ProviderHolding:
    """A provider's holder and whom it allows."""

    provider: str
    holder: str
    accounts: tuple[str, ...] = field(default_factory=tuple)
    workflows: tuple[str, ...] = field(default_factory=tuple)

    def allowed(self) -> str:
        """Who may use it, in one phrase (``qsolve providers list``)."""
        said = [f"account {a}" for a in self.accounts] + [f"workflow {w}'s quotes" for w in self.workflows]
        return ", ".join(said) if said else "no one else"


def not_held(name: str) -> str:
    return (
        f"provider {name} has no recorded holder (it was configured before holders were recorded): no "
        f"quote is taken on it until its holder claims it (qsolve providers claim {name} --holder ACCOUNT, "
        "on a machine where it is configured)"
    )


class ProviderOwners(Store):
    """Provider holders and their allowances."""

    def hold_provider(self, name: str, holder: str) -> bool:
        """Record ``holder`` as ``name``'s holder: true when this claimed it, false when ``holder`` held it
        already; ProviderHeld, naming the holder, when another account does (the first to add it wins).
        The ledger's own accounts hold nothing (PlatformAccount)."""
        check_name(holder)
        with self._read() as connection:
            refuse_platform_account(connection, holder, f"account {holder} holds no provider")
        self.open_account(holder)  # type: ignore[attr-defined] - Ledger's
        try:
            with self._write() as connection:
                connection.execute(
                    provider_owners.insert().values(provider=name, holder=holder, held_since=now())
                )
            return True
        except IntegrityError:
            pass
        held = self.provider_holder(name)
        if held is None:  # pragma: no cover - an owner row is never deleted
            raise StateError(f"provider {name}: its holder could not be recorded")
        if held != holder:
            raise ProviderHeld(
                f"provider {name} is held by {held}: a provider name has one holder, the account that "
                f"added it first (on any machine); ask {held} to allow you (qsolve providers allow {name} "
                "ACCOUNT), or add it under another name",
                provider=name,
                holder=held,
            )
        return False

    def provider_holder(self, name: str) -> str | None:
        """The account that holds ``name``, or None when none is recorded."""
        with self._read() as connection:
            return connection.execute(
                sa.select(provider_owners.c.holder).where(provider_owners.c.provider == name)
            ).scalar()

    def provider_holding(self, name: str) -> ProviderHolding | None:
        """``name``'s holder and allowances, or None when no holder is recorded."""
        return self.provider_holdings([name]).get(name)

    def provider_holdings(self, names: list[str] | None = None) -> dict[str, ProviderHolding]:
        """Each recorded provider's holder and allowances (of ``names``, or all), by name."""
        owners = sa.select(provider_owners)
        allowed = sa.select(provider_allowances).order_by(provider_allowances.c.grantee)
        if names is not None:
            owners = owners.where(provider_owners.c.provider.in_(names))
            allowed = allowed.where(provider_allowances.c.provider.in_(names))
        with self._read() as connection:
            held = {row.provider: row.holder for row in connection.execute(owners)}
            grants: dict[str, dict[str, list[str]]] = {}
            for row in connection.execute(allowed):
                grants.setdefault(row.provider, {}).setdefault(row.kind, []).append(row.grantee)
        return {
            name: ProviderHolding(
                name,
                holder,
                tuple(grants.get(name, {}).get("account", ())),
                tuple(grants.get(name, {}).get("workflow", ())),
            )
            for name, holder in sorted(held.items())
        }

    def allow_provider(
        self, name: str, acting: str, *, account: str | None = None, workflow: str | None = None
    ) -> bool:
        """``acting`` (the holder, or an admin) allows ``account``, or ``workflow``'s quotes, to use
        ``name``: true when this added the allowance, false when it was there."""
        kind, grantee = _grantee(account, workflow)
        with self._write() as connection:
            _may_change(connection, name, acting)
            if kind == "account":  # the ledger's own accounts spend on nothing
                said = f"account {grantee} is allowed nothing"
                refuse_platform_account(connection, check_name(grantee), said)
            if connection.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert
            added = connection.execute(
                insert(provider_allowances)
                .values(provider=name, kind=kind, grantee=grantee, allowed_by=acting, allowed_at=now())
                .on_conflict_do_nothing()
                .returning(provider_allowances.c.provider)
            )
            return added.first() is not None

    def disallow_provider(
        self, name: str, acting: str, *, account: str | None = None, workflow: str | None = None
    ) -> bool:
        """``acting`` (the holder, or an admin) takes an allowance back: true when there was one. Quotes
        priced already keep what they were priced under; a new quote is refused."""
        kind, grantee = _grantee(account, workflow)
        with self._write() as connection:
            _may_change(connection, name, acting)
            gone = connection.execute(
                provider_allowances.delete().where(
                    provider_allowances.c.provider == name,
                    provider_allowances.c.kind == kind,
                    provider_allowances.c.grantee == grantee,
                )
            )
            return gone.rowcount == 1

    def check_provider_use(self, name: str, account: str, workflow: str) -> str:
        """The holder of ``name`` when ``account`` may ask a quote of ``workflow`` on it (it is the holder,
        allowed by name, or the workflow's quotes are); ProviderNotAllowed, naming the rule and the
        holder, otherwise (and for a provider with no recorded holder)."""
        with self._read() as connection:
            holder = connection.execute(
                sa.select(provider_owners.c.holder).where(provider_owners.c.provider == name)
            ).scalar()
            if holder is None:
                raise ProviderNotAllowed(not_held(name), provider=name, account=account)
            if holder == account:
                return holder
            allowed = connection.execute(
                sa.select(sa.literal(1)).where(
                    provider_allowances.c.provider == name,
                    sa.or_(
                        sa.and_(
                            provider_allowances.c.kind == "account", provider_allowances.c.grantee == account
                        ),
                        sa.and_(
                            provider_allowances.c.kind == "workflow",
                            provider_allowances.c.grantee == workflow,
                        ),
                    ),
                )
            ).first()
        if allowed is None:
            raise ProviderNotAllowed(
                f"provider:{name} is held by {holder}, who has not allowed {account} (nor {workflow}'s "
                "quotes): only its holder and those it allows spend on a provider (qsolve providers allow "
                f"{name} {account}, by {holder})",
                provider=name,
                holder=holder,
                account=account,
            )
        return holder

    def may_use_provider(self, name: str, account: str, workflow: str) -> bool:
        try:
            self.check_provider_use(name, account, workflow)
        except ProviderNotAllowed:
            return False
        return True


def _grantee(account: str | None, workflow: str | None) -> tuple[str, str]:
    if (account is None) == (workflow is None):
        raise ValueError("an allowance names one account or one workflow")
    return ("account", account) if account is not None else ("workflow", workflow)  # type: ignore[return-value]


def _may_change(connection: sa.Connection, name: str, acting: str) -> None:
    """Only ``name``'s holder or an admin changes whom it allows."""
    holder = connection.execute(
        sa.select(provider_owners.c.holder).where(provider_owners.c.provider == name)
    ).scalar()
    if holder is None:
        raise NotFound(not_held(name), kind="provider holder", key=name)
    if holder == acting:
        return
    admin = connection.execute(
        sa.select(sa.literal(1)).where(account_roles.c.account == acting, account_roles.c.role == "admin")
    ).first()
    if admin is None:
        raise ProviderNotAllowed(
            f"{acting} is not the holder of provider {name} (its holder is {holder}) nor an admin: only its "
            "holder or an admin changes whom a provider allows",
            provider=name,
            holder=holder,
            account=acting,
        )
