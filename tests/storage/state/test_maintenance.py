"""The maintenance pass's steps, on SQLite and PostgreSQL, with a track record in a temporary folder."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import FailureReason, RunStatus, StateDB, Version
from qsolve_pipeline.storage.trackrecord.filing import file_rows
from qsolve_pipeline.storage.trackrecord.row import TrackRecordRow
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.storage.state.conftest import assert_ledger_balanced
from tests.storage.trackrecord.builders import result


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def finished(db: StateDB, version: Version, case: str) -> str:
    run = db.create_run(version, case, "sim-cpu", "history")
    db.start_run(run.id)
    db.finish_run(run.id, "finished", result=result(name=case, target="sim-cpu").model_dump(mode="json"))
    return run.id


def rows(home: Path) -> list[dict]:
    return run_sql("SELECT run_id, case_name, status, passed FROM rows ORDER BY case_name", home).to_pylist()


def test_a_pass_files_twenty_runs_oldest_first_and_says_how_many_wait(
    db: StateDB,
    version: Version,
    tmp_path: Path,
) -> None:
    ids = [finished(db, version, f"case-{i:02d}") for i in range(25)]
    crashed = db.create_run(version, "crashes", "sim-cpu", "history")
    db.start_run(crashed.id)
    failure = result(name="crashes", target="sim-cpu", passed=False, message="FAIL ValueError: no")
    db.finish_run(crashed.id, "failed", reason=FailureReason.CRASH, result=failure.model_dump(mode="json"))
    refused = db.create_run(version, "refused", "sim-cpu", "history")
    db.finish_run(refused.id, "failed", reason=FailureReason.INSUFFICIENT_CREDITS, detail="no credits")

    filed, waiting = maintenance.file_ended_runs(db, tmp_path)
    assert (filed, waiting) == (ids[:20], 6)
    filed, waiting = maintenance.file_ended_runs(db, tmp_path)
    assert (filed, waiting) == ([*ids[20:], crashed.id], 0)
    assert maintenance.file_ended_runs(db, tmp_path) == ([], 0)

    table = rows(tmp_path)
    assert len(table) == 26 and refused.id not in {r["run_id"] for r in table}
    assert {"run_id": crashed.id, "case_name": "crashes", "status": "crash", "passed": False} in table


def test_filing_again_after_a_pass_stopped_halfway_adds_no_row(
    db: StateDB,
    version: Version,
    tmp_path: Path,
) -> None:
    ids = [finished(db, version, f"case-{i}") for i in range(3)]
    file_rows([TrackRecordRow.from_run(db.get_run(i)) for i in ids], tmp_path)  # then it stopped
    assert maintenance.file_ended_runs(db, tmp_path) == (ids, 0)
    assert sorted(r["run_id"] for r in rows(tmp_path)) == sorted(ids)


def test_runs_made_before_leases_end_as_platform_errors_when_old_and_their_holds_are_released(
    db: StateDB,
    version: Version,
) -> None:
    db.grant("alice", 100)
    running = db.create_run(version, "a", "sim-cpu", "hardware")
    db.hold("alice", running.id, 30)
    db.start_run(running.id)
    created = db.create_run(version, "b", "sim-cpu", "hardware")
    done = finished(db, version, "c")

    assert maintenance.end_abandoned_runs(db) == []  # young runs may still be running
    assert db.release_stale_holds(maintenance.ABANDONED_AFTER) == []
    assert db.balance("alice") == Decimal(70)

    assert maintenance.end_abandoned_runs(db, timedelta(0)) == [running.id, created.id]
    for run_id in (running.id, created.id):
        run = db.get_run(run_id)
        assert (run.status, run.reason, run.recordable) == (
            RunStatus.FAILED,
            FailureReason.PLATFORM_ERROR,
            False,
        )
        assert run.detail.startswith(f"abandoned: still {'running' if run_id == running.id else 'created'}")
    assert db.get_run(done).status is RunStatus.FINISHED
    assert maintenance.end_abandoned_runs(db, timedelta(0)) == []

    assert db.balance("alice") == Decimal(100)  # released as the run ended, in its transaction
    assert db.get_hold(running.id).closed
    assert db.release_stale_holds(timedelta(0)) == []
    assert_ledger_balanced(db)


def test_compaction_merges_the_filed_batches(
    db: StateDB,
    version: Version,
    tmp_path: Path,
) -> None:
    assert maintenance.compact_track_record(db, tmp_path).startswith("nothing to merge")
    for i in range(3):
        finished(db, version, f"case-{i}")
        maintenance.file_ended_runs(db, tmp_path)
    assert maintenance.compact_track_record(db, tmp_path) == (
        "merged 3 files into the latest rows (3) and older rows (0)"
    )
    assert maintenance.compact_track_record(db, tmp_path).startswith("nothing to merge")
    assert len(rows(tmp_path)) == 3


def test_the_report_says_what_the_pass_did() -> None:
    report = maintenance.MaintenanceReport(filed=["r1", "r2"], waiting=3, released=["r0"], compaction="done")
    assert report.summary().splitlines() == [
        "filed 2 runs into the track record; 3 runs wait for the next pass",
        "ended 0 runs left running by a worker that died (platform_error)",
        "released 1 stale credit hold",
        "compaction: done",
    ]
    assert "Filed: `r1`, `r2`" in report.markdown() and "Holds released: `r0`" in report.markdown()
