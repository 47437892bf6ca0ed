"""Calibration task results (issue 14): recorded once, read by id, by task, chip, qubit or day, and the
latest evaluable result of a task per qubit or coupling of a chip (what a bulk evaluation selects).

Recording is idempotent: the same result (same id, same content) recorded again is a no-op, and other
content under a recorded id is refused. A batch is recorded in one transaction, whole or not at all.
The rows hold the figures' digests; their bytes are blobs (:mod:`storage.blobs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from qsolve_pipeline.storage.state._errors import NotFound, StateError
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import calibration_results as results

if TYPE_CHECKING:
    from qsolve.calibration.task_result import TaskResult

_FIELDS = (
    "id", "task", "chip", "qid", "day", "status", "message", "figures", "sweep", "settings", "outputs",
    "fit", "true_status", "fault", "seed", "created_at",
)  # fmt: skip


@dataclass
class TaskResultConflict(StateError):
    """Other content under a task result's id already recorded."""

    result_id: str = ""


class CalibrationResults(Store):
    """Calibration task results, with their known answers where they have one."""

    def record_task_result(self, result: TaskResult) -> TaskResult:
        return self.record_task_results([result])[0]

    def record_task_results(self, batch: Sequence[TaskResult]) -> list[TaskResult]:
        """Record every result of ``batch`` in one transaction; those already recorded are kept."""
        rows = [_values(r) for r in batch]
        if not rows:
            return []
        with self._write() as connection:
            ids = [row["id"] for row in rows]
            existing = {
                r.id: _result(r) for r in connection.execute(sa.select(results).where(results.c.id.in_(ids)))
            }
            for result, row in zip(batch, rows, strict=True):
                if row["id"] in existing:
                    if _comparable(existing[row["id"]]) != _comparable(result):
                        raise TaskResultConflict(
                            f"task result {row['id']} is already recorded with other content",
                            result_id=row["id"],
                        )
                    continue
                connection.execute(results.insert().values(**row))
                existing[row["id"]] = result
        return [existing[row["id"]] for row in rows]

    def get_task_result(self, result_id: str) -> TaskResult:
        with self._read() as connection:
            row = connection.execute(sa.select(results).where(results.c.id == result_id)).first()
        if row is None:
            raise NotFound(f"no task result {result_id}", kind="task result", key=result_id)
        return _result(row)

    def list_task_results(
        self,
        task: str | None = None,
        chip: str | None = None,
        qid: str | None = None,
        day: str | None = None,
    ) -> list[TaskResult]:
        """The results matching every filter given, oldest first."""
        query = sa.select(results).order_by(results.c.created_at, results.c.id)
        for column, value in (("task", task), ("chip", chip), ("qid", qid), ("day", day)):
            if value is not None:
                query = query.where(results.c[column] == value)
        with self._read() as connection:
            return [_result(r) for r in connection.execute(query)]

    def latest_task_results(self, task: str, chip: str) -> list[TaskResult]:
        """The latest evaluable result (completed, with a figure) of ``task`` per qid of ``chip``, by qid."""
        rank = (
            sa.func.row_number()
            .over(partition_by=results.c.qid, order_by=(results.c.created_at.desc(), results.c.id.desc()))
            .label("rank")
        )
        ranked = (
            sa.select(results, rank)
            .where(
                results.c.task == task,
                results.c.chip == chip,
                results.c.status == "completed",
                results.c.figure_count > 0,
            )
            .subquery()
        )
        query = sa.select(*(ranked.c[name] for name in _FIELDS)).where(ranked.c.rank == 1)
        with self._read() as connection:
            return sorted((_result(r) for r in connection.execute(query)), key=lambda r: _qid_key(r.qid))


def _qid_key(qid: str) -> tuple[int, ...]:
    return tuple(int(part[1:]) for part in qid.split("-"))


def _values(result: TaskResult) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    data["created_at"] = result.created_at
    data["figure_count"] = len(result.figures)
    return data


def _comparable(result: TaskResult) -> dict[str, Any]:
    data = result.model_dump(mode="json", exclude={"created_at"})
    data["created_at"] = result.created_at.timestamp()
    return data


def _result(row: sa.Row) -> TaskResult:
    from qsolve.calibration.task_result import TaskResult

    return TaskResult.model_validate({name: getattr(row, name) for name in _FIELDS})
