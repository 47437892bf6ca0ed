"""An operator's attacks on the track record's files (issue 24, item 3, tested independently): a file
replaced by another valid file of other rows, damage past the footer, a symlink, a directory or a glob
character where a batch should be, and a rebuild racing a compaction. Every row comes back exactly once,
the analysts' ``trackrecord.duckdb`` still opens, nothing is removed that should not be. SQLite and
PostgreSQL."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import duckdb
import pytest

from storage import maintenance
from storage.state import StateDB, Version
from storage.trackrecord import compact
from storage.trackrecord.layout import Layout

from .test_rebuild import ended, filed_home, run_ids


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def analyst_ids(home: Path) -> list[str]:
    """The run ids as an analyst reads them: plain DuckDB on trackrecord.duckdb, from another folder."""
    con = duckdb.connect(str(Layout(home).database), read_only=True)
    try:
        return sorted(r[0] for r in con.sql("SELECT run_id FROM rows").fetchall())
    finally:
        con.close()


def a_pass(db, home: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        maintenance.refile_lost_runs(db, home)
        maintenance.file_ended_runs(db, home)
        compact(home)


def test_a_batch_replaced_by_another_valid_file_of_other_rows_is_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    layout = Layout(home)
    (batch,) = layout.files("b")
    (head,) = layout.files("h")
    shutil.copyfile(head, batch)  # 8 rows of other runs under the 4 runs' name
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids


def test_a_file_overwritten_up_to_its_footer_is_set_aside_and_its_runs_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    (head,) = Layout(home).files("h")
    data = bytearray(head.read_bytes())
    for i in range(8, len(data) // 2):  # a small file: its footer starts before the middle
        data[i] = 0xFF
    head.write_bytes(bytes(data))
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids


def damage_a_column_chunk(path: Path) -> None:
    """The run_id column's pages scrambled, the footer left whole: the checks read only the footer."""
    import pyarrow.parquet as pq

    chunk = pq.read_metadata(path).row_group(0).column(6)
    assert chunk.path_in_schema == "run_id"
    data = bytearray(path.read_bytes())
    for i in range(chunk.data_page_offset + 20, chunk.data_page_offset + chunk.total_compressed_size):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_file_damaged_past_its_footer_is_set_aside_and_its_runs_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    (head,) = Layout(home).files("h")
    damage_a_column_chunk(head)
    for _ in range(2):  # the pass that finds it (its compaction), then the pass that files its runs again
        a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    assert [p.name for p in (Layout(home).folder / "left-out").iterdir()] == [head.name]  # kept, aside


@pytest.mark.xfail(
    strict=True,
    reason="finding: a file whose column pages are damaged but whose footer is whole passes every check"
    " (they read the footer only): until a maintenance pass sets it aside, qsolve query fails with"
    " 'don't know what type:' naming no file and qsolve page with a traceback, instead of reading the"
    " other files' rows",
)
def test_the_reading_commands_read_the_good_rows_beside_a_file_damaged_past_its_footer(db, version, tmp_path):
    home = tmp_path / "home"
    filed_home(db, version, home)
    (head,) = Layout(home).files("h")
    (batch,) = Layout(home).files("b")
    import pyarrow.parquet as pq

    good = sorted(pq.read_table(batch, columns=["run_id"]).column("run_id").to_pylist())
    damage_a_column_chunk(head)
    assert run_ids(home) == good


def test_a_dangling_symlink_named_like_a_batch_breaks_no_view(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    link = Layout(home).folder / "b-0123456789abcdef0123456789abcdef.parquet"
    os.symlink(tmp_path / "nowhere.parquet", link)
    assert run_ids(home) == ids
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    assert link.is_symlink() or (Layout(home).folder / "left-out" / link.name).is_symlink()


def test_a_symlink_to_a_valid_file_elsewhere_shows_its_rows_once(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    (batch,) = Layout(home).files("b")
    outside = tmp_path / "outside.parquet"
    shutil.copyfile(batch, outside)
    os.symlink(outside, Layout(home).folder / "b-00aa.parquet")
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert maintenance.rebuild_track_record(db, home) == len(ids)
    assert outside.exists()  # only the link may go
    assert run_ids(home) == ids and analyst_ids(home) == ids


def test_a_directory_named_like_a_batch_and_a_glob_character_are_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    folder = Layout(home).folder
    (batch,) = Layout(home).files("b")
    (folder / "b-dir.parquet").mkdir()
    (folder / "b-dir.parquet" / "x").write_text("kept")
    shutil.copyfile(batch, folder / "b-[ab]*.parquet")
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert maintenance.rebuild_track_record(db, home) == len(ids)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    assert (folder / "left-out" / "b-dir.parquet" / "x").read_text() == "kept"
    assert (folder / "left-out" / "b-[ab]*.parquet").exists()


def test_a_rebuild_racing_a_compaction_loses_no_row(db, version, tmp_path, monkeypatch):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    compact(home)  # one h- file holds every run

    def meanwhile(name: str) -> None:
        if name == "trackrecord.rebuilt":  # another process's maintenance pass compacts here
            compact(home)

    monkeypatch.setattr(maintenance, "failpoint", meanwhile)
    maintenance.rebuild_track_record(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids


@pytest.mark.xfail(
    strict=True,
    reason="finding: a batch replaced by a valid copy of another batch of as many rows keeps the footers'"
    " row count equal to the runs marked filed, so the pass never reads a run id and the replaced runs"
    " stay lost (only --rebuild brings them back); the checks read no run id, so nothing sees the name's"
    " digest no longer matches",
)
def test_a_batch_replaced_by_a_copy_of_another_of_as_many_rows_is_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = ended(db, version, 4)
    maintenance.file_ended_runs(db, home)
    ids += ended(db, version, 4, start=4)
    maintenance.file_ended_runs(db, home)
    ids.sort()
    first, second = Layout(home).files("b")
    shutil.copyfile(first, second)
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
