"""``qsolve query SQL``: DuckDB over the track record's views, as a table on the terminal or as CSV, JSON
(an array of objects) or Parquet, to standard output or a file."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import json
import math
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from .damaged import found_damaged, read_failure
from .errors import QueryFailed, QueryLimit
from .layout import Layout
from .views import open_views, sql_text

FORMATS = ("table", "csv", "json", "parquet")
TABLE_ROWS = 1000  # rows a terminal table shows; the other formats give every row


#: what ``qsolve query`` runs: statements that read (issue 11). COPY, ATTACH, INSTALL, LOAD, CREATE, SET
#: and the rest are refused by name before anything runs.
READING = frozenset({"SELECT", "EXPLAIN"})

#: ``qsolve query``'s limits (issue 24, item 6): a time-out (``--timeout``), and DuckDB's memory limit,
#: by default a quarter of the machine's memory (DuckDB's own default is 80%), set by this variable in
#: any size DuckDB reads (``4GB``, ``512MiB``, ``50%``)
TIMEOUT_SECONDS = 60.0
MEMORY_VARIABLE = "QSOLVE_QUERY_MEMORY"
DEFAULT_MEMORY = "25%"
CACHE = "cache"  # QSOLVE_HOME/cache: a query's temporary folder, cache/query-*, removed when it ends


def memory_limit() -> str:
    """The memory limit ``qsolve query`` sets: :data:`MEMORY_VARIABLE`, else :data:`DEFAULT_MEMORY`."""
    return os.environ.get(MEMORY_VARIABLE, "").strip() or DEFAULT_MEMORY


def _checked_memory(sql: str, value: str) -> None:
    probe = duckdb.connect()
    try:
        probe.execute(f"SET memory_limit = {sql_text(value)}")
    except duckdb.Error as e:
        said = str(e).strip().splitlines()[0]
        raise QueryFailed(sql, f"{MEMORY_VARIABLE}={value!r} is not a size DuckDB reads ({said})") from None
    finally:
        probe.close()


@contextlib.contextmanager
def _temporary_folder(home: Path | str | None) -> Iterator[str]:
    """A folder of this query's own under ``QSOLVE_HOME/cache`` for DuckDB to spill to (never the
    current folder, DuckDB's default ``.tmp``), removed after; ``""`` (no spilling) for a home that
    does not exist (reading an empty home creates nothing) or that cannot be written."""
    layout = Layout(home)
    folder = None
    if layout.home.is_dir():
        with contextlib.suppress(OSError):
            cache = layout.home / CACHE
            cache.mkdir(exist_ok=True)
            folder = tempfile.mkdtemp(prefix="query-", dir=cache)
    try:
        yield folder or ""
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def run_sql(sql: str, home: Path | str | None = None, *, timeout: float | None = TIMEOUT_SECONDS) -> pa.Table:
    """The result of ``sql`` over the views, as an Arrow table (empty for a statement with no result).

    It reads and nothing else: only :data:`READING` statements run, and DuckDB's own settings keep them
    to the track record's folder (``allowed_directories``, ``enable_external_access`` off: no other
    file, no ``ATTACH``, no extension), with the configuration locked against ``SET``. And it is
    bounded: interrupted after ``timeout`` seconds (None or 0: no time-out; DuckDB has none of its own,
    so a timer interrupts the connection), within :func:`memory_limit`, spilling only to a temporary
    folder under ``QSOLVE_HOME/cache``. A limit met raises :class:`QueryLimit` naming it. A file damaged
    past its footer is left out and named in a warning, the query run again over the rest (``damaged``)."""
    memory = memory_limit()
    _checked_memory(sql, memory)
    with _temporary_folder(home) as spill:
        settings = [("memory_limit", memory), ("temp_directory", spill)]
        con, inventory = open_views(home, read_only=True, settings=settings)
        stopped = threading.Event()
        lock = threading.Lock()  # the timer never interrupts a connection being closed

        def stop() -> None:
            with lock:
                stopped.set()
                con.interrupt()

        timer = threading.Timer(timeout, stop) if timeout else None
        try:
            statements = con.extract_statements(sql)
            for i, statement in enumerate(statements, start=1):
                kind = statement.type.name
                if kind not in READING:
                    raise QueryFailed(sql, f"qsolve query only reads: statement {i} is {_said(statement)}")
            if len(statements) != 1:  # '' ran nothing and exited 0; "select 1; select 2" showed only 2
                got = "no statement" if not statements else f"{len(statements)} statements"
                raise QueryFailed(sql, f"qsolve query runs one SELECT at a time: got {got}")
            if timer is not None:
                timer.start()
            for attempt in range(2):
                try:
                    result = con.sql(sql)
                    return result.to_arrow_table() if result is not None else pa.table({})
                except duckdb.Error as e:
                    # a file damaged past its footer (module ``damaged``): read again without it, once
                    if attempt or stopped.is_set() or not read_failure(e) or not found_damaged(inventory):
                        raise
                if stopped.is_set():
                    raise duckdb.InterruptException("stopped while looking for a damaged file")
                with lock:
                    con.close()
                    con, inventory = open_views(home, read_only=True, settings=settings)
            raise AssertionError("unreachable")  # the second attempt returns or raises
        except duckdb.InterruptException:
            if not stopped.is_set():
                raise
            said = f"stopped at its time limit of {timeout:g} s (--timeout S gives it longer; 0: no limit)"
            raise QueryLimit(sql, said, "timeout") from None
        except duckdb.OutOfMemoryException as e:
            shown = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
            why = str(e).strip().splitlines()[0].removeprefix("Out of Memory Error: ")
            raise_it = f"{MEMORY_VARIABLE} raises it, e.g. {MEMORY_VARIABLE}=50%"
            said = f"over its memory limit of {shown} ({why}); {raise_it}"
            raise QueryLimit(sql, said, "memory") from None
        except duckdb.PermissionException as e:
            folder = f"{Layout(home).home.resolve()}/trackrecord/"
            said = f"{str(e).strip()} (qsolve query reads only the track record's files: name them by "
            said += f"absolute path, {folder}*.parquet, or read the views: rows, current, track_record, ...)"
            raise QueryFailed(sql, said) from None
        except duckdb.Error as e:
            raise QueryFailed(sql, str(e).strip()) from None
        finally:
            if timer is not None:
                timer.cancel()
                if timer.ident is not None:  # started: wait for it, so no interrupt meets a closed connection
                    timer.join()
            con.close()


def _said(statement: Any) -> str:
    """What a refused statement is, as its author wrote it: ``INSTALL``, which DuckDB types as LOAD; an
    extension is never loaded here (open ``trackrecord.duckdb`` in DuckDB itself for that)."""
    kind = statement.type.name
    words = str(getattr(statement, "query", "")).split()
    word = words[0].upper() if words and words[0].isalpha() else kind
    hint = " (no extension loads here: open trackrecord.duckdb in DuckDB itself)" if kind == "LOAD" else ""
    return f"{word}, not a SELECT{hint}"


def query(
    sql: str,
    home: Path | str | None = None,
    fmt: str = "table",
    output: Path | str | None = None,
    *,
    console: Console | None = None,
    timeout: float | None = TIMEOUT_SECONDS,
) -> pa.Table:
    """Run ``sql`` and write the result in ``fmt`` to ``output`` (a path) or standard output; returns it."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    table = run_sql(sql, home, timeout=timeout)
    if fmt == "table":
        if output is not None:
            with open(output, "w", encoding="utf-8") as f:
                render_table(table, Console(file=f, width=200))
        else:
            render_table(table, console or Console())
        return table
    if output is not None:
        with open(output, "wb") as f:
            write(table, fmt, f)
    else:
        write(table, fmt, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    return table


def write(table: pa.Table, fmt: str, f: BinaryIO) -> None:
    if fmt == "parquet":
        pq.write_table(table, f, compression="zstd")
    elif fmt == "json":
        f.write(json.dumps([_json_row(r) for r in table.to_pylist()], indent=1).encode() + b"\n")
    elif fmt == "csv":
        text = io.StringIO(newline="")
        w = csv.writer(text, lineterminator="\n")
        w.writerow(table.column_names)
        for row in table.to_pylist():
            w.writerow([_csv_cell(v) for v in row.values()])
        f.write(text.getvalue().encode())
    else:
        raise ValueError(f"format {fmt!r}")


def render_table(table: pa.Table, console: Console, limit: int = TABLE_ROWS) -> None:
    if not table.column_names:
        return
    out = Table(show_lines=False, header_style="bold")
    for name, typ in zip(table.column_names, table.schema.types, strict=True):
        numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
        out.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in table.slice(0, limit).to_pylist():
        out.add_row(*(cell(v) for v in row.values()))
    console.print(out)
    more = table.num_rows - limit
    rows = f"{table.num_rows} row{'' if table.num_rows == 1 else 's'}"
    console.print(f"{rows}" + (f", {more} not shown (use --format csv or json)" if more > 0 else ""))


def cell(v: Any) -> str:
    """A value as the terminal shows it."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S") + ("Z" if v.utcoffset() == dt.timedelta(0) else "")
    return str(v)


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _json_value(v) for k, v in row.items()}


def _csv_cell(v: Any) -> Any:
    v = _json_value(v)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v)
    return v
