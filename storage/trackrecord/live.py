"""What every reader reads (issue 34, item 1): exactly the files of the state database's live set (the
log folded: ``log``, ``StateDB.trackrecord_live_files``), each checked against its recorded BLAKE3 before
use. No listing or glob of the folder or the bucket decides what a reader sees: a file there that the log
does not hold is never read, and a live file whose bytes are not those recorded (rewritten in place,
replaced, cut short) or that is missing is left out at once and named, with why, in a
:class:`TrackRecordWarning` (on standard error and on the page).

Digests are kept by what identifies the bytes: a local file's device, inode, size and modification and
change times (the change time moves with any write, and no program sets it back), an object's ETag and
size, the ETag being the MD5 of the very bytes hashed (never the listing's: the object may be swapped
between the listing and the read). The key a file last matched with is kept in the state database
(``seen``), so a reader in a new process hashes only files that changed; a process also keeps its own.

No schema file is read from the home or the bucket: a reader binds the views to the fixed schema through
an empty file of its own, in a temporary folder of the process (``schema_file.reading_schema_file``).

A database whose log is empty but which recorded files before it (migration 0011's ``trackrecord_files``)
gets one ``adopted`` entry, signed by the first host that reads or files with the log: each recorded
file found with its recorded digest (:func:`adopt`); a reader that may not write the database (a
read-only home) reads those files in memory instead.

A live row is read only as the log entry that added it signed it (digest, size, rows): one changed
outside the log is left out and named as such (``StateDB.trackrecord_live_checked``), not blamed on the
file's bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from .inventory import FileEntry, Inventory
from .layout import Layout, run_ids_digest
from .writing import digest_bytes, digest_file

NAME = re.compile(r"[bho]-([0-9a-f]{32})\.parquet")
MISSING = "recorded in the state database's track-record log but missing"
CHANGED = (
    "its bytes are not those the state database's track-record log recorded (BLAKE3 {digest:.16}...): "
    "rewritten or replaced since it was filed"
)

_objects: dict[tuple, str] = {}  # an object's digest, by store, name and the ETag of its bytes (MD5)
#: local files hashed and found not to match, by path, what identified their bytes and the digest wanted:
#: a long-lived reader (the web server) hashes a changed file once, not on every read
_mismatched: set[tuple[str, str, str]] = set()
#: per home: the state database this process last filed, compacted or read it with (a tool or a test
#: naming its database); a reader of that home in this process asks the same one
_used: dict[Path, str] = {}


@contextlib.contextmanager
def state_of(layout: Layout, db=None, *, create: bool = False) -> Iterator:
    """The state database that records ``layout``'s files: ``db`` where given, else the home's (opened
    here); for a reader (not ``create``) None where there is none yet (no ``QSOLVE_DATABASE_URL`` and no
    ``state.db``): nothing was ever recorded, and reading creates nothing."""
    if db is not None:
        _used[layout.home] = db.engine.url.render_as_string(hide_password=False)
        yield db
        return
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE

    if (url := _used.get(layout.home)) is not None:  # the database this process filed this home with
        with connect(url, home=layout.home) as opened:
            yield opened
        return
    if not create and not os.environ.get(DATABASE_URL_VARIABLE) and not (layout.home / "state.db").exists():
        yield None
        return
    with connect(home=layout.home) as opened:
        yield opened


def _local_seen(st: os.stat_result) -> str:
    return f"file:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def verified_local(layout: Layout, db, schema_file: Path) -> Inventory:
    """The live set's files in the home's folder, each checked; those that fail are in ``left_out``."""
    files, outside = _live(db, layout)
    entries = [FileEntry(name, 0, 0, why) for name, why in outside]
    for f in files:
        path = layout.folder / f.name
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            entries.append(FileEntry(f.name, 0, 0, MISSING))
            continue
        seen = _local_seen(st)
        problem = None
        if seen != f.seen:
            if st.st_size != f.size or (str(path), seen, f.digest) in _mismatched:
                problem = CHANGED.format(digest=f.digest)
            else:
                try:
                    digest = digest_file(path)
                except FileNotFoundError:
                    entries.append(FileEntry(f.name, 0, 0, MISSING))
                    continue
                if digest != f.digest:
                    problem = CHANGED.format(digest=f.digest)
                    _mismatched.add((str(path), seen, f.digest))
                else:
                    _mark_seen(db, f, seen)
        entries.append(FileEntry(f.name, st.st_size, st.st_mtime_ns, problem, 0 if problem else f.rows))
    return Inventory(layout.folder, schema_file, tuple(entries))


def verified_shared(layout: Layout, db, schema_file: str):
    """The live set's objects in the store, each checked (one listing, then a whole read of an object
    whose ETag changed since its bytes last matched, bounded by its recorded size)."""
    from qsolve_pipeline.storage.objects import ObjectTooLarge

    from .shared import Entry, SharedInventory, key

    store = layout.store
    listed = {Path(o.key).name: o for o in store.children("trackrecord")}
    files, outside = _live(db, layout)
    entries = [Entry(name, 0, "", why) for name, why in outside]
    for f in files:
        found = listed.get(f.name)
        if found is None:
            entries.append(Entry(f.name, 0, "", MISSING))
            continue
        seen = _etag_seen(found.version, found.size)
        problem = None
        if seen != f.seen:
            if found.size != f.size:
                problem = CHANGED.format(digest=f.digest)
            else:
                cache = (store.url, f.name, seen)
                digest = _objects.get(cache)
                if digest is None:
                    try:
                        data = store.get(key(f.name), limit=f.size)
                    except FileNotFoundError:
                        entries.append(Entry(f.name, 0, "", MISSING))
                        continue
                    except ObjectTooLarge:
                        data = None
                    digest = "" if data is None else digest_bytes(data)
                    # kept by the ETag of the bytes hashed (their MD5, as S3 gives a single-part object),
                    # never by the listing's: the object may have been swapped between the two
                    seen = "" if data is None else _etag_seen(hashlib.md5(data).hexdigest(), len(data))
                    if seen:
                        _objects[(store.url, f.name, seen)] = digest
                if digest != f.digest:
                    problem = CHANGED.format(digest=f.digest)
                elif seen:
                    _mark_seen(db, f, seen)
        entries.append(Entry(f.name, found.size, found.version, problem, 0 if problem else f.rows))
    return SharedInventory(store, tuple(entries), schema_file)


def _etag_seen(etag: str, size: int) -> str:
    """What identifies an object's bytes: its ETag (quotes aside) and size. An ETag that is not the
    MD5 of the bytes (a multipart upload's, a local folder's time) never matches one kept from bytes
    hashed here, so such an object is hashed on every read: slower, never wrong."""
    return f"etag:{etag.strip(chr(34)).lower()}:{size}"


def _live(db, layout: Layout) -> tuple[list, list[tuple[str, str]]]:
    """The live files a reader reads, and the live rows it does not, each (name, why): rows not as the
    log entry that added them signed them (``StateDB.trackrecord_live_checked``)."""
    if db is None:
        return [], []
    if db.trackrecord_log_head()[0] == 0:
        unsigned = adopt(db, layout, in_memory=True)
        if unsigned is not None:  # a database this reader may not write: adopted here, in memory
            return unsigned, []
    else:
        saw_started(db, layout)
    return db.trackrecord_live_checked()


EMPTIED = (
    "{database}: its track-record log is empty, yet this home saw it hold entries: they were removed "
    "(qsolve trackrecord verify --checkpoint names what); nothing is adopted, nothing read"
)


def _started_marker(db, layout: Layout) -> Path:
    """The file of this home that says this host saw ``db``'s log hold entries (one per database)."""
    from .writing import digest_bytes as _digest

    url = db.engine.url.render_as_string(hide_password=True)
    return layout.home / f".trackrecord-log-{_digest(url.encode())[:16]}.started"


def saw_log_started(db, layout: Layout) -> bool:
    """Whether this home saw ``db``'s log hold entries (:func:`saw_started`)."""
    return _started_marker(db, layout).exists()


def saw_started(db, layout: Layout) -> None:
    """Remember, in the home (outside the state database: its writer cannot undo it), that ``db``'s log
    holds entries, so that an emptied log is never adopted again by this host (:func:`adopt`)."""
    marker = _started_marker(db, layout)
    if marker.exists():
        return
    with contextlib.suppress(OSError):  # a home this host may only read: the database alone says
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()


def _mark_seen(db, f, seen: str) -> None:
    with contextlib.suppress(Exception):  # a database this machine may only read: hashed again next time
        db.mark_trackrecord_seen(f.name, f.digest, seen)


def adopt(db, layout: Layout, *, in_memory: bool = False) -> list | None:
    """The first entry of a database that recorded files before the log: each recorded file found with
    its recorded digest, as ``adopted`` (module docstring). Nothing where nothing was recorded. For a
    reader (``in_memory``) whose database (or home's key) cannot be written (a read-only home), the files
    adoption would add are returned as the live set, read in memory and signed by no one; else None."""
    import warnings

    import sqlalchemy.exc

    from . import log
    from .errors import TrackRecordWarning

    if _started_marker(db, layout).exists():  # the log was emptied: its writer is not to be signed for
        database = db.engine.url.render_as_string(hide_password=True)
        warnings.warn(EMPTIED.format(database=database), TrackRecordWarning, stacklevel=3)
        return None
    recorded = db.recorded_trackrecord_files()
    adds = []
    for name, digest in sorted(recorded):
        m = NAME.fullmatch(name)
        if m is None:
            continue
        try:
            data_digest, size, rows = _measure(layout, name)
        except (OSError, ValueError):
            continue
        if data_digest == digest:
            adds.append(log.added(name, digest, size, rows, m.group(1)))
    if adds:
        try:
            db.append_trackrecord_entry(log.ADOPTED, adds)
        except (OSError, sqlalchemy.exc.SQLAlchemyError):
            if not in_memory:  # a writer: its filing must not go on as if the files were adopted
                raise
            from qsolve_pipeline.storage.state._trackrecord_log import LiveFile

            return [LiveFile(a["name"], a["digest"], a["size"], a["rows"], 0, None) for a in adds]
        saw_started(db, layout)
    return None


def _measure(layout: Layout, name: str) -> tuple[str, int, int]:
    import io

    import pyarrow.parquet as pq

    if layout.store is not None:
        from .shared import key, read_bounded

        data = read_bounded(layout.store, key(name))  # ObjectTooLarge is an OSError: not adopted
        return digest_bytes(data), len(data), pq.read_metadata(io.BytesIO(data)).num_rows
    from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

    path = layout.folder / name
    size = path.stat().st_size
    if size > TRACKRECORD_FILE_BYTES:  # no track-record file is this large: not hashed, not adopted
        raise ValueError(f"{name}: {size} bytes, larger than any track-record file")
    return digest_file(path), size, pq.read_metadata(path).num_rows


def batch_added(name: str, digest: str, size: int, run_ids: list[str]) -> dict:
    """What a filing's entry adds: a batch, with its run ids."""
    from . import log

    return log.added(name, digest, size, len(run_ids), run_ids_digest(run_ids), run_ids)
