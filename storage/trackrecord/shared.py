"""The track record in object storage (``QSOLVE_STORAGE_URL=s3://BUCKET/PREFIX``; issue 26): the same files
as in a home's folder (``layout``), under ``PREFIX/trackrecord/``, written through ``storage.objects``.

    schema-v2.parquet, b-, h-, o-<digest>.parquet     as in the folder; created only where absent
    left-out/                                          files the views leave out (copied there, then removed)

A file is created whole with ``If-None-Match: *``: two machines filing the same runs make one file, and
no file is ever overwritten. The files are listed (one level: ``left-out/`` is not read) and each is
checked from its footer (a ranged GET; the check is kept per process by the object's ETag), by
``inventory.CHECKS``. Compaction is claimed in the state database (``StateDB.claim``): one machine
compacts at a time; its outputs are created before any input is removed, so a reader listing at any
moment finds every row (some twice, which the views show once); a reader that meets a file removed after
its listing lists again. qsolve's own DuckDB reads the ``s3://`` addresses through the store's client
(``ObjectStore.attach``); an analyst's DuckDB through httpfs (``analyst_sql``).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES
from qsolve_pipeline.storage.objects import ObjectStore, ObjectTooLarge

from .inventory import CHECKS, footer_problem, warn_left_out
from .layout import BATCH, FOLDER, HEAD, LEFT_OUT, OLDER, SCHEMA_FILE, file_name
from .writing import BATCH_COMPRESSION, SORT_KEYS, Recorder, digest_bytes, same_rows, write_parquet

COMPACTION_CLAIM = "trackrecord-compaction"


def key(name: str) -> str:
    return f"{FOLDER}/{name}"


@dataclass(frozen=True)
class Entry:
    name: str
    size: int
    version: str
    problem: str | None = None
    rows: int = 0


@dataclass(frozen=True)
class SharedInventory:
    """The track record's objects, each checked; the views read the schema file's and the readable
    files' ``s3://`` addresses. The same questions as ``inventory.Inventory`` answers."""

    store: ObjectStore
    entries: tuple[Entry, ...]
    schema_file: str  # an address (the store's), or a local path where the store's could not be made

    def data_keys(self, *kinds: str) -> list[str]:
        kinds = kinds or (BATCH, HEAD, OLDER)
        prefixes = tuple(f"{k}-" for k in kinds)
        return [key(e.name) for e in self.entries if e.problem is None and e.name.startswith(prefixes)]

    def readable(self, *kinds: str) -> list[str]:
        return [self.store.address(k) for k in self.data_keys(*kinds)]

    def files(self, *kinds: str) -> list[str]:
        return self.readable(*kinds) or [self.schema_file]

    def rows(self, *kinds: str) -> int:
        chosen = set(self.data_keys(*kinds))
        return sum(e.rows for e in self.entries if key(e.name) in chosen)

    def size(self, address: str) -> int:
        return next(e.size for e in self.entries if self.store.address(key(e.name)) == address)

    @property
    def left_out(self) -> list[tuple[str, str]]:
        return [(self.store.address(key(e.name)), e.problem) for e in self.entries if e.problem is not None]

    @property
    def folder(self) -> str:
        return self.store.address(FOLDER + "/")


class _Ranged(io.RawIOBase):
    """An object read by ranged GETs: what pyarrow needs to read a footer without the whole file."""

    def __init__(self, store: ObjectStore, key: str, size: int) -> None:
        self.store, self.key, self.length, self.at = store, key, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.at = {0: offset, 1: self.at + offset, 2: self.length + offset}[whence]
        return self.at

    def tell(self) -> int:
        return self.at

    def readinto(self, b) -> int:
        end = min(self.length, self.at + len(b))
        if end <= self.at:
            return 0
        data = self.store.get_range(self.key, self.at, end)
        b[: len(data)] = data
        self.at += len(data)
        return len(data)


def opened(store: ObjectStore, key: str, size: int) -> pa.PythonFile:
    """The object ``key`` (of ``size`` bytes) as a file pyarrow reads by ranged GETs."""
    return pa.PythonFile(_Ranged(store, key, size), mode="r")


#: per store and object: the check done, by ETag (an object qsolve wrote never changes)
_checked: dict[tuple[str, str], Entry] = {}


def _check(store: ObjectStore, listed) -> Entry:
    name = PurePosixPath(listed.key).name
    cached = _checked.get((store.url, name))
    if cached is not None and (cached.size, cached.version) == (listed.size, listed.version):
        return cached
    schema, rows = None, 0
    bounded = footer_problem(listed.size, b"") if listed.size > TRACKRECORD_FILE_BYTES else None
    if bounded is None and listed.size >= 12:  # the footer's stated length, before pyarrow reads it
        bounded = footer_problem(listed.size, store.get_range(listed.key, listed.size - 8, listed.size))
    if bounded is not None:
        entry = Entry(name, listed.size, listed.version, bounded, 0)
        _checked[(store.url, name)] = entry
        return entry
    try:
        footer = pq.read_metadata(opened(store, listed.key, listed.size))
        schema, rows = footer.schema.to_arrow_schema(), footer.num_rows
    except FileNotFoundError:
        raise
    except (OSError, ValueError, pa.ArrowException):
        schema = None
    problem = None
    for _, check in CHECKS:
        problem = check(PurePosixPath(name), schema)
        if problem is not None:
            break
    entry = Entry(name, listed.size, listed.version, problem, 0 if problem else rows)
    _checked[(store.url, name)] = entry
    return entry


def remember(store: ObjectStore, name: str, rows: int) -> None:
    """A file this process has just created: known good (its ETag read at the next listing)."""
    _checked.pop((store.url, name), None)
    _written[(store.url, name)] = rows


_written: dict[tuple[str, str], int] = {}


def take_inventory(store: ObjectStore, schema_file: str | None = None) -> SharedInventory:
    entries = []
    for listed in store.children(FOLDER):
        name = PurePosixPath(listed.key).name
        if not name.endswith(".parquet"):
            continue
        rows = _written.pop((store.url, name), None)
        if rows is not None:
            entry = Entry(name, listed.size, listed.version, None, rows)
            _checked[(store.url, name)] = entry
        else:
            try:
                entry = _check(store, listed)
            except FileNotFoundError:  # removed meanwhile (a compaction)
                continue
        entries.append(entry)
    return SharedInventory(store, tuple(entries), schema_file or store.address(key(SCHEMA_FILE)))


def parquet_bytes(table: pa.Table, compression: str) -> bytes:
    out = io.BytesIO()
    write_parquet(table, out, compression)
    return out.getvalue()


def ensure_schema(store: ObjectStore) -> None:
    """The empty file the views read first (``layout``); created once, by whoever comes first."""
    from .row import SCHEMA

    try:
        store.head(key(SCHEMA_FILE))
    except FileNotFoundError:
        store.create(key(SCHEMA_FILE), parquet_bytes(SCHEMA.empty_table(), "zstd"))


def set_aside(store: ObjectStore, inventory: SharedInventory) -> SharedInventory:
    """Every file the views leave out, copied into ``left-out/`` (created only where absent), then
    removed: no listing of the folder meets it again. Returns the inventory without them."""
    for e in inventory.entries:
        if e.problem is not None and e.name != SCHEMA_FILE:
            set_aside_one(store, e.name)
    return SharedInventory(
        store, tuple(e for e in inventory.entries if e.problem is None), inventory.schema_file
    )


def set_aside_one(store: ObjectStore, name: str, judged: str | None = None) -> bool:
    """Move one object into ``trackrecord/left-out/``, read once and bounded (``TRACKRECORD_FILE_BYTES``).
    One larger than any track-record file is none of qsolve's: it is removed, not copied. ``judged``:
    the BLAKE3 of the bytes found not to be qsolve's; an object of other bytes under the name now (one
    filed there since) is left where it is. Returns whether it was moved."""
    try:
        data = store.get(key(name), limit=TRACKRECORD_FILE_BYTES)
    except FileNotFoundError:
        return False
    except ObjectTooLarge:
        if judged not in (None, ""):
            return False
        store.delete(key(name))
        _checked.pop((store.url, name), None)
        return True
    if judged is not None and digest_bytes(data) != judged:
        return False
    n, target = 0, key(f"{LEFT_OUT}/{name}")
    while not store.create(target, data):
        if _same(store, target, data):
            break
        n += 1
        target = key(f"{LEFT_OUT}/{name}.{n}")
    store.delete(key(name))
    _checked.pop((store.url, name), None)
    return True


def _same(store: ObjectStore, target: str, data: bytes) -> bool:
    try:
        return store.get(target, limit=len(data)) == data
    except (FileNotFoundError, ObjectTooLarge):
        return False


def read_bounded(store: ObjectStore, k: str) -> bytes:
    """A track-record object's bytes, read no further than ``TRACKRECORD_FILE_BYTES`` (a larger one is
    :class:`ObjectTooLarge`, an ``OSError``)."""
    return store.get(k, limit=TRACKRECORD_FILE_BYTES)


def reading(store: ObjectStore) -> SharedInventory:
    """What ``qsolve query``, ``qsolve page`` and the web pages read; each file left out is named in a
    warning (and set aside where the store can be written)."""
    try:
        ensure_schema(store)
        schema = None
    except OSError:  # a store this machine may only read: the schema file from a temporary folder
        from .schema_file import reading_schema_file

        schema = str(reading_schema_file())
    inventory = take_inventory(store, schema)
    warn_left_out(inventory.left_out, stacklevel=4)
    if inventory.left_out:
        try:
            inventory = set_aside(store, inventory)
        except OSError:
            inventory = SharedInventory(
                store, tuple(e for e in inventory.entries if e.problem is None), inventory.schema_file
            )
    return inventory


def file_table(
    store: ObjectStore, table: pa.Table, record: Recorder | None = None, state=None
) -> tuple[str, bool]:
    """``filing.file_table`` into the store: one ``b-`` object named for its runs, created only where
    absent (``record`` records it in the state database first, ``state``'s track-record log gets its
    signed entry once it is there); returns its address and whether this call created it. One already
    there that is not the live file of that name (read whole, bounded: a small file) is set aside and
    the batch created again."""
    from . import log

    ensure_schema(store)
    run_ids = table.column("run_id").to_pylist()
    name = file_name(BATCH, run_ids)
    data = parquet_bytes(table.sort_by(SORT_KEYS), BATCH_COMPRESSION)
    digest = digest_bytes(data)
    if record is not None:
        record(name, digest)
    new = store.create(key(name), data, durable=False)
    if not new:  # filed already, at once elsewhere, or something else under its name
        there = _bytes_of(store, name)
        if there is not None and _ours(state, name, there, data):
            found = digest_bytes(there)
            if state is not None:  # its log entry, where the process that created it has not added it yet
                state.append_trackrecord_entry(log.FILED, [_added(name, found, len(there), run_ids)])
            return store.address(key(name)), False
        set_aside_one(store, name)
        new = store.create(key(name), data, durable=False)
    if new:
        remember(store, name, table.num_rows)
        if state is not None:  # recorded (durably) before it was created: its entry may wait (filing)
            add = _added(name, digest, len(data), run_ids)
            state.append_trackrecord_entry(log.FILED, [add], durable=record is None)
    return store.address(key(name)), new


def _ours(state, name: str, there: bytes, data: bytes) -> bool:
    """Whether the object under a batch's name (``there``) is qsolve's filing of it: the bytes this filing
    would create (``data``), the live file's, or exactly the rows of ``data`` (another process filing the
    same runs at once, between creating it and its log entry, or one that crashed there). A digest the
    state database recorded under the name is no evidence: its writer can put any row there."""
    if there == data:
        return True
    if state is not None:
        live = state.trackrecord_live_file(name)
        if live is not None and live.digest == digest_bytes(there):
            return True
    return same_rows(there, data)


def _added(name: str, digest: str, size: int, run_ids: list[str]) -> dict:
    from . import log

    return log.added(name, digest, size, len(run_ids), name[2 : -len(".parquet")], run_ids)


def _bytes_of(store: ObjectStore, name: str) -> bytes | None:
    from qsolve_pipeline.storage.objects import ObjectTooLarge

    try:
        return read_bounded(store, key(name))
    except (FileNotFoundError, ObjectTooLarge):
        return None


def _holds(store: ObjectStore, name: str, run_ids: list[str]) -> bool:
    found = file_run_ids(store, name)
    return found is not None and sorted(found) == sorted(run_ids)


def file_run_ids(store: ObjectStore, name: str) -> list[str] | None:
    """The run ids one object of the track record holds; None when it is gone or does not read."""
    try:
        found = pq.read_table(io.BytesIO(read_bounded(store, key(name))), columns=["run_id"]).column("run_id")
    except (OSError, ValueError, pa.ArrowException):  # FileNotFoundError among them
        return None
    return found.to_pylist()


def run_ids(store: ObjectStore) -> set[str]:
    """The run ids of every readable file (a file a compaction removes meanwhile: listed again)."""
    for attempt in range(3):
        found: set[str] = set()
        try:
            for k in take_inventory(store).data_keys():
                table = pq.read_table(io.BytesIO(read_bounded(store, k)), columns=["run_id"])
                found.update(table.column("run_id").to_pylist())
            return found
        except FileNotFoundError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def unreadable(store: ObjectStore, addresses: list[str]) -> list[str]:
    """The files whose rows do not read whole (each read through, every column)."""
    bad = []
    for a in addresses:
        try:
            pq.read_table(io.BytesIO(read_bounded(store, key_of(store, a))))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, pa.ArrowException):
            bad.append(a)
    return bad


def key_of(store: ObjectStore, address: str) -> str:
    base = store.address("")
    if not address.startswith(base):
        raise ValueError(f"{address}: not in {base}")
    return address[len(base) :]


def placer(
    store: ObjectStore, record: Recorder | None = None, made: dict[str, tuple[str, int]] | None = None
) -> Callable[[str, Callable[[Any], None], Callable[[], str | None]], Any]:
    """How compaction writes an output here: whole into memory, recorded (``record``; its digest and
    size kept in ``made``), then created in the store."""

    def place(kind: str, write: Callable[[Any], None], name: Callable[[], str | None]):
        out = io.BytesIO()
        write(out)
        found = name()
        if found is None:
            return None, False
        digest = digest_bytes(out.getvalue())
        if made is not None:
            made[found] = digest, len(out.getvalue())
        if record is not None:
            record(found, digest)
        created = store.create(key(found), out.getvalue())
        return store.address(key(found)), created

    return place


def remover(store: ObjectStore) -> Callable[[list[str]], None]:
    def remove(addresses: list[str]) -> None:
        for a in addresses:
            store.delete(key_of(store, a))

    return remove
