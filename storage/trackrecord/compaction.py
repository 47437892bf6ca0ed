"""Compaction: batch files merged, the latest rows kept apart from the older ones.

Each filing adds a small ``b-`` file; a maintenance pass calls :func:`compact` to merge every ``b-`` and
``h-`` file into one ``h-`` file (the latest row of each workflow, version, case name and target among
them) and one ``o-`` file (the rest), each sorted by workflow, version, case and time, then removes the
inputs. A row is put in an ``o-`` file only when a newer row of its case and target exists, and that
stays true as rows are added, so the ``b-`` and ``h-`` files always hold every case's latest row:
``current`` reads only them.

Only files that pass the checks of ``inventory`` are merged; any other (qsolve did not write it, or it
is damaged) is left where it is, never removed, and named in a warning and in ``Compacted.left_out``.
``trackrecord.duckdb`` is brought up to date at the end, since its views name the files.

Crash-safe like filing: the outputs are written whole before any input is removed, and until then the
views see some runs twice, which ``rows`` shows once and ``current`` ranks. Two compactions at once are
safe too (the loser of a race finds its inputs gone and stops). A query running while a compaction
removes its inputs may fail once with a missing file; run it again.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from .filing import COMPRESSION, ROW_GROUP_ROWS, ensure_schema_file, fsync_folder, write_whole
from .inventory import take_inventory
from .layout import BATCH, DATABASE, HEAD, OLDER, SQL_FILE, TEMPORARY_PREFIX, Layout
from .row import COLUMNS, SCHEMA
from .views import COPY_ORDER, GROUP, LATEST_ORDER, ensure_views, parquet_source, session

ORDER = f"{GROUP}, recorded_at, run_id"
BATCH_ROWS = 1 << 17
OLDER_FILE_BYTES = 256 << 20  # o- files under this size are merged once there are too many of them


@dataclass(frozen=True)
class Compacted:
    """What one compaction did."""

    merged_files: int = 0
    heads: int = 0
    older: int = 0
    merged_older_files: int = 0
    removed_temporary: int = 0
    skipped: str | None = None  # why nothing was merged, when nothing was
    left_out: tuple[Path, ...] = ()  # files that failed a check: not merged, not removed


def compact(
    home: Path | str | None = None, *, older_files_limit: int = 16, temporary_age_s: float = 3600.0
) -> Compacted:
    """Merge the ``b-`` and ``h-`` files into one ``h-`` and one ``o-`` file; merge small ``o-`` files
    once there are more than ``older_files_limit``; remove temporary files older than an hour."""
    layout = Layout(home)
    if not layout.folder.is_dir():
        return Compacted(skipped="nothing filed")
    ensure_schema_file(layout)
    removed = _remove_stale_temporary(layout, temporary_age_s)
    inventory = take_inventory(layout)
    inputs = inventory.readable(BATCH, HEAD)
    merged = heads = older = 0
    skipped = None
    con = session(duckdb.connect())
    try:
        if len(inputs) > 1 or inventory.readable(BATCH):
            try:
                heads, older = _merge_heads(con, layout, inputs)
                merged = len(inputs)
            except duckdb.IOException as e:  # another compaction removed an input first
                skipped = f"inputs changed during compaction: {e}"
        else:
            skipped = "no batch files"
        small = [p for p in inventory.readable(OLDER) if inventory.entry(p).size < OLDER_FILE_BYTES]
        merged_older = 0
        if len(small) > older_files_limit:
            with contextlib.suppress(duckdb.IOException):
                _merge_older(con, layout, small)
                merged_older = len(small)
    finally:
        con.close()
    ensure_views(layout)  # which warns of each file left out
    left_out = tuple(p for p, _ in inventory.left_out)
    return Compacted(merged, heads, older, merged_older, removed, skipped, left_out)


def _merge_heads(con: duckdb.DuckDBPyConnection, layout: Layout, inputs: list[Path]) -> tuple[int, int]:
    source = parquet_source([str(layout.schema_file)] + [str(p) for p in inputs])
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE merged AS SELECT *, row_number() OVER (PARTITION BY {GROUP}"
        f" ORDER BY {LATEST_ORDER}, filename DESC, file_row_number DESC) = 1 AS latest FROM ("
        f"  SELECT * FROM {source}"
        f"  QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY {COPY_ORDER}) = 1)"
    )
    outputs = [
        _write_selection(con, layout, HEAD, "SELECT {cols} FROM merged WHERE latest"),
        _write_selection(con, layout, OLDER, "SELECT {cols} FROM merged WHERE NOT latest"),
    ]
    _remove(layout, inputs, keep={p for p, _ in outputs})
    con.execute("DROP TABLE merged")
    return outputs[0][1], outputs[1][1]


def _merge_older(con: duckdb.DuckDBPyConnection, layout: Layout, files: list[Path]) -> None:
    source = parquet_source([str(layout.schema_file)] + [str(p) for p in files])
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE merged AS SELECT * FROM {source}"
        f" QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY {COPY_ORDER}) = 1"
    )
    out = _write_selection(con, layout, OLDER, "SELECT {cols} FROM merged")
    _remove(layout, files, keep={out[0]})
    con.execute("DROP TABLE merged")


def _write_selection(
    con: duckdb.DuckDBPyConnection, layout: Layout, kind: str, select: str
) -> tuple[Path | None, int]:
    cols = ", ".join(name for name, _, _ in COLUMNS)
    select = select.format(cols=cols)
    run_ids = con.sql(f"SELECT run_id FROM ({select})").fetchnumpy()["run_id"]
    if len(run_ids) == 0:
        return None, 0
    path = layout.data_file(kind, run_ids.tolist())
    if not path.exists():
        reader = con.sql(f"{select} ORDER BY {ORDER}").to_arrow_reader(BATCH_ROWS)

        def write(f):
            with pq.ParquetWriter(f, SCHEMA, compression=COMPRESSION) as w:
                for batch in reader:
                    w.write_table(pa.Table.from_batches([batch]).cast(SCHEMA), row_group_size=ROW_GROUP_ROWS)

        write_whole(path, write)
    return path, len(run_ids)


def _remove(layout: Layout, files: list[Path], keep: set[Path | None]) -> None:
    for p in files:
        if p not in keep:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    fsync_folder(layout.folder)


def _remove_stale_temporary(layout: Layout, age_s: float) -> int:
    """Temporary files a crash left: data files in the folder, databases and SQL files being written in
    the home."""
    now, n = time.time(), 0
    stale = [
        *layout.folder.glob(f"{TEMPORARY_PREFIX}*"),
        *layout.home.glob(f"{TEMPORARY_PREFIX}{DATABASE}.*"),
        *layout.home.glob(f"{TEMPORARY_PREFIX}{SQL_FILE}.*"),
    ]
    for p in stale:
        with contextlib.suppress(FileNotFoundError):
            if now - p.stat().st_mtime > age_s:
                p.unlink()
                n += 1
    return n
