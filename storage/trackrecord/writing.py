"""Writing the track record's files whole (DESIGN.md §6): a temporary file in the folder, fsynced, linked
into place (never over another file) and the folder fsynced, so a crash at any point leaves either no
file or the whole file under its name, plus perhaps a temporary file the views never read. What filing,
compaction, the views' database and object storage (``shared``, in memory) all write through.

    write_parquet    a table as Parquet, in the track record's compression and row groups
    write_whole      a file whole under a name known before it is written
    write_named      the same, the name known once it is written (a digest of its run ids)
    write_replacing  a file qsolve derives again at will, replaced whole
    fsync_folder     a folder's entries made durable
    digest_file      BLAKE3 of a file's bytes, what the state database records a data file by
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
from blake3 import blake3

from qsolve_pipeline.storage.objects import link_no_clobber

from .layout import TEMPORARY_PREFIX

COMPRESSION = "zstd"
BATCH_COMPRESSION = "snappy"  # a batch is small and short-lived: zstd's set-up per column costs 3x more
ROW_GROUP_ROWS = 122_880
#: the order of a batch's rows
SORT_KEYS = [
    ("workflow", "ascending"),
    ("version", "ascending"),
    ("case_name", "ascending"),
    ("target", "ascending"),
    ("recorded_at", "ascending"),
]


#: records a data file about to take its name: (name, BLAKE3 hex of its bytes)
Recorder = Callable[[str, str], None]


def digest_bytes(data: bytes) -> str:
    """BLAKE3 (hex) of a data file's bytes: what the state database records it by (``known``)."""
    return blake3(data, max_threads=blake3.AUTO).hexdigest()


_digests: dict[tuple, str] = {}  # a local file's digest, by what changes when its bytes do


def digest_file(path: Path) -> str:
    """BLAKE3 (hex) of a local file's bytes, kept per process while its size, times and inode stay (its
    change time moves with any write, and no program sets it back)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    found = _digests.get(key)
    if found is None:
        hasher = blake3(max_threads=blake3.AUTO)
        if st.st_size:
            hasher.update_mmap(path)
        found = _digests[key] = hasher.hexdigest()
    return found


def same_rows(there: bytes | pa.Buffer, data: bytes | pa.Buffer) -> bool:
    """Whether two Parquet files' bytes hold exactly the same rows (same columns, same values, same order);
    False when either does not read."""
    try:
        theirs = pq.read_table(pa.BufferReader(there))
        ours = pq.read_table(pa.BufferReader(data))
    except (OSError, ValueError, pa.ArrowException):
        return False
    return theirs.schema.equals(ours.schema) and theirs.equals(ours)


def write_parquet(table: pa.Table, f: BinaryIO, compression: str = COMPRESSION) -> None:
    pq.write_table(table, f, compression=compression, row_group_size=ROW_GROUP_ROWS)


def write_whole(
    path: Path,
    write: Callable[[BinaryIO], None],
    *,
    durable: bool = True,
    before_link: Callable[[Path, Path], None] | None = None,
    made: Callable[[os.stat_result], None] | None = None,
) -> bool:
    """Write ``path`` whole: a temporary file in its folder, fsync, link into place, fsync the folder.
    Never replaces a file already there; returns whether this call made it. ``durable=False`` leaves
    out the two fsyncs, for a batch: a machine losing power may then leave it empty or cut short under
    its name, which the inventory's checks set aside and the maintenance pass files again from the state
    database (``storage.maintenance.refile_lost_runs``). ``before_link(temporary, path)`` is called once
    the bytes are written, before the file takes its name (the state database records it then).
    ``made(stat)``: where this call made the file, the ``fstat`` of the descriptor that wrote its bytes,
    once linked (never a stat of the name, which the folder's writer may have swapped meanwhile)."""
    return write_named(path.parent, lambda: path, write, durable=durable, before_link=before_link, made=made)[
        1
    ]


def write_named(
    folder: Path,
    name: Callable[[], Path | None],
    write: Callable[[BinaryIO], None],
    *,
    durable: bool = True,
    before_link: Callable[[Path, Path], None] | None = None,
    made: Callable[[os.stat_result], None] | None = None,
) -> tuple[Path | None, bool]:
    """:func:`write_whole`, the file's name known only once it is written (``name()``, called after
    ``write``; None: nothing to keep). Returns the path and whether this call made it."""
    tmp = folder / f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}.{os.getpid()}"
    linked = False
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            if durable:
                os.fsync(f.fileno())
            path = name()
            if path is not None and before_link is not None:
                before_link(tmp, path)
            linked = path is not None and link_no_clobber(tmp, path)
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            if linked and made is not None:
                made(os.fstat(f.fileno()))  # the inode these bytes went to, as it stands linked
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    if durable and linked:
        fsync_folder(folder)
    return path, linked


def write_replacing(path: Path, data: bytes) -> None:
    """Write ``path`` whole, replacing what is there (only for files qsolve derives again at will: the
    schema file, ``trackrecord.sql``): a temporary file in its folder, fsync, rename, fsync the folder."""
    tmp = path.parent / f"{TEMPORARY_PREFIX}{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
