"""Two maintenance passes and a rebuild at once, as three processes (issue 24, item 3, tested
independently): while runs keep ending, every row is in the track record exactly once afterwards, each
run is marked filed, and the analysts' ``trackrecord.duckdb`` reads the same. SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import duckdb
import pytest

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import StateDB, Version
from qsolve_pipeline.storage.trackrecord.layout import Layout
from tests.conftest import REPO

from .test_rebuild import ended, filed_home, run_ids

PASS = """
import sys, warnings
from pathlib import Path
from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import compact
warnings.simplefilter("ignore")
home = Path(sys.argv[1])
with connect(sys.argv[2], home=home) as db:
    for _ in range(int(sys.argv[4])):
        if sys.argv[3] == "rebuild":
            maintenance.rebuild_track_record(db, home)
        else:
            maintenance.refile_lost_runs(db, home)
            maintenance.file_ended_runs(db, home)
            compact(home, db=db)
"""


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def test_two_passes_and_a_rebuild_at_once_keep_every_row_once(db, version, database_url, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    env = {**os.environ, "PYTHONPATH": str(REPO), "QSOLVE_HOME": str(home)}
    command = [sys.executable, "-c", PASS, str(home), database_url]
    procs = [
        subprocess.Popen([*command, kind, "6"], env=env, stderr=subprocess.PIPE)
        for kind in ("pass", "pass", "rebuild")
    ]
    for i in range(4):  # runs ending meanwhile
        ids += ended(db, version, 3, start=12 + 3 * i)
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=600)
        if p.returncode != 0:
            errors.append(err.decode()[-2000:])
    assert not errors, errors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while db.count_unfiled():
            maintenance.file_ended_runs(db, home)
        maintenance.refile_lost_runs(db, home)
    assert db.count_filed() == len(ids)
    assert run_ids(home) == sorted(ids) and run_ids(home, "current") == sorted(ids)
    con = duckdb.connect(str(Layout(home).database), read_only=True)
    try:
        assert sorted(r[0] for r in con.sql("SELECT run_id FROM rows").fetchall()) == sorted(ids)
    finally:
        con.close()
    assert not list((Layout(home).folder / "left-out").glob("*"))  # nothing of qsolve's set aside


def test_a_rebuild_killed_then_run_again_shows_every_row_once(db, version, database_url, tmp_path):
    """``qsolve maintenance --rebuild`` killed (SIGKILL, a failpoint) between writing and removing, then
    run again: every run once, the old files gone, no file set aside."""
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "QSOLVE_HOME": str(home),
        "QSOLVE_DATABASE_URL": database_url,
    }
    command = [sys.executable, "-m", "qsolve.cli", "maintenance", "--rebuild"]
    killed = subprocess.run(
        command, env={**env, "QSOLVE_FAILPOINT": "trackrecord.rebuilt"}, capture_output=True, timeout=300
    )
    assert killed.returncode == -9, killed.stderr
    assert run_ids(home) == sorted(ids)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert run_ids(home) == sorted(ids) and run_ids(home, "current") == sorted(ids)
    assert [p.name[:2] for p in Layout(home).files()] == ["h-"]
    assert not (Layout(home).folder / "left-out").exists()
