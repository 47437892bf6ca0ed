"""Filing runs into the track record: whole Parquet files, never rewritten (DESIGN.md §6).

A batch is written under a temporary name in the track record's folder, fsynced, linked to its final
name (``b-<digest of its run ids>.parquet``) and the folder fsynced. A crash at any point leaves either
no file or the whole file under its final name, plus perhaps a temporary file the views never read.
Filing the same runs again finds the file there and adds nothing; a run filed again in another batch
is a second copy that the ``rows`` view shows once (benchmarks-and-gates.md, "How results enter the
track record": the track record is never duplicated).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage.objects import link_no_clobber

from .inventory import FileEntry, Inventory, checked, remember, set_aside
from .layout import BATCH, LEFT_OUT, SCHEMA_FILE, TEMPORARY_PREFIX, Layout
from .row import SCHEMA, TrackRecordRow, conform, to_table

COMPRESSION = "zstd"
BATCH_COMPRESSION = "snappy"  # a batch is small and short-lived: zstd's set-up per column costs 3x more
ROW_GROUP_ROWS = 122_880
SORT_KEYS = [
    ("workflow", "ascending"),
    ("version", "ascending"),
    ("case_name", "ascending"),
    ("target", "ascending"),
    ("recorded_at", "ascending"),
]


@dataclass(frozen=True)
class Filed:
    """What one filing did: the file that holds the batch, its rows, and whether it was new."""

    path: Path | str | None  # a file of the home's folder, or an s3:// address
    rows: int
    new: bool


def file_rows(rows: Iterable[TrackRecordRow], home: Path | str | None = None) -> Filed:
    """File these rows as one batch under ``QSOLVE_HOME/trackrecord/``; see the module's docstring."""
    return file_table(to_table(rows), home)


def file_table(table: pa.Table, home: Path | str | None = None) -> Filed:
    """File an Arrow table of the track record's columns (``row.SCHEMA``) as one batch."""
    from .views import ensure_views

    layout = Layout(home)
    table = one_copy_per_run(conform(table))
    if table.num_rows == 0:
        return Filed(None, 0, False)
    if layout.store is not None:
        from .shared import file_table as file_shared

        return file_shared(layout.store, table)
    layout.folder.mkdir(parents=True, exist_ok=True)
    ensure_schema_file(layout)
    run_ids = table.column("run_id").to_pylist()
    path = layout.data_file(BATCH, run_ids)
    new = False
    if path.exists() and not holds_runs(path, run_ids):
        set_aside_one(path, "holds other runs than its name says")
    if not path.exists():
        table = table.sort_by(SORT_KEYS)
        new = write_whole(path, lambda f: write_parquet(table, f, BATCH_COMPRESSION), durable=False)
        if new:
            remember(path, table.num_rows)
    ensure_views(layout, filed=True)
    return Filed(path, table.num_rows, new)


def holds_runs(path: Path, run_ids: list[str]) -> bool:
    """Whether the file already named for these runs holds exactly them (not a copy of another file put
    under its name, which filing again would otherwise take for done)."""
    try:
        found = pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist()
    except FileNotFoundError:
        return False
    except (OSError, ValueError, pa.ArrowException):
        return False
    return sorted(found) == sorted(run_ids)


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
        (path.parent / LEFT_OUT).mkdir(exist_ok=True)
        os.rename(path, path.parent / LEFT_OUT / path.name)  # raises what kept set_aside from it


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


def write_parquet(table: pa.Table, f: BinaryIO, compression: str = COMPRESSION) -> None:
    pq.write_table(table, f, compression=compression, row_group_size=ROW_GROUP_ROWS)


def ensure_schema_file(layout: Layout, known: Mapping[str, FileEntry] | None = None) -> None:
    """The empty file the views read first, so they bind to the fixed schema with no runs filed. A
    damaged one (it holds no rows) is replaced whole. ``known``: checks already done (``inventory``)."""
    path = layout.schema_file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, lambda f: write_parquet(SCHEMA.empty_table(), f))
    elif not schema_file_reads(path, known):
        out = io.BytesIO()
        write_parquet(SCHEMA.empty_table(), out)
        write_replacing(path, out.getvalue())


def schema_file_reads(path: Path, known: Mapping[str, FileEntry] | None = None) -> bool:
    """Whether the schema file is there and passes the checks every file of the folder must pass."""
    try:
        return checked(path, path.stat(), known).problem is None
    except FileNotFoundError:
        return False


_reading_schema: list[Path] = []


def for_reading(layout: Layout) -> Layout:
    """``layout``, or, where nothing was ever filed (or its schema file is damaged), the same layout with
    its schema file in a temporary folder of this process: reading (``qsolve query``, ``qsolve page``)
    creates nothing in the home."""
    if schema_file_reads(layout.schema_file):
        return layout
    return Layout(layout.home, schema_file=reading_schema_file())


def reading_schema_file() -> Path:
    """A schema file in a temporary folder of this process (removed at its exit), for reading a track
    record whose own one is missing, damaged or cannot be made."""
    if not _reading_schema:
        folder = Path(tempfile.mkdtemp(prefix="qsolve-trackrecord-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _reading_schema.append(folder / SCHEMA_FILE)
    reading = Layout(".", schema_file=_reading_schema[0])
    ensure_schema_file(reading)
    return _reading_schema[0]


def write_whole(path: Path, write: Callable[[BinaryIO], None], *, durable: bool = True) -> bool:
    """Write ``path`` whole: a temporary file in its folder, fsync, link into place, fsync the folder.
    Never replaces a file already there; returns whether this call made it. ``durable=False`` leaves
    out the two fsyncs, for a batch: a machine losing power may then leave it empty or cut short under
    its name, which the inventory's checks set aside and the maintenance pass files again from the state
    database (``storage.maintenance.refile_lost_runs``)."""
    return write_named(path.parent, lambda: path, write, durable=durable)[1]


def write_named(
    folder: Path, name: Callable[[], Path | None], write: Callable[[BinaryIO], None], *, durable: bool = True
) -> tuple[Path | None, bool]:
    """:func:`write_whole`, the file's name known only once it is written (``name()``, called after
    ``write``; None: nothing to keep). Returns the path and whether this call made it."""
    tmp = folder / f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}.{os.getpid()}"
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        path = name()
        made = path is not None and link_no_clobber(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    if durable and made:
        fsync_folder(folder)
    return path, made


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
