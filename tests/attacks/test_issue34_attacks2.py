"""A second attacker's findings on issue 34 (readers read only the live set, verified; the signed log;
the maintenance pass's set-aside and refile; two processes at once), after the first attack's were
closed (``test_issue34_attacks``). Each acts as the folder's (or bucket's) writer, the state database's
writer (who holds no host key the operator endorsed), both, or an operator; each is a strict xfail that
passes once mended.

- a batch swapped between its link and the stat its ``seen`` key is taken from (and, filed again,
  between its hash and that stat) is read unhashed by every reader for good;
- a ``trackrecord_files`` row of the database's writer gets a rewritten batch signed as ``filed`` by the
  next filing of its runs; compaction checks its inputs against the live set, not the signed log, and
  signs a forged batch into an ``h-`` file;
- ``qsolve trackrecord verify``: a live name that is a directory (traceback) or a FIFO (hangs); an entry
  not of its form (traceback); an unsigned entry's name and size read anywhere (``/dev/zero``, 1 TB); a
  live row's size changed, or the whole log emptied, not named; a ``--checkpoint`` of ``null`` taken as
  none; no state database: one made, and "verifies";
- ``qsolve trackrecord checkpoint`` signs the head the ``hash`` column states;
- a pass sets aside the batch another process filed under a planted name meanwhile; a rebuild retires a
  batch filed while it ran;
- a planted file in the folder read past ``TRACKRECORD_FILE_BYTES``: its footer by every reader, its
  bytes hashed by the pass;
- a reader on a read-only home whose database is from before the log fails.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve.receipts.keys import load_host_key
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordWarning, file_rows
from qsolve_pipeline.storage.trackrecord.layout import Layout
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from qsolve_pipeline.storage.trackrecord.verify import file_reader, verify
from qsolve_pipeline.storage.trackrecord.writing import digest_bytes
from tests.attacks.test_issue34_attacks import parquet, plant
from tests.storage.conftest import bucket, s3_server  # noqa: F401 - fixtures
from tests.storage.state.conftest import postgres_schema
from tests.storage.trackrecord.builders import scenario


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


def seen(home: Path, sql: str) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        return run_sql(sql, home).to_pylist()


def checked(home: Path):
    """``qsolve trackrecord verify`` with the host's own key trusted."""
    host = load_host_key(home, create=False)
    with connect(home=home) as db:
        documents = db.trackrecord_log_documents()
        live = {f.name: f.digest for f in db.trackrecord_live_files()}
    return verify(documents, file_reader(Layout(home)), {host.public_hex: None}, live=live)


def passed_forgery(rows) -> bytes:
    """The batch of ``rows`` as the writer would have it: every run passed, accuracy 1."""
    return parquet([r.model_copy(update={"passed": True, "status": "passed", "accuracy": 1.0}) for r in rows])


def test_a_batch_swapped_between_its_link_and_its_seen_key_is_left_out(home, monkeypatch):
    from qsolve_pipeline.storage.trackrecord import filing

    file_rows(scenario()[4:6], home)  # the track record exists
    rows = scenario()[:3]  # r03 failed
    forged = passed_forgery(rows)
    real, swapped = filing.remember, []

    def remember(path, n):  # just after the batch took its name, before filing stats it for its entry
        real(path, n)
        spare = path.parent / "spare"
        spare.write_bytes(forged)
        os.replace(spare, path)  # the folder's writer (inotify tells them the name at once)
        swapped.append(path.name)

    monkeypatch.setattr(filing, "remember", remember)
    file_rows(rows, home)
    monkeypatch.setattr(filing, "remember", real)
    assert swapped
    assert seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed") == []


def record_as_database_writer(home: Path, name: str, digest: str) -> None:
    """As the state database's writer: (name, digest) put in ``trackrecord_files`` (migration 0011's
    table of the files qsolve wrote), the log and the live set untouched."""
    from qsolve_pipeline.storage.state._tables import trackrecord_files

    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(
            trackrecord_files.insert().values(name=name, digest=digest, recorded_at=sa.func.now())
        )


def test_a_rewritten_batch_is_not_signed_as_filed_for_a_planted_record(place, home):
    rows = scenario()[:3]  # r03 failed
    file_rows(rows, home)
    with connect(home=home) as db:
        (batch,) = [f.name for f in db.trackrecord_live_files()]
    forged = passed_forgery(rows)
    plant(home, batch, forged)  # the folder's (or bucket's) writer: the batch rewritten
    record_as_database_writer(home, batch, digest_bytes(forged))  # the database's writer
    assert seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed") == []  # left out: holds
    file_rows(rows, home)  # the same runs filed again (a pass refiling them, a stage that stopped)
    shown = seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed")
    assert shown == [] or not checked(home).ok  # today: shown, in an entry this host signed as filed


def verify_cli(home: Path, tmp_path: Path, *, fifo: Path | None = None) -> int:
    """``qsolve trackrecord verify`` with the host's key trusted, in a thread; its exit code, 98 where it
    raised (a traceback), 99 where it waited in ``open`` for a writer of ``fifo`` (one is let in, with
    nothing to write, so that it ends)."""
    import json
    import threading

    from qsolve.cli import main

    key = load_host_key(home, create=False).public_hex
    trust = tmp_path / "keys.json"
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": key}]}))
    done: list = []

    def run():
        try:
            done.append(main(["trackrecord", "verify", "--trust", str(trust)]))
        except BaseException as e:  # noqa: BLE001 - what the user sees: a traceback
            done.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    waited = False
    while thread.is_alive():
        thread.join(0.2)
        if fifo is not None and thread.is_alive():
            try:  # succeeds only while a reader holds the FIFO open: verify, waiting for a writer
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                waited = True
            except OSError:
                pass
    if waited:
        return 99
    return done[0] if isinstance(done[0], int) else 98


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_verify_names_a_live_file_that_is_not_a_file(home, tmp_path, capsys, kind):
    file_rows(scenario()[:3], home)
    (batch,) = Layout(home).files("b")
    batch.unlink()
    batch.mkdir() if kind == "directory" else os.mkfifo(batch)  # the folder's writer
    capsys.readouterr()
    code = verify_cli(home, tmp_path, fifo=batch if kind == "fifo" else None)
    err = capsys.readouterr().err
    assert code == 1, code  # today: a traceback (98), or it waits for a writer of the FIFO for ever (99)
    assert batch.name in err and "Traceback" not in err


def rewrite_entry(home: Path, seq: int, change) -> None:
    """As the state database's writer: entry ``seq``'s document changed by ``change`` (no key to sign)."""
    import json

    from qsolve_pipeline.storage.state._tables import trackrecord_log

    with connect(home=home) as db:
        document = json.loads(db.trackrecord_log_documents()[seq - 1])
    change(document)
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(
            trackrecord_log.update().where(trackrecord_log.c.seq == seq).values(document=json.dumps(document))
        )


MALFORMED = {
    "a retire not an object": lambda d: d["entry"].__setitem__("retires", [1]),
    "an add without its size": lambda d: d["entry"]["adds"][0].pop("size"),
    "an add's size a string": lambda d: d["entry"]["adds"][0].__setitem__("size", "12"),
    "an add not an object": lambda d: d["entry"].__setitem__("adds", ["x"]),
}


@pytest.mark.parametrize("how", sorted(MALFORMED))
def test_verify_names_an_entry_not_of_its_form(home, tmp_path, capsys, how):
    file_rows(scenario()[:3], home)
    file_rows(scenario()[3:6], home)
    rewrite_entry(home, 2, MALFORMED[how])
    capsys.readouterr()
    code = verify_cli(home, tmp_path)
    err = capsys.readouterr().err
    assert code == 1, code  # today: 98, a traceback
    assert "entry 2" in err


def test_verify_reads_no_file_an_unsigned_entry_names_outside_the_folder(home, tmp_path, monkeypatch):
    import builtins

    from qsolve_pipeline.storage.trackrecord import verify as verify_module

    file_rows(scenario()[:3], home)
    file_rows(scenario()[3:6], home)

    def point_elsewhere(document):  # the database's writer: no key, so the signature fails
        document["entry"]["adds"][0].update(name="/dev/zero", size=2**40)

    rewrite_entry(home, 2, point_elsewhere)
    folder = Layout(home).folder
    opened: list[str] = []

    def spy(path, *args, **kwargs):  # what verify opens; nothing outside the folder is really read
        opened.append(str(path))
        if not str(path).startswith(f"{folder}/"):
            raise FileNotFoundError(path)
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(verify_module, "open", spy, raising=False)
    result = checked(home)
    assert any("entry 2" in p for p in result.problems), result.problems
    assert [p for p in opened if not p.startswith(f"{folder}/")] == []  # today: ['/dev/zero']


def test_a_live_rows_size_changed_outside_the_log_is_named_by_verify(place, home):
    from qsolve_pipeline.storage.state._tables import trackrecord_live

    file_rows(scenario()[:3], home)
    file_rows(scenario()[3:6], home)
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(trackrecord_live.update().values(size=trackrecord_live.c.size + 1, seen=None))
    assert seen(home, "SELECT count(*) AS n FROM rows") == [{"n": 0}]  # every file left out, "rewritten"
    result = checked(home)
    assert not result.ok  # today: "the track record verifies"


def test_a_pass_does_not_set_aside_the_batch_filed_under_a_planted_name_meanwhile(place, home, monkeypatch):
    from qsolve_pipeline.storage.maintenance import refile_lost_runs
    from qsolve_pipeline.storage.trackrecord import known
    from qsolve_pipeline.storage.trackrecord.layout import file_name

    with connect(home=home) as db:  # the track record exists, filed as the platform files
        file_rows(scenario()[4:6], home, db.record_trackrecord_file, db=db)
    rows = scenario()[:3]
    name = file_name("b", [r.run_id for r in rows])
    plant(home, name, passed_forgery(rows))  # the writer, under the name the next batch takes
    real, filed = known._known_now, []

    def known_now(db, layout, n):  # the pass looks at the planted file again: not qsolve's...
        found = real(db, layout, n)
        if n == name and not filed:  # ...and another process files the batch just then (in order, by hand)
            filed.append(file_rows(rows, home, db.record_trackrecord_file, db=db))
        return found

    monkeypatch.setattr(known, "_known_now", known_now)
    with connect(home=home) as db:
        done = refile_lost_runs(db, home)
    assert filed and filed[0].new  # the other process set the planted file aside and filed its batch
    shown = seen(home, "SELECT run_id, passed FROM rows WHERE run_id IN ('r01', 'r02', 'r03') ORDER BY 1")
    assert shown == [{"run_id": r.run_id, "passed": r.passed} for r in rows], done.set_aside


def test_verify_names_a_log_emptied_that_this_home_saw_hold_entries(home, tmp_path, capsys):
    from tests.attacks.test_issue34_attacks import empty_the_log_and_record

    file_rows(scenario()[:3], home)
    empty_the_log_and_record(home, [])  # the database's writer: the log and its fold deleted
    with pytest.warns(TrackRecordWarning, match="they were removed"):  # what every reader says
        run_sql("SELECT count(*) FROM rows", home)
    capsys.readouterr()
    code = verify_cli(home, tmp_path)
    captured = capsys.readouterr()
    assert code == 1, captured.out  # today: 0, "the track record verifies"


@pytest.mark.parametrize(
    "option, content",
    [("--checkpoint", "null"), ("--checkpoint", "5"), ("--trust", "null"), ("--trust", "5")],
)
def test_verify_refuses_a_file_given_that_is_not_an_object(home, tmp_path, option, content):
    import json

    from qsolve.cli import main

    file_rows(scenario()[:3], home)
    key = load_host_key(home, create=False).public_hex
    trust = tmp_path / "keys.json"
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": key}]}))
    given = tmp_path / "given.json"
    given.write_text(content)
    files = {"--trust": str(trust), "--checkpoint": None} | {option: str(given)}
    argv = ["trackrecord", "verify"] + [a for o, f in files.items() if f for a in (o, f)]
    try:
        code = main(argv)
    except Exception as e:  # noqa: BLE001 - what the user sees: a traceback
        code = repr(e)
    assert code in (1, 2)  # today: 0 for a checkpoint of null (none checked), else a TypeError


def test_a_batch_swapped_between_its_hash_and_its_stat_when_filed_again_is_left_out(home, monkeypatch):
    from qsolve_pipeline.storage.state._tables import trackrecord_live, trackrecord_log
    from qsolve_pipeline.storage.trackrecord import filing

    file_rows(scenario()[4:6], home)  # the track record exists
    rows = scenario()[:3]  # r03 failed
    file_rows(rows, home)
    with connect(home=home) as db, db.engine.begin() as connection:  # as if another process had linked the
        (batch,) = [f.name for f in db.trackrecord_live_files() if f.rows == 3]  # batch, not yet logged it:
        connection.execute(trackrecord_live.delete().where(trackrecord_live.c.name == batch))
        connection.execute(trackrecord_log.delete().where(trackrecord_log.c.seq == 2))  # its entry not there
    forged = passed_forgery(rows)
    real, swapped = filing.digest_opened, []

    def digest_opened(path, fd):  # the filing hashes the batch there (qsolve's bytes)...
        found = real(path, fd)
        if path.name == batch and not swapped:
            spare = path.parent / "spare"
            spare.write_bytes(forged)
            os.replace(spare, path)  # ...and the folder's writer renames a forgery over it at once
            swapped.append(path.name)
        return found

    monkeypatch.setattr(filing, "digest_opened", digest_opened)
    file_rows(rows, home)  # filing the same runs: the batch there gets its log entry here
    monkeypatch.setattr(filing, "digest_opened", real)
    assert swapped
    assert seen(home, "SELECT run_id FROM rows WHERE run_id = 'r03' AND passed") == []


@pytest.fixture
def state_db(place, home):
    """The state database of ``place`` (the home's SQLite, or the PostgreSQL of QSOLVE_DATABASE_URL)."""
    with connect(home=home) as db:
        yield db


def test_a_rebuild_does_not_retire_a_batch_filed_while_it_ran(state_db, home, monkeypatch):
    from qsolve_pipeline.storage import maintenance
    from tests.storage.state.test_rebuild import ended

    db = state_db
    version = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]
    first = ended(db, version, 4)
    maintenance.file_ended_runs(db, home)
    real, other = maintenance.failpoint, []

    def failpoint(name):  # the rebuild has written its batches; another process files runs just ended
        if name == "trackrecord.rebuilt" and not other:
            other.extend(ended(db, version, 3, start=4))
            runs = db.runs_by_id(other)
            file_rows([maintenance._row(db, r, home) for r in runs], home, db.record_trackrecord_file, db=db)
        return real(name)

    monkeypatch.setattr(maintenance, "failpoint", failpoint)
    maintenance.rebuild_track_record(db, home)
    db.mark_filed_ids(other)  # the other process marks its runs filed, as file_runs does after filing
    shown = [r["run_id"] for r in seen(home, "SELECT run_id FROM rows ORDER BY run_id")]
    assert shown == sorted(first + other)  # today: the other process's runs are missing


def test_the_host_signs_no_checkpoint_of_a_head_the_log_does_not_have(place, home):
    from qsolve_pipeline.storage.state._tables import trackrecord_log

    file_rows(scenario()[:3], home)
    file_rows(scenario()[3:6], home)
    with connect(home=home) as db, db.engine.begin() as connection:  # the database's writer
        connection.execute(trackrecord_log.update().where(trackrecord_log.c.seq == 2).values(hash="ab" * 32))
    try:
        with connect(home=home) as db:
            checkpoint = db.trackrecord_checkpoint()  # the operator, publishing the log's head
    except Exception:  # noqa: BLE001 - refusing is right too
        return
    host = load_host_key(home, create=False)
    with connect(home=home) as db:
        documents = db.trackrecord_log_documents()
    found = verify(documents, file_reader(Layout(home)), {host.public_hex: None}, checkpoint=checkpoint)
    assert found.ok, found.problems  # today: "entry 2's hash is not the checkpoint's head"


def sparse(path: Path, size: int, tail: bytes) -> None:
    """A file of ``size`` bytes (a hole, costing no disk) ending in ``tail``: what the folder's writer
    plants in an instant, however large."""
    with open(path, "wb") as f:
        f.truncate(size - len(tail))
        f.seek(0, 2)
        f.write(tail)


def test_a_reader_reads_no_footer_past_the_bound(home, monkeypatch):
    import struct

    import pyarrow.parquet as pq

    from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

    file_rows(scenario()[:3], home)
    size = TRACKRECORD_FILE_BYTES + 2**20
    planted = Layout(home).folder / ("o-" + "2" * 32 + ".parquet")  # the folder's writer
    sparse(planted, size, struct.pack("<I", size - 16) + b"PAR1")  # "my footer is all of me"
    real, handed = pq.read_metadata, []

    def read_metadata(where, *args, **kwargs):  # a footer larger than the bound is not really read here
        if isinstance(where, (str, Path)) and Path(where).stat().st_size > TRACKRECORD_FILE_BYTES:
            handed.append(Path(where).name)
            raise OSError("not read: over the bound")
        return real(where, *args, **kwargs)

    monkeypatch.setattr(pq, "read_metadata", read_metadata)
    assert seen(home, "SELECT count(*) AS n FROM rows") == [{"n": 3}]  # qsolve query, qsolve page
    assert handed == []  # today: [o-2222...parquet], read to its footer's length


def test_a_maintenance_pass_hashes_no_planted_file_past_the_bound(home, monkeypatch):
    from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES
    from qsolve_pipeline.storage.maintenance import refile_lost_runs
    from qsolve_pipeline.storage.trackrecord import known

    with connect(home=home) as db:
        file_rows(scenario()[:3], home, db.record_trackrecord_file, db=db)  # as the platform files
    (batch,) = Layout(home).files("b")
    planted = batch.parent / ("b-" + "1" * 32 + ".parquet")  # the folder's writer: a footer that reads
    sparse(planted, TRACKRECORD_FILE_BYTES + 2**20, batch.read_bytes())
    real, hashed = known.digest_file, []

    def digest_file(path):  # what is hashed; one over the bound is not really hashed here
        if path.stat().st_size > TRACKRECORD_FILE_BYTES:
            hashed.append(path.name)
            return "0" * 64
        return real(path)

    monkeypatch.setattr(known, "digest_file", digest_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackRecordWarning)
        with connect(home=home) as db:
            refile_lost_runs(db, home)
    assert hashed == []  # today: the planted file, hashed whole (twice)


def test_compaction_merges_no_batch_whose_live_digest_the_log_never_signed(place, home):
    import io

    import pyarrow.parquet as pq

    from qsolve_pipeline.storage.objects import storage_of
    from qsolve_pipeline.storage.state._tables import trackrecord_live
    from qsolve_pipeline.storage.trackrecord import compact

    rows = scenario()
    file_rows(rows[:3], home)  # r03 failed
    file_rows(rows[3:], home)
    with connect(home=home) as db:
        (batch,) = [f.name for f in db.trackrecord_live_files() if f.rows == 3]
    forged = passed_forgery(rows[:3])
    plant(home, batch, forged)  # the folder's (or bucket's) writer, and the database's:
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(
            trackrecord_live.update()
            .where(trackrecord_live.c.name == batch)
            .values(digest=digest_bytes(forged), size=len(forged), seen=None)
        )
    compact(home)
    with connect(home=home) as db:
        heads = [f.name for f in db.trackrecord_live_files() if f.name.startswith("h-")]
    store = storage_of(home)
    signed = [
        r["run_id"]
        for name in heads
        for r in pq.read_table(io.BytesIO(store.get(f"trackrecord/{name}"))).to_pylist()
        if r["passed"] and r["run_id"] == "r03"
    ]
    assert signed == []  # today: ['r03'], in an h- file of an entry this host signed as compacted


def test_verify_without_a_state_database_does_not_pass(home, tmp_path, monkeypatch):
    import json
    import shutil

    from qsolve.cli import main

    file_rows(scenario()[:3], home)
    key = load_host_key(home, create=False).public_hex
    trust = tmp_path / "keys.json"
    trust.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": key}]}))
    copy = tmp_path / "copy"  # an outside reader's copy of the track record's files, the database left out
    shutil.copytree(Layout(home).folder, copy / "trackrecord")
    monkeypatch.setenv("QSOLVE_HOME", str(copy))
    code = main(["trackrecord", "verify", "--trust", str(trust)])
    assert code != 0  # today: 0
    assert not (copy / "state.db").exists()  # today: an empty one, made by verify


@pytest.fixture
def read_only(tmp_path):
    """Make paths read-only even for root (``chattr +i``, ext4); undone at the end."""
    import shutil
    import subprocess

    made: list[Path] = []
    if shutil.which("chattr") is None:
        pytest.skip("no chattr here")

    def freeze(*paths: Path) -> None:
        for p in paths:
            if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i does not hold here (not root, or not ext4)")
            made.append(p)

    yield freeze
    for p in made:
        subprocess.run(["chattr", "-i", str(p)], capture_output=True)


def test_a_reader_on_a_read_only_home_reads_a_database_from_before_the_log(home, capsys, read_only):
    from qsolve.cli import main
    from tests.attacks.test_issue34_attacks import empty_the_log_and_record

    with connect(home=home) as db:
        file_rows(scenario()[:3], home, db.record_trackrecord_file, db=db)
    empty_the_log_and_record(home, [])  # as migration 0015 finds a database: files recorded, no log yet
    for marker in home.glob(".trackrecord-log-*"):
        marker.unlink()
    read_only(home, Layout(home).folder, *home.glob("state.db*"))
    capsys.readouterr()
    code = main(["query", "select count(*) as n from rows"])
    assert code == 0, capsys.readouterr().err  # today: 2
