"""trackrecord.duckdb and trackrecord.sql work in the DuckDB 1.x an analyst installs from the package index
(issue 11): their views name exactly the files the state database recorded (issue 34: no glob, so a file
the state database never recorded is never read), with no ``allow_empty`` (which 1.x lacks); a filing
leaves the database as it is (issue 24) and the next reading command brings it up to date.

The first tests need no DuckDB 1.x. The others use the DuckDB 1.5 of ``REPO/.venv-duckdb15``, which
``.ci/run`` makes (``tests/duckdb15.py``: skipped, saying how to make it, where it is missing locally).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from qsolve.cli.trackrecord import add_commands
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, compact, connect, ensure_views, file_rows
from qsolve_pipeline.storage.trackrecord.layout import Layout
from tests.duckdb15 import cli1, python1

from .builders import EXPECTED, EXPECTED_CARDS, scenario
from .test_analyst import SCENARIO_VERSIONS, analyst

RUN_VIEWS = sorted({*EXPECTED, "filed_rows", "latest_candidates"})  # the views with a run_id
EVERY_VIEW = sorted(
    {*RUN_VIEWS, "versions", "workflow_cards", "on_devices", "method_objectives", "nondeterministic"}
)
GLOB = re.compile(r"[*?\[\]{}]")


def file_scenario(home: Path) -> None:
    """The scenario in overlapping batches, compacted midway, with a file qsolve did not write."""
    rows = scenario()
    file_rows(rows[:8], home)
    compact(home)
    file_rows(rows[6:12], home)  # r07 and r08 filed again
    (home / "trackrecord" / "b-0000.parquet").write_bytes(b"PAR1 not a Parquet file PAR1")
    file_rows(rows[11:], home)  # r12 filed again
    with pytest.warns(TrackRecordWarning, match="b-0000.parquet"):
        ensure_views(home)  # what any command but filing does: the garbage set aside


def listed_files(sql: str) -> list[str]:
    """The paths every ``read_parquet(...)`` of ``sql`` names: one glob, or a list (``list_value``)."""
    lists = re.findall(r"read_parquet\((?:\[|list_value\()?((?:'(?:[^']|'')*'(?:, )?)+)[\]),]", sql)
    assert lists, sql
    return [p.replace("''", "'") for inner in lists for p in re.findall(r"'((?:[^']|'')*)'", inner)]


def recorded_files(home: Path) -> list[str]:
    """The names of the files the state database's track-record log holds (its live set)."""
    from qsolve_pipeline.storage.state import connect as connect_state

    with connect_state(home=home) as db:
        return sorted(f.name for f in db.trackrecord_live_files())


def test_the_database_names_exactly_the_recorded_files(home):
    file_scenario(home)
    layout = Layout(home)
    assert (layout.folder / "left-out" / "b-0000.parquet").is_file()  # set aside, named by no view
    con = duckdb.connect(str(layout.database), read_only=True)
    views = dict(con.sql("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall())
    con.close()
    assert sorted(views) == EVERY_VIEW
    named: set[str] = set()
    for name, sql in views.items():
        assert "allow_empty" not in sql, name
        named.update(listed_files(sql) if "read_parquet" in sql else [])
    recorded = recorded_files(home)
    assert recorded and "b-0000.parquet" not in recorded
    # no glob: each recorded file, one by one, every one there (no schema file beside them: issue 34)
    assert named == {str(layout.folder / n) for n in recorded}
    assert not any(GLOB.search(Path(p).name) for p in named)
    assert all(Path(p).is_file() for p in named)


def test_filing_leaves_the_database_as_it_is_and_a_reading_command_brings_it_up_to_date(home, tmp_path):
    file_rows(scenario()[:3], home)
    assert ensure_views(home)  # what a reading command does
    database = Layout(home).database
    before = database.stat().st_ino
    file_rows(scenario()[3:], home)
    assert database.stat().st_ino == before  # a filing stays quick: the database is as it was
    compact(home)  # brings it up to date over the merged files
    out = analyst(database, sorted(EXPECTED), tmp_path)
    assert {k: set(out[k]) for k in EXPECTED} == EXPECTED


def test_a_home_whose_path_has_a_glob_character_names_its_files(tmp_path, monkeypatch):
    home = tmp_path / "home[1]"
    file_rows(scenario()[:3], home)
    file_rows(scenario()[3:], home)
    ensure_views(home)  # what any reading command does
    con = duckdb.connect(str(Layout(home).database), read_only=True)
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'filed_rows'").fetchall()[0][0]
    out = {r[0] for r in con.sql("SELECT run_id FROM current").fetchall()}
    con.close()
    assert all(Path(p).is_file() for p in listed_files(sql))
    assert out == EXPECTED["current"]


def test_the_sql_file_names_the_same_files_relative_to_the_home(home, tmp_path, monkeypatch):
    file_scenario(home)
    text = (home / "trackrecord.sql").read_text()
    assert "allow_empty" not in text
    assert set(listed_files(text)) == {f"trackrecord/{n}" for n in recorded_files(home)}
    monkeypatch.chdir(home)  # run from the home, by plain DuckDB
    con = duckdb.connect()
    con.execute(text)
    assert {r[0] for r in con.sql("SELECT run_id FROM current").fetchall()} == EXPECTED["current"]
    con.close()


def test_a_removed_sql_file_is_written_again(home):
    file_scenario(home)
    text = (home / "trackrecord.sql").read_text()
    (home / "trackrecord.sql").unlink()
    assert ensure_views(home)
    assert (home / "trackrecord.sql").read_text() == text


def test_a_compaction_rebuilds_the_database_over_the_merged_files(home, tmp_path):
    rows = scenario()
    file_rows(rows[:9], home)
    file_rows(rows[9:], home)
    done = compact(home)
    assert done.merged_files == 2
    out = analyst(home / "trackrecord.duckdb", sorted(EXPECTED), tmp_path)  # no missing b- file
    assert {k: set(out[k]) for k in EXPECTED} == EXPECTED


# --- with DuckDB 1.x ------------------------------------------------------------------------------------


def test_duckdb_1x_reads_every_view(home, tmp_path):
    file_scenario(home)
    out = analyst(home / "trackrecord.duckdb", RUN_VIEWS, tmp_path, python=python1())
    assert out.pop("loaded") == []
    assert {w: (v, p, t, h) for w, v, p, t, h in out.pop("cards")} == EXPECTED_CARDS
    assert out.pop("versions") == SCENARIO_VERSIONS
    assert {k: set(out[k]) for k in EXPECTED} == EXPECTED
    assert len(out["filed_rows"]) == len(EXPECTED["rows"]) + 3  # r07, r08 and r12 as filed twice


def cli_json(cli: str, *args: str, cwd: Path) -> list[dict]:
    done = subprocess.run([cli, *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def test_the_duckdb_1x_command_line_reads_the_database_and_runs_the_sql_file(home, tmp_path):
    cli = cli1()
    file_scenario(home)
    counts = " UNION ALL ".join(f"SELECT '{v}' AS view, count(*) AS n FROM {v}" for v in EVERY_VIEW)
    want = {v: len(EXPECTED[v]) for v in EXPECTED}
    want |= {"workflow_cards": 2, "versions": 3}
    with connect(home) as con:  # the scenario's rounds of one case differ (each row its own hash)
        want["nondeterministic"] = con.execute("SELECT count(*) FROM nondeterministic").fetchone()[0]
    assert want["nondeterministic"] > 0
    database = str(home / "trackrecord.duckdb")
    got = {
        r["view"]: r["n"] for r in cli_json(cli, "-readonly", database, "-json", "-c", counts, cwd=tmp_path)
    }
    assert {v: got[v] for v in want} == want
    # trackrecord.sql from the home folder, with no database at all.
    from_sql = cli_json(cli, "-init", "trackrecord.sql", "-json", "-c", counts, cwd=home)
    assert {r["view"]: r["n"] for r in from_sql} == got


def run(*argv: str) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_duckdb_1x_reads_a_moved_home_once_a_command_ran_there(home, tmp_path, monkeypatch, capsys):
    python = python1()
    file_scenario(home)
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    shutil.rmtree(home)
    monkeypatch.setenv("QSOLVE_HOME", str(moved))
    assert run("query", "SELECT 1") == 0
    out = analyst(moved / "trackrecord.duckdb", sorted(EXPECTED), tmp_path, python=python)
    assert {k: set(out[k]) for k in EXPECTED} == EXPECTED
