"""More attacks on the batch files by someone who may write the track record's folder (h24c), after
``set_aside_misnamed``: a batch copied under another batch's name, two batches swapped, a batch of the
right run ids but other values, a batch name on a file that is not Parquet, a batch of more or fewer runs
than its name's, and a pass run twice after one is set aside. What must hold after a maintenance pass:
one row per recorded run, none lost, none twice; and the pass says which files it set aside. SQLite only
(the files are the attack; the database only says which runs were filed)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import StateDB, Version
from qsolve_pipeline.storage.trackrecord import known
from qsolve_pipeline.storage.trackrecord.layout import BATCH, Layout, file_name
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from qsolve_pipeline.storage.trackrecord.writing import BATCH_COMPRESSION, write_parquet
from tests.storage.trackrecord.builders import result

from .test_rebuild import run_ids
from .test_rebuild_attacks import a_pass, analyst_ids, two_batches


@pytest.fixture
def database_url(tmp_path: Path) -> str:  # SQLite only
    return f"sqlite:///{(tmp_path / 'state.db').as_posix()}"


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def all_rows(home: Path) -> list[str]:
    """Every row's run id as the files hold them, duplicates kept (the rows view shows a run once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(run_sql("SELECT run_id FROM filed_rows", home).column("run_id").to_pylist())


def ids_of(path: Path) -> list[str]:
    return sorted(pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist())


def left_out(home: Path) -> list[str]:
    folder = Layout(home).folder / "left-out"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def holds_once(home: Path, ids: list[str]) -> None:
    assert run_ids(home) == ids and analyst_ids(home) == ids


def write_as(table: pa.Table, path: Path) -> None:
    """A valid qsolve batch file (schema, metadata) of these rows under this name."""
    if path.exists():
        path.unlink()
    with path.open("wb") as f:
        write_parquet(table, f, BATCH_COMPRESSION)


# -- attacks that hold -------------------------------------------------------------------------------


def test_a_batch_copied_under_another_valid_batch_name_is_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, _ = Layout(home).files("b")
    copy = Layout(home).folder / file_name(BATCH, ["no-such-run"])
    shutil.copyfile(first, copy)  # the same rows twice, the copy under a name of other runs
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == [copy.name]


def test_two_batches_swapped_are_set_aside_and_filed_again(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    tmp = first.with_name("x.tmp")
    first.rename(tmp)
    second.rename(first)
    tmp.rename(second)
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == sorted([first.name, second.name])


def test_a_file_named_like_a_batch_that_is_not_parquet_is_set_aside_and_its_runs_filed_again(
    db, version, tmp_path
):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, _ = Layout(home).files("b")
    first.write_bytes(b"PAR1 not a parquet file at all PAR1")
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == [first.name]


def test_a_batch_holding_more_runs_than_its_name_says_is_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    both = pa.concat_tables([pq.read_table(first), pq.read_table(second)])
    write_as(both, first)  # first's 4 runs and second's 4 under first's name
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == [first.name]


def test_a_batch_holding_fewer_runs_than_its_name_says_is_set_aside_and_the_rest_filed_again(
    db, version, tmp_path
):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, _ = Layout(home).files("b")
    write_as(pq.read_table(first).slice(0, 3), first)
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == [first.name]


def test_a_batch_of_its_runs_twice_is_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, _ = Layout(home).files("b")
    table = pq.read_table(first)
    write_as(pa.concat_tables([table, table]), first)  # the right ids, each twice: the name's digest differs
    a_pass(db, home)
    holds_once(home, ids)
    assert left_out(home) == [first.name]


def test_passes_after_a_batch_is_set_aside_file_nothing_twice(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    shutil.copyfile(first, second)
    for _ in range(3):
        a_pass(db, home)
        holds_once(home, ids)
        assert all_rows(home) == ids  # one row per run in the files themselves, not only in the view
    assert left_out(home) == [second.name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert maintenance.refile_lost_runs(db, home).runs == []


def test_the_same_attack_twice_keeps_both_copies_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    for _ in range(2):  # refiled under second's name (the same four runs), then copied over again
        shutil.copyfile(first, second)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            maintenance.refile_lost_runs(db, home)  # no compaction: the batches stay batches
        holds_once(home, ids)
        assert all_rows(home) == ids
    assert left_out(home) == [second.name, second.name + ".1"]


# -- findings ----------------------------------------------------------------------------------------


def test_a_batch_of_the_right_runs_with_other_values_is_found(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    (first,) = [p for p in Layout(home).files("b") if not all(pq.read_table(p).column("passed").to_pylist())]
    table = pq.read_table(first)  # the batch of case-04, which crashed (test_rebuild.ended)
    i = table.schema.get_field_index("passed")
    forged = table.set_column(i, table.schema.field(i), pa.array([True] * table.num_rows))
    forged = forged.set_column(
        forged.schema.get_field_index("status"),
        forged.schema.field("status"),
        pa.array(["passed"] * table.num_rows),
    )
    write_as(forged, first)
    assert Layout(home).data_file(BATCH, ids_of(first)) == first  # the right ids for its name
    a_pass(db, home)
    holds_once(home, ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failed = run_sql("SELECT count(*) AS n FROM rows WHERE NOT passed", home).column("n")[0].as_py()
    assert failed == 1  # case-04 crashed (test_rebuild.ended): its row says failed


def test_a_forged_batch_of_a_run_never_recorded_is_set_aside(db, version, tmp_path):
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, _ = Layout(home).files("b")
    row = pq.read_table(first).slice(0, 1)
    forged = row.set_column(
        row.schema.get_field_index("run_id"), row.schema.field("run_id"), pa.array(["forged-run"])
    )
    write_as(forged, Layout(home).data_file(BATCH, ["forged-run"]))
    a_pass(db, home)
    holds_once(home, ids)


def test_an_older_file_replaced_by_a_copy_of_another_of_as_many_rows_is_filed_again(db, version, tmp_path):
    from qsolve_pipeline.storage.trackrecord import compact

    home = tmp_path / "home"
    layout = Layout(home)
    # the same four cases filed three times, compacted each time: two o- files of four older rows each
    runs = []
    for _ in range(3):
        made = []
        for i in range(4):
            run = db.create_run(version, f"case-{i:02d}", "sim-cpu", "history")
            db.start_run(run.id)
            done = result(name=f"case-{i:02d}", target="sim-cpu").model_dump(mode="json")
            db.finish_run(run.id, "finished", result=done)
            made.append(run.id)
        maintenance.file_ended_runs(db, home)
        compact(home, db=db)
        runs += made
    olders = layout.files("o")
    assert len(olders) >= 2, [p.name for p in layout.files()]
    counts = [pq.read_metadata(p).num_rows for p in olders]
    a, b = [p for p, c in zip(olders, counts, strict=True) if c == counts[0]][:2]
    shutil.copyfile(a, b)
    a_pass(db, home)
    assert all_rows(home) == sorted(runs)


def test_maintenance_report_says_which_files_it_set_aside(db, version, tmp_path):
    """The report the command prints (``MaintenanceReport.summary``, as ``flows/maintenance.py`` makes it,
    without Prefect): one line per file set aside."""
    home = tmp_path / "home"
    ids = two_batches(db, version, home)
    first, second = Layout(home).files("b")
    shutil.copyfile(first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refiled = maintenance.refile_lost_runs(db, home)
        filed, waiting = maintenance.file_ended_runs(db, home)
        report = maintenance.MaintenanceReport(
            refiled=len(refiled.runs),
            set_aside=refiled.set_aside,
            filed=filed,
            waiting=waiting,
            compaction=maintenance.compact_track_record(db, home),
        )
    holds_once(home, ids)
    said = [line for line in report.summary().splitlines() if second.name in line]
    assert said == [f"set aside {Layout(home).folder / second.name}: {known.UNKNOWN}"]
    assert f"filed {len(ids) // 2} runs again from the state database" in report.summary()
