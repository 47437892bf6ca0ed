"""The schema file (``trackrecord/schema-v2.parquet``, ``layout``): the empty file every view reads first,
so the views bind to the fixed schema with no runs filed, and DuckDB 1.x's globs always match a file.

    ensure_schema_file   made where absent, replaced whole where damaged (it holds no rows)
    for_reading          the layout a reading command uses: its schema file from a temporary folder
                         where the home's is missing or damaged, so reading creates nothing in the home
"""

from __future__ import annotations

import atexit
import io
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .inventory import FileEntry, checked, remember
from .layout import SCHEMA_FILE, Layout
from .row import SCHEMA
from .writing import write_parquet, write_replacing, write_whole


def ensure_schema_file(layout: Layout, known: Mapping[str, FileEntry] | None = None) -> None:
    """The empty file the views read first, so they bind to the fixed schema with no runs filed. A
    damaged one (it holds no rows) is replaced whole. ``known``: checks already done (``inventory``)."""
    path = layout.schema_file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, lambda f: write_parquet(SCHEMA.empty_table(), f))
        remember(path, 0)  # written whole here: no footer to read
    elif not schema_file_reads(path, known):
        out = io.BytesIO()
        write_parquet(SCHEMA.empty_table(), out)
        write_replacing(path, out.getvalue())
        remember(path, 0)


def schema_file_reads(path: Path, known: Mapping[str, FileEntry] | None = None) -> bool:
    """Whether the schema file is there and passes the checks every file of the folder must pass."""
    try:
        entry = checked(path, path.stat(), known)
    except FileNotFoundError:
        return False
    return entry.problem is None and entry.rows == 0  # a schema file holds no rows: one that does is forged


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
