"""``qsolve query`` and ``qsolve page`` through their argparse wiring: formats, outputs, exit codes."""

from __future__ import annotations

import argparse
import csv
import io
import json
import time

import pyarrow.parquet as pq
import pytest

from qsolve.cli.trackrecord import add_commands
from qsolve_pipeline.storage.trackrecord import file_rows
from qsolve_pipeline.storage.trackrecord.views import ensure_views

from .builders import scenario


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def filed(home):
    file_rows(scenario(), home)
    ensure_views(home)  # as the first reading command does (a filing leaves trackrecord.duckdb as it is)
    return home


SQL = "SELECT workflow, passed, total, headline_accuracy FROM workflow_cards ORDER BY workflow"


def test_query_prints_a_table(filed, capsys):
    assert run("query", SQL) == 0
    out = capsys.readouterr().out
    assert "max-cut" in out and "qubo" in out and "0.95" in out and "2 rows" in out


def test_query_as_csv_and_json(filed, capsys):
    assert run("query", SQL, "--format", "csv") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["workflow"], r["passed"], r["total"]) for r in rows] == [
        ("max-cut", "2", "3"),
        ("qubo", "2", "3"),
    ]
    assert (
        run("query", "SELECT run_id, recorded_at, passed FROM rows WHERE run_id = 'r01'", "--format", "json")
        == 0
    )
    assert json.loads(capsys.readouterr().out) == [
        {"run_id": "r01", "recorded_at": "2026-01-01T00:00:00+00:00", "passed": True}
    ]


def test_query_to_files(filed, tmp_path, capsys):
    out = tmp_path / "current.parquet"
    assert run("query", "SELECT * FROM current", "--format", "parquet", "--output", str(out)) == 0
    assert pq.read_table(out).num_rows == 15
    out = tmp_path / "cards.json"
    assert run("query", SQL, "--format", "json", "--output", str(out)) == 0
    assert [c["workflow"] for c in json.loads(out.read_text())] == ["max-cut", "qubo"]
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELEC 1", "syntax error"),
        ("SELECT nope FROM rows", "nope"),
        ("SELECT * FROM no_such_view", "no_such_view"),
        ("", "qsolve query runs one SELECT at a time: got no statement"),
        ("select 1; select 2", "qsolve query runs one SELECT at a time: got 2 statements"),
        ("SELECT * FROM read_parquet('trackrecord/*.parquet')", "name them by absolute path"),
    ],
)
def test_bad_sql_exits_2_with_the_reason(filed, capsys, sql, message):
    assert run("query", sql) == 2
    err = capsys.readouterr().err
    assert err.startswith("qsolve query: ") and message in err


def test_query_output_that_cannot_be_written(filed, tmp_path, capsys):
    assert run("query", SQL, "--format", "csv", "--output", str(tmp_path / "no" / "such" / "x.csv")) == 2
    assert "No such file" in capsys.readouterr().err


def test_page_prints_the_four_sections(filed, capsys):
    assert run("page", "max-cut") == 0
    out = capsys.readouterr().out
    assert "max-cut 1.1.0 (current)" in out
    assert (
        "Headline accuracy 95.0% (median of 3 track-record rows); 2 of 3 cases passed on sim- targets" in out
    )
    for title in ["Track record", "Noise-model estimate", "On quantum hardware", "Earlier results"]:
        assert title in out
    assert "Matches the best classical answer" in out and "1.0.0 (earlier)" in out


def test_page_of_a_version_and_as_json(filed, capsys):
    assert run("page", "max-cut", "--version", "1.0.0", "--json") == 0
    page = json.loads(capsys.readouterr().out)
    assert (page["version"], page["current_version"], page["passed"], page["total"]) == (
        "1.0.0",
        "1.1.0",
        1,
        2,
    )
    assert sorted(r["run_id"] for r in page["track_record"]) == ["r02", "r03"]


def test_page_of_an_unknown_workflow_or_version_exits_2(filed, capsys):
    assert run("page", "nope") == 2
    assert capsys.readouterr().err == "qsolve page: no track record for nope\n"
    assert run("page", "max-cut", "--version", "7") == 2
    assert "recorded versions: 1.0.0, 1.1.0" in capsys.readouterr().err


def test_no_prefect_is_imported():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, qsolve_pipeline.storage.trackrecord, qsolve.cli.trackrecord;"
        "print(any(m.split('.')[0] in ('prefect', 'qiskit') for m in sys.modules))"
    )
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo)
    assert done.stdout == "False\n", done.stderr


def test_reading_an_empty_home_creates_nothing(home, capsys):
    assert run("query", "SELECT * FROM workflow_cards") == 0
    assert "0 rows" in capsys.readouterr().out
    assert run("page", "max-cut") == 2
    assert not home.exists()


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("COPY (SELECT 1) TO '{home}/state.db'", "statement 1 is COPY"),
        ("COPY (SELECT 1) TO '{home}/trackrecord/rows-forged.parquet'", "statement 1 is COPY"),
        ("SELECT 1; COPY current TO '{home}/x.csv'", "statement 2 is COPY"),
        ("ATTACH '{home}/other.db'", "statement 1 is ATTACH"),
        ("INSTALL httpfs", "statement 1 is INSTALL, not a SELECT (no extension loads here"),
        ("LOAD httpfs", "statement 1 is LOAD"),
        ("CREATE TABLE t AS SELECT 1", "statement 1 is CREATE"),
        ("SET enable_external_access = true", "statement 1 is SET"),
        ("SELECT * FROM read_csv('/etc/hostname')", "Permission Error"),
        ("SELECT * FROM read_parquet('{home}/../*/trackrecord/*.parquet')", "Permission Error"),
    ],
)
def test_query_reads_and_nothing_else(filed, capsys, sql, why):
    def written() -> list:  # less the query's temporary folder, cache/, which it empties as it ends
        return sorted(p.relative_to(filed) for p in filed.rglob("*") if p != filed / "cache")

    before = written()
    assert run("query", sql.format(home=filed)) == 2
    assert why in capsys.readouterr().err
    assert written() == before  # nothing written
    assert run("query", SQL) == 0  # and every later query still works


def test_the_page_shows_the_latest_published_version_even_before_it_has_results(filed, capsys, monkeypatch):
    from qsolve_pipeline.storage.state import connect

    monkeypatch.setenv("QSOLVE_HOME", str(filed))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    assert run("page", "max-cut", "--json") == 0
    before = json.loads(capsys.readouterr().out)
    assert before["track_record"]  # the recorded version, with its rows
    with connect(home=filed) as db:
        db.publish_version("max-cut", "9.0.0", "d" * 64, [])
    assert run("page", "max-cut", "--json") == 0
    after = json.loads(capsys.readouterr().out)
    assert after["version"] == after["current_version"] == "9.0.0"
    assert after["track_record"] == [] and after["noise_model_estimate"] == [] and after["total"] == 0
    assert after["versions"][-1] == "9.0.0" and before["version"] in after["versions"]
    assert run("page", "max-cut", "--version", before["version"], "--json") == 0  # the earlier one still
    assert json.loads(capsys.readouterr().out)["track_record"] == before["track_record"]


def test_the_page_shows_the_metric_note_beside_the_accuracy(filed, capsys, monkeypatch):
    from qsolve.workflow.publication import digest_of, pack
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.state import connect
    from tests.conftest import REPO

    monkeypatch.setenv("QSOLVE_HOME", str(filed))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    packed = pack(REPO / "workflows" / "max-cut")
    BlobStore(filed).put(packed)
    with connect(home=filed) as db:
        db.publish_version("max-cut", "9.1.0", digest_of(packed), [])
    assert run("page", "max-cut") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "The accuracy: " in out and "Noise-model estimate (not in the headline): none" in out


def test_a_failing_row_with_no_message_shows_the_bound_it_broke(home, capsys, monkeypatch):
    from qsolve.workflow.publication import digest_of, pack
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.state import connect
    from tests.conftest import REPO
    from tests.storage.trackrecord.builders import row

    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    packed = pack(REPO / "workflows" / "max-cut")
    BlobStore(home).put(packed)
    with connect(home=home) as db:
        db.publish_version("max-cut", "1.0.0", digest_of(packed), [])
    below = row("r1", case="complete-8-weighted", passed=False, accuracy=0.98, message=None,
                quantum=-20.0, baseline=-26.5)  # fmt: skip
    file_rows([below], home)
    assert run("page", "max-cut") == 0
    assert "FAIL: gap 0.2453 > max_gap" in capsys.readouterr().out  # the table may wrap the bound
    assert run("page", "max-cut", "--json") == 0
    assert json.loads(capsys.readouterr().out)["bounds"] == {"r1": "gap 0.2453 > max_gap 0.05"}


def test_a_query_past_its_time_out_is_stopped_in_one_line(filed, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    assert run("query", "select count(*) from range(1000000000000)", "--timeout", "1") == 1
    assert time.monotonic() - started < 120  # a run to its end would take hours
    err = capsys.readouterr().err
    said = "qsolve query: stopped at its time limit of 1 s (--timeout S gives it longer; 0: no limit)\n"
    assert err == said
    assert run("query", SQL, "--timeout", "0") == 0  # 0: no limit, and the next query runs as before


def test_the_default_time_out_is_60_seconds(filed, monkeypatch):
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    assert parser.parse_args(["query", SQL]).timeout == 60


@pytest.mark.parametrize("seconds", ["-1", "soon", "inf", "nan"])
def test_a_time_out_that_is_not_seconds_is_a_usage_error(filed, capsys, seconds):
    with pytest.raises(SystemExit) as stopped:
        run("query", SQL, "--timeout", seconds)
    assert stopped.value.code == 2
    assert f"{seconds!r}: seconds" in capsys.readouterr().err


def test_a_query_over_its_memory_limit_fails_naming_it(filed, capsys, monkeypatch):
    monkeypatch.setenv("QSOLVE_QUERY_MEMORY", "64MB")
    assert run("query", "select list(range) from range(100000000)") == 1
    err = capsys.readouterr().err
    assert err.startswith("qsolve query: over its memory limit of 61.0 MiB (")
    assert "QSOLVE_QUERY_MEMORY raises it" in err and err.count("\n") == 1
    assert run("query", SQL) == 0  # a query within it runs


def test_the_memory_limit_is_a_quarter_of_the_machine_by_default(filed, capsys, monkeypatch):
    monkeypatch.delenv("QSOLVE_QUERY_MEMORY", raising=False)
    assert run("query", "select current_setting('memory_limit') AS m", "--format", "csv") == 0
    default = capsys.readouterr().out.splitlines()[1]
    monkeypatch.setenv("QSOLVE_QUERY_MEMORY", "25%")
    assert run("query", "select current_setting('memory_limit') AS m", "--format", "csv") == 0
    assert capsys.readouterr().out.splitlines()[1] == default
    monkeypatch.setenv("QSOLVE_QUERY_MEMORY", "80%")  # DuckDB's own default, which qsolve does not keep
    assert run("query", "select current_setting('memory_limit') AS m", "--format", "csv") == 0
    assert capsys.readouterr().out.splitlines()[1] != default


def test_a_memory_limit_duckdb_cannot_read_is_a_usage_error(filed, capsys, monkeypatch):
    monkeypatch.setenv("QSOLVE_QUERY_MEMORY", "lots")
    assert run("query", SQL) == 2
    err = capsys.readouterr().err
    assert err.startswith("qsolve query: QSOLVE_QUERY_MEMORY='lots' is not a size DuckDB reads (")


def test_a_query_spills_under_the_home_never_the_current_folder(filed, capsys, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("QSOLVE_QUERY_MEMORY", "64MB")
    # sorting 20 million rows needs more than 64 MB: DuckDB spills to its temporary folder
    sql = "select count(*) AS n from (select range from range(20000000) order by hash(range)) LIMIT 1"
    assert run("query", sql, "--format", "csv") == 0
    assert capsys.readouterr().out == "n\n20000000\n"
    assert list(work.iterdir()) == []  # no .tmp here
    assert list((filed / "cache").iterdir()) == []  # its own folder under the home, removed after
    assert run("query", "select current_setting('temp_directory') AS t", "--format", "csv") == 0
    assert capsys.readouterr().out.splitlines()[1].startswith(str(filed / "cache" / "query-"))
