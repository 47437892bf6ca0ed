"""The track record's files as the state database knows them (issue 24, item 3; ``trackrecord.known``):
filing and compaction record each data file by name and content before it takes its name; a maintenance
pass sets aside any other and files its runs again. A database from before the records adopts the files
it finds once. In a folder (SQLite and PostgreSQL) and in a bucket (a real S3 API on loopback)."""

from __future__ import annotations

import io
import shutil
import warnings
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
from qsolve_pipeline.storage.trackrecord import compact, known
from qsolve_pipeline.storage.trackrecord.layout import BATCH, Layout, file_name
from qsolve_pipeline.storage.trackrecord.sql import run_sql

from .test_rebuild import ended, run_ids
from .test_rebuild_attacks import analyst_ids, two_batches
from .test_rebuild_attacks2 import left_out, write_as


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def a_pass(db, home: Path) -> maintenance.Refiled:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refiled = maintenance.refile_lost_runs(db, home)
        maintenance.file_ended_runs(db, home)
        maintenance.compact_track_record(db, home)
    return refiled


def forget_every_file(db: StateDB) -> None:
    """The database as it was before migration 0011: no file recorded."""
    with db.engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM trackrecord_files"))
    assert not db.has_trackrecord_files()


def failed_rows(home: Path) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_sql("SELECT count(*) AS n FROM rows WHERE NOT passed", home).column("n")[0].as_py()


def shown_passed(table: pa.Table) -> pa.Table:
    """The same rows, every one shown passed: the forger's edit."""
    for column, value in (("passed", True), ("status", "passed")):
        i = table.schema.get_field_index(column)
        table = table.set_column(i, table.schema.field(i), pa.array([value] * table.num_rows))
    return table


def test_every_file_a_pass_leaves_is_one_the_database_recorded(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    a_pass(db, home)
    files = Layout(home).files()
    assert files and {p.name[0] for p in files} <= {"h", "o"}
    recorded = db.known_trackrecord_files(p.name for p in files)
    assert {name for name, _ in recorded} == {p.name for p in files}
    assert a_pass(db, home) == maintenance.Refiled()  # nothing set aside, nothing filed twice
    assert run_ids(home) == ids


def test_a_database_from_before_the_records_adopts_its_files_once(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    forget_every_file(db)
    first, second = Layout(home).files("b")
    copy = Layout(home).folder / file_name(BATCH, ["no-such-run"])
    shutil.copyfile(first, copy)  # misnamed: not adopted
    refiled = a_pass(db, home)
    assert refiled.runs == [] and refiled.set_aside == [f"{copy}: {known.MISNAMED}"]
    assert left_out(home) == [copy.name]
    assert run_ids(home) == ids and analyst_ids(home) == ids
    assert db.has_trackrecord_files()
    shutil.copyfile(Layout(home).files("h")[0], Layout(home).folder / second.name)  # after: not adopted
    assert a_pass(db, home).set_aside == [f"{Layout(home).folder / second.name}: {known.UNKNOWN}"]
    assert run_ids(home) == ids


def test_adoption_sets_aside_a_batch_of_a_run_the_database_never_filed(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    forget_every_file(db)
    row = pq.read_table(Layout(home).files("b")[0]).slice(0, 1)
    forged = row.set_column(
        row.schema.get_field_index("run_id"), row.schema.field("run_id"), pa.array(["forged-run"])
    )
    target = Layout(home).data_file(BATCH, ["forged-run"])  # named rightly for its one run
    write_as(forged, target)
    assert a_pass(db, home).set_aside == [f"{target}: {known.NOT_FILED}"]
    assert run_ids(home) == ids and analyst_ids(home) == ids


def test_a_batch_filed_without_the_state_database_is_set_aside(db, version, tmp_path):
    """What another program (or an older qsolve) files straight into the folder: valid, rightly named,
    of rows the database holds, but with another run shown passed; the database knows no such file."""
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    a_pass(db, home)
    assert failed_rows(home) == 1
    (head,) = Layout(home).files("h")
    table = pq.read_table(head)
    crashed = table.filter(pa.compute.equal(table.column("passed"), False))
    # straight into the folder, as another program writes (qsolve's own filing now always tells the
    # state database's log: issue 34): valid, named for its runs, the database not told
    made = Layout(home).data_file(BATCH, crashed.column("run_id").to_pylist())
    write_as(shown_passed(crashed), made)
    refiled = a_pass(db, home)
    assert refiled.set_aside == [f"{made}: {known.UNKNOWN}"]
    assert run_ids(home) == ids and failed_rows(home) == 1


def test_a_compaction_given_no_database_logs_its_outputs_in_the_homes_and_every_row_stays(
    db, version, tmp_path
):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    compact(home)  # no database given: the one that records the home (issue 34), so its h- file is logged
    refiled = a_pass(db, home)
    assert refiled.set_aside == [] and refiled.runs == []
    assert run_ids(home) == ids and analyst_ids(home) == ids


def test_records_of_files_long_gone_are_forgotten(db, version, tmp_path):
    home = tmp_path / "home"
    two_batches(db, version, home)
    batches = [p.name for p in Layout(home).files("b")]
    a_pass(db, home)  # merged: the two batches are gone
    present = [p.name for p in Layout(home).files()]
    assert db.forget_trackrecord_files(present) == 0  # younger than a day: perhaps being written
    assert db.forget_trackrecord_files(present, older_than=timedelta(0)) == 2
    assert not db.known_trackrecord_files(batches)
    assert {n for n, _ in db.known_trackrecord_files(present)} == set(present)


def test_in_a_bucket_other_values_under_the_right_name_are_set_aside_and_filed_again(
    db, version, tmp_path, bucket
):
    home = tmp_path / "home"
    ended(db, version, 5)  # case-04 crashed
    maintenance.file_ended_runs(db, home)
    store = storage_of(home)
    (batch,) = [e.key for e in store.children("trackrecord") if e.key.rsplit("/", 1)[-1].startswith("b-")]
    original = pq.read_table(io.BytesIO(store.get(batch)))
    forged = io.BytesIO()
    pq.write_table(shown_passed(original), forged, compression="snappy")
    store.delete(batch)  # someone holding the bucket's keys
    assert store.create(batch, forged.getvalue())
    assert failed_rows(home) == 0
    refiled = a_pass(db, home)
    name = batch.rsplit("/", 1)[-1]
    assert refiled.set_aside == [f"{store.address(batch)}: {known.UNKNOWN}"]
    assert failed_rows(home) == 1
    aside = [e.key.rsplit("/", 1)[-1] for e in store.children("trackrecord/left-out")]
    assert aside == [name]
