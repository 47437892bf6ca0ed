"""The DuckDB views over the track record's Parquet files (issue 4; benchmarks-and-gates.md, "What the
workflow page shows"), written into ``QSOLVE_HOME/trackrecord.duckdb`` for analysts and created in
memory for ``qsolve query`` and ``qsolve page``. The same definitions serve both.

    filed_rows            every row as filed, copies of a run included, with its file and row number
    latest_candidates     the rows of the b- and h- files: they hold the latest row of every case/target
    rows                  every run once (of two copies: the later recorded_at, then result_hash)
    current               the latest row per workflow, version, case name and target
    history               the older rows of the same workflow, version, case name and target
    versions              per workflow and version: first and last recorded time; is_current
    track_record          current rows of each workflow's current version on sim- targets
    noise_model_estimate  current rows of each workflow's current version on fake: targets
    on_hardware           every other target, every version: the latest row per case name and target
    earlier_results       what the page keeps as history: older rows of the current version's sim- and
                          fake: cases, and hardware rows a newer run of the same case and target replaced
    workflow_cards        per workflow: passed and total on sim- targets, headline accuracy (the median)

"Latest" is the greatest ``recorded_at``, ties broken by ``run_id``. A workflow's current version is its
newest published one, known from rows alone as the version whose first row was recorded last: a version's
history runs start at its publication, so first-recorded order is publication order (a hardware run of
an older version finishing late does not move it). Semantic-version order was not used: versions are free
text (``manifest.VERSION_RE``), and a fix published as 1.0.1 after 2.0.0 is the newer publication.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .layout import BATCH, HEAD, OLDER, Layout
from .row import SCHEMA_VERSION

#: the storage version of ``trackrecord.duckdb``: DuckDB 2.x writes files that 1.x cannot open (version 69
#: against 64 to 68); written as v1.2.0, the 1.5 command line on the package index opens it, views and all
STORAGE_VERSION = "v1.2.0"
VIEWS_VERSION = f"{SCHEMA_VERSION}.2"  # bump when a definition changes: stale databases are rebuilt
GROUP = "workflow, version, case_name, target"
COPY_ORDER = "recorded_at DESC, result_hash DESC, filename DESC, file_row_number DESC"
LATEST_ORDER = "recorded_at DESC, run_id DESC, result_hash DESC"
SIM = "starts_with(target, 'sim-')"
FAKE = "starts_with(target, 'fake:')"
HARDWARE = f"NOT ({SIM} OR {FAKE})"
META_TABLE = "trackrecord_meta"


def sql_text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def parquet_source(globs: list[str]) -> str:
    listed = ", ".join(sql_text(g) for g in globs)
    return f"read_parquet([{listed}], allow_empty = true, filename = true, file_row_number = true)"


@dataclass(frozen=True)
class Sources:
    """The two relations every view is built on (each with ``filename`` and ``file_row_number``)."""

    filed: str
    candidates: str

    @classmethod
    def of(cls, layout: Layout) -> Sources:
        return cls(
            filed=parquet_source(layout.globs(BATCH, HEAD, OLDER)),
            candidates=parquet_source(layout.globs(BATCH, HEAD)),
        )


def definitions(sources: Sources, version: str | None = None) -> list[tuple[str, str]]:
    """``(name, SELECT)`` of every view, in creation order. ``version`` makes that version the current
    one (``qsolve page --version``) instead of the newest."""
    is_current = (
        f"version = {sql_text(version)}"
        if version is not None
        else "row_number() OVER (PARTITION BY workflow ORDER BY min(recorded_at) DESC, version DESC) = 1"
    )
    current_versions = "(SELECT workflow, version FROM versions WHERE is_current)"
    return [
        ("filed_rows", f"SELECT * FROM {sources.filed}"),
        ("latest_candidates", f"SELECT * FROM {sources.candidates}"),
        (
            "rows",
            # Copies are rare: find the run ids seen twice by hash (narrow, cheap), rank only those.
            "WITH seen_twice AS NOT MATERIALIZED ("
            "  SELECT hash(run_id) AS h FROM filed_rows GROUP BY ALL HAVING count(*) > 1),"
            " dropped AS NOT MATERIALIZED ("
            "  SELECT filename, file_row_number FROM filed_rows"
            "  WHERE hash(run_id) IN (SELECT h FROM seen_twice)"
            f"  QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY {COPY_ORDER}) > 1)"
            " SELECT * EXCLUDE (filename, file_row_number) FROM filed_rows"
            " ANTI JOIN dropped USING (filename, file_row_number)",
        ),
        (
            "current",
            # Only b- and h- rows can be latest; rank only the cases and targets seen there twice.
            f"WITH contested AS NOT MATERIALIZED ("
            f"  SELECT {GROUP} FROM latest_candidates GROUP BY ALL HAVING count(*) > 1)"
            " SELECT * EXCLUDE (filename, file_row_number) FROM latest_candidates"
            f" ANTI JOIN contested USING ({GROUP})"
            " UNION ALL"
            " SELECT * EXCLUDE (filename, file_row_number) FROM ("
            f"  SELECT * FROM latest_candidates SEMI JOIN contested USING ({GROUP})"
            f"  QUALIFY row_number() OVER (PARTITION BY {GROUP} ORDER BY {LATEST_ORDER},"
            "   filename DESC, file_row_number DESC) = 1)",
        ),
        ("history", "SELECT * FROM rows ANTI JOIN current USING (run_id)"),
        (
            "versions",
            "SELECT workflow, version, min(recorded_at) AS first_recorded_at,"
            f" max(recorded_at) AS last_recorded_at, {is_current} AS is_current"
            " FROM filed_rows GROUP BY workflow, version",
        ),
        (
            "track_record",
            f"SELECT * FROM current SEMI JOIN {current_versions} USING (workflow, version) WHERE {SIM}",
        ),
        (
            "noise_model_estimate",
            f"SELECT * FROM current SEMI JOIN {current_versions} USING (workflow, version) WHERE {FAKE}",
        ),
        (
            "on_hardware",
            f"SELECT * FROM current WHERE {HARDWARE} QUALIFY row_number() OVER"
            f" (PARTITION BY workflow, case_name, target ORDER BY {LATEST_ORDER}) = 1",
        ),
        (
            "earlier_results",
            f"SELECT *, CASE WHEN {SIM} THEN 'track_record' ELSE 'noise_model_estimate' END AS section"
            f" FROM history SEMI JOIN {current_versions} USING (workflow, version) WHERE {SIM} OR {FAKE}"
            " UNION ALL"
            " SELECT *, 'on_hardware' AS section FROM rows ANTI JOIN on_hardware USING (run_id)"
            f" WHERE {HARDWARE}",
        ),
        (
            "workflow_cards",
            "SELECT v.workflow, v.version AS current_version,"
            " count(t.run_id) FILTER (WHERE t.passed) AS passed, count(t.run_id) AS total,"
            " median(t.accuracy) AS headline_accuracy"
            " FROM versions v LEFT JOIN track_record t USING (workflow, version)"
            " WHERE v.is_current GROUP BY v.workflow, v.version",
        ),
    ]


def create_views(
    con: duckdb.DuckDBPyConnection, sources: Sources, *, temp: bool = False, version: str | None = None
) -> None:
    kind = "TEMP VIEW" if temp else "VIEW"
    for name, select in definitions(sources, version):
        con.execute(f"CREATE OR REPLACE {kind} {name} AS {select}")


def session(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """No progress bar; times in UTC, whatever the machine's zone, so outputs are the same everywhere."""
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")
    return con


def connect(home: Path | str | Layout | None = None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with every view over the Parquet files (no lock on ``trackrecord.duckdb``,
    so an analyst holding it open never blocks ``qsolve query``). ``read_only``: the connection then
    reaches no file but the track record's (DuckDB's ``allowed_directories`` with external access off:
    no other file, no ``ATTACH``, no extension), and its configuration is locked."""
    from .filing import for_reading

    layout = for_reading(home if isinstance(home, Layout) else Layout(home))
    con = session(duckdb.connect())
    create_views(con, Sources.of(layout), temp=True)
    if read_only:
        folders = {layout.folder.resolve(), layout.schema_file.resolve().parent}
        quoted = ", ".join("'" + str(f).replace("'", "''") + "/'" for f in sorted(folders))
        con.execute(f"SET allowed_directories = [{quoted}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


_fresh: set[tuple[Path, str]] = set()


def ensure_views(home: Path | str | Layout | None = None, *, force: bool = False) -> bool:
    """Make ``trackrecord.duckdb`` hold the views over this home's files, if it does not already.
    Returns whether it was (re)built. The database is built under a temporary name and renamed into
    place, so a reader holding the old one open keeps it and nobody waits on its lock."""
    from .filing import TEMPORARY_PREFIX, ensure_schema_file, fsync_folder

    layout = home if isinstance(home, Layout) else Layout(home)
    key = (layout.database, VIEWS_VERSION)
    if key in _fresh and not force and layout.database.exists():
        return False
    ensure_schema_file(layout)
    if not force and _up_to_date(layout):
        _fresh.add(key)
        return False
    tmp = layout.home / f"{TEMPORARY_PREFIX}{layout.database.name}.{os.getpid()}.{secrets.token_hex(4)}"
    con = session(duckdb.connect())
    try:  # written in a storage version the DuckDB 1.x an analyst installs reads (FACTS.md)
        quoted = str(tmp).replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS built (STORAGE_VERSION '{STORAGE_VERSION}')")
        con.execute("USE built")
        create_views(con, Sources.of(layout))
        con.execute(f"CREATE TABLE {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.executemany(
            f"INSERT INTO {META_TABLE} VALUES (?, ?)",
            [("views_version", VIEWS_VERSION), ("folder", str(layout.folder))],
        )
        con.execute("CHECKPOINT")
        con.execute("USE memory")
        con.execute("DETACH built")
    finally:
        con.close()
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    with contextlib.suppress(FileNotFoundError):  # a write-ahead log of the database replaced
        Path(f"{layout.database}.wal").unlink()
    tmp.replace(layout.database)
    fsync_folder(layout.home)
    _fresh.add(key)
    return True


def _up_to_date(layout: Layout) -> bool:
    if not layout.database.exists():
        return False
    try:
        con = duckdb.connect(str(layout.database), read_only=True)
    except duckdb.IOException as e:  # held open for writing by someone: leave it (its views read the
        return "lock" in str(e).lower()  # same files); any other failure: build it again
    except duckdb.Error:
        return False  # not a database this DuckDB reads: build it again
    try:
        meta = dict(con.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())
    except duckdb.Error:
        return False
    finally:
        con.close()
    return meta.get("views_version") == VIEWS_VERSION and meta.get("folder") == str(layout.folder)
