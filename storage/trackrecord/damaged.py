"""Files damaged past their footer (issue 24): a file whose footer reads whole but whose column pages do
not, which the reading commands (``qsolve query``, ``qsolve page``, the web pages) read around.

The checks (``inventory.CHECKS``) read a file's footer alone, so such a file passes them; DuckDB fails
only once a query decodes its pages, and may name no file ("don't know what type:"). A reading command
that meets a DuckDB error that a file's data could cause (:func:`read_failure`: not the SQL's own
error, a time-out or the memory limit) reads each of the files it read whole, one row group at a time
(:func:`found_damaged`), and where some do not read runs again without them; each is named in a
:class:`TrackRecordWarning` of one line, saying that ``qsolve maintenance`` sets it aside (its
compaction meets the same failure) and files its runs again. Nothing is read whole while reads
succeed; each file is read whole at most once per process (kept by size and modification time, or
ETag: a file qsolve wrote never changes), and a file found damaged is left out of this process's later
reads from the start (:func:`leave_out_damaged`), still named in a warning each time.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TypeVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import TrackRecordWarning
from .inventory import Inventory
from .shared import SharedInventory, key, opened

Inv = TypeVar("Inv", Inventory, SharedInventory)

#: the errors a query makes itself, or that a limit made: never a file's data
NOT_THE_DATA = (
    duckdb.ParserException,
    duckdb.SyntaxException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.NotImplementedException,
    duckdb.InterruptException,
    duckdb.OutOfMemoryException,
    duckdb.PermissionException,
    duckdb.ConstraintException,
    duckdb.TransactionException,
)
SHOWN = 200  # characters of the reader's own words a warning shows

#: (folder or store, file name) -> ((size, version) when read whole, why its data does not read or None)
_read_whole: dict[tuple[str, str], tuple[tuple[int, str], str | None]] = {}


def read_failure(e: BaseException) -> bool:
    """Whether DuckDB's error ``e`` may come from a file's data (and so is worth looking for one)."""
    return isinstance(e, duckdb.Error) and not isinstance(e, NOT_THE_DATA)


def _where(inventory: Inventory | SharedInventory) -> str:
    return inventory.store.url if isinstance(inventory, SharedInventory) else str(inventory.folder)


def _version(inventory: Inventory | SharedInventory, entry) -> tuple[int, str]:
    if isinstance(inventory, SharedInventory):
        return entry.size, entry.version
    return entry.size, str(entry.mtime_ns)


def _location(inventory: Inventory | SharedInventory, name: str) -> str:
    if isinstance(inventory, SharedInventory):
        return inventory.store.address(key(name))
    return str(inventory.folder / name)


def leave_out_damaged(inventory: Inv, stacklevel: int = 2) -> Inv:
    """``inventory`` without the files this process found damaged (unchanged since), each named in a
    :class:`TrackRecordWarning`."""
    where = _where(inventory)
    damaged: dict[str, str] = {}
    for e in inventory.entries:
        if e.problem is not None:
            continue
        known = _read_whole.get((where, e.name))
        if known is not None and known[0] == _version(inventory, e) and known[1] is not None:
            damaged[e.name] = known[1]
    if not damaged:
        return inventory
    for name, why in damaged.items():
        shown = _location(inventory, name).replace("\n", "\\n")
        said = (
            f"{shown}: its data does not read past its footer ({why}); left out of this read until"
            " `qsolve maintenance` sets it aside and files its runs again"
        )
        warnings.warn(said, TrackRecordWarning, stacklevel=stacklevel + 1)
    entries = tuple(
        dataclasses.replace(e, problem=f"its data does not read ({damaged[e.name]})", rows=0)
        if e.name in damaged
        else e
        for e in inventory.entries
    )
    return dataclasses.replace(inventory, entries=entries)


def found_damaged(inventory: Inventory | SharedInventory) -> bool:
    """Read whole each file ``inventory`` reads that this process has not read whole yet; whether any
    of them does not read (:func:`leave_out_damaged` then leaves it out). A file gone meanwhile (a
    compaction) is no damage."""
    where = _where(inventory)
    names = {e.name for e in inventory.entries}
    for k in [k for k in _read_whole if k[0] == where and k[1] not in names]:  # a long-lived process
        del _read_whole[k]
    found = False
    for e in inventory.entries:
        if e.problem is not None:
            continue
        version = _version(inventory, e)
        known = _read_whole.get((where, e.name))
        if known is not None and known[0] == version:
            continue
        try:
            why = _data_problem(inventory, e)
        except FileNotFoundError:
            continue
        _read_whole[(where, e.name)] = (version, why)
        found = found or why is not None
    return found


def _data_problem(inventory: Inventory | SharedInventory, entry) -> str | None:
    """Why the file's rows do not read (every column, one row group at a time), or None."""
    if isinstance(inventory, SharedInventory):
        source = opened(inventory.store, key(entry.name), entry.size)
    else:
        source = inventory.folder / entry.name
    try:
        f = pq.ParquetFile(source, pre_buffer=True)
        for i in range(f.num_row_groups):
            f.read_row_group(i)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, pa.ArrowException) as e:
        printable = "".join(c if c.isprintable() or c == "\n" else " " for c in str(e))
        said = "; ".join(line.strip() for line in printable.splitlines() if line.strip()) or type(e).__name__
        return said[:SHOWN]
    return None
