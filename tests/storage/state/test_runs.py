"""Runs: created, started, finished or failed with one of the seed's reasons; filed once."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state import (
    PLATFORM_REASONS,
    WORKFLOW_REASONS,
    FailureReason,
    NotFound,
    RunStateError,
    RunStatus,
    Source,
    StateDB,
    Version,
)

SEED_REASONS = {
    "platform_error",
    "backend_unavailable",
    "run_too_large",
    "insufficient_credits",
    "unsupported_target",
    "cancelled",
    "crash",
    "timeout",
}
RESULT = {"name": "ring-6", "passed": True, "gap": 0.0, "quantum": -7.0, "baseline": -7.0}


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def test_the_reasons_are_the_seeds() -> None:
    assert {r.value for r in FailureReason} == SEED_REASONS
    assert {r.value for r in WORKFLOW_REASONS} == {"crash", "timeout"}
    assert set(FailureReason) == PLATFORM_REASONS | WORKFLOW_REASONS


def test_a_run_is_created_started_and_finished(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    assert (run.workflow, run.version, run.case_name, run.target) == ("max-cut", "1.0.0", "ring-6", "sim-cpu")
    assert (run.source, run.status, run.reason, run.started_at) == (
        Source.HISTORY,
        RunStatus.CREATED,
        None,
        None,
    )
    running = db.start_run(run.id)
    assert running.status is RunStatus.RUNNING and running.started_at >= run.created_at
    done = db.finish_run(run.id, "finished", result=RESULT)
    assert done.status is RunStatus.FINISHED and done.result == RESULT and done.reason is None
    assert done.finished_at >= running.started_at
    assert done.done and done.recordable
    assert db.get_run(run.id) == done
    assert db.list_runs(version) == [done]


@pytest.mark.parametrize("reason", sorted(SEED_REASONS))
def test_every_failure_reason_is_accepted(db: StateDB, version: Version, reason: str) -> None:
    run = db.create_run(version, "ring-6", "fake:fez@1.6", "hardware")
    db.start_run(run.id)
    failed = db.finish_run(run.id, "failed", reason=reason, detail="why it stopped")
    assert (failed.status, failed.reason, failed.detail) == (RunStatus.FAILED, reason, "why it stopped")
    assert failed.recordable == (reason in ("crash", "timeout"))


def test_an_unknown_reason_is_refused(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    db.start_run(run.id)
    with pytest.raises(ValueError, match="unknown failure reason 'target_not_supported'"):
        db.finish_run(run.id, "failed", reason="target_not_supported")
    with pytest.raises(ValueError, match="unknown failure reason None"):
        db.finish_run(run.id, "failed")
    with pytest.raises(ValueError, match="no failure reason"):
        db.finish_run(run.id, "finished", reason="crash")
    with pytest.raises(ValueError):
        db.finish_run(run.id, "running")
    assert db.get_run(run.id).status is RunStatus.RUNNING


def test_the_database_itself_refuses_an_unknown_reason_or_a_failure_without_one(
    db: StateDB, version: Version
) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    for values in ({"status": "failed", "reason": "meteor"}, {"status": "failed"}, {"status": "exploded"}):
        with pytest.raises(IntegrityError), db.engine.begin() as connection:
            connection.execute(
                sa.text("UPDATE runs SET " + ", ".join(f"{k} = :{k}" for k in values) + " WHERE id = :id"),
                {**values, "id": run.id},
            )
    assert db.get_run(run.id).status is RunStatus.CREATED


def test_a_platform_failure_may_come_before_the_start_a_workflow_failure_not(
    db: StateDB, version: Version
) -> None:
    cancelled = db.create_run(version, "a", "sim-cpu", "hardware")
    assert db.finish_run(cancelled.id, "failed", reason="cancelled").reason is FailureReason.CANCELLED
    crashed = db.create_run(version, "b", "sim-cpu", "hardware")
    with pytest.raises(RunStateError, match="is created: it cannot become failed"):
        db.finish_run(crashed.id, "failed", reason="crash")
    with pytest.raises(RunStateError):
        db.finish_run(crashed.id, "finished", result=RESULT)


def test_a_run_moves_once(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    db.start_run(run.id)
    with pytest.raises(RunStateError, match="is running: it cannot become running"):
        db.start_run(run.id)
    db.finish_run(run.id, "failed", reason="timeout")
    with pytest.raises(RunStateError, match=r"is failed \(timeout\): it cannot become finished") as caught:
        db.finish_run(run.id, "finished", result=RESULT)
    assert (caught.value.run_id, caught.value.status) == (run.id, "failed")
    with pytest.raises(RunStateError):
        db.start_run(run.id)
    with pytest.raises(NotFound, match="no run nope"):
        db.start_run("nope")


def test_results_must_be_json(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    db.start_run(run.id)
    with pytest.raises(ValueError, match="result is not JSON"):
        db.finish_run(run.id, "finished", result={"gap": float("inf")})
    assert db.get_run(run.id).status is RunStatus.RUNNING


def _ended(db: StateDB, version: Version, case: str, reason: str | None = None):
    run = db.create_run(version, case, "sim-cpu", "history")
    db.start_run(run.id)
    if reason is None:
        return db.finish_run(run.id, "finished", result=RESULT)
    return db.finish_run(run.id, "failed", reason=reason)


def test_unfiled_runs_are_the_recordable_ones_oldest_first(db: StateDB, version: Version) -> None:
    db.create_run(version, "not-started", "sim-cpu", "history")
    running = db.create_run(version, "running", "sim-cpu", "history")
    db.start_run(running.id)
    first = _ended(db, version, "first")
    _ended(db, version, "platform", "backend_unavailable")
    crashed = _ended(db, version, "crashed", "crash")
    last = _ended(db, version, "last", "timeout")
    assert [r.id for r in db.unfiled_runs()] == [first.id, crashed.id, last.id]
    assert [r.id for r in db.unfiled_runs(limit=2)] == [first.id, crashed.id]


def test_marking_filed_is_idempotent(db: StateDB, version: Version) -> None:
    runs = [_ended(db, version, f"case-{i}") for i in range(25)]
    batch = db.unfiled_runs(limit=20)
    assert [r.id for r in batch] == [r.id for r in runs[:20]]
    assert db.mark_filed(r.id for r in batch) == 20
    filed_at = db.get_run(batch[0].id).filed_at
    assert filed_at is not None
    assert db.mark_filed([r.id for r in batch]) == 0
    assert db.get_run(batch[0].id).filed_at == filed_at
    assert [r.id for r in db.unfiled_runs(limit=20)] == [r.id for r in runs[20:]]
    assert db.mark_filed([runs[20].id, runs[20].id, "unknown"]) == 1
    assert db.mark_filed([]) == 0


def test_a_run_not_ended_is_not_marked_filed(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    assert db.mark_filed([run.id]) == 0
    assert db.get_run(run.id).filed_at is None
