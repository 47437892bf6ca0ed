"""An analyst opens trackrecord.duckdb with plain duckdb, no qsolve code loaded, and queries the views."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from storage.trackrecord import compact, ensure_views, file_rows, views

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
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in ("storage", "qsolve"))
print(json.dumps(out))
"""


def analyst(database: Path, views: list[str], cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-I", "-c", ANALYST, str(database), ",".join(views)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_plain_duckdb_reads_the_views(home, tmp_path):
    rows = scenario()
    file_rows(rows[:8], home)
    compact(home)
    file_rows(rows[6:], home)  # r07 and r08 filed twice
    out = analyst(home / "trackrecord.duckdb", sorted(EXPECTED), tmp_path)
    assert out.pop("loaded") == []
    assert {w: (v, p, t, h) for w, v, p, t, h in out.pop("cards")} == EXPECTED_CARDS
    assert {k: set(v) for k, v in out.items()} == EXPECTED


def test_the_database_works_before_anything_is_filed(home, tmp_path):
    assert ensure_views(home)
    out = analyst(home / "trackrecord.duckdb", ["rows", "current", "track_record"], tmp_path)
    assert out == {"rows": [], "current": [], "track_record": [], "cards": [], "loaded": []}
    file_rows([row("a")], home)  # the views read files filed after they were made
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


def test_filing_does_not_wait_for_an_analyst_holding_the_database(home):
    file_rows([row("a")], home)
    held = duckdb.connect(str(home / "trackrecord.duckdb"))  # read-write: an exclusive lock
    views._fresh.clear()  # as a new filing process would find it
    try:
        file_rows([row("b")], home)
        assert held.sql("SELECT run_id FROM rows ORDER BY 1").fetchall() == [("a",), ("b",)]
    finally:
        held.close()


def test_a_database_that_does_not_read_is_rebuilt(home):
    file_rows([row("a")], home)
    (home / "trackrecord.duckdb").write_bytes(b"not a database")
    views._fresh.clear()  # as a new process would find it
    assert ensure_views(home)
    con = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    assert con.sql("SELECT run_id FROM rows").fetchall() == [("a",)]
    con.close()
