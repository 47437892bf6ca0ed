"""Filing runs into the track record: whole Parquet files, never rewritten (DESIGN.md §6).

A batch is written under a temporary name in the track record's folder, fsynced, linked to its final
name (``b-<digest of its run ids>.parquet``) and the folder fsynced. A crash at any point leaves either
no file or the whole file under its final name, plus perhaps a temporary file the views never read.
Filing the same runs again finds the file there and adds nothing; a run filed again in another batch
is a second copy that the ``rows`` view shows once (benchmarks-and-gates.md, "How results enter the
track record": the track record is never duplicated).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from blake3 import blake3

from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

from .inventory import FileEntry, Inventory, aside_folder, remember, set_aside
from .layout import BATCH, Layout
from .row import TrackRecordRow, conform, to_table
from .writing import (
    BATCH_COMPRESSION,
    SORT_KEYS,
    Recorder,
    digest_bytes,
    digest_file,
    same_rows,
    write_parquet,
    write_whole,
)

#: why a file under a batch's name that holds other runs is set aside
MISNAMED = "holds other runs than its name says"
#: why a file under a batch's name that the track-record log does not hold (with those bytes) is set aside
NOT_LOGGED = "not the bytes the state database's track-record log holds under its name"


@dataclass(frozen=True)
class Filed:
    """What one filing did: the file that holds the batch, its rows, and whether it was new."""

    path: Path | str | None  # a file of the home's folder, or an s3:// address
    rows: int
    new: bool


def file_rows(
    rows: Iterable[TrackRecordRow],
    home: Path | str | None = None,
    record: Recorder | None = None,
    *,
    db=None,
) -> Filed:
    """File these rows as one batch under ``QSOLVE_HOME/trackrecord/``; see the module's docstring."""
    return file_table(to_table(rows), home, record, db=db)


def file_table(
    table: pa.Table, home: Path | str | None = None, record: Recorder | None = None, *, db=None
) -> Filed:
    """File an Arrow table of the track record's columns (``row.SCHEMA``) as one batch. ``record`` (the
    state database's ``record_trackrecord_file``) records the file before it takes its name: a pass
    sets aside every data file the database does not know (``known``). Once the file has its name, the
    state database's track-record log gets a signed entry for it (``log``): readers read only the files
    the log holds. ``db``: that state database (default: ``record``'s, else the home's)."""
    from .live import adopt, saw_started, state_of

    layout = Layout(home)
    table = one_copy_per_run(conform(table))
    if table.num_rows == 0:
        return Filed(None, 0, False)
    if db is None:
        db = getattr(record, "__self__", None)
    with state_of(layout, db, create=True) as state:
        if not state.trackrecord_log_started():
            adopt(state, layout)
        if layout.store is not None:
            from .shared import file_table as file_shared

            address, new = file_shared(layout.store, table, record, state)
            filed = Filed(address, table.num_rows, new)
        else:
            filed = _file_local(layout, table, record, state)
        if filed.new:
            saw_started(state, layout)
        return filed


def _file_local(layout: Layout, table: pa.Table, record: Recorder | None, state) -> Filed:
    from . import log
    from .live import _local_seen, batch_added

    layout.folder.mkdir(parents=True, exist_ok=True)
    run_ids = table.column("run_id").to_pylist()
    path = layout.data_file(BATCH, run_ids)
    # the file's bytes made in memory, hashed there and written in one go: what is recorded and signed is
    # the BLAKE3 of exactly the bytes written, with no second read of the file just written
    sink = pa.BufferOutputStream()
    write_parquet(table.sort_by(SORT_KEYS), sink, BATCH_COMPRESSION)
    data = sink.getvalue()
    digest = digest_bytes(data)
    if path.exists() or path.is_symlink():
        if _filed_already(state, path, data, run_ids):
            return Filed(path, table.num_rows, False)
        set_aside_one(path, MISNAMED if not holds_runs(path, run_ids) else NOT_LOGGED)

    def before_link(tmp: Path, final: Path) -> None:
        if record is not None:
            record(final.name, digest)

    written: list[os.stat_result] = []
    new = write_whole(
        path, lambda f: f.write(data), durable=False, before_link=before_link, made=written.append
    )
    if new:
        remember(path, table.num_rows)
        add = batch_added(path.name, digest, data.size, run_ids)
        # the seen key of the inode these bytes were written to (fstat of the writing descriptor): a file
        # another renames over the name afterwards has another, so every reader hashes it
        add["seen"] = _local_seen(written[0])
        # recorded (durably) before it took its name: its entry may wait for the next durable commit
        state.append_trackrecord_entry(log.FILED, [add], durable=record is None)
    return Filed(path, table.num_rows, new)


def _filed_already(state, path: Path, data: pa.Buffer, run_ids: list[str]) -> bool:
    """Whether the file under the batch's name is qsolve's filing of it: live in the log with its bytes,
    or the batch itself: the very bytes this filing would write (``data``), or a file whose rows are
    exactly these (read bounded; another writer's compression, say). That is another process filing the
    same runs at once, between taking the name and its log entry, or one that crashed there. Such a file
    gets its log entry here (an append that changes nothing where it is live already); any other is not
    qsolve's, and is set aside: a digest the state database recorded under the name is no evidence (its
    writer can put any row there). The file is opened once (no symbolic link followed), and hashed,
    stat'ed and read through that descriptor: what is logged is the bytes under the name."""
    from . import log
    from .live import _local_seen, batch_added

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > TRACKRECORD_FILE_BYTES:
            return False
        found = digest_opened(path, fd)
        there = os.lstat(path)
        if (there.st_dev, there.st_ino) != (st.st_dev, st.st_ino) or _changed(os.fstat(fd), st):
            return False  # another file under the name since it was opened, or this one written to
        live = state.trackrecord_live_file(path.name)
        if live is not None and live.digest == found:
            return True
        if found != digest_bytes(data) and not _same_rows(fd, st.st_size, data):
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
    add = batch_added(path.name, found, st.st_size, run_ids)
    add["seen"] = _local_seen(st)
    state.append_trackrecord_entry(log.FILED, [add])
    return True


def _changed(now: os.stat_result, then: os.stat_result) -> bool:
    def key(st: os.stat_result) -> tuple[int, int, int]:
        return st.st_size, st.st_mtime_ns, st.st_ctime_ns

    return key(now) != key(then)


def digest_opened(path: Path, fd: int) -> str:
    """BLAKE3 (hex) of the bytes of ``fd`` (the file opened under ``path``'s name), read from offset 0."""
    hasher = blake3(max_threads=blake3.AUTO)
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        hasher.update(chunk)
        at += len(chunk)
    return hasher.hexdigest()


def _same_rows(fd: int, size: int, data: pa.Buffer) -> bool:
    """Whether the file open as ``fd`` holds exactly the rows of the batch ``data`` (same columns, same
    values, same order)."""
    body = os.pread(fd, size + 1, 0)
    return len(body) == size and same_rows(body, data)


def holds_runs(path: Path, run_ids: list[str]) -> bool:
    """Whether the file already named for these runs holds exactly them (not a copy of another file put
    under its name, which filing again would otherwise take for done)."""
    found = file_run_ids(path)
    return found is not None and sorted(found) == sorted(run_ids)


def file_run_ids(path: Path) -> list[str] | None:
    """The run ids one file of the folder holds; None when it is gone or does not read."""
    try:
        return pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist()
    except (OSError, ValueError, pa.ArrowException):  # FileNotFoundError among them
        return None


def recording(record: Recorder) -> Callable[[Path, Path], None]:
    """What records a file written under a temporary name before it takes ``path``'s name."""

    def before_link(tmp: Path, path: Path) -> None:
        record(path.name, digest_file(tmp))

    return before_link


def set_aside_one(path: Path, problem: str) -> None:
    """Move one file of the folder into ``trackrecord/left-out/`` (``inventory.set_aside``). One that
    cannot be moved (a home qsolve may not write) raises the move's error: filing would else report
    runs filed that no file holds."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    entry = FileEntry(path.name, st.st_size, st.st_mtime_ns, problem)
    set_aside(Inventory(path.parent, path.parent / "unused", (entry,)))
    if path.is_symlink() or path.exists():
        os.rename(path, aside_folder(path.parent) / path.name)  # raises what kept set_aside from it


def set_aside_judged(path: Path, judged: str) -> str | None:
    """Move the file under ``path``'s name into ``trackrecord/left-out/`` where its bytes are the ones
    judged (BLAKE3 ``judged``): it is moved first, then hashed where it went, and put back under its name
    where it is another file (one filed under that name since it was judged: another process's batch).
    Returns where it went, or None where nothing was moved."""
    from qsolve_pipeline.storage.objects import link_no_clobber

    aside = aside_folder(path.parent)
    target, n = aside / path.name, 0
    while target.exists() or target.is_symlink():
        n += 1
        target = aside / f"{path.name}.{n}"
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    try:
        moved = digest_file(target)
    except OSError:
        moved = None
    if moved is not None and moved != judged and link_no_clobber(target, path):
        target.unlink()  # not the bytes judged: back under its name
        return None
    return str(target)


def one_copy_per_run(table: pa.Table) -> pa.Table:
    """A batch holds a run once: of two copies, the later ``recorded_at`` (then ``result_hash``) stays,
    as the ``rows`` view would choose."""
    ids = table.column("run_id")
    if pc.count_distinct(ids).as_py() == table.num_rows:
        return table
    order = pc.sort_indices(
        table,
        sort_keys=[("run_id", "ascending"), ("recorded_at", "descending"), ("result_hash", "descending")],
    )
    ordered = table.take(order)
    run = ordered.column("run_id").to_pylist()
    keep = [i for i in range(len(run)) if i == 0 or run[i] != run[i - 1]]
    return ordered.take(pa.array(keep, pa.int64()))
