"""Where the track record lives under ``QSOLVE_HOME`` (DESIGN.md §6), and how its files are named.

    QSOLVE_HOME/
      trackrecord.duckdb                the views, for analysts (rebuilt whole when the files change)
      trackrecord.sql                   the same views as plain SQL, paths relative to QSOLVE_HOME
      trackrecord/
        schema-v3.parquet               no rows: the fixed schema, so the views work with no runs filed
        b-<digest>.parquet              a batch as filed
        h-<digest>.parquet              heads: after a compaction, the latest row of each case and target
        o-<digest>.parquet              older: after a compaction, rows some newer row of theirs replaced
        .tmp-*                          a file being written (or left by a crash); never read
        left-out/                       files the views leave out (damaged, or not qsolve's), set aside

With ``QSOLVE_STORAGE_URL=s3://BUCKET/PREFIX`` the same files live under ``PREFIX/trackrecord/`` in
object storage instead (``shared``), and the home keeps no track-record file.

A file's digest is BLAKE3 over its sorted run ids, so filing the same runs again finds its file already
there. Every file is written whole under a temporary name, fsynced and linked into place: no file is ever
rewritten. ``b-`` and ``h-`` files together hold the latest row of every case and target (compaction
keeps it so), which is what makes ``current`` quick.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from blake3 import blake3

from qsolve.home import qsolve_home as core_home
from qsolve_pipeline.storage.objects import shared_store

from .row import SCHEMA_VERSION

FOLDER = "trackrecord"
DATABASE = "trackrecord.duckdb"
SQL_FILE = "trackrecord.sql"
TEMPORARY_PREFIX = ".tmp-"
LEFT_OUT = "left-out"
BATCH, HEAD, OLDER = "b", "h", "o"
SCHEMA_FILE = f"schema-v{SCHEMA_VERSION}.parquet"


def qsolve_home(home: Path | str | None = None) -> Path:
    """The home (:func:`qsolve.home.qsolve_home`), always absolute: the views name files by path."""
    return core_home(home).absolute()


class Layout:
    """The track record's paths under one ``QSOLVE_HOME``."""

    def __init__(self, home: Path | str | None = None, *, schema_file: Path | None = None) -> None:
        self.home = qsolve_home(home)
        self.folder = self.home / FOLDER
        self.database = self.home / DATABASE
        self.sql_file = self.home / SQL_FILE
        self.schema_file = schema_file or self.folder / SCHEMA_FILE
        #: the object store (``QSOLVE_STORAGE_URL``) the files live in instead of ``folder``, or None
        self.store = shared_store()

    def data_file(self, kind: str, run_ids: Iterable[str]) -> Path:
        return self.folder / file_name(kind, run_ids)

    def files(self, *kinds: str) -> list[Path]:
        """The data files of these kinds (all kinds by default), sorted by name, unchecked (what the
        views read is ``inventory.take_inventory``'s ``readable``)."""
        kinds = kinds or (BATCH, HEAD, OLDER)
        if not self.folder.is_dir():
            return []
        return sorted(p for k in kinds for p in self.folder.glob(f"{k}-*.parquet"))


def file_name(kind: str, run_ids: Iterable[str]) -> str:
    """The name of the data file of this kind that holds these runs: ``KIND-<run_ids_digest>.parquet``."""
    return f"{kind}-{run_ids_digest(run_ids)}.parquet"


def run_ids_digest(run_ids: Iterable[str]) -> str:
    """BLAKE3 (128 bits, hex) over the sorted run ids, one a line."""
    text = "\n".join(sorted(run_ids)).encode()
    return blake3(text).hexdigest(length=16)
