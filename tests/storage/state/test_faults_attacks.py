"""A read-only home that holds a track record with a damaged batch (issue 24, item 7, tested
independently): the reading commands read the good rows; ``qsolve maintenance``, which would file the
lost runs again, says in one line that it cannot write there (it said "filed 4 runs again" and exited 0,
writing nothing); once the home is writable, the pass brings every row back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord.layout import Layout

from .test_faults import READ_ONLY, assert_one_line, qsolve
from .test_rebuild import filed_home


def test_maintenance_on_a_read_only_home_with_a_damaged_batch_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]
        ids = filed_home(db, version, home)
    (batch,) = Layout(home).files("b")
    batch.write_bytes(batch.read_bytes()[:500])  # cut short: its 4 rows unreadable
    before = sorted(os.listdir(home / "trackrecord"))
    done = qsolve(home, "query", "SELECT count(*) AS n FROM rows", "--format", "csv", mount=READ_ONLY)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.split() == ["n", "8"], done.stdout
    assert qsolve(home, "page", "max-cut", mount=READ_ONLY).returncode == 0
    done = qsolve(home, "maintenance", mount=READ_ONLY)
    assert_one_line(done, str(home), "read-only", "qsolve maintenance")
    assert sorted(os.listdir(home / "trackrecord")) == before  # nothing moved, nothing written
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
    done = qsolve(home, "maintenance")
    assert done.returncode == 0 and "filed 4 runs again" in done.stdout, (done.stdout, done.stderr)
    done = qsolve(home, "query", "SELECT run_id FROM rows ORDER BY run_id", "--format", "csv")
    assert done.stdout.split() == ["run_id", *ids], done.stdout


def test_maintenance_on_a_corrupt_database_says_so_in_one_line(tmp_path: Path) -> None:
    """Was: the one line came after four tracebacks, one a task of the flow that failed."""
    home = tmp_path / "home"
    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]
        filed_home(db, version, home)
    data = bytearray((home / "state.db").read_bytes())
    data[100:4000] = b"\xff" * 3900  # the header kept, the schema's page damaged
    (home / "state.db").write_bytes(bytes(data))
    for name in ("state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    assert_one_line(qsolve(home, "maintenance"), str(home / "state.db"), "damaged")
    assert_one_line(qsolve(home, "maintenance", "--rebuild"), str(home / "state.db"), "damaged")
    # a reader reads only the files the state database recorded (issue 34): with the database damaged it
    # knows none, and says so in one line rather than trusting what lies in the folder
    before = {p: p.read_bytes() for p in (home / "trackrecord").rglob("*.parquet")}
    assert before
    queried = qsolve(home, "query", "SELECT count(*) AS n FROM rows", "--format", "csv")
    assert_one_line(queried, str(home / "state.db"), "damaged")
    assert {p: p.read_bytes() for p in (home / "trackrecord").rglob("*.parquet")} == before  # nothing touched
