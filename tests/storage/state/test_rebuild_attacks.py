"""An operator's attacks on the track record's files (issue 24, item 3, tested independently): a file
replaced by another valid file of other rows, damage past the footer, a symlink, a directory or a glob
character where a batch should be, and a rebuild racing a compaction. Every row comes back exactly once,
the analysts' ``trackrecord.duckdb`` still opens, nothing is removed that should not be. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import duckdb
import pytest

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import StateDB, Version
from qsolve_pipeline.storage.trackrecord import QueryFailed, TrackRecordWarning, compact, damaged, page
from qsolve_pipeline.storage.trackrecord.layout import Layout
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.storage.trackrecord.test_inventory import run as run_command

from .test_rebuild import ended, filed_home, run_ids


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


#: what a reader says of a file whose bytes are not those the log recorded (issue 34)
CHANGED = "its bytes are not those the state database's track-record log recorded"


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
        compact(home, db=db)


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


def damaged_home(db, version, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A filed home whose h- file is damaged past its footer; returns it, that file and the run ids of
    the good (b-) file."""
    import pyarrow.parquet as pq

    home = tmp_path / "home"
    filed_home(db, version, home)
    (head,) = Layout(home).files("h")
    (batch,) = Layout(home).files("b")
    good = sorted(pq.read_table(batch, columns=["run_id"]).column("run_id").to_pylist())
    damage_a_column_chunk(head)
    return home, head, good


def test_the_reading_commands_read_the_good_rows_beside_a_file_damaged_past_its_footer(db, version, tmp_path):
    home, head, good = damaged_home(db, version, tmp_path)
    assert run_ids(home) == good
    with pytest.warns(TrackRecordWarning) as caught:
        assert sorted(run_sql("SELECT run_id FROM current", home).column("run_id").to_pylist()) == good
        p = page("max-cut", home=home)
    assert sorted(r.run_id for r in p.track_record) == good
    said = [str(w.message) for w in caught if str(head) in str(w.message)]
    # left out by its digest before DuckDB reads it (issue 34), in one line
    assert said and all("\n" not in m and CHANGED in m for m in said), said
    assert head.exists()  # a reader moves nothing: the maintenance pass sets it aside


def test_qsolve_query_and_page_name_the_damaged_file_in_one_line(db, version, tmp_path, monkeypatch, capsys):
    home, head, good = damaged_home(db, version, tmp_path)
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    assert run_command("query", "SELECT run_id FROM rows ORDER BY 1", "--format", "csv") == 0
    out, err = capsys.readouterr()
    assert out.split() == ["run_id", *good]
    (line,) = [x for x in err.splitlines() if str(head) in x]
    assert line.startswith("qsolve query: warning: ") and CHANGED in line
    assert run_command("page", "max-cut", "--json") == 0
    out, err = capsys.readouterr()
    assert sorted(r["run_id"] for r in json.loads(out)["track_record"]) == good
    assert any(x.startswith("qsolve page: warning: ") and str(head) in x for x in err.splitlines())


def test_a_good_track_record_and_a_bad_query_read_no_file_whole(db, version, tmp_path, monkeypatch):
    """Reading stays quick: a file is read whole only where DuckDB failed on a file's data."""
    home = tmp_path / "home"
    ids = filed_home(db, version, home)

    def refused(*_):
        raise AssertionError("a file read whole")

    monkeypatch.setattr(damaged, "_data_problem", refused)
    assert run_ids(home) == ids
    assert len(page("max-cut", home=home).track_record) == len(ids)
    for sql in ("SELECT nothing FROM rows", "SELECT * FROM no_such_view", "SELEC 1", "SELECT 'x'::INT"):
        with pytest.raises(QueryFailed):
            run_sql(sql, home)


def test_a_damaged_file_is_read_whole_once_by_a_long_lived_reader(db, version, tmp_path, monkeypatch):
    from qsolve_pipeline.storage.trackrecord import live

    home, head, good = damaged_home(db, version, tmp_path)
    read, hashed = [], []
    real = damaged._data_problem
    monkeypatch.setattr(damaged, "_data_problem", lambda inv, e: read.append(e.name) or real(inv, e))
    real_digest = live.digest_file
    monkeypatch.setattr(live, "digest_file", lambda p: hashed.append(Path(p).name) or real_digest(p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        for _ in range(3):  # the web server: one process, many reads
            assert run_ids(home) == good
            assert sorted(r.run_id for r in page("max-cut", home=home).track_record) == good
    # its digest (issue 34) reads it whole once and leaves it out: DuckDB never meets its data
    assert hashed.count(head.name) == 1 and head.name not in read


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
    compact(home, db=db)  # one h- file holds every run

    def meanwhile(name: str) -> None:
        if name == "trackrecord.rebuilt":  # another process's maintenance pass compacts here
            compact(home, db=db)

    monkeypatch.setattr(maintenance, "failpoint", meanwhile)
    maintenance.rebuild_track_record(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids


def two_batches(db, version, home: Path) -> list[str]:
    """Eight runs filed as two batches of four; their ids, sorted."""
    ids = ended(db, version, 4)
    maintenance.file_ended_runs(db, home)
    ids += ended(db, version, 4, start=4)
    maintenance.file_ended_runs(db, home)
    return sorted(ids)


def test_a_batch_replaced_by_a_copy_of_another_of_as_many_rows_is_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    shutil.copyfile(first, second)
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids
    assert (home / "trackrecord" / "left-out" / second.name).exists()


def test_a_batch_object_replaced_by_a_copy_of_another_of_as_many_rows_is_filed_again(
    db, version, tmp_path, bucket
):
    """The same in object storage (QSOLVE_STORAGE_URL): the copy is set aside under ``left-out/``."""
    from qsolve_pipeline.storage.objects import storage_of

    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    store = storage_of(home)
    first, second = sorted(e.key for e in store.children("trackrecord") if "/b-" in e.key)
    store.delete(second)
    store.create(second, store.get(first))
    a_pass(db, home)
    assert run_ids(home) == ids
    assert [e.key.rsplit("/", 1)[-1] for e in store.children("trackrecord/left-out")] == [
        second.rsplit("/", 1)[-1]
    ]
