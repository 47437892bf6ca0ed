"""The state database is the source of truth (issue 24, item 3): whatever happens to the track record's
files (a batch, a compacted file or the views' database truncated, deleted or corrupted), the
maintenance pass finds the runs whose rows are gone and files them again, and ``qsolve maintenance
--rebuild`` writes the whole track record again; every row comes back, once. SQLite and PostgreSQL."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import FailureReason, StateDB, Version
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, compact
from qsolve_pipeline.storage.trackrecord.layout import Layout
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.storage.trackrecord.builders import result


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def ended(db: StateDB, version: Version, n: int, start: int = 0) -> list[str]:
    ids = []
    for i in range(start, start + n):
        run = db.create_run(version, f"case-{i:02d}", "sim-cpu", "history")
        db.start_run(run.id)
        if i % 5 == 4:  # a crash is the workflow's: recorded as failed
            failure = result(
                name=f"case-{i:02d}", target="sim-cpu", passed=False, message="FAIL ValueError: x"
            )
            db.finish_run(
                run.id, "failed", reason=FailureReason.CRASH, result=failure.model_dump(mode="json")
            )
        else:
            db.finish_run(
                run.id,
                "finished",
                result=result(name=f"case-{i:02d}", target="sim-cpu").model_dump(mode="json"),
            )
        ids.append(run.id)
    return ids


def run_ids(home: Path, view: str = "rows") -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the damaged file is named in a warning
        return sorted(run_sql(f"SELECT run_id FROM {view}", home).column("run_id").to_pylist())


def filed_home(db: StateDB, version: Version, home: Path) -> list[str]:
    """12 runs filed: 8 compacted into an h- file, then 4 in a b- file."""
    first = ended(db, version, 8)
    maintenance.file_ended_runs(db, home)
    compact(home, db=db)
    second = ended(db, version, 4, start=8)
    maintenance.file_ended_runs(db, home)
    assert db.count_unfiled() == 0
    return sorted(first + second)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def corrupt(path: Path) -> None:
    path.write_bytes(b"PAR1" + bytes(range(256)) * 4)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": truncate,
    "deleted": Path.unlink,
    "corrupted": corrupt,
}


@pytest.mark.parametrize("kind", ["b", "h"])
@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_the_pass_files_again_the_runs_of_a_damaged_file(db, version, tmp_path, kind, how):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    (damaged,) = Layout(home).files(kind)
    DAMAGE[how](damaged)
    assert run_ids(home) != ids  # the rows are gone from the views
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lost = maintenance.refile_lost_runs(db, home).runs
    assert lost and set(lost) < set(ids)
    assert run_ids(home) == ids and run_ids(home, "current") == ids
    assert maintenance.refile_lost_runs(db, home).runs == []  # nothing twice
    statuses = run_sql("SELECT status, count(*) AS n FROM rows GROUP BY ALL ORDER BY 1", home).to_pylist()
    assert statuses == [{"status": "crash", "n": 2}, {"status": "passed", "n": 10}]


def test_the_pass_reads_no_run_id_when_nothing_was_lost(db, version, tmp_path, monkeypatch):
    home = tmp_path / "home"
    filed_home(db, version, home)
    monkeypatch.setattr(maintenance, "_run_ids_on_disk", lambda _layout: pytest.fail("read every run id"))
    assert maintenance.refile_lost_runs(db, home).runs == []


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_views_database_is_built_again(db, version, tmp_path, how):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    DAMAGE[how](Layout(home).database)
    assert maintenance.refile_lost_runs(db, home).runs == []  # the database holds no rows: nothing to file
    import duckdb

    con = duckdb.connect(str(Layout(home).database), read_only=True)
    try:
        assert sorted(r[0] for r in con.sql("SELECT run_id FROM rows").fetchall()) == ids
    finally:
        con.close()


def test_rebuild_writes_every_row_again_from_the_state_database(db, version, tmp_path):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    layout = Layout(home)
    for path in layout.files():
        corrupt(path)
    unfiled = ended(db, version, 2, start=12)  # and two runs not filed yet
    with pytest.warns(TrackRecordWarning, match="left-out"):  # the damaged files set aside
        assert maintenance.rebuild_track_record(db, home) == 14
    assert run_ids(home) == sorted(ids + unfiled)
    assert db.count_unfiled() == 0
    assert [p.name[:2] for p in layout.files()] == ["h-"]  # the old files replaced, then compacted
    assert maintenance.rebuild_track_record(db, home) == 14  # again: the same rows, once
    assert run_ids(home) == sorted(ids + unfiled)


class Stopped(Exception):
    pass


def test_a_rebuild_that_stops_before_removing_the_old_files_shows_each_run_once(
    db, version, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    ids = filed_home(db, version, home)

    def stop(name: str) -> None:
        if name == "trackrecord.rebuilt":  # where QSOLVE_FAILPOINT would kill the process
            raise Stopped(name)

    monkeypatch.setattr(maintenance, "failpoint", stop)
    with pytest.raises(Stopped):
        maintenance.rebuild_track_record(db, home)
    assert run_ids(home) == ids and run_ids(home, "current") == ids


def test_the_command_rebuilds_without_prefect(tmp_path, monkeypatch, capsys):
    import json

    from qsolve.cli import main
    from qsolve_pipeline.storage.state import connect

    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]
        ids = filed_home(db, version, home)
    for path in Layout(home).files():
        path.unlink()
    assert run_ids(home) == []
    assert main(["maintenance", "--rebuild", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"rebuilt": 12}
    assert run_ids(home) == ids


#: what each older track-record schema lacked of this one's columns
OLDER_SCHEMAS = {
    "1": ["methods", "measured", "expect", "reason", "warnings"],
    "2": ["expect", "reason", "warnings"],  # issue 37 added them
}


def as_older_schema(folder: Path, old: str) -> None:
    """Make ``folder`` what a qsolve of track-record schema ``old`` wrote: its files without the columns
    added since, their metadata saying ``old``, and ``schema-v<old>.parquet`` instead of this one's."""
    import pyarrow.parquet as pq

    for path in sorted(folder.glob("*.parquet")):
        table = pq.read_table(path).drop_columns(OLDER_SCHEMAS[old])
        table = table.replace_schema_metadata({b"qsolve.trackrecord.schema": old.encode()})
        name = f"schema-v{old}.parquet" if path.name.startswith("schema-") else path.name
        path.unlink()
        pq.write_table(table, folder / name, compression="zstd")


@pytest.mark.parametrize("old", sorted(OLDER_SCHEMAS))
def test_a_home_of_an_older_schema_upgrades_through_the_maintenance_pass(db, version, tmp_path, old):
    from qsolve_pipeline.storage.trackrecord.row import SCHEMA_VERSION

    home = tmp_path / "home"
    ids = filed_home(db, version, home)
    layout = Layout(home)
    old_names = sorted(p.name for p in layout.folder.glob("*.parquet"))
    as_older_schema(layout.folder, old)
    layout.database.unlink()  # as an older qsolve built it: its views are another version's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run_sql("SELECT run_id FROM rows", home).num_rows == 0  # the old files left out, set aside
    said = sorted(str(w.message) for w in caught if w.category is TrackRecordWarning)
    assert len(said) == len(old_names)
    assert f"schema-v{old}.parquet: not a name qsolve gives its files" in said[-1]
    newer = f"track-record schema {old}, not {SCHEMA_VERSION}: an older qsolve wrote it"
    assert all(newer in w for w in said[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lost = maintenance.refile_lost_runs(db, home).runs
    assert sorted(lost) == ids  # every run filed again from the state database
    aside = sorted(p.name for p in (layout.folder / "left-out").iterdir())
    assert aside == sorted([*(n for n in old_names if not n.startswith("schema-")), f"schema-v{old}.parquet"])
    assert (layout.folder / f"schema-v{SCHEMA_VERSION}.parquet").exists()
    assert run_ids(home) == ids and run_ids(home, "current") == ids
    methods = run_sql("SELECT DISTINCT method, kind FROM method_objectives ORDER BY 1", home).to_pylist()
    assert methods == [{"method": "qaoa", "kind": "quantum"}, {"method": "reference", "kind": "classical"}]
    assert run_sql("SELECT count(*) AS n FROM rows WHERE measured", home).to_pylist() == [{"n": 0}]
    assert maintenance.refile_lost_runs(db, home).runs == []  # nothing twice
