"""The DuckDB views over the track record's Parquet files (issue 4; benchmarks-and-gates.md, "What the
workflow page shows"), written into ``QSOLVE_HOME/trackrecord.duckdb`` for analysts and created in
memory for ``qsolve query`` and ``qsolve page``. The same definitions (:func:`definitions`) serve both,
and ``QSOLVE_HOME/trackrecord.sql``, the views as plain SQL.

    filed_rows            every row as filed, copies of a run included, with its file and row number
    latest_candidates     the rows of the b- and h- files: they hold the latest row of every case/target
    rows                  every run once (of two copies: the later recorded_at, then result_hash)
    current               the latest row per workflow, version, case name and target
    history               the older rows of the same workflow, version, case name and target
    versions              per workflow and version: first and last recorded time; is_current
    track_record          current rows of each workflow's current version on sim- targets
    noise_model_estimate  current rows of each workflow's current version on fake: targets
    on_devices            every other target, every version: the latest row per case name and target
    on_hardware           of those, the rows whose counts a device measured (``measured``)
    on_simulators         of those, the rows whose counts were simulated (a provider's simulator)
    earlier_results       what the page keeps as history: older rows of the current version's sim- and
                          fake: cases, and device rows a newer run of the same case and target replaced
    method_objectives     one row per current row and method: its name, kind, objective, availability
    workflow_cards        per workflow: passed and total on sim- targets, headline accuracy (the median
                          over the rows with one) and how many rows had none (a zero baseline)
    nondeterministic      per case, version, target, seed and params run on sim- or fake: targets: the
                          rounds (runs), when their answers (``ANSWER``: the methods' own objectives,
                          what they sent, the verdict) differ between them (issue 37): not the result
                          hashes, which also cover the platform's numbers (an upgrade that clamped an
                          accuracy changed them; the method gave the same)

"Latest" is the greatest ``recorded_at``, ties broken by ``run_id``. A workflow's current version is its
newest published one, known from rows alone as the version whose first row was recorded last: a version's
history runs start at its publication, so first-recorded order is publication order (a hardware run of
an older version finishing late does not move it). Since issue 33 a name's versions only go up (the state
database publishes a semantic version only above the highest, ``StateDB.get_version``), so publication
order is version order and this agrees with the state database's current version for every version
published since; only versions published before that rule (1.0.1 after 2.0.0), or an older version whose
first history rows were recorded late (``qsolve history --version``), can differ: no change was needed.

Every view reads exactly the files of the state database's live set (the track-record log folded),
each checked against its recorded digest (``live``; issue 34): ``trackrecord.duckdb``'s views name them
one by one (or the schema file alone where none is recorded) and are rebuilt whenever they change (every
command that reads the track record checks; a filing does not, to stay quick); the in-memory views of
``qsolve query`` and ``qsolve page`` name them too, with a schema file of the process's own where none is
recorded, so they read a home they may not write as well. Its paths are absolute, so it opens from any
folder; ``trackrecord.sql`` names the same files relative to the home.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from .damaged import leave_out_damaged
from .errors import TrackRecordWarning
from .inventory import Inventory, set_aside, take_inventory, warn_left_out
from .layout import BATCH, HEAD, OLDER, SCHEMA_FILE, TEMPORARY_PREFIX, Layout
from .live import state_of, verified_local, verified_shared
from .row import SCHEMA_VERSION
from .schema_file import ensure_schema_file, reading_schema_file
from .shared import SharedInventory
from .writing import fsync_folder, write_replacing

#: the storage version of ``trackrecord.duckdb``: DuckDB 2.x writes files that 1.x cannot open (version 69
#: against 64 to 68); written as v1.2.0, the 1.5 command line on the package index opens it, views and all
STORAGE_VERSION = "v1.2.0"
VIEWS_VERSION = f"{SCHEMA_VERSION}.5"  # bump when a definition changes: stale databases are rebuilt
GROUP = "workflow, version, case_name, target"
COPY_ORDER = "recorded_at DESC, result_hash DESC, filename DESC, file_row_number DESC"
LATEST_ORDER = "recorded_at DESC, run_id DESC, result_hash DESC"
ROUND_ORDER = "recorded_at, run_id"
#: a round's answer, as ``nondeterministic`` compares rounds: the methods' own objectives (``methods``,
#: a crash's reason included), what they sent (``circuits``, ``shots``) and the verdict (``passed``);
#: never the platform's ``result_hash``, fidelity or accuracy, which an upgrade of the platform changes
ANSWER = "{'methods': methods, 'circuits': circuits, 'shots': shots, 'passed': passed}"
SIM = "starts_with(target, 'sim-')"
FAKE = "starts_with(target, 'fake:')"
HARDWARE = f"NOT ({SIM} OR {FAKE})"
DEVICE_SECTION = "CASE WHEN measured THEN 'on_hardware' ELSE 'on_simulators' END"
META_TABLE = "trackrecord_meta"
GLOBBED = "glob"  # the files_digest of a database whose views read globs: no list to keep up to date
GLOB_CHARACTERS = frozenset("*?[]{}")
TRIES = 8  # builds of one call, when files come and go meanwhile (a filing or compaction elsewhere)


def sql_text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def parquet_source(files: Sequence[Path | str]) -> str:
    """``read_parquet`` over these files, named one by one: no glob and no ``allow_empty``, which DuckDB
    1.x lacks. ``files`` starts with the schema file, so it is never empty."""
    listed = ", ".join(sql_text(str(f)) for f in files)
    return f"read_parquet([{listed}], filename = true, file_row_number = true)"


@dataclass(frozen=True)
class Sources:
    """The two relations every view is built on (each with ``filename`` and ``file_row_number``)."""

    filed: str
    candidates: str

    @classmethod
    def of(cls, inventory: Inventory, relative_to: Path | None = None) -> Sources:
        """Over the inventory's readable files, by absolute path or relative to ``relative_to``."""

        def source(*kinds: str) -> str:
            files = inventory.files(*kinds)
            if relative_to is not None:
                files = [f.relative_to(relative_to) for f in files]
            if inventory.readable(*kinds):
                return parquet_source(files)
            # the schema file alone: only its columns count, never a row (one in a bucket or a home may
            # have been replaced by anyone who can write there, and no digest vouches for it)
            return f"(SELECT * FROM {parquet_source(files)} LIMIT 0)"

        return cls(filed=source(BATCH, HEAD, OLDER), candidates=source(BATCH, HEAD))

    @classmethod
    def globbed(cls, folder: Path | str) -> Sources:
        """Over the folder's files by glob, each glob matching the schema file at least (module
        docstring): what ``trackrecord.duckdb`` and ``trackrecord.sql`` read."""

        def source(pattern: str) -> str:
            return f"read_parquet({sql_text(f'{folder}/{pattern}')}, filename = true, file_row_number = true)"

        return cls(filed=source("*.parquet"), candidates=source(f"[{BATCH}{HEAD}{SCHEMA_FILE[0]}]*.parquet"))


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
            "on_devices",
            f"SELECT * FROM current WHERE {HARDWARE} QUALIFY row_number() OVER"
            f" (PARTITION BY workflow, case_name, target ORDER BY {LATEST_ORDER}) = 1",
        ),
        ("on_hardware", "SELECT * FROM on_devices WHERE measured"),
        ("on_simulators", "SELECT * FROM on_devices WHERE NOT measured"),
        (
            "earlier_results",
            f"SELECT *, CASE WHEN {SIM} THEN 'track_record' ELSE 'noise_model_estimate' END AS section"
            f" FROM history SEMI JOIN {current_versions} USING (workflow, version) WHERE {SIM} OR {FAKE}"
            " UNION ALL"
            f" SELECT *, {DEVICE_SECTION} AS section FROM rows ANTI JOIN on_devices USING (run_id)"
            f" WHERE {HARDWARE}",
        ),
        (
            "method_objectives",
            "SELECT workflow, version, case_name, target, run_id, recorded_at, measured,"
            " m.name AS method, m.kind AS kind, m.objective AS objective, m.available AS available,"
            " m.reason AS reason, method_order FROM ("
            "  SELECT *, unnest(methods) AS m, generate_subscripts(methods, 1) AS method_order FROM current)",
        ),
        (
            "workflow_cards",
            "SELECT v.workflow, v.version AS current_version,"
            " count(t.run_id) FILTER (WHERE t.passed) AS passed, count(t.run_id) AS total,"
            " median(t.accuracy) AS headline_accuracy,"
            " count(t.run_id) FILTER (WHERE t.accuracy IS NULL) AS without_accuracy"
            " FROM versions v LEFT JOIN track_record t USING (workflow, version)"
            " WHERE v.is_current GROUP BY v.workflow, v.version",
        ),
        (
            "nondeterministic",
            "SELECT workflow, version, case_name, target, seed, params,"
            " count(DISTINCT result_hash) AS result_hashes, count(*) AS runs,"
            f" list(run_id ORDER BY {ROUND_ORDER}) AS run_ids,"
            f" list(recorded_at ORDER BY {ROUND_ORDER}) AS rounds,"
            f" list(result_hash ORDER BY {ROUND_ORDER}) AS hashes,"
            f" list(passed ORDER BY {ROUND_ORDER}) AS passed,"
            f" count(DISTINCT {ANSWER}) AS answers,"
            f" list(methods ORDER BY {ROUND_ORDER}) AS answered,"
            f" list(circuits ORDER BY {ROUND_ORDER}) AS circuits,"
            f" list(shots ORDER BY {ROUND_ORDER}) AS shots"
            f" FROM rows WHERE ({SIM} OR {FAKE}) AND result_hash <> ''"
            " GROUP BY workflow, version, case_name, target, seed, params"
            f" HAVING count(DISTINCT {ANSWER}) > 1",  # what the methods gave and the verdict, not the
        ),  # platform's hash or scoring: an upgrade of the platform that changes only those is not flagged
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


def connect(
    home: Path | str | Layout | None = None,
    *,
    read_only: bool = False,
    settings: Sequence[tuple[str, str]] = (),
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with every view over the Parquet files (no lock on ``trackrecord.duckdb``,
    so an analyst holding it open never blocks ``qsolve query``). ``read_only``: the connection then
    reaches no file but the track record's (DuckDB's ``allowed_directories`` with external access off:
    no other file, no ``ATTACH``, no extension), and its configuration is locked. ``settings``, DuckDB
    settings as ``(name, value)``, are set first (``qsolve query``'s memory limit and temporary folder,
    which a locked configuration would refuse). Brings ``trackrecord.duckdb`` up to date on the way, and
    warns of the files left out (:func:`reading`), those this process found damaged past their footer
    included (``damaged``)."""
    return open_views(home, read_only=read_only, settings=settings)[0]


def open_views(
    home: Path | str | Layout | None = None,
    *,
    read_only: bool = False,
    settings: Sequence[tuple[str, str]] = (),
) -> tuple[duckdb.DuckDBPyConnection, Inventory | SharedInventory]:
    """:func:`connect`, and the files its views read (what a reader looks through for a file damaged
    past its footer when a query fails: ``damaged.found_damaged``)."""
    layout = home if isinstance(home, Layout) else Layout(home)
    con = session(duckdb.connect())
    try:
        for name, value in settings:
            con.execute(f"SET {name} = {sql_text(value)}")
        attach(con, layout)
        for attempt in range(TRIES):
            inventory = leave_out_damaged(reading(layout), stacklevel=4)
            try:
                create_views(con, Sources.of(inventory), temp=True)
                break
            except duckdb.IOException:  # a file went between the listing and the views (a compaction)
                if attempt == TRIES - 1:
                    raise
        if read_only:
            if layout.store is not None:
                folders = {inventory.folder.rstrip("/")}
                if not inventory.schema_file.startswith("s3://"):
                    folders.add(str(Path(inventory.schema_file).parent))
            else:
                folders = {inventory.folder, inventory.schema_file.parent}
                folders |= {f.resolve() for f in folders}
            quoted = ", ".join(sql_text(f"{f}/") for f in sorted(folders, key=str))
            con.execute(f"SET allowed_directories = [{quoted}]")
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con, inventory


def attach(con: duckdb.DuckDBPyConnection, layout: Layout) -> None:
    """Let ``con`` read the home's files: those of an object store through its client."""
    if layout.store is not None:
        layout.store.attach(con)


def reading(home: Path | str | Layout | None = None, db=None) -> Inventory | SharedInventory:
    """What ``qsolve query``, ``qsolve page`` and the web pages read: the files of the state database's
    live set (``db``, default the home's), each checked against its recorded digest (``live``). A home
    qsolve has filed in gets its ``trackrecord.duckdb`` brought up to date on the way, so any command
    re-binds a copied or moved home (a home it cannot write to is read all the same, with a warning).
    Each file left out is named in a :class:`TrackRecordWarning`. The views read no schema file of the
    home or the bucket: their own, in a temporary folder (``schema_file.reading_schema_file``)."""
    layout = home if isinstance(home, Layout) else Layout(home)
    own_schema = reading_schema_file()
    with state_of(layout, db) as state:
        if layout.store is not None:
            shared = verified_shared(layout, state, str(own_schema))
            warn_left_out(shared.left_out, stacklevel=3)
            return shared
        inventory = None
        if layout.folder.is_dir():
            try:
                inventory = _ensure(layout, state)[1]
            except (OSError, duckdb.Error) as e:
                said = f"{layout.database}: not brought up to date ({e})"
                warnings.warn(said, TrackRecordWarning, stacklevel=2)
        if inventory is None:
            inventory = verified_local(layout, state, own_schema)
            warn_left_out(inventory.left_out, stacklevel=3)
    return replace(inventory, schema_file=own_schema)


def ensure_views(
    home: Path | str | Layout | None = None, *, force: bool = False, filed: bool = False, db=None
) -> bool:
    """Make ``trackrecord.duckdb`` (and ``trackrecord.sql``) hold this code's views over this home's
    files, if it does not already (the module's docstring says when it does), files left out set aside
    first. Returns whether it was (re)built. The database is built under a temporary name and renamed
    into place, so a reader holding the old one open keeps it and nobody waits on its lock. Each file
    left out is named in a :class:`TrackRecordWarning`. ``filed``: called by filing, which only added a
    file it wrote, so a database that reads globs needs no look at the files."""
    layout = home if isinstance(home, Layout) else Layout(home)
    if layout.store is not None:  # no trackrecord.duckdb: an analyst reads the store (``analyst_sql``)
        return False
    del filed  # views name their files: a filing changes them too
    with state_of(layout, db) as state:
        return _ensure(layout, state, force=force)[0]


def inventory_of(home: Path | str | Layout | None = None, db=None, *, behind: bool = False) -> Inventory:
    """The home's files, checked, those left out set aside (and named in warnings), with
    ``trackrecord.duckdb`` brought up to date: what a command that writes the home reads. ``behind``: a
    ``trackrecord.duckdb`` that is this code's, of this folder, and only behind on the files (as a filing
    leaves it) is left as it is, for a step that only looks (the maintenance pass's check for lost runs),
    which leaves it to the step that changes the files or to the next reader (each checks)."""
    layout = home if isinstance(home, Layout) else Layout(home)
    if layout.store is not None:
        return reading(layout, db)
    with state_of(layout, db) as state:
        return _ensure(layout, state, behind=behind)[1]


@dataclass(frozen=True)
class Stored:
    """What a ``trackrecord.duckdb`` says of itself: its ``trackrecord_meta``."""

    views_version: str | None
    folder: str | None
    files_digest: str | None

    def ours(self, layout: Layout) -> bool:
        """Whether its views are this code's, in this folder (over whichever files)."""
        return self.views_version == VIEWS_VERSION and _same_folder(self.folder, layout.folder)

    def serves(self, layout: Layout, inventory: Inventory | None) -> bool:
        """Whether its views are this code's, over these files (by glob, or named), in this folder.
        ``inventory`` may be None where the home's views read globs (no list of files to compare)."""
        return self.ours(layout) and self.files_digest == _files_digest(layout, inventory)


def _globbed(layout: Layout) -> bool:
    """Whether the home's database reads its files by glob: never since issue 34 (a glob would let in
    a file the state database never recorded); its views name the recorded files one by one."""
    del layout
    return False


def _files_digest(layout: Layout, inventory: Inventory | None) -> str | None:
    if _globbed(layout):
        return GLOBBED
    return None if inventory is None else inventory.digest


def _sources(layout: Layout, inventory: Inventory, relative_to: Path | None = None) -> Sources:
    if not _globbed(layout):
        return Sources.of(inventory, relative_to)
    folder = layout.folder if relative_to is None else layout.folder.relative_to(relative_to)
    return Sources.globbed(folder)


def _same_folder(stored: str | None, folder: Path) -> bool:
    if stored is None:
        return False
    if stored == str(folder):
        return True
    try:  # the same folder by another path (a symbolic link): not moved
        return os.path.samefile(stored, folder)
    except OSError:
        return False


#: per database: what it said of itself, with the file's inode, size and times when it said it
_stored: dict[Path, tuple[tuple[int, ...], Stored]] = {}


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns  # as _build keeps it


def stored(database: Path) -> Stored | None:
    """What ``database`` says of itself, or None where it is missing, unreadable or held open for
    writing (a rebuild then replaces it). Kept per process while the file is the same."""
    key = _stat_key(database)
    if key is None:
        return None
    cached = _stored.get(database)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        con = duckdb.connect(str(database), read_only=True)
    except duckdb.Error:  # locked by a writer, or not a database this DuckDB reads
        return None
    try:
        meta = dict(con.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())
    except duckdb.Error:  # made by an older qsolve, or not by qsolve
        return None
    finally:
        con.close()
    found = Stored(meta.get("views_version"), meta.get("folder"), meta.get("files_digest"))
    _stored[database] = (key, found)
    return found


def _ensure(layout: Layout, state, *, force: bool = False, behind: bool = False) -> tuple[bool, Inventory]:
    """Bring ``trackrecord.duckdb`` up to date, files left out set aside first (each named in a
    :class:`TrackRecordWarning`, even when the build then fails); returns whether it was built and the
    folder's files. After a build the folder is listed again, and the database built again if it no
    longer serves (a database naming its files, which changed meanwhile): of two processes racing, the
    one that renames last checks last."""
    ensure_schema_file(layout)
    built = False
    inventory = None
    said: dict[Path, str] = {}  # every file left out on the way: one set aside is gone from a later listing
    try:
        said.update(housekeeping(layout))
        for attempt in range(TRIES):
            found = None if force else stored(layout.database)
            inventory = verified_local(layout, state, layout.schema_file)
            for path, why in inventory.left_out:  # one set aside on the way is said as such
                said.setdefault(path, why)
            if (
                found is not None
                and layout.sql_file.exists()
                and (found.serves(layout, inventory) or (behind and found.ours(layout)))
            ):
                break
            try:
                _build(layout, inventory)
            except duckdb.IOException:  # a file went between the listing and the views (a compaction)
                if attempt == TRIES - 1:
                    raise
                continue
            built, force = True, False
    finally:
        warn_left_out(list(said.items()), stacklevel=4)
    return built, inventory


def housekeeping(layout: Layout) -> list[tuple[Path, str]]:
    """The folder's files that fail their footer checks (damaged, or not qsolve's), set aside into
    ``left-out/`` and returned with why, for a command that may write the home to name. Nothing here
    decides what a reader reads (the live set does); a file that passes its checks but that the log does
    not hold is the maintenance pass's to set aside (``known``)."""
    try:
        return set_aside(take_inventory(layout)).left_out
    except OSError:
        return []


def _build(layout: Layout, inventory: Inventory) -> None:
    tmp = layout.home / f"{TEMPORARY_PREFIX}{layout.database.name}.{os.getpid()}.{secrets.token_hex(4)}"
    digest = _files_digest(layout, inventory)
    meta = [("views_version", VIEWS_VERSION), ("folder", str(layout.folder)), ("files_digest", digest)]
    con = session(duckdb.connect())
    try:  # written in a storage version the DuckDB 1.x an analyst installs reads (FACTS.md)
        con.execute(f"ATTACH {sql_text(str(tmp))} AS built (STORAGE_VERSION '{STORAGE_VERSION}')")
        con.execute("USE built")
        create_views(con, _sources(layout, inventory))
        con.execute(f"CREATE TABLE {META_TABLE} (key VARCHAR, value VARCHAR)")
        con.executemany(f"INSERT INTO {META_TABLE} VALUES (?, ?)", meta)
        con.execute("CHECKPOINT")
        con.execute("USE memory")
        con.execute("DETACH built")
    except BaseException:
        con.close()
        for leftover in (tmp, Path(f"{tmp}.wal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        raise
    con.close()
    write_replacing(layout.sql_file, sql_script(layout, inventory).encode())
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
        with contextlib.suppress(FileNotFoundError):  # a write-ahead log of the database replaced
            Path(f"{layout.database}.wal").unlink()
        tmp.replace(layout.database)
        fsync_folder(layout.home)
        st = os.fstat(f.fileno())  # this file's, whatever another process renames into place meanwhile
    key = st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
    _stored[layout.database] = (key, Stored(VIEWS_VERSION, str(layout.folder), digest))


def sql_script(layout: Layout, inventory: Inventory) -> str:
    """The views as plain SQL over the same files, relative to the home: ``trackrecord.sql``."""
    home = layout.home
    lines = [
        "-- The track record's views (docs/trackrecord.md) as plain SQL, for any DuckDB, 1.x or 2.x. qsolve",
        "-- writes it with trackrecord.duckdb, whenever the files change. Its paths are relative to",
        "-- QSOLVE_HOME: run it there, for example",
        "--   cd .qsolve && duckdb -init trackrecord.sql",
        "--   cd .qsolve && duckdb analysis.duckdb < trackrecord.sql",
    ]
    if not _globbed(layout):
        for path, problem in inventory.left_out:
            shown = str(path.relative_to(home)).replace("\n", "\\n")
            lines.append(f"-- left out: {shown}: {problem}")
    for name, select in definitions(_sources(layout, inventory, relative_to=home)):
        lines.append(f"CREATE OR REPLACE VIEW {name} AS {select};")
    return "\n".join(lines) + "\n"
