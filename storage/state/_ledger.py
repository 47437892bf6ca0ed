"""Credits: accounts, grants, holds before a run, settlement after it, release of stale holds.

A hold moves the run's estimated price, capped at its limit, from the account to ``ledger:holds``.
Settlement moves the actual cost (never more than the hold) on to ``ledger:revenue`` and the rest back
to the account; a stale release moves the whole hold back. A run has at most one hold, one charge and
one release transfer (a unique constraint): a second settlement, in this process or another, finds the
release already there and takes nothing. Each transaction locks the one account row it touches
(``FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serialises writers), so two holds cannot
both spend the same credits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import (
    CreditError,
    InsufficientCredits,
    NoHold,
    NotFound,
    PlatformAccount,
    RunStateError,
)
from qsolve_pipeline.storage.state._models import (
    Credits,
    FailureReason,
    Hold,
    RunLimits,
    RunStatus,
    Settlement,
    Source,
    Transfer,
    from_micro,
    to_micro,
)
from qsolve_pipeline.storage.state._rows import move_run, now, run_row
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import accounts, entries, runs, transfers

SYSTEM_ACCOUNT = "system"
MINT = "ledger:mint"  # where granted credits come from; its balance is minus all credits ever granted
HOLDS = "ledger:holds"  # credits held for runs not yet settled
REVENUE = "ledger:revenue"  # what runs cost
#: the ledger's own accounts, which the platform itself uses (kind ``system`` or ``ledger``): they act for
#: nobody, so they are given no login and no role, publish nothing and ask for no quote (issue 33, item 5)
PLATFORM_ACCOUNTS = (SYSTEM_ACCOUNT, MINT, HOLDS, REVENUE)


class Ledger(Store):
    """The credit operations of the state database."""

    # accounts and grants

    def open_account(self, name: str) -> None:
        """A user's account, with nothing in it; opening one that exists changes nothing."""
        if not name or name.startswith("ledger:"):
            raise ValueError(f"{name!r} cannot name a user's account")
        try:
            with self._write() as connection:
                if _account_kind(connection, name) is None:
                    connection.execute(accounts.insert().values(name=name, kind="user", created_at=now()))
        except IntegrityError:  # opened by another process at the same moment
            pass

    def grant(self, account: str, credits: Credits, memo: str | None = None) -> Transfer:
        """Give an account credits (operators, tests); opens a user's account that does not exist yet."""
        amount = to_micro(credits)
        if amount <= 0:
            raise ValueError(f"a grant is of a positive number of credits, not {credits}")
        if account != SYSTEM_ACCOUNT:
            self.open_account(account)
        with self._write() as connection:
            transfer_id = _move(connection, "grant", MINT, account, amount, memo=memo)
            return _transfer(connection, transfer_id)

    def balance(self, account: str) -> Decimal:
        """The account's credits, held ones not counted: the sum of its ledger entries."""
        with self._read() as connection:
            if _account_kind(connection, account) is None:
                raise NotFound(f"no credit account {account!r}", kind="account", key=account)
            return from_micro(_balance(connection, account))

    def list_transfers(self, run_id: str | None = None) -> list[Transfer]:
        """Every movement of credits, oldest first, or a run's."""
        query = sa.select(transfers.c.id).order_by(transfers.c.id)
        if run_id is not None:
            query = query.where(transfers.c.run_id == run_id)
        with self._read() as connection:
            return [_transfer(connection, tid) for tid in connection.execute(query).scalars()]

    # prices and limits

    def estimate_price(self, target: str, circuits: int, shots: int) -> Decimal:
        """Credits for ``circuits`` circuits and ``shots`` shots in all on ``target`` (UnpricedTarget)."""
        return self.settings.estimate_price(target, circuits, shots)

    def limits(self, source: Source | str) -> RunLimits:
        """What one run may take: history runs 20 credits and 900 s a case, others the per-run limit."""
        return self.settings.limits(source)

    # holds and settlement

    def hold(self, account: str, run_id: str, estimated: Credits) -> Hold:
        """Hold the run's estimated price, capped at its limit, before the run starts.

        Holding again for the same run returns the first hold. When the account cannot cover it, the run
        fails ``insufficient_credits`` and InsufficientCredits is raised: it never starts.
        """
        estimate = to_micro(estimated)
        if estimate < 0:
            raise ValueError(f"an estimated price is not negative, got {estimated}")
        refused: InsufficientCredits | None = None
        try:
            with self._write() as connection:
                kind = _lock_account(connection, account)
                if kind == "ledger":
                    raise CreditError(f"{account} is the ledger's own account: it pays for no run")
                existing = _hold(connection, run_id)
                if existing is not None:
                    return _same_account(existing, account)
                run = run_row(connection, run_id)
                if run.status != RunStatus.CREATED.value:
                    raise RunStateError(
                        f"run {run_id} is {run.status}: credits are held before a run starts",
                        run_id=run_id,
                        status=run.status,
                    )
                amount = min(estimate, self.settings.limit_micro(run.source))
                available = _balance(connection, account)
                connection.execute(
                    runs.update().where(runs.c.id == run_id).values(estimated_microcredits=estimate)
                )
                if available < amount:
                    refused = InsufficientCredits(
                        f"{account} has {from_micro(available)} credits, run {run_id} needs "
                        f"{from_micro(amount)}: refused before it started (insufficient_credits)",
                        account=account,
                        run_id=run_id,
                        needed=from_micro(amount),
                        available=from_micro(available),
                    )
                    move_run(
                        connection,
                        run_id,
                        {RunStatus.CREATED},
                        status=RunStatus.FAILED.value,
                        reason=FailureReason.INSUFFICIENT_CREDITS.value,
                        detail=str(refused),
                        finished_at=now(),
                    )
                else:
                    _move(connection, "hold", account, HOLDS, amount, run_id=run_id)
                    return _hold(connection, run_id)
        except IntegrityError:  # the same run held by another process at the same moment
            with self._read() as connection:
                existing = _hold(connection, run_id)
            if existing is None:
                raise
            return _same_account(existing, account)
        raise refused

    def get_hold(self, run_id: str) -> Hold | None:
        with self._read() as connection:
            return _hold(connection, run_id)

    def settle(self, run_id: str, actual: Credits) -> Settlement:
        """Charge the run's actual cost, never more than its hold, and release the rest.

        Settling again, here or in another process, takes nothing and returns the first settlement. A
        hold already released as stale stays released: the run is not charged.
        """
        cost = to_micro(actual)
        if cost < 0:
            raise ValueError(f"an actual cost is not negative, got {actual}")
        try:
            with self._write() as connection:
                hold = _hold(connection, run_id)
                if hold is None:
                    raise NoHold(f"run {run_id} holds no credits: nothing to settle", run_id=run_id)
                _lock_account(connection, hold.account)
                if not _closed(connection, run_id):
                    held = to_micro(hold.amount)
                    charged = min(cost, held)
                    _move(connection, "charge", HOLDS, REVENUE, charged, run_id=run_id)
                    _move(connection, "release", HOLDS, hold.account, held - charged, run_id=run_id)
                    connection.execute(
                        runs.update()
                        .where(runs.c.id == run_id, runs.c.actual_microcredits.is_(None))
                        .values(actual_microcredits=charged)
                    )
                return _settlement(connection, hold)
        except IntegrityError:  # settled or released by another process at the same moment
            with self._read() as connection:
                hold = _hold(connection, run_id)
                if hold is None or not _closed(connection, run_id):
                    raise
                return _settlement(connection, hold)

    def release_stale_holds(self, older_than: timedelta) -> list[str]:
        """Release every hold older than ``older_than`` that was never settled; the runs' ids."""
        cutoff = now() - older_than
        with self._read() as connection:
            stale = list(connection.execute(_open_holds(cutoff)).scalars())
        released = []
        for run_id in stale:
            try:
                with self._write() as connection:
                    if release_hold(connection, run_id):
                        released.append(run_id)
            except IntegrityError:  # settled at the same moment
                continue
        return released


def release_hold(connection: sa.Connection, run_id: str) -> bool:
    """Move a run's whole open hold back to its account; whether there was one to release."""
    hold = _hold(connection, run_id)
    if hold is None:
        return False
    _lock_account(connection, hold.account)
    if _closed(connection, run_id):
        return False
    _move(connection, "release", HOLDS, hold.account, to_micro(hold.amount), run_id=run_id)
    return True


def _account_kind(connection: sa.Connection, name: str) -> str | None:
    return connection.execute(sa.select(accounts.c.kind).where(accounts.c.name == name)).scalar()


def refuse_platform_account(connection: sa.Connection, name: str, what: str) -> None:
    """Raise PlatformAccount when ``name`` is one of the ledger's own accounts (by name, or by its kind in
    the database: any account the platform keeps that is not a user's); ``what`` is what was refused."""
    kind = _account_kind(connection, name)
    if name in PLATFORM_ACCOUNTS or name.startswith("ledger:") or kind not in (None, "user"):
        raise PlatformAccount(
            f"{name} is one of the ledger's own accounts, which act for nobody: {what} (the platform's "
            f"accounts {', '.join(PLATFORM_ACCOUNTS)} are given no login or role and publish nothing)",
            account=name,
        )


def _lock_account(connection: sa.Connection, name: str) -> str:
    query = sa.select(accounts.c.kind).where(accounts.c.name == name).with_for_update()
    kind = connection.execute(query).scalar()
    if kind is None:
        raise NotFound(f"no credit account {name!r}", kind="account", key=name)
    return kind


def _balance(connection: sa.Connection, account: str) -> int:
    query = sa.select(sa.func.coalesce(sa.func.sum(entries.c.microcredits), 0)).where(
        entries.c.account == account
    )
    return int(connection.execute(query).scalar_one())


def _move(
    connection: sa.Connection,
    kind: str,
    source: str,
    destination: str,
    micro: int,
    *,
    run_id: str | None = None,
    memo: str | None = None,
) -> int:
    """One transfer: two entries, ``-micro`` and ``+micro``."""
    if micro < 0:
        raise ValueError(f"a transfer moves a non-negative amount, not {micro}")
    transfer_id = connection.execute(
        transfers.insert().values(kind=kind, run_id=run_id, created_at=now(), memo=memo)
    ).inserted_primary_key[0]
    connection.execute(
        entries.insert(),
        [
            {"transfer_id": transfer_id, "account": source, "microcredits": -micro},
            {"transfer_id": transfer_id, "account": destination, "microcredits": micro},
        ],
    )
    return transfer_id


def _transfer(connection: sa.Connection, transfer_id: int) -> Transfer:
    row = connection.execute(sa.select(transfers).where(transfers.c.id == transfer_id)).one()
    legs = connection.execute(
        sa.select(entries.c.account, entries.c.microcredits)
        .where(entries.c.transfer_id == transfer_id)
        .order_by(entries.c.id)
    ).all()
    (source, _), (destination, amount) = legs  # written in this order by _move
    return Transfer(
        id=row.id,
        kind=row.kind,
        run_id=row.run_id,
        source=source,
        destination=destination,
        amount=from_micro(amount),
        created_at=row.created_at,
    )


def _run_transfers(connection: sa.Connection, run_id: str) -> dict[str, tuple[int, int, datetime]]:
    """``kind -> (transfer id, amount, created)`` of the run's transfers."""
    query = (
        sa.select(transfers.c.kind, transfers.c.id, entries.c.microcredits, transfers.c.created_at)
        .join(entries, entries.c.transfer_id == transfers.c.id)
        .where(transfers.c.run_id == run_id, entries.c.account == HOLDS)
    )
    return {kind: (tid, abs(micro), created) for kind, tid, micro, created in connection.execute(query)}


def _hold(connection: sa.Connection, run_id: str) -> Hold | None:
    query = (
        sa.select(entries.c.account, entries.c.microcredits, transfers.c.created_at)
        .join(transfers, entries.c.transfer_id == transfers.c.id)
        .where(transfers.c.run_id == run_id, transfers.c.kind == "hold", entries.c.account != HOLDS)
    )
    row = connection.execute(query).first()
    if row is None:
        return None
    return Hold(
        run_id=run_id,
        account=row.account,
        amount=from_micro(-row.microcredits),
        created_at=row.created_at,
        closed=_closed(connection, run_id),
    )


def _closed(connection: sa.Connection, run_id: str) -> bool:
    query = sa.select(transfers.c.id).where(transfers.c.run_id == run_id, transfers.c.kind == "release")
    return connection.execute(query).first() is not None


def _settlement(connection: sa.Connection, hold: Hold) -> Settlement:
    moves = _run_transfers(connection, hold.run_id)
    charged = moves["charge"][1] if "charge" in moves else 0
    released = moves["release"][1] if "release" in moves else 0
    return Settlement(
        run_id=hold.run_id,
        account=hold.account,
        held=hold.amount,
        charged=from_micro(charged),
        released=from_micro(released),
    )


def _open_holds(cutoff: datetime) -> sa.Select:
    held = transfers.alias("held")
    released = (
        sa.select(sa.literal(1))
        .select_from(transfers)
        .where(transfers.c.run_id == held.c.run_id, transfers.c.kind == "release")
    )
    return (
        sa.select(held.c.run_id)
        .where(held.c.kind == "hold", held.c.created_at <= cutoff, ~released.exists())
        .order_by(held.c.created_at)
    )


def _same_account(hold: Hold, account: str) -> Hold:
    if hold.account != account:
        raise CreditError(f"run {hold.run_id} is already held on {hold.account}, not {account}")
    return hold
