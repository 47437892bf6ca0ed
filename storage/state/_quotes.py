"""Hardware quotes (issue 13; benchmarks-and-gates.md, "Hardware cases", "How they run").

A developer's request opens a *batch* for the latest (highest) published version of a workflow: one quote
and one ``created`` run (source ``hardware``, the developer's own account) per hardware case. While a
batch is being priced or its confirmed quotes run, a second request for the same workflow is refused as
in progress by the database (the partial unique index ``uq_quote_batches_open``: one batch ``pricing`` or
``open`` per workflow), whichever process asks. A batch whose quotes only await confirmation is neither
(issue 33, item 5): a new request lapses its pending quotes and ends it, in the transaction that opens
the new batch, so it blocks nobody; a confirmation takes the batch's row first, so a quote is never
confirmed in a batch that a request is lapsing. Nothing runs until its own
quote is confirmed; a confirmation covers that run only and authorises at most the quoted price, capped
by the per-run limit; a quote not confirmed by ``valid_until`` lapses (``expired``, its run ended
``cancelled``, never recorded); a quote whose cost is unknown is confirmed only when the person has seen
that it is unknown. A batch ends when none of its quotes is pending and no confirmed one's run is live.

Whose confirmation authorises it (issue 33, item 3): the payer's (``confirmed_by``), and where the quote is
on a provider held by another account and its job is not free, the holder's too (``holder``, set when it
is priced; ``holder_confirmed_by``): the quote stays ``pending`` until both have confirmed, in either
order, and its run is claimed only when the database row says both did (:data:`AUTHORISED`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import NotFound, StateError
from qsolve_pipeline.storage.state._ledger import refuse_platform_account
from qsolve_pipeline.storage.state._models import (
    Credits,
    FailureReason,
    QuoteStatus,
    RunStatus,
    Source,
    Version,
    from_micro,
    to_micro,
)
from qsolve_pipeline.storage.state._rows import clock, move_run, now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import quote_batches, quotes, runs, versions

QUOTE_VALID_S = 3600  # a quote not confirmed within an hour lapses (well before an unleased run is abandoned)
PRICING_STALE_S = 3600  # a batch still "pricing" after this was left by a process that stopped


@dataclass
class BatchInProgress(StateError):
    """A request while an earlier batch of the workflow is still being priced or its confirmed quotes run."""

    workflow: str = ""
    batch_id: str = ""


@dataclass
class QuoteRefused(StateError):
    """A confirmation that cannot be given: the quote is not pending, lapsed, or its unknown cost unseen."""

    quote_id: str = ""
    status: str = ""


@dataclass(frozen=True)
class Quote:
    id: str
    batch_id: str
    version_id: int
    workflow: str
    version: str
    case_index: int | None
    case_name: str
    target: str
    account: str
    run_id: str | None
    price: Decimal  # credits, from the price table
    estimate: dict[str, Any]  # {circuits, shots, provider: {...}} as shown
    unknown_cost: bool
    status: QuoteStatus
    created_at: datetime
    valid_until: datetime | None
    confirmed_at: datetime | None
    authorised: Decimal | None  # credits the confirmation authorised
    confirmed_by: str | None = None  # the payer, once it confirmed
    holder: str | None = None  # the provider's holder, whose confirmation it needs too (None: no one's)
    holder_confirmed_by: str | None = None
    holder_confirmed_at: datetime | None = None

    @property
    def awaiting(self) -> str | None:
        """Whose confirmation a pending quote still needs, said for a person (None once it needs none)."""
        if self.status is not QuoteStatus.PENDING:
            return None
        if self.confirmed_by is None:
            if self.holder is not None and self.holder_confirmed_by is None:
                return f"{self.account} (it pays) and {self.holder} (the provider's holder)"
            return self.account
        return (
            None
            if self.holder is None or self.holder_confirmed_by
            else f"{self.holder} (the provider's holder)"
        )

    def summary(self) -> dict[str, Any]:
        """What ``qsolve quote --json`` lists of it."""
        return {
            "id": self.id,
            "batch": self.batch_id,
            "workflow": self.workflow,
            "version": self.version,
            "case": self.case_name,
            "case_index": self.case_index,
            "target": self.target,
            "price": str(self.price),
            "estimate": self.estimate,
            "unknown_cost": self.unknown_cost,
            "status": self.status.value,
            "valid_until": None if self.valid_until is None else self.valid_until.isoformat(),
            "authorised": None if self.authorised is None else str(self.authorised),
            "run_id": self.run_id,
            "confirmed_by": self.confirmed_by,
            "holder": self.holder,
            "holder_confirmed_by": self.holder_confirmed_by,
            "awaiting": self.awaiting,
        }


@dataclass(frozen=True)
class QuoteBatch:
    id: str
    workflow: str
    version_id: int
    account: str
    target: str | None
    status: str  # pricing, open, ended
    created_at: datetime
    ended_at: datetime | None
    #: the request that opened it: the earlier batch whose quotes awaited confirmation, and those quotes,
    #: which lapsed (``expired``) when it was opened; none otherwise
    lapsed_batch: str | None = None
    lapsed: tuple[str, ...] = ()


QUOTES = sa.select(quotes, versions.c.workflow, versions.c.version).join(
    versions, versions.c.id == quotes.c.version_id
)

#: a quote whose run may start: confirmed by its payer, and by its provider's holder where it needs that
AUTHORISED = sa.and_(
    quotes.c.status == QuoteStatus.CONFIRMED.value,
    quotes.c.confirmed_by == quotes.c.account,
    sa.or_(quotes.c.holder.is_(None), quotes.c.holder_confirmed_by == quotes.c.holder),
)


class Quotes(Store):
    """Quote batches and their quotes."""

    def request_batch(self, version: Version, account: str, *, target: str | None = None) -> QuoteBatch:
        """Open a batch (``pricing``) for ``version``, paid by ``account``; refused (BatchInProgress) while
        an earlier batch of the workflow is being priced or its confirmed quotes run. Ended batches are
        closed first; an open batch whose quotes only await confirmation is ended, its pending quotes
        lapsed (``expired``, their runs ended ``cancelled``), as the returned batch says (``lapsed``)."""
        with self._read() as connection:
            refuse_platform_account(connection, account, f"account {account} asks for no quote")
        self.open_account(account)  # type: ignore[attr-defined] - Ledger's
        batch_id = uuid.uuid4().hex
        lapsed_batch, lapsed = None, ()
        try:
            with self._write() as connection:
                _close_done(connection, version.workflow)
                waiting = connection.execute(
                    sa.select(quote_batches)
                    .where(quote_batches.c.workflow == version.workflow, quote_batches.c.status == "open")
                    .with_for_update()
                ).first()
                if waiting is not None and not _runs_confirmed(connection, waiting.id):
                    lapsed_batch, lapsed = waiting.id, _lapse(connection, waiting, batch_id)
                connection.execute(
                    quote_batches.insert().values(
                        id=batch_id,
                        workflow=version.workflow,
                        version_id=version.id,
                        account=account,
                        target=target,
                        status="pricing",
                        created_at=now(),
                    )
                )
        except IntegrityError:
            with self._read() as connection:
                row = connection.execute(
                    sa.select(quote_batches).where(
                        quote_batches.c.workflow == version.workflow,
                        quote_batches.c.status.in_(["pricing", "open"]),
                    )
                ).first()
            if row is None:
                raise
            doing = "still being priced" if row.status == "pricing" else "running its confirmed quotes"
            raise BatchInProgress(
                f"a quote batch of {version.workflow} is {doing} (batch {row.id}, {row.status} since "
                f"{row.created_at:%Y-%m-%d %H:%M:%S} UTC): this request is refused as in progress",
                workflow=version.workflow,
                batch_id=row.id,
            ) from None
        return replace(self.get_batch(batch_id), lapsed_batch=lapsed_batch, lapsed=lapsed)

    def add_quote(
        self,
        batch_id: str,
        case_index: int,
        case_name: str,
        target: str,
        price: Credits,
        estimate: Mapping[str, Any],
        *,
        unknown_cost: bool,
        valid_s: float = QUOTE_VALID_S,
        holder: str | None = None,
    ) -> Quote:
        """One priced case of a ``pricing`` batch: its quote and its ``created`` run, in one transaction.
        ``holder``: the provider's holder, whose confirmation the quote needs besides its payer's."""
        quote_id, run_id = uuid.uuid4().hex, uuid.uuid4().hex
        created = now()
        with self._write() as connection:
            batch = _batch_row(connection, batch_id)
            if batch.status != "pricing":
                raise QuoteRefused(
                    f"batch {batch_id} is {batch.status}: it takes no more quotes", status=batch.status
                )
            connection.execute(
                runs.insert().values(
                    id=run_id,
                    version_id=batch.version_id,
                    case_name=case_name,
                    target=target,
                    source=Source.HARDWARE.value,
                    status=RunStatus.CREATED.value,
                    created_at=created,
                    case_index=case_index,
                )
            )
            connection.execute(
                quotes.insert().values(
                    id=quote_id,
                    batch_id=batch_id,
                    version_id=batch.version_id,
                    case_name=case_name,
                    target=target,
                    account=batch.account,
                    run_id=run_id,
                    price_microcredits=to_micro(price),
                    status=QuoteStatus.PENDING.value,
                    created_at=created,
                    case_index=case_index,
                    valid_until=created + timedelta(seconds=valid_s),
                    estimate=dict(estimate),
                    unknown_cost=bool(unknown_cost),
                    holder=holder if holder != batch.account else None,
                )
            )
        return self.get_quote(quote_id)

    def batch_priced(self, batch_id: str) -> QuoteBatch:
        """``pricing`` to ``open``: every case is quoted (a batch with no quote ends at once)."""
        with self._write() as connection:
            connection.execute(
                quote_batches.update()
                .where(quote_batches.c.id == batch_id, quote_batches.c.status == "pricing")
                .values(status="open")
            )
            _close_done(connection, _batch_row(connection, batch_id).workflow)
        return self.get_batch(batch_id)

    def abandon_batch(self, batch_id: str, detail: str) -> QuoteBatch:
        """End a batch whose pricing failed: its pending quotes refused, their runs ended (platform_error)."""
        with self._write() as connection:
            _lock_batches(connection, {batch_id})
            for row in connection.execute(
                sa.select(quotes.c.id, quotes.c.run_id).where(
                    quotes.c.batch_id == batch_id, quotes.c.status == QuoteStatus.PENDING.value
                )
            ).all():
                _end_quote(
                    connection, row.id, row.run_id, QuoteStatus.REFUSED, FailureReason.PLATFORM_ERROR, detail
                )
            connection.execute(
                quote_batches.update()
                .where(quote_batches.c.id == batch_id, quote_batches.c.status != "ended")
                .values(status="ended", ended_at=now())
            )
        return self.get_batch(batch_id)

    def get_batch(self, batch_id: str) -> QuoteBatch:
        with self._read() as connection:
            return _batch_of(_batch_row(connection, batch_id))

    def batch_status(self, batch_id: str) -> dict[str, Any]:
        """The batch (closed first when it is done) and each quote with its run's status."""
        with self._write() as connection:
            _close_done(connection, _batch_row(connection, batch_id).workflow)
        batch = self.get_batch(batch_id)
        listed = []
        with self._read() as connection:
            for quote in self.list_quotes(batch_id=batch_id):
                run = None
                if quote.run_id is not None:
                    run = connection.execute(
                        sa.select(runs.c.status, runs.c.reason).where(runs.c.id == quote.run_id)
                    ).first()
                listed.append(
                    quote.summary()
                    | {"run_status": run.status if run else None, "run_reason": run.reason if run else None}
                )
        return {"batch": batch.id, "workflow": batch.workflow, "status": batch.status, "quotes": listed}

    def get_quote(self, quote_id: str) -> Quote:
        with self._read() as connection:
            row = connection.execute(QUOTES.where(quotes.c.id == quote_id)).first()
        if row is None:
            raise NotFound(f"no quote {quote_id!r}", kind="quote", key=quote_id)
        return _quote_of(row)

    def list_quotes(
        self,
        *,
        batch_id: str | None = None,
        workflow: str | None = None,
        status: QuoteStatus | str | None = None,
    ) -> list[Quote]:
        """Quotes, oldest first: of a batch, of a workflow, in a status."""
        query = QUOTES.order_by(quotes.c.created_at, quotes.c.case_index, quotes.c.id)
        if batch_id is not None:
            query = query.where(quotes.c.batch_id == batch_id)
        if workflow is not None:
            query = query.where(versions.c.workflow == workflow)
        if status is not None:
            query = query.where(quotes.c.status == QuoteStatus(status).value)
        with self._read() as connection:
            return [_quote_of(r) for r in connection.execute(query)]

    def confirm_quote(self, quote_id: str, account: str, *, seen_unknown: bool = False) -> Quote:
        """Confirm one pending quote, for its run only: authorises at most its price, capped by the per-run
        limit. A quote past its validity lapses instead (QuoteRefused, status expired); an unknown cost is
        confirmed only with ``seen_unknown``; only the account that pays may confirm, and the provider's
        holder where the quote needs it (the quote is ``confirmed`` once both have)."""
        lapsed = False
        with self._write() as connection:
            row = connection.execute(QUOTES.where(quotes.c.id == quote_id)).first()
            if row is None:
                raise NotFound(f"no quote {quote_id!r}", kind="quote", key=quote_id)
            # the batch's row first (a request lapsing the batch takes it too), then the quote read again
            _lock_batches(connection, {row.batch_id})
            row = connection.execute(QUOTES.where(quotes.c.id == quote_id)).first()
            as_holder = row.holder is not None and account == row.holder and account != row.account
            if row.account != account and not as_holder:
                also = f" and its provider's holder {row.holder}" if row.holder else ""
                raise QuoteRefused(
                    f"quote {quote_id} is paid by {row.account}: only its payer{also} confirms it",
                    quote_id=quote_id,
                    status=row.status,
                )
            mine = row.holder_confirmed_by if as_holder else row.confirmed_by
            if row.status == QuoteStatus.PENDING.value and mine is not None:
                raise QuoteRefused(
                    f"quote {quote_id} is confirmed by {account} already: it awaits "
                    f"{_quote_of(row).awaiting}'s confirmation, and its run starts only then",
                    quote_id=quote_id,
                    status=row.status,
                )
            if row.status != QuoteStatus.PENDING.value:
                raise QuoteRefused(
                    f"quote {quote_id} is {row.status}: only a pending quote is confirmed",
                    quote_id=quote_id,
                    status=row.status,
                )
            if row.valid_until is not None and now() > row.valid_until:
                _end_quote(
                    connection, row.id, row.run_id, QuoteStatus.EXPIRED, FailureReason.CANCELLED, _lapsed(row)
                )
                lapsed = True
            elif row.unknown_cost and not seen_unknown:
                raise QuoteRefused(
                    f"quote {quote_id}: the cost on {row.target} is unknown; only a person who "
                    "has seen that it is unknown confirms it (--yes, or yes when asked once it is shown)",
                    quote_id=quote_id,
                    status=row.status,
                )
            else:
                pending = sa.and_(quotes.c.id == quote_id, quotes.c.status == QuoteStatus.PENDING.value)
                if as_holder:
                    said = quotes.update().where(pending, quotes.c.holder_confirmed_by.is_(None))
                    said = said.values(holder_confirmed_by=account, holder_confirmed_at=now())
                else:
                    authorised = min(row.price_microcredits, self.settings.limit_micro(Source.HARDWARE))
                    said = quotes.update().where(pending, quotes.c.confirmed_by.is_(None))
                    said = said.values(
                        confirmed_by=account, confirmed_at=now(), authorised_microcredits=authorised
                    )
                if connection.execute(said).rowcount != 1:  # pragma: no cover - read in this transaction
                    raise QuoteRefused(f"quote {quote_id} changed meanwhile", quote_id=quote_id)
                connection.execute(  # confirmed once both have: the row decides, whoever confirmed last
                    quotes.update()
                    .where(
                        pending,
                        quotes.c.confirmed_by == quotes.c.account,
                        sa.or_(quotes.c.holder.is_(None), quotes.c.holder_confirmed_by == quotes.c.holder),
                    )
                    .values(status=QuoteStatus.CONFIRMED.value)
                )
        if lapsed:
            raise QuoteRefused(_lapsed(row), quote_id=quote_id, status=QuoteStatus.EXPIRED.value)
        return self.get_quote(quote_id)

    def refuse_quote(self, quote_id: str, account: str) -> Quote:
        """The payer (or the provider's holder, whose confirmation it needs) says no: the quote ``refused``,
        its run ended ``cancelled`` (never recorded)."""
        with self._write() as connection:
            row = connection.execute(QUOTES.where(quotes.c.id == quote_id)).first()
            if row is None:
                raise NotFound(f"no quote {quote_id!r}", kind="quote", key=quote_id)
            if account not in (row.account, row.holder) or row.status != QuoteStatus.PENDING.value:
                raise QuoteRefused(f"quote {quote_id} is {row.status} for {row.account}", quote_id=quote_id)
            _end_quote(
                connection, row.id, row.run_id, QuoteStatus.REFUSED, FailureReason.CANCELLED, "refused"
            )
        return self.get_quote(quote_id)

    def expire_quotes(self) -> list[str]:
        """Every pending quote past its validity: ``expired``, its run ended ``cancelled``; their ids."""
        expired = []
        with self._write() as connection:
            rows = connection.execute(
                QUOTES.where(quotes.c.status == QuoteStatus.PENDING.value, quotes.c.valid_until < now())
            ).all()
            _lock_batches(connection, {row.batch_id for row in rows})
            for row in rows:
                if _end_quote(
                    connection, row.id, row.run_id, QuoteStatus.EXPIRED, FailureReason.CANCELLED, _lapsed(row)
                ):
                    expired.append(row.id)
            for workflow in {row.workflow for row in rows}:
                _close_done(connection, workflow)
        return expired

    def claim_quote_run(self, quote_id: str, owner: str, seconds: float) -> bool:
        """Take a confirmed quote's run for ``owner``'s lease, in one UPDATE: true for the one process
        that gets it (the run still ``created`` and no one's), false for every other, which runs nothing."""
        with self._write() as connection:
            row = connection.execute(QUOTES.where(quotes.c.id == quote_id)).first()
            if row is None:
                raise NotFound(f"no quote {quote_id!r}", kind="quote", key=quote_id)
            if row.status != QuoteStatus.CONFIRMED.value or row.run_id is None:
                return False
            authorised = sa.select(quotes.c.id).where(
                quotes.c.id == quote_id, quotes.c.run_id == runs.c.id, AUTHORISED
            )
            moved = connection.execute(
                runs.update()
                .where(
                    runs.c.id == row.run_id,
                    runs.c.status == RunStatus.CREATED.value,
                    runs.c.owner.is_(None),
                    authorised.exists(),
                )
                .values(owner=owner, lease_expires_at=clock(connection) + timedelta(seconds=seconds))
            )
            return moved.rowcount == 1

    def quotes_to_run(self, batch_id: str | None = None) -> list[Quote]:
        """Confirmed quotes (by their payer, and their provider's holder where they need it) whose run no
        process has taken yet, oldest first."""
        query = (
            QUOTES.join(runs, runs.c.id == quotes.c.run_id)
            .where(
                AUTHORISED,
                runs.c.status == RunStatus.CREATED.value,
                runs.c.owner.is_(None),
            )
            .order_by(quotes.c.confirmed_at, quotes.c.id)
        )
        if batch_id is not None:
            query = query.where(quotes.c.batch_id == batch_id)
        with self._read() as connection:
            return [_quote_of(r) for r in connection.execute(query)]


def _lapsed(row: sa.Row) -> str:
    return f"quote {row.id} lapsed: it was not confirmed by {row.valid_until:%Y-%m-%d %H:%M:%S} UTC"


def _end_quote(
    connection: sa.Connection,
    quote_id: str,
    run_id: str | None,
    status: QuoteStatus,
    reason: FailureReason,
    detail: str,
) -> bool:
    """End a quote still pending (a conditional UPDATE: one confirmed at the same moment stays
    confirmed, its run untouched), and its run if not started; whether it was ended here."""
    moved = connection.execute(
        quotes.update()
        .where(quotes.c.id == quote_id, quotes.c.status == QuoteStatus.PENDING.value)
        .values(status=status.value)
    )
    if moved.rowcount != 1:
        return False
    if run_id is not None:
        live = connection.execute(sa.select(runs.c.status).where(runs.c.id == run_id)).scalar()
        if live == RunStatus.CREATED.value:
            move_run(
                connection,
                run_id,
                {RunStatus.CREATED},
                status=RunStatus.FAILED.value,
                reason=reason.value,
                detail=detail,
                finished_at=now(),
            )
    return True


def _lock_batches(connection: sa.Connection, batch_ids: set[str]) -> None:
    """Take the batches' rows (``FOR UPDATE``; SQLite's writers queue anyway), in one order. Whatever
    changes a batch's quotes takes their batch's row first, so two such transactions never wait on each
    other's rows crosswise."""
    if batch_ids:
        connection.execute(
            sa.select(quote_batches.c.id)
            .where(quote_batches.c.id.in_(sorted(batch_ids)))
            .order_by(quote_batches.c.id)
            .with_for_update()
        ).all()


def _runs_confirmed(connection: sa.Connection, batch_id: str) -> bool:
    """Whether a confirmed quote of the batch has its run still to run or running: the batch is run."""
    live = (
        sa.select(sa.literal(1))
        .select_from(quotes.join(runs, runs.c.id == quotes.c.run_id))
        .where(
            quotes.c.batch_id == batch_id,
            quotes.c.status == QuoteStatus.CONFIRMED.value,
            runs.c.status.in_([RunStatus.CREATED.value, RunStatus.RUNNING.value]),
        )
    )
    return connection.execute(live).first() is not None


def _lapse(connection: sa.Connection, batch: sa.Row, by: str) -> tuple[str, ...]:
    """End an open batch whose quotes await confirmation, for the request opening batch ``by``: its
    pending quotes ``expired``, their runs ended ``cancelled`` (never recorded); their ids."""
    detail = (
        f"lapsed unconfirmed: a new quote request of {batch.workflow} (batch {by}) replaced batch {batch.id}"
    )
    pending = connection.execute(
        sa.select(quotes.c.id, quotes.c.run_id)
        .where(quotes.c.batch_id == batch.id, quotes.c.status == QuoteStatus.PENDING.value)
        .order_by(quotes.c.case_index, quotes.c.id)
    ).all()
    ended = tuple(
        q.id
        for q in pending
        if _end_quote(connection, q.id, q.run_id, QuoteStatus.EXPIRED, FailureReason.CANCELLED, detail)
    )
    connection.execute(
        quote_batches.update()
        .where(quote_batches.c.id == batch.id, quote_batches.c.status == "open")
        .values(status="ended", ended_at=now())
    )
    return ended


def _close_done(connection: sa.Connection, workflow: str) -> None:
    """End the workflow's open batches that are done: no pending quote, no confirmed quote's run live;
    and ``pricing`` batches left by a process that stopped."""
    pending = (
        sa.select(sa.literal(1))
        .select_from(quotes)
        .where(quotes.c.batch_id == quote_batches.c.id, quotes.c.status == QuoteStatus.PENDING.value)
    )
    live = (
        sa.select(sa.literal(1))
        .select_from(quotes.join(runs, runs.c.id == quotes.c.run_id))
        .where(
            quotes.c.batch_id == quote_batches.c.id,
            quotes.c.status == QuoteStatus.CONFIRMED.value,
            runs.c.status.in_([RunStatus.CREATED.value, RunStatus.RUNNING.value]),
        )
    )
    stale = now() - timedelta(seconds=PRICING_STALE_S)
    connection.execute(
        quote_batches.update()
        .where(
            quote_batches.c.workflow == workflow,
            sa.or_(
                sa.and_(quote_batches.c.status == "open", ~pending.exists(), ~live.exists()),
                sa.and_(quote_batches.c.status == "pricing", quote_batches.c.created_at < stale),
            ),
        )
        .values(status="ended", ended_at=now())
    )


def _batch_row(connection: sa.Connection, batch_id: str) -> sa.Row:
    row = connection.execute(sa.select(quote_batches).where(quote_batches.c.id == batch_id)).first()
    if row is None:
        raise NotFound(f"no quote batch {batch_id!r}", kind="quote batch", key=batch_id)
    return row


def _batch_of(row: sa.Row) -> QuoteBatch:
    return QuoteBatch(**{k: row._mapping[k] for k in QuoteBatch.__dataclass_fields__ if k in row._mapping})


def _quote_of(row: sa.Row) -> Quote:
    m = row._mapping
    return Quote(
        id=m["id"],
        batch_id=m["batch_id"],
        version_id=m["version_id"],
        workflow=m["workflow"],
        version=m["version"],
        case_index=m["case_index"],
        case_name=m["case_name"],
        target=m["target"],
        account=m["account"],
        run_id=m["run_id"],
        price=from_micro(m["price_microcredits"]),
        estimate=dict(m["estimate"] or {}),
        unknown_cost=bool(m["unknown_cost"]),
        status=QuoteStatus(m["status"]),
        created_at=m["created_at"],
        valid_until=m["valid_until"],
        confirmed_at=m["confirmed_at"],
        authorised=None if m["authorised_microcredits"] is None else from_micro(m["authorised_microcredits"]),
        confirmed_by=m["confirmed_by"],
        holder=m["holder"],
        holder_confirmed_by=m["holder_confirmed_by"],
        holder_confirmed_at=m["holder_confirmed_at"],
    )
