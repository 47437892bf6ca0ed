"""An attacker's tests of issue 39 (performance) as merged: performance work must keep every promise.

Findings (a strict xfail each, as merged; all mended since, the tests hold the mends), the worst first:

- ``Template.seed`` (flows/prefect_template.py) copied any cached file whose ``alembic_version`` reads the
  installed head: one holding a planted flow run, deployment, variable or concurrency limit (``evaluation`` at
  0 slots), a corrupt one (a malformed page elsewhere than ``alembic_version``'s), one in a cache folder
  anyone may write. The seeded server neither migrates nor registers, and a later command finds a database
  there and never seeds nor rebuilds it. Tried by hand: a cached file with ``alembic_version`` alone made
  every flow a ``500 Internal Server Error`` (Prefect's ``PrefectHTTPStatusError``), in that home for good;
- ``Template.of`` does not see every setting that moves Prefect's database: ``PREFECT_SERVER_DATABASE_DRIVER``
  and ``_NAME`` (or their ``PREFECT_API_`` aliases), ``PREFECT_HOME`` in the working directory's ``.env``,
  ``home`` in its ``prefect.toml`` or ``[tool.prefect]``. The copy lands in the other home and the server
  runs on the real database with migrations off (tried by hand, each: the command's first flow a 500, and
  a stray ``prefect.db`` in ``~/.prefect``);
- ``_settled`` waits on any ended flow run's Pending or Running task run in ``PREFECT_HOME``'s database: one
  left Pending long ago (a task whose upstream failed: Prefect leaves it ``NotReady``) makes every later
  command's end wait the whole 5 s (tried by hand: 5.07 s after a one-task flow); and it bounds each socket
  read, not the answer: a server dripping its answer holds the end past the bound;
- ``Template.keep`` counts rows of four tables only (a concurrency limit, a log line, an artifact, a task run,
  a work pool or an automation is kept), counts before it copies (a run written between is kept), keeps a
  database built without block types (``PREFECT_API_BLOCKS_REGISTER_ON_START=false``: tried by hand, 0 kept);
  the cache key names a block collection but not its version.

What holds, with how it was tried: the quick JSON reading (``read``) against ``read_standard`` on random
texts (numbers at every edge, long exponents and mantissas, escapes, duplicate names under ``\\/``, depth
120 to 135, every UTF-8 lead byte, raw control characters, mutated bytes, a byte order mark, foreign
whitespace: about 700,000 texts, no difference in value, type, -0.0, plain flag or refusal message),
orjson's number reading against ``float`` at halfway cases, orjson's sorted writer against
``canonical_text`` on plain documents (astral names are never plain), every file of tests/vectors, sealed
receipts over awkward values (alike on both readings; one sealed over code point order refused on both);
a truncated cached file (its revision unread), disk full while seeding (nothing left), a kept file swapped
during the copy (the copy's revision is checked); ``_settled`` against a server that answers ``[]`` (one
request) or never answers (bounded); the evaluation slot: a refusal other than a 423 and a missing limit
end the run at once, a 423 says it waits, with the limit's size, then waits.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import random
import sqlite3
import struct
import threading
import time
from pathlib import Path

import pytest

from qsolve.receipts.canonical import canonical_of, canonical_text
from qsolve.receipts.strict_json import Unreadable, read, read_standard
from qsolve_pipeline.flows.prefect_template import Template, _alembic_head, _revision
from qsolve_pipeline.flows.server import _settled

REPO = Path(__file__).resolve().parents[2]


def _packages() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("prefect")
    return Path(spec.origin).resolve().parents[1]


def _head() -> str:
    head = _alembic_head(_packages() / "prefect/server/database/_migrations/versions/sqlite")
    assert head is not None
    return head


def _cached(
    path: Path, head: str, *, planted: bool = False, filler: int = 0, blocks: bool = False, seal: bool = False
) -> Path:
    """A cached database at the installed head: the tables ``keep`` looks at, empty, and ``planted`` rows
    in them and beside them (an ``evaluation`` limit of 0 slots, a flow run, a deployment, a variable);
    with ``blocks``, a block type and schema registered as Prefect does; ``seal``ed: its digest recorded
    beside it as ``keep`` records it (so the digest alone never refuses it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("create table alembic_version (version_num varchar(32) not null)")
        db.execute("insert into alembic_version values (?)", (head,))
        for table in ("flow_run", "block_document", "variable", "deployment"):
            db.execute(f"create table {table} (id text, name text)")
        db.execute('create table concurrency_limit_v2 (id text, name text, "limit" integer, active boolean)')
        if planted:
            db.execute("insert into flow_run values ('r1', 'planted')")
            db.execute("insert into deployment values ('d1', 'pull-from-attacker')")
            db.execute("insert into variable values ('v1', 'planted')")
            db.execute("insert into concurrency_limit_v2 values ('c1', 'evaluation', 0, 1)")
        if filler:
            db.execute("create table filler (x blob)")
            db.executemany("insert into filler values (?)", [(os.urandom(500),) for _ in range(filler)])
        if blocks:
            for table in ("block_type", "block_schema", "block_schema_reference"):
                db.execute(f"create table {table} (id text, name text)")
            db.execute("insert into block_type values ('t1', 'Secret')")
            db.execute("insert into block_schema values ('s1', 't1')")
    if seal:
        _seal(path)
    return path


def _seal(kept: Path) -> None:
    """Record a cached file's digest beside it, as ``keep`` does."""
    import hashlib

    digest = Template(kept, kept, "").digest
    digest.write_text(hashlib.blake2b(kept.read_bytes()).hexdigest() + "\n")
    digest.chmod(0o600)


# --- 1. the kept copy of Prefect's database -----------------------------------------------------------


def test_a_planted_template_is_never_seeded(tmp_path: Path) -> None:
    head = _head()
    kept = _cached(tmp_path / "cache" / "prefect-key.db", head, planted=True, blocks=True, seal=True)
    assert _revision(kept) == head  # what seed() looks at reads as the head
    template = Template(tmp_path / "home" / "prefect.db", kept, head)
    seeded = template.seed()
    assert not seeded and not template.database.exists()


def test_a_corrupt_template_is_never_seeded(tmp_path: Path) -> None:
    head = _head()
    kept = _cached(tmp_path / "cache" / "prefect-key.db", head, filler=200, blocks=True)
    data = bytearray(kept.read_bytes())
    page = 4096
    last = len(data) // page - 1
    data[last * page : (last + 1) * page] = b"\xff" * page  # a table's page, not alembic_version's
    kept.write_bytes(bytes(data))
    _seal(kept)  # its digest the corrupt file's: the digest alone never refuses it
    assert _revision(kept) == head
    with sqlite3.connect(f"file:{kept}?mode=ro", uri=True) as db:
        try:
            check = db.execute("pragma quick_check").fetchone()[0]
        except sqlite3.DatabaseError as e:
            check = str(e)
    assert check != "ok"  # the file is malformed
    template = Template(tmp_path / "home" / "prefect.db", kept, head)
    seeded = template.seed()
    assert not seeded and not template.database.exists()


def test_a_template_others_may_write_is_never_seeded(tmp_path: Path) -> None:
    head = _head()
    kept = _cached(tmp_path / "shared" / "prefect-key.db", head, blocks=True, seal=True)
    kept.parent.chmod(0o700)
    kept.chmod(0o600)
    template = Template(tmp_path / "home" / "prefect.db", kept, head)
    assert template.seed()  # as built, sealed, private: seeded
    template.database.unlink()
    for folder, file in ((0o777, 0o600), (0o700, 0o666), (0o770, 0o600), (0o700, 0o620)):
        kept.parent.chmod(folder)
        kept.chmod(file)
        seeded = template.seed()
        assert not seeded and not template.database.exists(), (oct(folder), oct(file))


@pytest.mark.parametrize("prefix", ["PREFECT_SERVER_DATABASE_", "PREFECT_API_DATABASE_"])
def test_no_template_when_the_driver_and_name_name_another_database(
    tmp_path: Path, monkeypatch, prefix: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("QSOLVE_CACHE", str(tmp_path / "cache"))
    for variable in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(variable, raising=False)
    assert Template.of(_packages()) is not None  # the setting alone makes the difference
    monkeypatch.setenv(prefix + "DRIVER", "sqlite+aiosqlite")
    monkeypatch.setenv(prefix + "NAME", str(tmp_path / "elsewhere.db"))
    assert Template.of(_packages()) is None


@pytest.mark.parametrize(
    ("table", "row"),
    [
        ("concurrency_limit_v2", "evaluation at 0 slots"),
        ("log", "token=ghp_0f9e8d7c6b5a4f3e2d1c"),
        ("artifact", "an evaluation run's summary"),
        ("task_run", "a gate"),
        ("work_pool", "a pool whose job template runs the attacker's command"),
        ("automation", "run a deployment on every flow run"),
    ],
)
def test_a_database_holding_more_than_as_built_is_never_kept(tmp_path: Path, table: str, row: str) -> None:
    head = _head()
    built = _cached(tmp_path / "home" / "prefect.db", head, blocks=True)
    with sqlite3.connect(built) as db:
        if table != "concurrency_limit_v2":
            db.execute(f"create table {table} (id text, value text)")
        db.execute(f"insert into {table} (id) values (?)", (row,))
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head)
    template.keep()
    assert not template.kept.exists()


def test_a_database_without_block_types_is_never_kept(tmp_path: Path) -> None:
    head = _head()
    built = _cached(tmp_path / "home" / "prefect.db", head)
    with sqlite3.connect(built) as db:
        db.execute("create table block_type (id text, name text)")
        db.execute("create table block_schema (id text, block_type_id text)")
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head)
    template.keep()
    assert not template.kept.exists()


# --- 3. the end of a command: _settled ----------------------------------------------------------------


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def _serve(handler_post) -> tuple[_Server, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile_body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            handler_post(self)

        def log_message(self, *args) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/api"


def test_settling_is_bounded_against_a_server_that_drips(tmp_path: Path) -> None:
    stop = threading.Event()

    def drip(h) -> None:
        body = b"[" + b" " * 40 + b"]"
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for byte in body:
            if stop.is_set():
                return
            try:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    server, url = _serve(drip)
    try:
        began = time.monotonic()
        _settled(url, within=0.5)
        took = time.monotonic() - began
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert took < 2.5, f"held {took:.1f} s past a bound of 0.5 s"


def test_settling_asks_once_where_nothing_is_pending() -> None:
    asked = []

    def empty(h) -> None:
        asked.append(1)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"[]")

    server, url = _serve(empty)
    try:
        began = time.monotonic()
        assert _settled(url, within=5)
        took = time.monotonic() - began
    finally:
        server.shutdown()
        server.server_close()
    assert asked == [1] and took < 2


def test_settling_is_bounded_against_a_server_that_never_answers() -> None:
    stop = threading.Event()
    server, url = _serve(lambda h: stop.wait(10))
    try:
        began = time.monotonic()
        assert not _settled(url, within=0.5)
        took = time.monotonic() - began
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert took < 2.5


# --- 2. the quick JSON reading and the orjson writer (held) ---------------------------------------------


def _tag(v):
    if isinstance(v, dict):
        return ("d", tuple((k, _tag(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("l", tuple(_tag(x) for x in v))
    if isinstance(v, float):
        return ("f", struct.pack(">d", v))
    return (type(v).__name__, v)


def _outcome(reader, data: bytes):
    try:
        doc = reader(data)
    except Unreadable as e:
        return ("refused", str(e))
    return (_tag(doc.value), doc.big_ints, doc.plain)


_NUMBERS = [
    "0", "-0", "1", "-1", "0.0", "-0.0", "1.0", "1e0", "1E2", "1e-5", "1e-4", "0.0001", "9.999e-5", "1e16",
    "999999999999999.9", "9007199254740991", "9007199254740992", "-9007199254740992", "9007199254740993",
    "1e21", "1e-7", "5e-324", "2e-324", "1.7976931348623157e308", "1.7976931348623159e308", "1e400", "0e400",
    "0.5", "0.1", "-0e0", "-0E-0", "4503599627370495.5", "1" * 17, "1" * 310, "18446744073709551616",
    "-9223372036854775809", "01", "1.", ".5", "+1", "NaN", "Infinity", "1e+1", "10000000000000000.0",
]  # fmt: skip
_CHARS = ["a", ":", '\\"', "\\\\", "\\/", "\\n", "\\u0041", "\\ud800", "\\ud83d\\ude00", "\x7f", "\u2028",
          "\uffff", "\ue000", "\U0001f600", "\x1f", ".0,", "-0", "0e+"]  # fmt: skip


def _text(r: random.Random, depth: int = 0) -> str:
    c = r.random()
    if depth > 3 or c < 0.4:
        if r.random() < 0.5:
            return r.choice(_NUMBERS)
        return '"' + "".join(r.choice(_CHARS) for _ in range(r.randint(0, 3))) + '"'
    if c < 0.7:
        return "[" + ",".join(_text(r, depth + 1) for _ in range(r.randint(0, 3))) + "]"
    names = [
        '"' + "".join(r.choice(_CHARS) for _ in range(r.randint(0, 2))) + '"' for _ in range(r.randint(0, 3))
    ]
    if names and r.random() < 0.3:
        names.append(r.choice(names))
    return "{" + ",".join(f"{n}:{_text(r, depth + 1)}" for n in names) + "}"


def test_the_quick_reading_is_the_standard_one_on_random_texts() -> None:
    r = random.Random(39)
    for _ in range(3000):
        data = (" " * r.randint(0, 1) + _text(r)).encode("utf-8", "surrogatepass")
        if r.random() < 0.2 and data:
            i = r.randrange(len(data))
            data = data[:i] + bytes([r.randrange(256)]) + data[i + 1 :]
        assert _outcome(read, data) == _outcome(read_standard, data), data


def test_the_quick_reading_is_the_standard_one_on_every_vector() -> None:
    for path in sorted((REPO / "tests" / "vectors").rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            assert _outcome(read, data) == _outcome(read_standard, data), path
            try:
                doc = read(data)
            except Unreadable:
                continue
            assert canonical_of(doc, doc.value) == canonical_text(doc.value).encode(), path


@pytest.mark.parametrize(
    "text",
    [
        '{"\U0001f600":1,"\uffff":2,"\ue000":3}',  # UTF-16 order: U+E000, U+1F600 (d83d), U+FFFF
        '{"a":1e21,"b":1e-7,"c":5e-324,"d":-0.0,"e":9007199254740992,"f":0.000123}',
        '{"s":"\u2028\x7f\\u001f\\t","\\u00e9":1,"\u00e9x":[0.5,1.5,-2]}',
        '{"a/":1,"a\\/":2}',
    ],
)
def test_the_orjson_writer_is_the_canonical_text(text: str) -> None:
    data = text.encode()
    try:
        doc = read(data)
    except Unreadable:
        assert _outcome(read_standard, data)[0] == "refused"
        return
    assert _outcome(read, data) == _outcome(read_standard, data)
    assert canonical_of(doc, doc.value) == canonical_text(doc.value).encode()


# --- 4. the evaluation slot (held) ------------------------------------------------------------------


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, line: str) -> None:
        self.lines.append(line)


def _refusal(status: int | None):
    import httpx
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError

    if status is None:  # strict, and no such limit
        return ConcurrencySlotAcquisitionError("Concurrency limits ['evaluation'] must be created first")
    request = httpx.Request("POST", "http://127.0.0.1/api/v2/concurrency_limits/increment")
    cause = httpx.HTTPStatusError(
        "refused", request=request, response=httpx.Response(status, request=request)
    )
    error = ConcurrencySlotAcquisitionError(f"Unable to acquire concurrency slots: {status}")
    error.__cause__ = cause
    return error


def _asked(monkeypatch, refusal) -> list[dict]:
    """Every call of Prefect's ``concurrency`` _slot makes: the first refused with ``refusal``."""
    import contextlib

    import prefect.concurrency.sync as sync

    calls: list[dict] = []

    @contextlib.contextmanager
    def concurrency(*names, **options):
        calls.append(options)
        if len(calls) == 1 and refusal is not None:
            raise refusal
        yield

    monkeypatch.setattr(sync, "concurrency", concurrency)
    return calls


@pytest.mark.parametrize("status", [500, 404, None])
def test_a_refusal_other_than_a_423_ends_the_run_and_never_waits(monkeypatch, status) -> None:
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError

    from qsolve_pipeline.flows.evaluation import _slot

    calls = _asked(monkeypatch, _refusal(status))
    log = _Log()
    with pytest.raises(ConcurrencySlotAcquisitionError), _slot("run-1", log):
        pass
    assert calls == [{"occupy": 1, "strict": True, "max_retries": 0}] and log.lines == []


def test_a_423_says_it_waits_then_waits(monkeypatch) -> None:
    import contextlib
    import types

    import prefect.client.orchestration as orchestration

    from qsolve_pipeline.flows.evaluation import _slot

    calls = _asked(monkeypatch, _refusal(423))

    @contextlib.contextmanager
    def get_client(sync_client=False):
        yield types.SimpleNamespace(
            read_global_concurrency_limit_by_name=lambda name: types.SimpleNamespace(limit=2)
        )

    monkeypatch.setattr(orchestration, "get_client", get_client)
    log = _Log()
    with _slot("run-1", log):
        pass
    assert calls == [{"occupy": 1, "strict": True, "max_retries": 0}, {"occupy": 1, "strict": True}]
    said = "evaluation run run-1 waits for a slot of the concurrency limit evaluation"
    said += " (2 runs at a time, all taken)"
    assert log.lines[0] == said
    assert log.lines[1] == "evaluation run run-1 took a slot of evaluation"


def _collection(site: Path, version: str) -> Path:
    """A block collection installed in ``site`` at ``version`` (its blocks' schemas may change with it)."""
    info = site / f"qsolve_attack_blocks-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: qsolve-attack-blocks\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[prefect.collections]\nqsolve_attack_blocks = qsolve_attack_blocks\n"
    )
    return site


def test_an_upgraded_block_collection_is_another_template(tmp_path: Path, monkeypatch) -> None:
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("QSOLVE_CACHE", str(tmp_path / "cache"))
    for variable in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(variable, raising=False)
    without = Template.of(_packages())
    assert without is not None
    kept = []
    for version in ("1.0", "2.0"):
        site = _collection(tmp_path / f"site-{version}", version)
        monkeypatch.setattr(sys, "path", [str(site), *sys.path])
        template = Template.of(_packages())
        assert template is not None
        kept.append(template.kept)
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(site)])
    assert without.kept != kept[0]  # the collection is seen
    assert kept[0] != kept[1]


@pytest.mark.parametrize(
    ("file", "text"),
    [
        (".env", "PREFECT_HOME={home}\n"),
        ("prefect.toml", 'home = "{home}"\n'),
        ("pyproject.toml", '[tool.prefect]\nhome = "{home}"\n'),
    ],
)
def test_the_template_is_of_the_database_prefect_uses(
    tmp_path: Path, monkeypatch, file: str, text: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("QSOLVE_CACHE", str(tmp_path / "cache"))
    for variable in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(variable, raising=False)
    project = tmp_path / "project-prefect"
    (tmp_path / file).write_text(text.format(home=project))
    template = Template.of(_packages())
    assert template is None or template.database == project / "prefect.db"


#: a task run left Pending ("NotReady": its upstream failed) under a flow run that failed a day before this
#: server started: Prefect never ends it (tried by hand on Prefect 3.9.1: a flow whose task waits for a
#: failed one leaves it so in PREFECT_HOME's database, which every later command's server shares)
_DAY_AGO = "2026-01-01T00:00:00Z"
_STALE = {
    "id": "5e1f0000-0000-4000-8000-000000000001",
    "flow_run_id": "5e1f0000-0000-4000-8000-000000000002",
    "state": {"type": "PENDING", "name": "NotReady"},
    "expected_start_time": _DAY_AGO,
    "start_time": None,
    "flow_run": {"state": {"type": "FAILED"}, "start_time": _DAY_AGO, "end_time": _DAY_AGO},
}


def _excludes_the_stale_run(query: dict) -> bool:
    """Whether a task-run filter, as Prefect reads it, leaves out the stale task run (by ids, or by a time
    after it)."""
    runs, flows = query.get("task_runs") or {}, query.get("flow_runs") or {}
    if "any_" in (runs.get("id") or {}) and _STALE["id"] not in runs["id"]["any_"]:
        return True
    if "any_" in (flows.get("id") or {}) and _STALE["flow_run_id"] not in flows["id"]["any_"]:
        return True
    for filters in (runs, flows):
        for field in ("start_time", "expected_start_time", "end_time", "next_scheduled_start_time"):
            after = (filters.get(field) or {}).get("after_")
            if after is not None and after > _DAY_AGO:
                return True
    return False


def test_a_task_run_left_pending_long_ago_does_not_stretch_every_command() -> None:
    import json

    def prefect(h) -> None:
        query = json.loads(h.rfile_body or b"{}")
        body = b"[]" if _excludes_the_stale_run(query) else json.dumps([_STALE]).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    server, url = _serve(prefect)
    try:
        began = time.monotonic()
        _settled(url, within=1.0)
        took = time.monotonic() - began
    finally:
        server.shutdown()
        server.server_close()
    assert took < 0.8, f"the command's end waited {took:.1f} s on a task run of a day ago"


def test_what_is_kept_is_what_was_counted(tmp_path: Path, monkeypatch) -> None:
    head = _head()
    built = _cached(tmp_path / "home" / "prefect.db", head, blocks=True)
    connect = sqlite3.connect

    class Source:
        """The server's database as keep() reads it; another command writes a run just before the copy."""

        def __init__(self, real: sqlite3.Connection) -> None:
            self.real = real

        def execute(self, *args):
            return self.real.execute(*args)

        def close(self) -> None:
            self.real.close()

        def backup(self, target: sqlite3.Connection) -> None:
            with contextlib.closing(connect(built)) as other:
                other.execute("insert into flow_run values ('r1', 'another command''s run')")
                other.commit()
            self.real.backup(target)

    def connecting(database, *args, **kwargs):
        real = connect(database, *args, **kwargs)
        return Source(real) if str(database).startswith("file:") else real

    monkeypatch.setattr(sqlite3, "connect", connecting)
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head)
    template.keep()
    monkeypatch.setattr(sqlite3, "connect", connect)
    if template.kept.exists():
        with contextlib.closing(connect(template.kept)) as db:
            assert db.execute("select count(*) from flow_run").fetchone() == (0,)


def _verdicts(data: bytes, monkeypatch) -> tuple:
    """The verdict of ``data`` read quickly, then by the standard reading alone."""
    import qsolve.receipts.strict_json as strict_json
    from qsolve.receipts.verifier import verify

    quick = verify(data)
    with monkeypatch.context() as m:
        m.setattr(strict_json, "_QUICK", False)
        standard = verify(data)
    return (quick.valid, quick.reasons), (standard.valid, standard.reasons)


def test_a_receipt_over_awkward_values_verifies_alike_on_both_readings(monkeypatch) -> None:
    import json

    from qsolve.receipts.canonical import canonical_bytes
    from qsolve.receipts.seal import Form, digest
    from tests.qsolve.receipts.builders import KEY, request, result, sealed

    req = request()
    req["meta"] = {
        "\U0001f600": 1,
        "\uffff": 2,
        "\ue000": 3,
        "s": "\u2028\x7f\x1f",
        "n": [0.5, 0.000123, 1.5],
    }
    job = sealed(req)
    awkward = sealed(req, {**result(), "extra": {"x": [1e21, 1e-7, 5e-324, -0.0, 100.0]}})
    texts = [
        json.dumps(job).encode(),  # \u escapes: the standard reading
        json.dumps(job, ensure_ascii=False).encode(),  # astral bytes: quick, not plain
        json.dumps(awkward, ensure_ascii=False).encode(),  # whole and tiny doubles: the standard reading
    ]
    plain = {"request": request(), "result": result()}
    texts.append(json.dumps(sealed(plain["request"], plain["result"]), ensure_ascii=False).encode())  # quick
    for text in texts:
        quick, standard = _verdicts(text, monkeypatch)
        assert quick == standard == (True, [])

    # a receipt over the names in code point order (orjson's, not RFC 8785's) is refused on both readings
    forged = json.loads(texts[1])
    body = {k: v for k, v in forged["result"].items() if k != "receipt"}
    import orjson

    q = orjson.dumps(forged["request"], option=orjson.OPT_SORT_KEYS)
    assert q != canonical_bytes(forged["request"])  # the orders differ on these names
    d = digest(Form.CANONICAL, q, canonical_bytes(body))
    forged["result"]["receipt"].update(digest=d.hex(), signature=KEY.sign(d).hex())
    quick, standard = _verdicts(json.dumps(forged, ensure_ascii=False).encode(), monkeypatch)
    assert quick == standard and "digest_mismatch" in quick[1]


def test_a_disk_full_while_seeding_leaves_nothing_half_written(tmp_path: Path, monkeypatch) -> None:
    import errno
    import shutil

    head = _head()
    kept = _cached(tmp_path / "cache" / "prefect-key.db", head, blocks=True, seal=True)

    def full(source, target, *args, **kwargs):
        target.write(source.read(4096))
        target.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shutil, "copyfileobj", full)
    template = Template(tmp_path / "home" / "prefect.db", kept, head)
    assert not template.seed()
    assert list((tmp_path / "home").iterdir()) == []
