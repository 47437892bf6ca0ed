"""Rows to values, and the run's guarded moves, shared by the runs and the ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from qsolve_pipeline.storage.state._errors import NotFound, RunStateError
from qsolve_pipeline.storage.state._models import (
    WORKFLOW_REASONS,
    FailureReason,
    Run,
    RunStatus,
    Source,
    Version,
    from_micro,
)
from qsolve_pipeline.storage.state._tables import runs, versions

RECORDABLE = sa.or_(
    runs.c.status == RunStatus.FINISHED.value,
    runs.c.reason.in_([r.value for r in WORKFLOW_REASONS]),
)


def upsert(
    connection: sa.Connection,
    table: sa.Table,
    key: str | tuple[str, ...],
    values: dict[str, Any],
    update: tuple[str, ...] | None = None,
) -> None:
    """Set one row's values, inserting it where its key is missing, in one statement (``INSERT ... ON
    CONFLICT DO UPDATE``, on SQLite and PostgreSQL alike): two writers at once leave one row, the later's.
    ``update`` names the columns an existing row takes (default: all of ``values``), so that two writers of
    different columns both keep theirs."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    keys = [key] if isinstance(key, str) else list(key)
    changed = values if update is None else {k: values[k] for k in update}
    connection.execute(
        insert(table).values(**values).on_conflict_do_update(index_elements=keys, set_=changed)
    )


def row_of(cls: type, row: sa.Row, **converted: Any) -> Any:
    """A frozen dataclass of a row: each field the column of its name, or as ``converted`` gives it."""
    from dataclasses import fields

    values = row._mapping
    return cls(**{f.name: converted[f.name] if f.name in converted else values[f.name] for f in fields(cls)})


def now() -> datetime:
    """This host's clock: for times that are only shown and ordered. A time another machine judges (a
    lease, a claim, a heartbeat: has it lapsed?) is the database's, :func:`clock`."""
    return datetime.now(UTC)


def clock(connection: sa.Connection) -> datetime:
    """The database's time now, UTC: what every lease, claim and heartbeat is written and judged by, so
    that a host whose clock runs ahead (or behind) neither takes another's live claim nor loses its own.
    PostgreSQL's ``clock_timestamp()`` (the server's clock at this statement, not the transaction's
    start); SQLite's ``'now'``, the clock of the machine its file is on (every process on the file)."""
    if connection.dialect.name == "postgresql":
        return connection.execute(sa.select(sa.func.clock_timestamp())).scalar_one().astimezone(UTC)
    text = connection.execute(sa.text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar_one()
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def reason_of(reason: FailureReason | str | None) -> FailureReason:
    try:
        return FailureReason(reason)
    except ValueError:
        known = ", ".join(r.value for r in FailureReason)
        raise ValueError(f"unknown failure reason {reason!r}: one of {known}") from None


def move_run(connection: sa.Connection, run_id: str, allowed: set[RunStatus], **values: Any) -> Run:
    """A conditional UPDATE: the run moves only from an allowed status, whoever else tries at once."""
    moved = connection.execute(
        runs.update()
        .where(runs.c.id == run_id, runs.c.status.in_([s.value for s in allowed]))
        .values(**values)
    )
    row = run_row(connection, run_id)
    if moved.rowcount != 1:
        now_status = row.status + (f" ({row.reason})" if row.reason else "")
        wanted = values.get("status")
        raise RunStateError(
            f"run {run_id} is {now_status}: it cannot become {wanted}", run_id=run_id, status=row.status
        )
    return run_of(row)


def version_row(connection: sa.Connection, name: str, version: str) -> sa.Row | None:
    query = sa.select(versions).where(versions.c.workflow == name, versions.c.version == version)
    return connection.execute(query).first()


def version_of(row: sa.Row) -> Version:
    return Version(
        id=row.id,
        workflow=row.workflow,
        version=row.version,
        digest=row.digest,
        published_at=row.published_at,
        hardware_cases=row.hardware_cases,
        account=row.account,
    )


RUNS = sa.select(runs, versions.c.workflow, versions.c.version).join(
    versions, runs.c.version_id == versions.c.id
)


def run_row(connection: sa.Connection, run_id: str) -> sa.Row:
    row = connection.execute(RUNS.where(runs.c.id == run_id)).first()
    if row is None:
        raise NotFound(f"no run {run_id}", kind="run", key=run_id)
    return row


def run_of(row: sa.Row) -> Run:
    return Run(
        id=row.id,
        version_id=row.version_id,
        workflow=row.workflow,
        version=row.version,
        case_name=row.case_name,
        target=row.target,
        source=Source(row.source),
        status=RunStatus(row.status),
        reason=None if row.reason is None else FailureReason(row.reason),
        detail=row.detail,
        result=row.result,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        estimated_credits=_credits(row.estimated_microcredits),
        actual_credits=_credits(row.actual_microcredits),
        filed_at=row.filed_at,
        stage_id=row.stage_id,
        case_index=row.case_index,
        owner=row.owner,
        lease_expires_at=row.lease_expires_at,
        deadline_at=row.deadline_at,
    )


def _credits(micro: int | None) -> Decimal | None:
    return None if micro is None else from_micro(micro)
