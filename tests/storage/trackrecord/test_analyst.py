"""An analyst opens trackrecord.duckdb with plain duckdb, no qsolve code loaded, and queries the views."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from qsolve_pipeline.storage.trackrecord import compact, ensure_views, file_rows, inventory, views
from qsolve_pipeline.storage.trackrecord.sql import run_sql

from .builders import EXPECTED, EXPECTED_CARDS, row, scenario

ANALYST = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
out = {v: sorted(r[0] for r in con.sql(f"SELECT run_id FROM {v}").fetchall()) for v in sys.argv[2].split(",")}
out["cards"] = con.sql(
    "SELECT workflow, current_version, passed, total, round(headline_accuracy, 9)"
    " FROM workflow_cards ORDER BY 1"
).fetchall()
out["versions"] = con.sql("SELECT workflow, version, is_current FROM versions ORDER BY 1, 2").fetchall()
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in ("qsolve_pipeline", "qsolve"))
out["duckdb"] = duckdb.__version__
print(json.dumps(out))
"""
SCENARIO_VERSIONS = [["max-cut", "1.0.0", False], ["max-cut", "1.1.0", True], ["qubo", "2", True]]


def read_once(home: Path) -> None:
    """Any reading command, as docs/trackrecord.md tells an analyst to run after a filing (filing does
    not rebuild trackrecord.duckdb; the next reader does, its views naming the live files)."""
    run_sql("SELECT 1", home)


def analyst(database: Path, views: list[str], cwd: Path, python: str = sys.executable) -> dict:
    """What plain DuckDB (in ``python``, no qsolve code) reads from ``database``: the run ids of each view,
    the cards and the versions. The process runs in ``cwd``, which is not the home."""
    done = subprocess.run(
        [python, "-I", "-c", ANALYST, str(database), ",".join(views)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    del out["duckdb"]
    return out


def test_plain_duckdb_reads_the_views(home, tmp_path):
    rows = scenario()
    file_rows(rows[:8], home)
    compact(home)
    file_rows(rows[6:], home)  # r07 and r08 filed twice
    read_once(home)
    out = analyst(home / "trackrecord.duckdb", sorted(EXPECTED), tmp_path)
    assert out.pop("loaded") == []
    assert out.pop("versions") == SCENARIO_VERSIONS
    assert {w: (v, p, t, h) for w, v, p, t, h in out.pop("cards")} == EXPECTED_CARDS
    assert {k: set(v) for k, v in out.items()} == EXPECTED


def test_the_database_works_before_anything_is_filed(home, tmp_path):
    assert ensure_views(home)
    out = analyst(home / "trackrecord.duckdb", ["rows", "current", "track_record"], tmp_path)
    assert out == {"rows": [], "current": [], "track_record": [], "cards": [], "versions": [], "loaded": []}
    file_rows([row("a")], home)
    read_once(home)  # the next reader rebuilds the database, its views naming the new file
    out = analyst(home / "trackrecord.duckdb", ["rows"], tmp_path)
    assert out["rows"] == ["a"]


def test_a_moved_home_gets_its_views_rebuilt(home, tmp_path):
    file_rows([row("a")], home)
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    shutil.rmtree(home)
    assert ensure_views(moved)
    assert not ensure_views(moved)
    con = duckdb.connect(str(moved / "trackrecord.duckdb"), read_only=True)
    assert con.sql("SELECT run_id FROM rows").fetchall() == [("a",)]
    con.close()


def as_a_new_process() -> None:
    """Forget what this process knows of databases and files, as a new process would."""
    views._stored.clear()
    inventory._checked.clear()


def test_filing_does_not_wait_for_an_analyst_holding_the_database(home, tmp_path):
    file_rows([row("a")], home)
    read_once(home)
    held = duckdb.connect(str(home / "trackrecord.duckdb"))  # read-write: an exclusive lock
    as_a_new_process()
    try:
        file_rows([row("b")], home)
        # Nor does the next reader: it builds the database under a temporary name and renames it into
        # place. The analyst's open connection keeps the views it opened (naming the files then live);
        # a new one reads the new batch too.
        read_once(home)
        assert held.sql("SELECT run_id FROM rows ORDER BY 1").fetchall() == [("a",)]
        assert analyst(home / "trackrecord.duckdb", ["rows"], tmp_path)["rows"] == ["a", "b"]
    finally:
        held.close()


def test_a_database_that_does_not_read_is_rebuilt(home):
    file_rows([row("a")], home)
    (home / "trackrecord.duckdb").write_bytes(b"not a database")
    as_a_new_process()
    assert ensure_views(home)
    con = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    assert con.sql("SELECT run_id FROM rows").fetchall() == [("a",)]
    con.close()
