"""An independent tester's attacks on the known files (issue 24, item 3; ``trackrecord.known``): an
operator, and an attacker who may write the track record's folder or bucket but not the state database.
The seven findings (compaction merging unknown files, in a folder and a bucket; an emptied folder or
bucket reopening adoption; a file named ``left-out``; two passes at once; an old record forgotten while
the same batch is filed again) were strict xfails, and hold since."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.objects import storage_of
from qsolve_pipeline.storage.state import StateDB, Version
from qsolve_pipeline.storage.trackrecord import known
from qsolve_pipeline.storage.trackrecord.layout import BATCH, Layout, file_name
from qsolve_pipeline.storage.trackrecord.writing import BATCH_COMPRESSION, SORT_KEYS

from .test_known_files import a_pass, failed_rows, shown_passed
from .test_rebuild import ended, run_ids
from .test_rebuild_attacks import analyst_ids, two_batches
from .test_rebuild_attacks2 import left_out, write_as


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def crashed_batch(home: Path) -> Path:
    """The batch of two_batches that holds the crashed run (case-04)."""
    for path in Layout(home).files("b"):
        if not all(pq.read_table(path, columns=["passed"]).column("passed").to_pylist()):
            return path
    raise AssertionError("no batch holds a failed run")


def forge_in_place(path: Path, keep_times: bool = True) -> None:
    """The attacker's edit: the same runs, every one shown passed, the file's times kept (touch -r)."""
    st = path.stat()
    write_as(shown_passed(pq.read_table(path)), path)
    if keep_times:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def age_records(db: StateDB, days: int = 2) -> None:
    """Every record as if made ``days`` ago (the usual case: the files were filed long before)."""
    from qsolve_pipeline.storage.state._rows import now
    from qsolve_pipeline.storage.state._tables import trackrecord_files

    with db.engine.begin() as connection:
        connection.execute(trackrecord_files.update().values(recorded_at=now() - timedelta(days=days)))


def quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


# -- findings ----------------------------------------------------------------------------------------


def test_a_forged_batch_is_not_laundered_by_a_compaction(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    forge_in_place(crashed_batch(home))  # case-04's crash shown passed
    assert failed_rows(home) == 0
    quiet(maintenance.compact_track_record, db, home)  # e.g. between a pass's step 3 and its step 5
    a_pass(db, home)
    a_pass(db, home)
    assert run_ids(home) == ids
    assert failed_rows(home) == 1  # was 0: the h- file holding the forgery recorded, so known


def test_emptying_the_folder_does_not_reopen_adoption(db, version, tmp_path, monkeypatch):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    a_pass(db, home)  # compacted: h- and o- files, recorded
    forged = shown_passed(pa.concat_tables([pq.read_table(p) for p in Layout(home).files()]))
    age_records(db)
    for path in Layout(home).files():
        path.unlink()  # the attacker empties the folder
    target = Layout(home).data_file(BATCH, ids)  # the name the pass will file all runs again under
    filed_run_ids = db.filed_run_ids

    def planting():  # the attacker's loop wins the race: the file appears after the listing
        if not target.exists():
            write_as(forged, target)
        return filed_run_ids()

    monkeypatch.setattr(db, "filed_run_ids", planting)
    quiet(maintenance.refile_lost_runs, db, home)
    monkeypatch.undo()
    recorded = db.has_trackrecord_files()  # was False: every record forgotten, none made
    refiled = a_pass(db, home)  # was: adopted the forged file (right name, runs all filed)
    assert run_ids(home) == ids
    # the filing that found the forgery under its batch's name set it aside (the log does not hold it:
    # issue 34), so the next pass finds nothing to set aside
    assert (recorded, refiled.set_aside, failed_rows(home)) == (True, [], 1)
    assert target.name in left_out(home)


def test_a_file_named_left_out_does_not_keep_a_forgery_in_place(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    forge_in_place(crashed_batch(home))
    (Layout(home).folder / "left-out").write_text("not a folder\n")
    try:
        quiet(maintenance.refile_lost_runs, db, home)
    except OSError as e:
        pytest.fail(f"the pass raised {type(e).__name__}: {e}")
    assert run_ids(home) == ids
    assert failed_rows(home) == 1


def test_two_passes_do_not_set_aside_the_good_file_one_of_them_wrote(db, version, tmp_path):
    home = tmp_path / "home"
    two_batches(db, version, home)
    batch = crashed_batch(home)
    forge_in_place(batch)
    layout = Layout(home)
    found = quiet(known.unknown_files, db, layout, maintenance._inventory(layout))  # pass B, so far
    assert found == [(batch.name, known.UNKNOWN)]
    quiet(maintenance.refile_lost_runs, db, home)  # pass A, whole: the good batch filed again
    good = batch.read_bytes()
    said = known.set_aside(db, layout, found)  # pass B goes on
    assert said == []  # was: the good batch set aside, reported as not qsolve's
    assert batch.read_bytes() == good


# -- what held ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("keep_times", [True, False])
def test_an_edit_with_the_times_kept_is_seen_by_a_process_that_cached_the_digest(
    db, version, tmp_path, keep_times
):
    """The digest is cached in the process: an edit that keeps, with touch -r, the modification time
    still moves the change time."""
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    a_pass(db, home)  # compacted; the h- file's digest cached
    (head,) = Layout(home).files("h")
    assert quiet(known.unknown_files, db, Layout(home), maintenance._inventory(Layout(home))) == []
    forge_in_place(head, keep_times)
    refiled = a_pass(db, home)
    assert [line.split(": ", 1)[0] for line in refiled.set_aside] == [str(head)]
    assert run_ids(home) == ids and failed_rows(home) == 1


def test_a_byte_flip_keeping_size_and_times_is_seen_by_a_long_lived_process(tmp_path):
    from qsolve_pipeline.storage.trackrecord.writing import digest_file

    path = tmp_path / "f.parquet"
    for i in range(50):
        path.write_bytes(b"a" * 4096)
        before = digest_file(path)
        st = path.stat()
        with path.open("r+b") as f:
            f.seek(100)
            f.write(b"b")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert path.stat().st_size == st.st_size
        assert digest_file(path) != before, i


@pytest.mark.parametrize("how", ["hardlink", "symlink"])
def test_a_batch_replaced_by_a_link_to_another_known_file_is_set_aside(db, version, tmp_path, how):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    quiet(known.unknown_files, db, Layout(home), maintenance._inventory(Layout(home)))  # cached
    second.unlink()
    if how == "hardlink":
        os.link(first, second)
    else:
        second.symlink_to(first.name)
    refiled = a_pass(db, home)
    assert refiled.set_aside == [f"{second}: {known.UNKNOWN}"]
    assert run_ids(home) == ids and analyst_ids(home) == ids and failed_rows(home) == 1
    assert first.exists() or Layout(home).files("h")  # the link's target is never what moves


def test_a_name_set_aside_twice_keeps_both_copies(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    batch = crashed_batch(home)
    name = batch.name
    forge_in_place(batch)
    quiet(maintenance.refile_lost_runs, db, home)
    forge_in_place(batch)  # the attacker again, the same forgery (the refiled batch is not compacted)
    quiet(maintenance.refile_lost_runs, db, home)
    assert left_out(home) == [name, f"{name}.1"]
    assert run_ids(home) == ids and failed_rows(home) == 1


def test_a_known_file_copied_under_a_name_recorded_with_other_bytes_is_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    assert db.known_trackrecord_files([first.name, second.name])  # both names recorded
    shutil.copyfile(first, second)
    refiled = a_pass(db, home)
    assert refiled.set_aside == [f"{second}: {known.UNKNOWN}"]
    assert run_ids(home) == ids and failed_rows(home) == 1


def test_adoption_of_an_empty_database_refuses_planted_files_of_runs_never_filed(db, version, tmp_path):
    """A pass on a home the attacker filled before the database recorded anything: files of runs the
    database does not mark filed are refused; nothing planted is adopted."""
    home = tmp_path / "home"
    ids = ended(db, version, 3)  # ended, never filed
    folder = Layout(home).folder
    folder.mkdir(parents=True)
    ref = tmp_path / "ref"
    maintenance.file_runs(db, db.runs_by_id(ids), ref)  # rows as qsolve makes them, elsewhere
    with db.engine.begin() as connection:  # only to have rows to forge: back to not filed, no records
        connection.execute(sa.text("DELETE FROM trackrecord_files"))
        connection.execute(sa.text("DELETE FROM trackrecord_live"))  # nor a log (issue 34)
        connection.execute(sa.text("DELETE FROM trackrecord_log"))
        connection.execute(sa.text("UPDATE runs SET filed_at = NULL"))
    (made,) = Layout(ref).files("b")
    shutil.copyfile(made, folder / made.name)
    refiled = a_pass(db, home)
    assert refiled.set_aside == [f"{folder / made.name}: {known.NOT_FILED}"]
    assert run_ids(home) == sorted(ids) and failed_rows(home) == 0


@pytest.mark.parametrize("passes", [2])
def test_two_passes_at_once_leave_each_row_once_and_the_forgery_out(db, version, tmp_path, passes):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    forge_in_place(crashed_batch(home))
    errors: list[BaseException] = []
    start = threading.Barrier(passes)

    def one():
        try:
            start.wait()
            a_pass(db, home)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(passes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    a_pass(db, home)
    assert run_ids(home) == ids and analyst_ids(home) == ids and failed_rows(home) == 1


@contextlib.contextmanager
def passes_meanwhile(one_pass: Callable[[], maintenance.Refiled]) -> Iterator[list[str]]:
    """Passes run in another thread, one after another, while the block runs; yields the lines of every
    file they set aside. A pass's error is raised once the block ends."""
    stop = threading.Event()
    errors: list[BaseException] = []
    said: list[str] = []

    def passes() -> None:
        try:
            while not stop.is_set():
                said.extend(one_pass().set_aside)
        except BaseException as e:  # noqa: BLE001 - raised in the test's thread below
            errors.append(e)

    t = threading.Thread(target=passes)
    t.start()
    try:
        yield said
    finally:
        stop.set()
        t.join()
    if errors:
        raise errors[0]


def test_a_filing_in_another_thread_during_passes_loses_no_row(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    more = ended(db, version, 6, start=8)
    with passes_meanwhile(lambda: a_pass(db, home)) as said:
        for run in db.runs_by_id(more):
            maintenance.file_runs(db, [run], home)
    assert said == []
    a_pass(db, home)
    assert run_ids(home) == sorted(ids + more) and failed_rows(home) == 2


def test_in_a_bucket_an_object_replaced_by_one_of_the_same_size_is_set_aside(db, version, tmp_path, bucket):
    home = tmp_path / "home"
    ended(db, version, 5)  # case-04 crashed
    maintenance.file_ended_runs(db, home)
    store = storage_of(home)
    assert a_pass(db, home).set_aside == []  # compacted; the h- object's digest cached by ETag
    (head,) = [e.key for e in store.children("trackrecord") if e.key.rsplit("/", 1)[-1].startswith("h-")]
    original = bytearray(store.get(head))
    original[len(original) // 3] ^= 0x01  # one byte: the same size
    store.delete(head)
    assert store.create(head, bytes(original))
    refiled = a_pass(db, home)
    assert len(refiled.set_aside) == 1 and refiled.set_aside[0].startswith(store.address(head))
    assert failed_rows(home) == 1


def test_a_batch_filed_again_under_an_old_name_is_not_forgotten_by_a_pass_at_once(db, version, tmp_path):
    home = tmp_path / "home"
    ids = ended(db, version, 4)
    maintenance.file_ended_runs(db, home)
    (batch,) = Layout(home).files("b")
    first = batch.read_bytes()
    quiet(maintenance.compact_track_record, db, home)  # the batch merged away; its record stays
    assert not batch.exists()
    age_records(db)
    listed = [p.name for p in Layout(home).files()]  # a pass elsewhere lists the folder now
    record = db.record_trackrecord_file

    def recording_then_a_pass_forgets(name, digest):
        record(name, digest)
        db.forget_trackrecord_files(listed)  # that pass's forgetting, before the batch takes its name

    from qsolve_pipeline.storage.trackrecord.filing import file_rows

    file_rows(
        [maintenance._row(db, r, home) for r in db.runs_by_id(ids)], home, recording_then_a_pass_forgets
    )
    assert batch.read_bytes() == first  # the same batch, the same bytes
    refiled = a_pass(db, home)
    assert refiled.set_aside == []
    assert run_ids(home) == sorted(ids)


def test_in_a_bucket_a_forged_batch_is_not_laundered_by_a_compaction(db, version, tmp_path, bucket):
    home = tmp_path / "home"
    ended(db, version, 5)  # case-04 crashed
    maintenance.file_ended_runs(db, home)
    ended(db, version, 2, start=5)
    maintenance.file_ended_runs(db, home)
    store = storage_of(home)
    for e in store.children("trackrecord"):
        name = e.key.rsplit("/", 1)[-1]
        table = pq.read_table(io.BytesIO(store.get(e.key))) if name.startswith("b-") else None
        if table is not None and not all(table.column("passed").to_pylist()):
            forged = io.BytesIO()
            pq.write_table(shown_passed(table), forged, compression="snappy")
            store.delete(e.key)
            assert store.create(e.key, forged.getvalue())
    assert failed_rows(home) == 0
    quiet(maintenance.compact_track_record, db, home)
    a_pass(db, home)
    assert failed_rows(home) == 1


def test_records_deleted_in_part_set_aside_only_those_files_and_every_row_stays(db, version, tmp_path):
    """An operator who deletes some records (not all: that is adoption): the track-record log (issue 34)
    still holds the files, signed, so nothing is set aside; the rows stay once each."""
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    with db.engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM trackrecord_files WHERE name = :n"), {"n": second.name})
    refiled = a_pass(db, home)
    assert refiled.set_aside == []
    assert run_ids(home) == ids and analyst_ids(home) == ids and failed_rows(home) == 1
    assert left_out(home) == []
    assert a_pass(db, home) == maintenance.Refiled()


def test_a_batch_filed_again_under_an_old_name_is_known_when_no_pass_forgets_meanwhile(db, version, tmp_path):
    """The control of the finding above: the same batch filed again, no pass at that moment."""
    home = tmp_path / "home"
    ids = ended(db, version, 4)
    maintenance.file_ended_runs(db, home)
    quiet(maintenance.compact_track_record, db, home)
    age_records(db)
    from qsolve_pipeline.storage.trackrecord.filing import file_rows

    file_rows([maintenance._row(db, r, home) for r in db.runs_by_id(ids)], home, db.record_trackrecord_file)
    assert a_pass(db, home).set_aside == []
    assert run_ids(home) == sorted(ids)


def test_in_a_bucket_emptying_it_does_not_reopen_adoption(db, version, tmp_path, bucket, monkeypatch):
    home = tmp_path / "home"
    ids = ended(db, version, 5)  # case-04 crashed
    maintenance.file_ended_runs(db, home)
    store = storage_of(home)
    a_pass(db, home)
    data = [
        e.key for e in store.children("trackrecord") if e.key.rsplit("/", 1)[-1][:2] in ("b-", "h-", "o-")
    ]
    forged = shown_passed(pa.concat_tables([pq.read_table(io.BytesIO(store.get(k))) for k in data]))
    age_records(db)
    for k in data:
        store.delete(k)
    target = f"trackrecord/{file_name(BATCH, ids)}"
    filed_run_ids = db.filed_run_ids

    def planting():  # a valid qsolve object (schema, metadata) of the forged rows
        from qsolve_pipeline.storage.trackrecord.shared import parquet_bytes

        store.create(target, parquet_bytes(forged.sort_by(SORT_KEYS), BATCH_COMPRESSION))
        return filed_run_ids()

    with pytest.MonkeyPatch.context() as patch:  # not monkeypatch.undo(): that undoes the bucket's too
        patch.setattr(db, "filed_run_ids", planting)
        quiet(maintenance.refile_lost_runs, db, home)
    assert db.has_trackrecord_files()  # was False: every record forgotten, none made
    assert Layout(home).store is not None
    refiled = a_pass(db, home)
    # the filing that found the forgery under its batch's name set it aside (the log does not hold it:
    # issue 34), so the next pass finds nothing to set aside
    assert refiled.set_aside == []
    assert run_ids(home) == sorted(ids) and failed_rows(home) == 1


@pytest.mark.parametrize("other", ["compaction", "rebuild"])
def test_a_pass_racing_compactions_or_a_rebuild_sets_nothing_aside_and_loses_no_row(
    db, version, tmp_path, other
):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    more = ended(db, version, 4, start=8)
    with passes_meanwhile(lambda: quiet(maintenance.refile_lost_runs, db, home)) as said:
        for run in db.runs_by_id(more):
            maintenance.file_runs(db, [run], home)
            if other == "compaction":
                quiet(maintenance.compact_track_record, db, home)
            else:
                quiet(maintenance.rebuild_track_record, db, home)
    assert said == []
    a_pass(db, home)
    assert run_ids(home) == sorted(ids + more) and analyst_ids(home) == sorted(ids + more)
    assert failed_rows(home) == 2  # case-04 and case-09


def test_a_fifo_under_a_batch_name_does_not_hang_a_pass(db, version, tmp_path):
    """A named pipe where a data file would be: reading its footer would wait for a writer forever."""
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    fifo = Layout(home).folder / file_name(BATCH, ["no-such-run"])
    os.mkfifo(fifo)
    done: list[object] = []
    t = threading.Thread(
        target=lambda: done.append(quiet(maintenance.refile_lost_runs, db, home)), daemon=True
    )
    t.start()
    t.join(20)
    if t.is_alive():  # let it go: open the pipe for writing and close it
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
        pytest.fail("the pass waited on the named pipe")
    assert done and run_ids(home) == ids
