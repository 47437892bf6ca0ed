"""The track record's readers read only what the state database's log holds, verified; every filing is a
signed entry of an append-only log (issue 34, items 1 and 2). Each attack as the bucket's (or folder's)
writer or the database's writer acts; in a folder with SQLite and in a bucket with PostgreSQL (and the
log's race on both databases)."""

from __future__ import annotations

import io
import json
import threading
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from qsolve.receipts.keys import load_host_key
from qsolve_pipeline.storage.objects import storage_of
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, compact, file_rows
from qsolve_pipeline.storage.trackrecord import log as tlog
from qsolve_pipeline.storage.trackrecord.layout import BATCH, Layout, file_name
from qsolve_pipeline.storage.trackrecord.row import to_table
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from qsolve_pipeline.storage.trackrecord.verify import file_reader, verify
from qsolve_pipeline.storage.trackrecord.writing import write_parquet
from tests.storage.state.conftest import postgres_schema

from .builders import row, scenario


@pytest.fixture(params=["folder-sqlite", "bucket-postgresql"])
def place(request, home, monkeypatch):
    """Where the track record lives: a home's folder with its SQLite state database, or a bucket (moto)
    with a PostgreSQL state database."""
    if request.param == "folder-sqlite":
        yield "folder"
        return
    request.getfixturevalue("bucket")
    with postgres_schema() as url:
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        yield "bucket"


def parquet(rows) -> bytes:
    out = io.BytesIO()
    write_parquet(to_table(rows), out)
    return out.getvalue()


def replace(home: Path, name: str, data: bytes) -> None:
    """The file ``name`` of the track record replaced by ``data``, as its folder's or bucket's writer can."""
    layout = Layout(home)
    if layout.store is None:
        (layout.folder / name).write_bytes(data)  # in place: same path
    else:
        store = storage_of(home)
        store.delete(f"trackrecord/{name}")
        assert store.create(f"trackrecord/{name}", data)


def data_files(home: Path) -> list[str]:
    return sorted(e.key.rsplit("/", 1)[-1] for e in storage_of(home).children("trackrecord"))


def read(home: Path, name: str) -> bytes:
    return storage_of(home).get(f"trackrecord/{name}")


def seen(home: Path, sql: str) -> tuple[list, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TrackRecordWarning)
        found = run_sql(sql, home).to_pylist()
    return found, [str(w.message) for w in caught if issubclass(w.category, TrackRecordWarning)]


def checked(home: Path, checkpoint=None, trusted=None):
    with connect(home=home) as db:
        documents = db.trackrecord_log_documents()
        live = {f.name: f.digest for f in db.trackrecord_live_files()}
    if trusted is None:
        trusted = {load_host_key(home, create=False).public_hex: None}
    return verify(documents, file_reader(Layout(home)), trusted, live=live, checkpoint=checkpoint)


FORGED = row("forged-1", workflow="victim", case="twelve-bits", passed=True, accuracy=1.0)


def test_a_replaced_schema_file_reaches_no_reader_and_compaction_launders_nothing(place, home):
    rows = scenario()
    file_rows(rows[:8], home)
    file_rows(rows[8:], home)
    replace(home, "schema-v2.parquet", parquet([FORGED]))
    found, _ = seen(home, "SELECT count(*) AS n FROM rows WHERE workflow = 'victim'")
    assert found == [{"n": 0}]
    assert compact(home).merged_files == 2
    for name in data_files(home):
        if name.startswith(("b-", "h-", "o-")):
            ids = pq.read_table(io.BytesIO(read(home, name)), columns=["run_id"]).column("run_id")
            assert "forged-1" not in ids.to_pylist(), name
    found, _ = seen(home, "SELECT count(*) AS n FROM rows")
    assert found == [{"n": len(rows)}]
    result = checked(home)
    assert result.ok, result.problems
    with connect(home=home) as db:
        kinds = [json.loads(d)["entry"]["kind"] for d in db.trackrecord_log_documents()]
    assert kinds == ["filed", "filed", "compacted"]


def test_a_batch_rewritten_in_place_is_left_out_at_once_and_named(place, home):
    rows = scenario()
    file_rows(rows[:3], home)  # r03 failed
    file_rows(rows[3:], home)
    (batch,) = [n for n in data_files(home) if n.startswith("b-") and b"r03" in read(home, n)]
    forged = [r.model_copy(update={"passed": True, "accuracy": 1.0}) for r in rows[:3]]
    replace(home, batch, parquet(forged))
    found, said = seen(home, "SELECT run_id, passed FROM rows WHERE run_id IN ('r01', 'r03')")
    assert found == []  # the whole file is left out: none of its rows, forged or not
    assert any(batch in s and "rewritten or replaced" in s for s in said), said
    result = checked(home)
    assert not result.ok
    assert any(batch in p and "rewritten or replaced" in p for p in result.problems), result.problems
    compact(home)  # merges only what verifies: the forged batch stays out, and is not removed either
    found, _ = seen(home, "SELECT run_id FROM rows WHERE passed AND run_id = 'r03'")
    assert found == []


def test_a_file_planted_beside_the_recorded_ones_is_never_read(place, home):
    file_rows(scenario()[:4], home)
    layout = Layout(home)
    name = "b-" + "0" * 32 + ".parquet"
    if layout.store is None:
        (layout.folder / name).write_bytes(parquet([FORGED]))
    else:
        storage_of(home).create(f"trackrecord/{name}", parquet([FORGED]))
    found, _ = seen(home, "SELECT count(*) AS n FROM rows WHERE workflow = 'victim'")
    assert found == [{"n": 0}]


def _rewrite(home: Path, change) -> None:
    """As the database's writer: ``change(documents)`` returns the log's new documents (texts)."""
    from qsolve_pipeline.storage.state._tables import trackrecord_log

    with connect(home=home) as db:
        documents = [json.loads(d) for d in db.trackrecord_log_documents()]
        new = change(documents)
        with db.engine.begin() as connection:
            connection.execute(trackrecord_log.delete())
            for n, d in enumerate(new, start=1):
                connection.execute(
                    trackrecord_log.insert().values(
                        seq=n,
                        prev=f"{n:064d}",  # the table's constraint only: verify reads the documents
                        hash=tlog.document_hash(d),
                        document=tlog.text(d),
                        recorded_at=sa.func.now(),
                    )
                )


def test_an_entry_changed_or_removed_is_named(place, home, tmp_path, capsys):
    from qsolve.cli import main

    rows = scenario()
    for part in (rows[:6], rows[6:12], rows[12:]):
        file_rows(part, home)
    assert checked(home).ok

    def changed(documents):
        documents[1]["entry"]["adds"][0]["rows"] += 1
        return documents

    _rewrite(home, changed)
    problems = checked(home).problems
    assert any(p.startswith("entry 2: its signature does not hold") for p in problems), problems
    assert any(p.startswith("entry 3: its prev is not the hash of entry 2") for p in problems), problems

    trust = tmp_path / "keys.json"
    key = load_host_key(home, create=False).public_hex
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": key}]}))
    assert main(["trackrecord", "verify", "--trust", str(trust)]) == 1
    assert "entry 2: its signature does not hold" in capsys.readouterr().err

    _rewrite(home, lambda documents: [documents[0], documents[2]])  # entry 2 removed
    problems = checked(home).problems
    assert any(p.startswith("entry 2: it says it is entry 3") for p in problems), problems


def test_a_log_signed_again_by_another_key_is_not_trusted(place, home):
    from qsolve.receipts.keys import HostKey

    file_rows(scenario()[:5], home)
    other = HostKey(bytes(range(32)))

    def resigned(documents):
        out, prev = [], tlog.GENESIS
        for d in documents:
            e = d["entry"]
            d = tlog.entry_document(
                e["seq"], prev, e["kind"], e["adds"], e["retires"], other, "x", e["at_ms"]
            )
            prev = tlog.document_hash(d)
            out.append(d)
        return out

    _rewrite(home, resigned)
    problems = checked(home).problems
    assert problems and all("not in the trust list" in p or "live set" in p for p in problems), problems


def test_a_checkpoint_from_before_a_rewrite_names_it(place, home, tmp_path, capsys):
    from qsolve.cli import main

    rows = scenario()
    file_rows(rows[:6], home)
    file_rows(rows[6:12], home)
    assert main(["trackrecord", "checkpoint"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["checkpoint"]["size"] == 2
    file_rows(rows[12:], home)
    assert checked(home, checkpoint=saved).ok  # today's log extends it
    key = load_host_key(home, create=False)

    def history_rewritten(documents):  # an insider with the host's key drops entry 2 and signs again
        out, prev = [], tlog.GENESIS
        for n, d in enumerate([documents[0], documents[2]], start=1):
            e = d["entry"]
            d = tlog.entry_document(n, prev, e["kind"], e["adds"], e["retires"], key, e["host"], e["at_ms"])
            prev = tlog.document_hash(d)
            out.append(d)
        return out

    _rewrite(home, history_rewritten)
    result = checked(home, checkpoint=saved)
    assert any("checkpoint of 2 entries" in p and "rewritten" in p for p in result.problems), result.problems
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps(saved))
    trust = tmp_path / "keys.json"
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": key.public_hex}]}))
    assert main(["trackrecord", "verify", "--checkpoint", str(path), "--trust", str(trust)]) == 1
    assert "rewritten since the checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_writers_at_once_never_fork_the_log(backend, tmp_path):
    import contextlib

    with contextlib.ExitStack() as stack:
        if backend == "sqlite":
            url = f"sqlite:///{tmp_path / 'state.db'}"
        else:
            url = stack.enter_context(postgres_schema())
        dbs = [stack.enter_context(connect(url, home=tmp_path / f"h{i}")) for i in range(2)]
        errors = []

        def write(db, who: str) -> None:
            try:
                for n in range(15):
                    name = f"b-{who}{n:031d}.parquet"
                    added = tlog.added(name, "ab" * 32, 1, 1, "0" * 32, [name])
                    db.append_trackrecord_entry(tlog.FILED, [added])
            except Exception as e:  # pragma: no cover - shown by the assertion
                errors.append(e)

        threads = [threading.Thread(target=write, args=(db, w)) for db, w in zip(dbs, "12", strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        documents = dbs[0].trackrecord_log_documents()
        keys = {json.loads(d)["entry"]["key"]: None for d in documents}
        chain = tlog.Chain.of([json.loads(d) for d in documents], keys)
        assert len(documents) == 30 and chain.problems == []
        assert len(dbs[1].trackrecord_live_files()) == 30


def _linked_not_logged(home: Path, rows, monkeypatch, compression: str | None = None) -> str:
    """As a process filing ``rows`` that recorded its batch and gave it its name, then stopped (or was
    slower than another) before the batch's log entry: returns the batch's name. ``compression``: the
    batch written so (another qsolve's writer: the same rows in other bytes)."""
    from qsolve_pipeline.storage.state import StateDB
    from qsolve_pipeline.storage.trackrecord import filing, shared

    with monkeypatch.context() as m, connect(home=home) as db:
        m.setattr(StateDB, "append_trackrecord_entry", lambda self, *args, **kwargs: None)
        if compression is not None:
            m.setattr(filing, "BATCH_COMPRESSION", compression)
            m.setattr(shared, "BATCH_COMPRESSION", compression)
        filed = file_rows(rows, home, db.record_trackrecord_file, db=db)
    assert filed.new
    return str(filed.path).rsplit("/", 1)[-1]


def left_out(home: Path) -> list[str]:
    return sorted(e.key.rsplit("/", 1)[-1] for e in storage_of(home).children("trackrecord/left-out"))


def file_again(home: Path, rows):
    with connect(home=home) as db:
        return file_rows(rows, home, db.record_trackrecord_file, db=db)


def live_digest(home: Path, name: str) -> str | None:
    with connect(home=home) as db:
        live = db.trackrecord_live_file(name)
    return None if live is None else live.digest


@pytest.mark.parametrize("bytes_of", ["these", "same rows, other bytes"])
def test_a_batch_linked_by_another_filing_before_its_log_entry_is_logged_not_set_aside(
    place, home, monkeypatch, bytes_of
):
    """Two processes filing the same runs at once (CI: two passes and a rebuild): the second finds the
    first's batch under its name, recorded, not yet in the log. It gives the batch its log entry; it sets
    nothing aside. ``these``: the very bytes this filing would write; ``same rows, other bytes``: the
    first wrote exactly these rows, compressed otherwise."""
    from qsolve_pipeline.storage.trackrecord.writing import digest_bytes

    rows = scenario()[:4]
    name = _linked_not_logged(home, rows, monkeypatch, None if bytes_of == "these" else "zstd")
    assert live_digest(home, name) is None and seen(home, "SELECT run_id FROM rows")[0] == []

    again = file_again(home, rows)
    assert not again.new and str(again.path).endswith(name)
    assert left_out(home) == []
    assert live_digest(home, name) == digest_bytes(read(home, name))
    found, said = seen(home, "SELECT run_id, run_seconds FROM rows ORDER BY run_id")
    assert said == []
    assert found == [{"run_id": r.run_id, "run_seconds": r.run_seconds} for r in rows]  # each once
    assert checked(home).ok


def test_a_recorded_batch_of_other_values_under_a_batchs_name_is_set_aside(place, home, monkeypatch):
    """A batch under the name being filed, recorded in the state database but not logged, whose rows
    are not the ones this filing writes (the runs' values other than the database now holds: a forgery
    its writer recorded, or a filing of the runs before they changed): set aside, and this filing's
    batch filed and logged. A digest recorded under the name is no evidence the bytes are qsolve's."""
    rows = scenario()[:4]
    theirs = [r.model_copy(update={"run_seconds": 7.25}) for r in rows]
    name = _linked_not_logged(home, theirs, monkeypatch)

    again = file_again(home, rows)
    assert again.new and str(again.path).endswith(name)
    assert left_out(home) == [name]
    found, said = seen(home, "SELECT run_id, run_seconds FROM rows ORDER BY run_id")
    assert said == []
    assert found == [{"run_id": r.run_id, "run_seconds": r.run_seconds} for r in rows]
    assert checked(home).ok


def test_other_bytes_nobody_recorded_under_a_batchs_name_are_set_aside(place, home):
    """A file of the bucket's (or folder's) writer under the name of the batch being filed, of bytes the
    state database never recorded: set aside, and the batch filed under its name."""
    rows = scenario()[:4]
    forged = [r.model_copy(update={"passed": True, "accuracy": 1.0, "run_seconds": 0.5}) for r in rows]
    name = file_name(BATCH, [r.run_id for r in rows])
    assert storage_of(home).create(f"trackrecord/{name}", parquet(forged))

    filed = file_again(home, rows)
    assert filed.new and str(filed.path).endswith(name)
    assert left_out(home) == [name]
    found, said = seen(home, "SELECT run_id, run_seconds FROM rows ORDER BY run_id")
    assert said == []
    assert found == [{"run_id": r.run_id, "run_seconds": r.run_seconds} for r in rows]
    assert checked(home).ok
