"""A tester's attacks on issue 34 as merged (readers read only the live set, verified; the signed log and
its checkpoints; a receipt belongs to its row; every object read has a bound), each acting as the bucket's
(or folder's) writer or as the state database's writer, who holds no host key the operator endorsed. Each
finding is a strict xfail: it fails today because of the defect and passes once it is mended.

- an emptied log is adopted again: a database writer who deletes the log and names a planted file in
  ``trackrecord_files`` (the table of migration 0011) gets it signed, as ``adopted``, by the next reader's
  own endorsed key, and its forged rows reach ``qsolve query``;
- a checkpoint signed by a key the trust list revoked before the checkpoint's time is taken by ``verify``
  (an entry signed so is refused); an entry signed outside its key's window (``not_before_ms``,
  ``not_after_ms``) is taken too: ``verify`` keeps only a key's revocation;
- ``qsolve views-sql`` in a bucket names the bucket's own schema file, unchecked, where no ``b-``/``h-``
  file verifies (a batch rewritten is left out): forged rows put there reach the analyst's views;
- compaction checks its inputs and then has DuckDB read them again by path: a batch rewritten in between
  is merged into a new ``h-`` file, signed as ``compacted`` by the host's key, and ``verify`` then finds
  nothing (docs/trackrecord.md says verify sees such a race afterwards);
- a bucket reader marks as seen (``trackrecord_live.seen``) the ETag its listing gave, not that of the
  bytes it hashed: a forged object (of the original's size) swapped back for one read is then read
  unhashed by every reader for as long as it stays;
- a maintenance pass reads a planted object of the bucket's track record whole, with no bound (twice);
  adoption reads each recorded object with no bound; filing over an object planted under its batch's
  name reads it whole too.
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve.receipts.keys import HostKey, load_host_key
from qsolve_pipeline.storage.objects import storage_of
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, file_rows
from qsolve_pipeline.storage.trackrecord import log as tlog
from qsolve_pipeline.storage.trackrecord.layout import SCHEMA_FILE, Layout, file_name
from qsolve_pipeline.storage.trackrecord.row import to_table
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from qsolve_pipeline.storage.trackrecord.verify import file_reader, verify
from qsolve_pipeline.storage.trackrecord.writing import digest_bytes, write_parquet
from tests.storage.conftest import bucket, s3_server  # noqa: F401 - fixtures
from tests.storage.state.conftest import postgres_schema
from tests.storage.trackrecord.builders import row, scenario


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    return path


@pytest.fixture(params=["folder-sqlite", "bucket-postgresql"])
def place(request, home, monkeypatch):
    """A home's folder with its SQLite state database, or a bucket (moto) with a PostgreSQL one."""
    if request.param == "folder-sqlite":
        yield "folder"
        return
    request.getfixturevalue("bucket")
    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        yield "bucket"


FORGED = row("forged-1", workflow="victim", case="twelve-bits", passed=True, accuracy=1.0)


def parquet(rows) -> bytes:
    out = io.BytesIO()
    write_parquet(to_table(rows), out)
    return out.getvalue()


def plant(home: Path, name: str, data: bytes) -> None:
    """As the folder's or bucket's writer: ``data`` under ``trackrecord/name``."""
    store = storage_of(home)
    store.delete(f"trackrecord/{name}")
    assert store.create(f"trackrecord/{name}", data)


def seen(home: Path, sql: str) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        return run_sql(sql, home).to_pylist()


def checked(home: Path, trusted, checkpoint=None):
    with connect(home=home) as db:
        documents = db.trackrecord_log_documents()
        live = {f.name: f.digest for f in db.trackrecord_live_files()}
    return verify(documents, file_reader(Layout(home)), trusted, live=live, checkpoint=checkpoint)


def empty_the_log_and_record(home: Path, recorded: list[tuple[str, str]]) -> None:
    """As the state database's writer: the log and its fold deleted, ``recorded`` (name, digest) written
    into ``trackrecord_files`` (migration 0011's table, which adoption takes in)."""
    from qsolve_pipeline.storage.state._tables import trackrecord_files, trackrecord_live, trackrecord_log

    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(trackrecord_live.delete())
        connection.execute(trackrecord_log.delete())
        for name, digest in recorded:
            connection.execute(
                trackrecord_files.insert().values(name=name, digest=digest, recorded_at=sa.func.now())
            )


def test_an_emptied_log_is_not_adopted_again_with_a_planted_file(place, home):
    file_rows(scenario()[:4], home)
    assert seen(home, "SELECT count(*) AS n FROM rows WHERE workflow = 'victim'") == [{"n": 0}]
    data = parquet([FORGED])
    name = file_name("b", [FORGED.run_id])
    plant(home, name, data)  # the bucket's (or folder's) writer
    empty_the_log_and_record(home, [(name, digest_bytes(data))])  # the database's writer
    found = seen(home, "SELECT run_id, passed FROM rows WHERE workflow = 'victim'")
    assert found == []  # today: [{'run_id': 'forged-1', 'passed': True}], in an entry signed by this host


def test_a_checkpoint_signed_after_its_key_was_revoked_is_named(home):
    file_rows(scenario()[:4], home)
    host = load_host_key(home, create=False)
    stolen = HostKey(bytes(range(32)))  # a key once endorsed, revoked from t=1000 ms (leaked, say)
    with connect(home=home) as db:
        size, head = db.trackrecord_log_head()
    checkpoint = tlog.checkpoint_document(size, head, stolen, "thief", 2_000_000_000_000)
    trusted = {host.public_hex: None, stolen.public_hex: 1000}
    result = checked(home, trusted, checkpoint=checkpoint)
    assert any("the checkpoint" in p and "revoked" in p for p in result.problems), result.problems


@pytest.fixture
def reads(monkeypatch):
    """Every read of the store's objects, as (key, limit): the real read, watched."""
    from qsolve_pipeline.storage.objects import LocalFolder, S3Objects

    seen: list[tuple[str, int | None]] = []
    for cls in (LocalFolder, S3Objects):
        real = cls.get

        def get(self, key, *, limit=None, _real=real):
            seen.append((key, limit))
            return _real(self, key, limit=limit)

        monkeypatch.setattr(cls, "get", get)
    return seen


def test_a_maintenance_pass_reads_a_planted_object_with_a_bound(home, bucket, monkeypatch, reads):  # noqa: F811
    from qsolve_pipeline.storage.maintenance import refile_lost_runs

    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        with connect(url, home=home) as db:
            file_rows(scenario()[:4], home, db.record_trackrecord_file, db=db)  # as the platform files
            plant(home, file_name("b", [FORGED.run_id]), parquet([FORGED]))  # as big as its writer likes
            plant(home, "o-" + "1" * 32 + ".parquet", b"PAR1" + b"\0" * 4096)  # not even Parquet
            reads.clear()
            refile_lost_runs(db, home)
    unbounded = [k for k, limit in reads if k.startswith("trackrecord/") and limit is None]
    assert unbounded == []


def test_adoption_reads_a_recorded_name_with_a_bound(home, bucket, monkeypatch, reads):  # noqa: F811
    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        with connect(url, home=home) as db:
            file_rows(scenario()[:4], home, db.record_trackrecord_file, db=db)
        with connect(url, home=home) as db:
            (recorded,) = [n for n, _ in db.recorded_trackrecord_files()]
        # a database from before the log (as migration 0015 finds one), and an object of the bucket's
        # writer under the name it recorded: as big as they like
        empty_the_log_and_record(home, [])
        plant(home, recorded, b"\0" * 65536)
        reads.clear()
        seen(home, "SELECT count(*) FROM rows")
    unbounded = [k for k, limit in reads if k.startswith("trackrecord/") and limit is None]
    assert unbounded == []


def test_a_batch_swapped_between_compactions_check_and_its_read_reaches_no_recorded_file(
    place, home, monkeypatch
):
    from qsolve_pipeline.storage.trackrecord import compact, compaction

    rows = scenario()
    file_rows(rows[:3], home)  # r03 failed
    file_rows(rows[3:], home)
    with connect(home=home) as db:
        (batch,) = [f.name for f in db.trackrecord_live_files() if f.rows == 3]
    forged = parquet([r.model_copy(update={"passed": True, "accuracy": 1.0}) for r in rows[:3]])

    swaps: list[str] = []  # once: the race the writer wins

    def swapped_after(real):
        def checked_then_swapped(*args, **kwargs):
            found = real(*args, **kwargs)
            if swaps:
                return found
            swaps.append(batch)
            # the folder's (or bucket's) writer: the batch rewritten just after its check
            layout = Layout(home)
            if layout.store is None:
                (layout.folder / batch).write_bytes(forged)
            else:
                plant(home, batch, forged)
            return found

        return checked_then_swapped

    monkeypatch.setattr(compaction, "verified_local", swapped_after(compaction.verified_local))
    monkeypatch.setattr(compaction, "verified_shared", swapped_after(compaction.verified_shared))
    compact(home)
    assert swaps == [batch]
    # today the forged r03 is in an h- file the log signed as compacted, and verify finds nothing
    assert seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed") == []


def test_filing_over_a_planted_object_reads_it_with_a_bound(home, bucket, monkeypatch, reads):  # noqa: F811
    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        rows = scenario()[:4]
        file_rows(scenario()[4:6], home)
        # the name the next batch takes is its runs' (a batch filed again after a pass set it aside,
        # say): the bucket's writer puts an object of their own there first, as big as they like
        plant(home, file_name("b", [r.run_id for r in rows]), b"\0" * 65536)
        reads.clear()
        file_rows(rows, home)
        assert seen(home, "SELECT count(*) AS n FROM rows") == [{"n": 6}]
    unbounded = [k for k, limit in reads if k.startswith("trackrecord/") and limit is None]
    assert unbounded == []


def analyst_views(home: Path, script: str):
    """An analyst's DuckDB running ``qsolve views-sql``'s views (its LOAD and SECRET lines aside: this
    process reaches the bucket through the store's own client)."""
    import duckdb

    con = duckdb.connect()
    storage_of(home).attach(con)
    for line in script.splitlines():
        if line.startswith("CREATE OR REPLACE VIEW"):
            con.execute(line)
    return con


def test_views_sql_names_no_schema_file_of_the_bucket_holding_rows(home, bucket, monkeypatch):  # noqa: F811
    from qsolve_pipeline.storage.trackrecord.analyst import analyst_sql

    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        rows = scenario()[:3]
        file_rows(rows, home)
        with connect(home=home) as db:
            (batch,) = [f.name for f in db.trackrecord_live_files()]
        # the bucket's writer: the batch rewritten (so left out at once) and the schema file replaced
        plant(home, batch, parquet([r.model_copy(update={"accuracy": 0.5}) for r in rows]))
        plant(home, SCHEMA_FILE, parquet([FORGED]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TrackRecordWarning)
            script = analyst_sql(storage_of(home))
    con = analyst_views(home, script)
    assert con.execute("SELECT count(*) FROM rows WHERE workflow = 'victim'").fetchone() == (0,)


def test_an_entry_signed_outside_its_keys_window_is_named(home, tmp_path, capsys):
    from qsolve.cli import main

    file_rows(scenario()[:4], home)
    key = load_host_key(home, create=False).public_hex
    trust = tmp_path / "keys.json"  # the host's key, endorsed for a window that ended in 1970
    listed = {"key": key, "not_after_ms": 1000}
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [listed]}))
    assert main(["trackrecord", "verify", "--trust", str(trust)]) == 1
    assert "entry 1" in capsys.readouterr().err


def same_size_forgery(original: bytes) -> bytes:
    """The batch ``original`` with every row ``passed``, padded (in its footer's key-value metadata) to
    exactly ``original``'s size, as the bucket's writer makes it to pass a size check."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(original))
    table = table.set_column(
        table.schema.get_field_index("passed"), "passed", pc.if_else(pc.is_valid(table["passed"]), True, True)
    )
    metadata = table.schema.metadata or {}

    def written(n: int, m: int) -> bytes:
        out = io.BytesIO()
        padded = table.replace_schema_metadata(metadata | {b"pad": b"x" * n, b"p": b"x" * m})
        pq.write_table(padded, out, compression="snappy", write_statistics=False)
        return out.getvalue()

    start = max(0, (len(original) - len(written(0, 0))) * 3 // 7 - 16)  # 1 + 4/3 (ARROW:schema) a byte
    for n in range(start, start + 64):
        for m in range(4):
            if len(data := written(n, m)) == len(original):
                return data
    raise AssertionError("no forgery of the original's size")


def test_a_forgery_put_back_for_one_read_is_not_taken_for_good(home, bucket, monkeypatch):  # noqa: F811
    from qsolve_pipeline.storage.objects import S3Objects
    from qsolve_pipeline.storage.trackrecord import live

    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        rows = scenario()[:3]  # r03 failed
        file_rows(rows, home)
        with connect(home=home) as db:
            (batch,) = [f.name for f in db.trackrecord_live_files()]
        original = storage_of(home).get(f"trackrecord/{batch}")
        forged = same_size_forgery(original)
        plant(home, batch, forged)
        real, put_back = S3Objects.get, []

        def get(self, key, *, limit=None):  # the writer wins one race: the original back for this read
            if key == f"trackrecord/{batch}" and not put_back:
                put_back.append(key)
                plant(home, batch, original)
            return real(self, key, limit=limit)

        monkeypatch.setattr(S3Objects, "get", get)
        seen(home, "SELECT count(*) FROM rows")
        monkeypatch.setattr(S3Objects, "get", real)
        assert put_back
        plant(home, batch, forged)  # and the forgery again, for good
        live._objects.clear()  # a new process: what it knows of the bytes is the state database's
        assert seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed") == []
