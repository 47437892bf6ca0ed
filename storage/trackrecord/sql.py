"""``qsolve query SQL``: DuckDB over the track record's views, as a table on the terminal or as CSV, JSON
(an array of objects) or Parquet, to standard output or a file."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from .errors import QueryFailed
from .views import connect

FORMATS = ("table", "csv", "json", "parquet")
TABLE_ROWS = 1000  # rows a terminal table shows; the other formats give every row


#: what ``qsolve query`` runs: statements that read (issue 11). COPY, ATTACH, INSTALL, LOAD, CREATE, SET
#: and the rest are refused by name before anything runs.
READING = frozenset({"SELECT", "EXPLAIN"})


def run_sql(sql: str, home: Path | str | None = None) -> pa.Table:
    """The result of ``sql`` over the views, as an Arrow table (empty for a statement with no result).

    It reads and nothing else: only :data:`READING` statements run, and DuckDB's own settings keep them
    to the track record's folder (``allowed_directories``, ``enable_external_access`` off: no other
    file, no ``ATTACH``, no extension), with the configuration locked against ``SET``."""
    con = connect(home, read_only=True)
    try:
        for i, statement in enumerate(con.extract_statements(sql), start=1):
            kind = statement.type.name
            if kind not in READING:
                raise QueryFailed(sql, f"qsolve query only reads: statement {i} is {kind}, not a SELECT")
        result = con.sql(sql)
        return result.to_arrow_table() if result is not None else pa.table({})
    except duckdb.Error as e:
        raise QueryFailed(sql, str(e).strip()) from None
    finally:
        con.close()


def query(
    sql: str,
    home: Path | str | None = None,
    fmt: str = "table",
    output: Path | str | None = None,
    *,
    console: Console | None = None,
) -> pa.Table:
    """Run ``sql`` and write the result in ``fmt`` to ``output`` (a path) or standard output; returns it."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    table = run_sql(sql, home)
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
