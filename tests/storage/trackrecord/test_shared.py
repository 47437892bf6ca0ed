"""The track record in object storage (QSOLVE_STORAGE_URL; issue 26, items 1 and 2), against a real S3 API on
loopback: the same views over the same files as in a folder, filed, compacted (claimed in the state
database), set aside and read by qsolve's own DuckDB, and by an analyst's DuckDB 1.5 with httpfs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from qsolve_pipeline.storage.objects import storage_of
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, compact, file_rows, page
from qsolve_pipeline.storage.trackrecord.analyst import analyst_sql
from qsolve_pipeline.storage.trackrecord.row import SCHEMA_VERSION
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.duckdb15 import httpfs1
from tests.s3server import KEY_ID, SECRET

from .builders import EXPECTED, scenario
from .test_duckdb1 import listed_files, run


def ids(home: Path, view: str) -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        return set(run_sql(f"SELECT run_id FROM {view}", home).column("run_id").to_pylist())


def views_ids(home: Path, views: list[str]) -> dict[str, set[str]]:
    """:func:`ids` of several views, read by one query (one set of views over the bucket, not one each)."""
    sql = " UNION ALL ".join(f"SELECT '{view}' AS view, run_id FROM {view}" for view in views)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        table = run_sql(sql, home)
    found: dict[str, set[str]] = {view: set() for view in views}
    names, run_ids = table.column("view").to_pylist(), table.column("run_id").to_pylist()
    for view, run_id in zip(names, run_ids, strict=True):
        found[view].add(run_id)
    return found


def objects(home: Path, folder: str = "trackrecord") -> list[str]:
    return [e.key.rsplit("/", 1)[-1] for e in storage_of(home).children(folder)]


def test_the_views_read_the_bucket_as_they_read_a_folder(bucket, home):
    rows = scenario()
    file_rows(rows[:8], home)
    done = compact(home)
    assert done.merged_files == 1 and done.skipped is None
    file_rows(rows[6:12], home)  # r07 and r08 filed again
    file_rows(rows[11:], home)
    found = views_ids(home, sorted(EXPECTED))
    for view in EXPECTED:
        assert found[view] == EXPECTED[view], view
    assert not (home / "trackrecord").exists() and not (home / "trackrecord.duckdb").exists()
    names = objects(home)
    assert f"schema-v{SCHEMA_VERSION}.parquet" in names and sum(n.startswith("h-") for n in names) == 1


def test_filing_the_same_runs_from_two_homes_makes_one_object(bucket, tmp_path, monkeypatch):
    # two homes of one deployment: one bucket, one state database (whose log the readers read)
    monkeypatch.setenv("QSOLVE_DATABASE_URL", f"sqlite:///{tmp_path / 'state.db'}")
    a = file_rows(scenario()[:5], tmp_path / "a")
    b = file_rows(scenario()[:5], tmp_path / "b")
    assert a.path == b.path and a.new and not b.new
    assert a.path.startswith(bucket + "/trackrecord/b-")
    assert sum(n.startswith("b-") for n in objects(tmp_path / "a")) == 1


def test_a_compaction_claimed_elsewhere_merges_nothing_and_a_lapsed_claim_is_taken(bucket, home):
    file_rows(scenario()[:4], home)
    file_rows(scenario()[4:], home)
    with connect(home=home) as db:
        assert db.claim("trackrecord-compaction", "another-machine:1:x", 300)
        skipped = compact(home)
        assert skipped.merged_files == 0 and "another machine is compacting" in skipped.skipped
        assert db.claim("trackrecord-compaction", "another-machine:1:x", -1)  # its claim lapses
    assert compact(home).merged_files == 2
    assert ids(home, "current") == EXPECTED["current"]


def test_a_damaged_object_is_never_read_and_the_maintenance_pass_sets_it_aside(bucket, home):
    from qsolve_pipeline.storage.maintenance import refile_lost_runs

    file_rows(scenario(), home)
    store = storage_of(home)
    store.create("trackrecord/b-0000.parquet", b"PAR1 not a Parquet file PAR1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrackRecordWarning)  # the log does not hold it: never read
        got = run_sql("SELECT run_id FROM current", home).column("run_id").to_pylist()
    assert set(got) == EXPECTED["current"]
    assert "b-0000.parquet" in objects(home)  # a reader moves nothing
    with connect(home=home) as db, warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        refile_lost_runs(db, home)
    assert "b-0000.parquet" not in objects(home)
    assert objects(home, "trackrecord/left-out") == ["b-0000.parquet"]
    assert ids(home, "current") == EXPECTED["current"]


def test_the_reading_commands_read_around_an_object_damaged_past_its_footer(bucket, home, tmp_path):
    from tests.storage.state.test_rebuild_attacks import damage_a_column_chunk

    rows = scenario()
    file_rows(rows[:8], home)
    compact(home)
    file_rows(rows[8:], home)
    store = storage_of(home)
    (head,) = [n for n in objects(home) if n.startswith("h-")]
    good = set()
    for name in objects(home):
        if name.startswith(("b-", "o-")):  # every file but the one damaged
            table = pq.read_table(io.BytesIO(store.get(f"trackrecord/{name}")), columns=["run_id"])
            good |= set(table.column("run_id").to_pylist())
    copy = tmp_path / head
    copy.write_bytes(store.get(f"trackrecord/{head}"))
    damage_a_column_chunk(copy)
    store.delete(f"trackrecord/{head}")
    store.create(f"trackrecord/{head}", copy.read_bytes())
    changed = rf"{head}: its bytes are not those the state database's track-record log recorded"
    with pytest.warns(TrackRecordWarning, match=changed):  # left out before DuckDB reads it (issue 34)
        assert set(run_sql("SELECT run_id FROM rows", home).column("run_id").to_pylist()) == good
    with pytest.warns(TrackRecordWarning, match=changed):
        p = page("max-cut", home=home)
    assert {r.run_id for r in p.track_record} <= good and p.track_record
    assert head in objects(home)  # a reader moves nothing: the maintenance pass sets it aside


def test_query_and_page_read_the_bucket_and_show_no_credential(bucket, home, capsys):
    file_rows(scenario(), home)
    assert run("query", "SELECT count(*) AS n FROM current", "--format", "json") == 0
    assert json.loads(capsys.readouterr().out) == [{"n": len(EXPECTED["current"])}]
    assert run("query", "SELECT * FROM read_csv('/etc/passwd')") == 2  # nothing outside the bucket
    assert "disabled" in capsys.readouterr().err
    assert run("page", "max-cut", "--json") == 0
    out = capsys.readouterr()
    page = json.loads(out.out)
    assert {r["run_id"] for r in page["track_record"]} == {"r07", "r09", "r12"}
    for text in (out.out, out.err):
        assert KEY_ID not in text and SECRET not in text


def test_views_sql_writes_no_secret_unless_asked(bucket, home, capsys):
    file_rows(scenario(), home)
    assert run("views-sql") == 0
    text = capsys.readouterr().out
    assert KEY_ID not in text and SECRET not in text and "<AWS_SECRET_ACCESS_KEY>" in text
    with connect(home=home) as db:  # no glob: exactly the objects the state database's log holds
        recorded = {f"{bucket}/trackrecord/{f.name}" for f in db.trackrecord_live_files()}
    assert recorded and set(listed_files(text)) == recorded
    assert run("views-sql", "--credentials", "--output", str(home.parent / "views.sql")) == 0
    written = home.parent / "views.sql"
    assert SECRET in written.read_text() and written.stat().st_mode & 0o077 == 0


ANALYST = """
import json, sys, duckdb
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{sys.argv[1]}'")
con.execute(open(sys.argv[2]).read())
out = {v: sorted(r[0] for r in con.sql(f"SELECT run_id FROM {v}").fetchall()) for v in sys.argv[3:]}
out["version"] = duckdb.__version__
print(json.dumps(out))
"""


def test_an_analysts_duckdb_15_with_httpfs_reads_the_same_views(bucket, home, tmp_path):
    python, httpfs = httpfs1()
    rows = scenario()
    file_rows(rows[:8], home)
    compact(home)
    file_rows(rows[8:], home)
    storage_of(home).create("trackrecord/left-out/b-1.parquet", b"not read")  # no glob meets it
    script = tmp_path / "views.sql"
    script.write_text(analyst_sql(storage_of(home), credentials=True))
    (tmp_path / "analyst.py").write_text(ANALYST)
    done = subprocess.run(
        [python, str(tmp_path / "analyst.py"), httpfs, str(script), *sorted(EXPECTED)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out.pop("version").startswith("1.5")
    assert {k: set(v) for k, v in out.items()} == EXPECTED


def test_a_batch_object_under_its_name_holding_other_runs_is_set_aside_and_filed_again(bucket, home):
    rows = scenario()
    first = file_rows(rows[:3], home)
    store = storage_of(home)
    name = first.path.rsplit("/", 1)[-1]
    other = file_rows(rows[3:6], home)
    data = store.get(f"trackrecord/{other.path.rsplit('/', 1)[-1]}")
    store.delete(f"trackrecord/{name}")
    store.create(f"trackrecord/{name}", data)  # another batch's bytes under this batch's name
    again = file_rows(rows[:3], home)
    assert again.new
    got = pq.read_table(io.BytesIO(store.get(f"trackrecord/{name}"))).column("run_id").to_pylist()
    assert sorted(got) == sorted(r.run_id for r in rows[:3])


def test_views_sql_never_prints_a_password_given_in_the_endpoint(bucket, home, capsys, monkeypatch):
    """Finding (issue 26 tester), fixed: ``AWS_ENDPOINT_URL=http://KEY:SECRET@host:port`` went into the
    ``CREATE SECRET``'s ENDPOINT as ``KEY:SECRET@host:port``: ``qsolve views-sql`` without ``--credentials``
    printed the secret it promises to leave out."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.replace("//", f"//{KEY_ID}:{SECRET}@"))
    assert run("views-sql") == 0
    text = capsys.readouterr().out
    assert KEY_ID not in text and SECRET not in text
    assert f"ENDPOINT '{endpoint.split('//', 1)[1]}'" in text
