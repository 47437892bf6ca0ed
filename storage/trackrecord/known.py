"""Which of the track record's data files the state database knows (issue 24, item 3): the state database
is the source of truth, so a file counts only when the database recorded it, by name and BLAKE3 of its
bytes, before it took its name (``StateDB.record_trackrecord_file``; filing and compaction record what
they write through a :data:`Recorder`).

The footer checks of ``inventory`` see damage; they cannot see a valid file where it does not belong: a
batch copied over another of as many rows, an older-rows file copied over another, a batch of the right
runs with other values (a failed run shown passed), a batch of a run the database never recorded. Each
is a (name, bytes) pair the database does not hold: the maintenance pass sets it aside and files the runs
it stood for again (``storage.maintenance``), and its report names it.

A database that has recorded no file yet (one from before migration 0011) adopts the files it finds
once: those whose run ids are their name's, all of them runs it marked filed, are recorded; the others
are set aside. Once only: the first check is marked, so a folder emptied later never reopens it.

Digests are kept per process by what would change with the bytes: a local file's size, times and inode
(its change time moves with any write, and no program sets it back), an object's ETag.
"""

from __future__ import annotations

from . import filing, shared
from .layout import Layout, file_name
from .writing import digest_bytes, digest_file

#: the problem a file the state database does not know is set aside for
UNKNOWN = (
    "not a file qsolve wrote: the state database records no file of this name and content "
    "(its runs are filed again from the state database)"
)
MISNAMED = filing.MISNAMED
NOT_FILED = "holds runs the state database never filed"

_objects: dict[tuple, str] = {}  # an object's digest, by its store, name, size and ETag


def _digest(layout: Layout, name: str) -> str:
    """BLAKE3 of a data file's bytes (kept per process: module docstring)."""
    if layout.store is None:
        from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

        path = layout.folder / name
        if path.stat().st_size > TRACKRECORD_FILE_BYTES:  # none of qsolve's: not hashed ("" is no digest)
            return ""
        return digest_file(path)
    store = layout.store
    listed = store.head(shared.key(name))
    cache = (store.url, name, listed.size, listed.version)
    found = _objects.get(cache)
    if found is None:
        from qsolve_pipeline.storage.objects import ObjectTooLarge

        try:  # bounded: an object larger than any track-record file is none of qsolve's ("" is no digest)
            found = digest_bytes(shared.read_bounded(store, shared.key(name)))
        except ObjectTooLarge:
            return ""
        _objects[cache] = found
    return found


def unknown_files(db, layout: Layout, inventory) -> list[tuple[str, str]]:
    """The readable data files the state database does not know, each with why: (name, problem). They
    are not moved here (``set_aside``). A database that knows no file adopts the files it finds (module
    docstring)."""
    names = [str(p).rsplit("/", 1)[-1] for p in inventory.readable()]
    if not names:
        if not db.has_trackrecord_files():
            db.mark_trackrecord_checked()  # nothing to adopt: nor will there ever be
        return []
    digests: dict[str, str] = {}
    for name in names:
        try:
            digests[name] = _digest(layout, name)
        except FileNotFoundError:  # compacted meanwhile: not there
            continue
    logged = {(f.name, f.digest) for f in db.trackrecord_live_files()}  # the log's live set (issue 34)
    if not db.has_trackrecord_files():  # what the log holds is known; the others are weighed
        return _adopt(db, layout, {n: d for n, d in digests.items() if (n, d) not in logged})
    known = db.known_trackrecord_files(digests) | logged
    return [(name, UNKNOWN) for name, digest in digests.items() if (name, digest) not in known]


def _adopt(db, layout: Layout, digests: dict[str, str]) -> list[tuple[str, str]]:
    filed = db.filed_run_ids()
    refused = []
    for name, digest in digests.items():
        ids = _run_ids(layout, name)
        if ids is None:
            continue
        if name != file_name(name[0], ids):
            refused.append((name, MISNAMED))
        elif not filed.issuperset(ids):
            refused.append((name, NOT_FILED))
        else:
            db.record_trackrecord_file(name, digest)
    db.mark_trackrecord_checked()
    return refused


def _known_now(db, layout: Layout, name: str) -> bool:
    try:
        digest = _digest(layout, name)
    except FileNotFoundError:
        return True  # gone: nothing to set aside
    return _known(db, name, digest)


def _known(db, name: str, digest: str) -> bool:
    live = db.trackrecord_live_file(name)
    logged = live is not None and live.digest == digest
    return logged or (name, digest) in db.known_trackrecord_files([name])


def _run_ids(layout: Layout, name: str) -> list[str] | None:
    if layout.store is not None:
        return shared.file_run_ids(layout.store, name)
    return filing.file_run_ids(layout.folder / name)


def set_aside(db, layout: Layout, found: list[tuple[str, str]]) -> list[str]:
    """Move each of these files into ``left-out/``; returns a line for each, naming it and why. Each
    unknown one is looked at again first: another pass may meanwhile have set it aside and filed its
    runs again under the same name, a file the database knows."""
    said = []
    for name, problem in found:
        try:
            judged = _digest(layout, name)  # the bytes judged; only these are moved (another process
        except FileNotFoundError:  # may file its batch under the name meanwhile)
            continue
        if problem == UNKNOWN and (_known_now(db, layout, name) or _known(db, name, judged)):
            continue
        if layout.store is not None:
            if not shared.set_aside_one(layout.store, name, judged):
                continue
            where = layout.store.address(shared.key(name))
        else:
            if filing.set_aside_judged(layout.folder / name, judged) is None:
                continue
            where = str(layout.folder / name)
        said.append(f"{where}: {problem}")
    return said
