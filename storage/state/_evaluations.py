"""Evaluation runs and their records (issue 14; the calibration-evaluation seed, "Entry points and
runs", "The record").

A run stores its selection, the requested model and its settings, and one pending record per task
result (a unique constraint: a task result is judged once per run). Its owner claims each record with a
conditional UPDATE (``pending`` to ``running``), so two executors never judge one record, and keeps a
durable heartbeat on the run. A read that finds the heartbeat older than the stale limit marks the
unfinished records and the run ``interrupted`` (the owner stopped without saying so); so does one that
finds a run still pending :data:`START_GRACE` after it was stored (its flow never started). A run's end
is decided in the transaction of its last record's end, under the run's row lock that cancel takes too:
cancel and completion never both win (issue 24). Retry resets
failed, interrupted and cancelled records to ``pending``; cancel marks the unfinished ones
``cancelled``. Verdicts are an append-only history; a reviewer's current verdict is their latest.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import NotFound
from qsolve_pipeline.storage.state._models import EvaluationStatus
from qsolve_pipeline.storage.state._rows import clock, now, row_of
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import (
    evaluation_assets,
    evaluation_records,
    evaluation_runs,
    evaluation_verdicts,
)

E = EvaluationStatus
UNFINISHED = (E.PENDING.value, E.RUNNING.value)
RESETTABLE = (E.FAILED.value, E.INTERRUPTED.value, E.CANCELLED.value)


def _keep_earlier_spans(connection: sa.Connection, run_id: str) -> None:
    """Before a retry clears a record's times: its [started, finished] kept in its output
    (``earlier_spans``), so the run's wall time counts every execution (``qsolve.evaluation.runs``)."""
    rows = connection.execute(
        sa.select(
            evaluation_records.c.id,
            evaluation_records.c.output,
            evaluation_records.c.started_at,
            evaluation_records.c.finished_at,
        ).where(
            evaluation_records.c.run_id == run_id,
            evaluation_records.c.status.in_(RESETTABLE),
            evaluation_records.c.started_at.is_not(None),
            evaluation_records.c.finished_at.is_not(None),
        )
    ).all()
    for row in rows:
        output = dict(row.output or {})
        spans = list(output.get("earlier_spans") or [])
        spans.append([row.started_at.isoformat(), row.finished_at.isoformat()])
        connection.execute(
            evaluation_records.update()
            .where(evaluation_records.c.id == row.id)
            .values(output=output | {"earlier_spans": spans})
        )


#: a run stored but never started by its flow (Prefect did not start, say) is interrupted after this
START_GRACE = timedelta(seconds=120)


@dataclass(frozen=True)
class EvaluationRun:
    id: str
    trigger: str
    selection: dict[str, Any]
    model: str
    settings: dict[str, Any]
    skipped: list[dict[str, Any]]
    status: EvaluationStatus
    owner: str | None
    heartbeat_at: datetime | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class EvaluationRecord:
    id: str
    run_id: str
    task_result_id: str
    task: str
    chip: str
    qid: str
    status: EvaluationStatus
    input: dict[str, Any] | None
    output: dict[str, Any] | None
    evaluator: dict[str, Any] | None
    error: str | None
    model_seconds: float | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class Verdict:
    record_id: str
    reviewer: str
    verdict: str
    area: str | None
    comment: str | None
    created_at: datetime


class Evaluations(Store):
    """Evaluation runs, records, verdicts and figure assets."""

    def create_evaluation_run(
        self,
        *,
        trigger: str,
        selection: Mapping[str, Any],
        model: str,
        settings: Mapping[str, Any],
        results: Iterable[tuple[str, str, str, str]],
        skipped: Iterable[Mapping[str, Any]] = (),
    ) -> EvaluationRun:
        """A run with one pending record per ``(task_result_id, task, chip, qid)``, in one transaction."""
        run_id = uuid.uuid4().hex
        with self._write() as connection:
            created = clock(connection)  # its start's grace is judged by the database's clock
            connection.execute(
                evaluation_runs.insert().values(
                    id=run_id,
                    trigger=trigger,
                    selection=dict(selection),
                    model=model,
                    settings=dict(settings),
                    skipped=[dict(s) for s in skipped],
                    status=E.PENDING.value,
                    created_at=created,
                )
            )
            rows = [
                {
                    "id": uuid.uuid4().hex,
                    "run_id": run_id,
                    "task_result_id": result_id,
                    "task": task,
                    "chip": chip,
                    "qid": qid,
                    "status": E.PENDING.value,
                    "created_at": created,
                }
                for result_id, task, chip, qid in dict.fromkeys(results)
            ]
            if rows:
                connection.execute(evaluation_records.insert(), rows)
            return _run(_run_row(connection, run_id))

    def get_evaluation_run(self, run_id: str, *, stale_after: timedelta | None = None) -> EvaluationRun:
        """The run; with ``stale_after``, a run whose heartbeat is older is marked interrupted first."""
        if stale_after is not None:
            self.interrupt_stale(stale_after, run_id=run_id)
        with self._read() as connection:
            return _run(_run_row(connection, run_id))

    def list_evaluation_runs(self, *, stale_after: timedelta | None = None) -> list[EvaluationRun]:
        if stale_after is not None:
            self.interrupt_stale(stale_after)
        query = sa.select(evaluation_runs).order_by(evaluation_runs.c.created_at, evaluation_runs.c.id)
        with self._read() as connection:
            return [_run(r) for r in connection.execute(query)]

    def evaluation_records(self, run_id: str) -> list[EvaluationRecord]:
        query = (
            sa.select(evaluation_records)
            .where(evaluation_records.c.run_id == run_id)
            .order_by(evaluation_records.c.task, evaluation_records.c.chip, evaluation_records.c.qid)
        )
        with self._read() as connection:
            return [_record(r) for r in connection.execute(query)]

    def get_evaluation_record(self, record_id: str) -> EvaluationRecord:
        with self._read() as connection:
            row = connection.execute(
                sa.select(evaluation_records).where(evaluation_records.c.id == record_id)
            ).first()
        if row is None:
            raise NotFound(f"no evaluation record {record_id}", kind="evaluation record", key=record_id)
        return _record(row)

    # the owner's moves

    def start_evaluation_run(self, run_id: str, owner: str) -> bool:
        """Take the run (pending or interrupted-and-retried) for ``owner``; False when another has it.
        A run interrupted because its flow had not started in time is taken too, its records pending
        again: the flow came late, but it came."""
        late = sa.and_(
            evaluation_runs.c.status == E.INTERRUPTED.value, evaluation_runs.c.started_at.is_(None)
        )
        with self._write() as connection:
            moved = connection.execute(
                evaluation_runs.update()
                .where(
                    evaluation_runs.c.id == run_id, sa.or_(evaluation_runs.c.status == E.PENDING.value, late)
                )
                .values(
                    status=E.RUNNING.value,
                    owner=owner,
                    heartbeat_at=clock(connection),
                    started_at=clock(connection),
                    finished_at=None,
                )
            )
            if moved.rowcount != 1:
                return False
            connection.execute(
                evaluation_records.update()
                .where(
                    evaluation_records.c.run_id == run_id,
                    evaluation_records.c.status == E.INTERRUPTED.value,
                    evaluation_records.c.started_at.is_(None),
                )
                .values(status=E.PENDING.value, finished_at=None)
            )
            return True

    def evaluation_heartbeat(self, run_id: str, owner: str) -> bool:
        """The owner's heartbeat; False when the run is no longer running under it (cancelled, say)."""
        with self._write() as connection:
            moved = connection.execute(
                evaluation_runs.update()
                .where(
                    evaluation_runs.c.id == run_id,
                    evaluation_runs.c.owner == owner,
                    evaluation_runs.c.status == E.RUNNING.value,
                )
                .values(heartbeat_at=clock(connection))
            )
            return moved.rowcount == 1

    def claim_evaluation_record(self, record_id: str) -> bool:
        """``pending`` to ``running``: exactly one executor gets it."""
        with self._write() as connection:
            moved = connection.execute(
                evaluation_records.update()
                .where(evaluation_records.c.id == record_id, evaluation_records.c.status == E.PENDING.value)
                .values(status=E.RUNNING.value, started_at=now())
            )
            return moved.rowcount == 1

    def finish_evaluation_record(
        self,
        record_id: str,
        status: EvaluationStatus | str,
        *,
        input: Mapping[str, Any] | None = None,
        output: Mapping[str, Any] | None = None,
        evaluator: Mapping[str, Any] | None = None,
        error: str | None = None,
        model_seconds: float | None = None,
    ) -> bool:
        """A running record's end; False when it was cancelled or interrupted meanwhile (kept so). The
        run's end is decided in the same transaction, under the run's row lock, when this was its last
        unfinished record: a cancel then finds the run ended, and cancel and completion never both win."""
        status = E(status)
        with self._write() as connection:
            run_id = connection.execute(
                sa.select(evaluation_records.c.run_id).where(evaluation_records.c.id == record_id)
            ).scalar()
            if run_id is None:
                return False
            _lock_run(connection, run_id)
            moved = connection.execute(
                evaluation_records.update()
                .where(evaluation_records.c.id == record_id, evaluation_records.c.status == E.RUNNING.value)
                .values(
                    status=status.value,
                    input=None if input is None else dict(input),
                    output=None if output is None else dict(output),
                    evaluator=None if evaluator is None else dict(evaluator),
                    error=error,
                    model_seconds=model_seconds,
                    finished_at=now(),
                )
            )
            if moved.rowcount != 1 and output is not None:
                # cancelled or interrupted while its calls were in flight: the status stays, but the
                # answers that arrived are kept, so a retry never asks them again
                connection.execute(
                    evaluation_records.update()
                    .where(
                        evaluation_records.c.id == record_id,
                        evaluation_records.c.status.in_([E.CANCELLED.value, E.INTERRUPTED.value]),
                    )
                    .values(
                        input=None if input is None else dict(input),
                        output=dict(output),
                        evaluator=None if evaluator is None else dict(evaluator),
                    )
                )
            if moved.rowcount != 1:
                return False
            _end_if_done(connection, run_id)
            return True

    def finish_evaluation_run(self, run_id: str, owner: str) -> EvaluationRun:
        """A run whose records have all ended: completed, or failed when any record failed (a run with
        no records, or one whose last record's transaction did not end it)."""
        with self._write() as connection:
            _lock_run(connection, run_id)
            _end_if_done(connection, run_id, evaluation_runs.c.owner == owner)
            return _run(_run_row(connection, run_id))

    # anyone's moves

    def cancel_evaluation_run(self, run_id: str) -> EvaluationRun:
        """Unfinished records cancelled, and the run; its executor stops at its next check. Under the
        run's row lock: a run whose last record ended meanwhile has ended with it, and stays so."""
        with self._write() as connection:
            _lock_run(connection, run_id)
            connection.execute(
                evaluation_records.update()
                .where(evaluation_records.c.run_id == run_id, evaluation_records.c.status.in_(UNFINISHED))
                .values(status=E.CANCELLED.value, finished_at=now())
            )
            connection.execute(
                evaluation_runs.update()
                .where(evaluation_runs.c.id == run_id, evaluation_runs.c.status.in_(UNFINISHED))
                .values(status=E.CANCELLED.value, finished_at=now())
            )
            return _run(_run_row(connection, run_id))

    def retry_evaluation_run(
        self, run_id: str, *, start_grace: timedelta = START_GRACE
    ) -> tuple[EvaluationRun, int]:
        """Failed, interrupted and cancelled records back to pending, and the run with them; (the run,
        how many records will run). A failed record keeps its input and output, so its executor asks
        only the questions that got no answer. A run still running is left as it is; a pending one whose
        flow never started within ``start_grace`` is interrupted first, so it can be retried."""
        self.interrupt_stale(None, run_id=run_id, start_grace=start_grace)
        with self._write() as connection:
            run = _run(_run_row(connection, run_id))
            if run.status in (E.RUNNING, E.PENDING):
                return run, 0
            _keep_earlier_spans(connection, run_id)
            reset = connection.execute(
                evaluation_records.update()
                .where(evaluation_records.c.run_id == run_id, evaluation_records.c.status.in_(RESETTABLE))
                .values(
                    status=E.PENDING.value,
                    error=None,
                    model_seconds=None,
                    started_at=None,
                    finished_at=None,
                )
            ).rowcount
            if reset:
                connection.execute(
                    evaluation_runs.update()
                    .where(evaluation_runs.c.id == run_id)
                    .values(status=E.PENDING.value, owner=None, heartbeat_at=None, finished_at=None)
                )
            return _run(_run_row(connection, run_id)), reset

    def interrupt_stale(
        self,
        stale_after: timedelta | None,
        *,
        run_id: str | None = None,
        start_grace: timedelta = START_GRACE,
    ) -> list[str]:
        """Runs running whose heartbeat is older than ``stale_after``, and runs pending whose flow never
        started within ``start_grace`` of their creation (issue 24): their unfinished records and
        themselves marked interrupted, so a retry runs them. The ids of the runs so marked."""

        def stale(at: datetime) -> sa.ColumnElement[bool]:  # the database's time: one clock judges
            never_started = sa.and_(
                evaluation_runs.c.status == E.PENDING.value,
                evaluation_runs.c.started_at.is_(None),
                evaluation_runs.c.created_at < at - start_grace,
            )
            if stale_after is None:
                return never_started
            return sa.or_(
                never_started,
                sa.and_(
                    evaluation_runs.c.status == E.RUNNING.value,
                    evaluation_runs.c.heartbeat_at < at - stale_after,
                ),
            )

        query = sa.select(evaluation_runs.c.id)
        if run_id is not None:
            query = query.where(evaluation_runs.c.id == run_id)
        with self._read() as connection:
            candidates = list(connection.execute(query.where(stale(clock(connection)))).scalars())
        marked = []
        for rid in candidates:
            with self._write() as connection:
                at = clock(connection)
                moved = connection.execute(
                    evaluation_runs.update()
                    .where(evaluation_runs.c.id == rid, stale(at))  # the database decides, not this read
                    .values(status=E.INTERRUPTED.value, finished_at=at)
                )
                if moved.rowcount != 1:
                    continue
                connection.execute(
                    evaluation_records.update()
                    .where(evaluation_records.c.run_id == rid, evaluation_records.c.status.in_(UNFINISHED))
                    .values(status=E.INTERRUPTED.value, finished_at=at)
                )
                marked.append(rid)
        return marked

    # verdicts

    def add_verdict(
        self,
        record_id: str,
        reviewer: str,
        verdict: str,
        *,
        area: str | None = None,
        comment: str | None = None,
    ) -> Verdict:
        """One more entry of the record's verdict history (never changed afterwards)."""
        self.get_evaluation_record(record_id)
        created = now()
        with self._write() as connection:
            connection.execute(
                evaluation_verdicts.insert().values(
                    record_id=record_id,
                    reviewer=reviewer,
                    verdict=verdict,
                    area=area,
                    comment=comment,
                    created_at=created,
                )
            )
        return Verdict(record_id, reviewer, verdict, area, comment, created)

    def verdict_history(self, record_id: str) -> list[Verdict]:
        query = (
            sa.select(evaluation_verdicts)
            .where(evaluation_verdicts.c.record_id == record_id)
            .order_by(evaluation_verdicts.c.id)
        )
        with self._read() as connection:
            return [
                Verdict(r.record_id, r.reviewer, r.verdict, r.area, r.comment, r.created_at)
                for r in connection.execute(query)
            ]

    def current_verdicts(self, record_id: str) -> dict[str, Verdict]:
        """Each reviewer's latest verdict."""
        return {v.reviewer: v for v in self.verdict_history(record_id)}

    # figure assets

    def keep_asset(self, sha256: str, blob: str, size: int, media_type: str) -> None:
        """A figure an evaluation saw, once per hash."""
        try:
            with self._write() as connection:
                known = sa.select(evaluation_assets.c.sha256).where(evaluation_assets.c.sha256 == sha256)
                if connection.execute(known).first() is None:
                    connection.execute(
                        evaluation_assets.insert().values(
                            sha256=sha256, blob=blob, bytes=size, media_type=media_type, created_at=now()
                        )
                    )
        except IntegrityError:  # kept by another process at the same moment
            pass

    def asset_for(self, record_id: str, sha256: str) -> tuple[str, str] | None:
        """``(blob, media type)`` of a figure, only when the record references its hash."""
        record = self.get_evaluation_record(record_id)
        figures = (record.input or {}).get("figures") or []
        if sha256 not in [f.get("sha256") if isinstance(f, dict) else f for f in figures]:
            return None
        with self._read() as connection:
            row = connection.execute(
                sa.select(evaluation_assets).where(evaluation_assets.c.sha256 == sha256)
            ).first()
        return None if row is None else (row.blob, row.media_type)


def _lock_run(connection: sa.Connection, run_id: str) -> None:
    """Lock the run's row (PostgreSQL; SQLite's writers are serialised already): a record's end and a
    cancel of its run take turns."""
    connection.execute(
        sa.select(evaluation_runs.c.id).where(evaluation_runs.c.id == run_id).with_for_update()
    ).first()


def _end_if_done(connection: sa.Connection, run_id: str, *guard: sa.ColumnElement[bool]) -> None:
    """End the running run if none of its records is unfinished: failed if any failed, cancelled or
    interrupted if any was, else completed."""
    statuses = set(
        connection.execute(
            sa.select(evaluation_records.c.status).where(evaluation_records.c.run_id == run_id)
        ).scalars()
    )
    if statuses & set(UNFINISHED):
        return
    for end in (E.FAILED, E.CANCELLED, E.INTERRUPTED, E.COMPLETED):
        if end.value in statuses or end is E.COMPLETED:
            break
    connection.execute(
        evaluation_runs.update()
        .where(evaluation_runs.c.id == run_id, evaluation_runs.c.status == E.RUNNING.value, *guard)
        .values(status=end.value, finished_at=now())
    )


def _run_row(connection: sa.Connection, run_id: str) -> sa.Row:
    row = connection.execute(sa.select(evaluation_runs).where(evaluation_runs.c.id == run_id)).first()
    if row is None:
        raise NotFound(f"no evaluation run {run_id}", kind="evaluation run", key=run_id)
    return row


def _run(row: sa.Row) -> EvaluationRun:
    return row_of(EvaluationRun, row, status=E(row.status))


def _record(row: sa.Row) -> EvaluationRecord:
    return row_of(EvaluationRecord, row, status=E(row.status))
