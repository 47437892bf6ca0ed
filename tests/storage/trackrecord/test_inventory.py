"""A Parquet file in the track record's folder that qsolve did not write, or a damaged one, is named in a
warning, left out of the views and of compaction, and set aside into ``trackrecord/left-out/`` (never
removed); the good rows are still read (issue 11, point 5; issue 24)."""

from __future__ import annotations

import argparse
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from qsolve.cli.trackrecord import add_commands
from qsolve_pipeline.storage.trackrecord import (
    Layout,
    TrackRecordWarning,
    compact,
    connect,
    file_rows,
    inventory,
    page,
    views,
)
from qsolve_pipeline.storage.trackrecord.row import COLUMNS

from .builders import row
from .test_analyst import analyst, as_a_new_process


def read_by_duckdb(database: Path, view: str) -> list[str]:
    """The run ids plain DuckDB reads from ``database``'s ``view``, in this process (that a process with no
    qsolve code loaded reads them too is tests/storage/trackrecord/test_analyst.py's)."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        return sorted(r[0] for r in con.sql(f"SELECT run_id FROM {view}").fetchall())
    finally:
        con.close()


def good_file(folder: Path) -> Path:
    return next(folder.glob("b-*.parquet"))


def forged(folder: Path) -> pa.Table:
    """A real file's rows under other run ids: were the file read, they would show."""
    table = pq.read_table(good_file(folder))
    ids = pc.binary_join_element_wise("forged-", table.column("run_id"), "")
    return table.set_column(table.schema.get_field_index("run_id"), "run_id", ids)


def garbage(folder: Path) -> Path:
    path = folder / "b-0000.parquet"
    path.write_bytes(b"PAR1" + bytes(range(256)) * 3)
    return path


def cut_short(folder: Path) -> Path:
    path = folder / "b-1111.parquet"
    data = good_file(folder).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def empty(folder: Path) -> Path:
    path = folder / "h-2222.parquet"
    path.write_bytes(b"")
    return path


def other_columns(folder: Path) -> Path:
    path = folder / "b-3333.parquet"
    pq.write_table(pa.table({"run_id": ["forged-x"], "score": [1.0]}), path)
    return path


def other_types(folder: Path) -> Path:
    path = folder / "o-4444.parquet"
    table = forged(folder)
    pq.write_table(
        table.set_column(
            table.schema.get_field_index("shots"), "shots", pc.cast(table["shots"], pa.string())
        ),
        path,
    )
    return path


def not_by_qsolve(folder: Path) -> Path:
    """The track record's columns and types, written by another tool: no qsolve metadata."""
    path = folder / "h-5555.parquet"
    pq.write_table(forged(folder).replace_schema_metadata(None), path)
    return path


def not_a_qsolve_name(folder: Path) -> Path:
    path = folder / "extra.parquet"
    pq.write_table(forged(folder), path)
    return path


BAD: dict[str, tuple[Callable[[Path], Path], str]] = {
    "garbage bytes": (garbage, "not a Parquet file"),
    "a truncated copy": (cut_short, "not a Parquet file"),
    "an empty file": (empty, "not a Parquet file"),
    "other columns": (
        other_columns,
        f"missing workflow, version, case_name, target and {len(COLUMNS) - 5} more; others: score",
    ),
    "other types": (other_types, "shots is string, not int64"),
    "no qsolve metadata": (not_by_qsolve, "qsolve did not write it"),
    "another name": (not_a_qsolve_name, "not a name qsolve gives its files"),
}


@pytest.fixture(params=sorted(BAD))
def bad(request, home) -> tuple[Path, str]:
    """A home with runs a and b (their batch files) and one bad file; returns it and the reason."""
    file_rows([row("a", case="one")], home)
    file_rows([row("b", case="two", minute=1)], home)
    make, why = BAD[request.param]
    path = make(home / "trackrecord")
    return path, why


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def run_ids(home: Path, view: str = "rows") -> list[str]:
    con = connect(home)
    try:
        return [r[0] for r in con.sql(f"SELECT run_id FROM {view} ORDER BY run_id").fetchall()]
    finally:
        con.close()


def set_aside(path: Path) -> Path:
    return path.parent / "left-out" / path.name


def test_the_views_leave_the_file_out_and_a_warning_names_it(home, bad):
    path, why = bad
    before = path.read_bytes()
    said = re.escape(str(path)) + ".*" + re.escape(why) + ".*moved to trackrecord/left-out/"
    with pytest.warns(TrackRecordWarning, match=said):
        assert run_ids(home) == ["a", "b"]
    # set aside whole, never removed: the next command has nothing to warn of
    assert not path.exists() and set_aside(path).read_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_ids(home, "current") == ["a", "b"]


def test_qsolve_query_and_page_name_it_on_standard_error(home, bad, capsys):
    path, why = bad
    assert run("query", "SELECT run_id FROM rows ORDER BY 1", "--format", "csv") == 0
    out, err = capsys.readouterr()
    assert out == "run_id\na\nb\n"
    assert f"qsolve query: warning: {path}: " in err and why in err and "left-out" in err
    assert run("page", "max-cut") == 0
    out, err = capsys.readouterr()
    assert "0 of 0" not in out and "warning" not in err


def test_the_library_page_reads_the_good_rows(home, bad):
    path, _ = bad
    with pytest.warns(TrackRecordWarning, match=re.escape(str(path))):
        p = page("max-cut", home=home)
    assert sorted(r.run_id for r in p.track_record) == ["a", "b"]


def test_trackrecord_duckdb_reads_the_good_rows(home, bad):
    path, why = bad
    with pytest.warns(TrackRecordWarning):
        run_ids(home)  # any command brings trackrecord.duckdb up to date
    assert read_by_duckdb(home / "trackrecord.duckdb", "rows") == ["a", "b"]
    assert read_by_duckdb(home / "trackrecord.duckdb", "current") == ["a", "b"]


def test_a_file_left_out_later_is_set_aside_before_it_breaks_the_globs(home, bad):
    path, _ = bad
    with pytest.warns(TrackRecordWarning):
        run_ids(home)
    moved = set_aside(path)
    moved.rename(path)  # back again, under the database's globs
    file_rows([row("c", case="three", minute=2)], home)  # filing looks only at the file it writes
    with pytest.warns(TrackRecordWarning, match=re.escape(str(path))):
        assert run_ids(home) == ["a", "b", "c"]  # the next command that reads sets it aside again
    assert read_by_duckdb(home / "trackrecord.duckdb", "rows") == ["a", "b", "c"]


def test_compaction_sets_it_aside(home, bad):
    path, _ = bad
    before = path.read_bytes()
    with pytest.warns(TrackRecordWarning, match=re.escape(str(path))):
        done = compact(home)
    assert done.merged_files == 2 and done.left_out == (path,)
    assert set_aside(path).read_bytes() == before
    layout = Layout(home)
    assert len(layout.files("h")) == 1 and not layout.files("b")
    assert run_ids(home) == ["a", "b"]


def test_a_damaged_schema_file_is_replaced(home, tmp_path):
    file_rows([row("a")], home)
    schema_file = Layout(home).schema_file
    schema_file.write_bytes(b"garbage")
    as_a_new_process()
    assert run_ids(home) == ["a"]  # reading repaired it (it holds no rows)
    assert inventory.check_file(schema_file) is None
    assert analyst(home / "trackrecord.duckdb", ["rows"], tmp_path)["rows"] == ["a"]


def test_footers_are_read_once_per_file(home, monkeypatch):
    file_rows([row("a")], home)
    file_rows([row("b", minute=1)], home)
    read: list[str] = []
    check = inventory._check

    def counted(path: Path):
        if path.parent == home / "trackrecord":  # not the schema file a reader keeps in a folder of its own
            read.append(path.name)
        return check(path)

    monkeypatch.setattr(inventory, "_check", counted)
    run_ids(home)
    assert read == []  # checked when this process filed them
    as_a_new_process()
    run_ids(home)
    run_ids(home)
    assert sorted(read) == sorted(p.name for p in (home / "trackrecord").glob("*.parquet"))  # once each
    read.clear()
    bad = garbage(home / "trackrecord")
    with pytest.warns(TrackRecordWarning):
        run_ids(home)
    run_ids(home)
    assert read == [bad.name]  # checked once, then set aside


def test_a_home_whose_database_cannot_be_written_is_still_read(home, monkeypatch, capsys):
    file_rows([row("a")], home)
    garbage(home / "trackrecord")
    # a filing does not build it (issue 34: it stays quick); the query would, which the home refuses
    assert not (home / "trackrecord.duckdb").exists()

    def refused(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(views, "_build", refused)
    assert run("query", "SELECT run_id FROM rows", "--format", "csv") == 0
    out, err = capsys.readouterr()
    assert out == "run_id\na\n"
    assert "trackrecord.duckdb: not brought up to date ([Errno 13] Permission denied)" in err
    assert "b-0000.parquet" in err


def test_no_warning_for_a_home_with_only_qsolve_files(home):
    file_rows([row("a")], home)
    compact(home)
    file_rows([row("b", minute=1)], home)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrackRecordWarning)
        assert run_ids(home) == ["a", "b"]
        compact(home)
        assert run_ids(home) == ["a", "b"]
