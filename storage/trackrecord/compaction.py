"""Compaction: batch files merged, the latest rows kept apart from the older ones.

Each filing adds a small ``b-`` file; a maintenance pass calls :func:`compact` to merge every ``b-`` and
``h-`` file into one ``h-`` file (the latest row of each workflow, version, case name and target among
them) and one ``o-`` file (the rest), each sorted by workflow, version, case and time, then removes the
inputs. A row is put in an ``o-`` file only when a newer row of its case and target exists, and that
stays true as rows are added, so the ``b-`` and ``h-`` files always hold every case's latest row:
``current`` reads only them.

Only files that pass the checks of ``inventory`` are merged; any other (qsolve did not write it, or it
is damaged) is left where it is, never removed, and named in a warning and in ``Compacted.left_out``.
A file whose footer reads but whose data does not (damaged past the footer, which the checks read alone)
fails the merge: it is then set aside into ``trackrecord/left-out/``, and the next maintenance pass files
its runs again from the state database.
``trackrecord.duckdb`` is brought up to date at the end, since its views name the files.

Crash-safe like filing: the outputs are written whole before any input is removed, and until then the
views see some runs twice, which ``rows`` shows once and ``current`` ranks. Two compactions at once are
safe too (the loser of a race finds its inputs gone and stops). A query running while a compaction
removes its inputs may fail once with a missing file; run it again.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from qsolve_pipeline.storage.objects import ObjectTooLarge

from .filing import set_aside_one
from .inventory import warn_left_out
from .layout import BATCH, DATABASE, HEAD, OLDER, SQL_FILE, TEMPORARY_PREFIX, Layout, file_name
from .live import state_of, verified_local, verified_shared
from .row import COLUMNS, SCHEMA
from .schema_file import ensure_schema_file, reading_schema_file
from .views import COPY_ORDER, GROUP, LATEST_ORDER, ensure_views, housekeeping, parquet_source, session
from .writing import COMPRESSION, ROW_GROUP_ROWS, digest_bytes, digest_file, fsync_folder, write_named

if TYPE_CHECKING:
    from qsolve_pipeline.storage.state import StateDB

ORDER = f"{GROUP}, recorded_at, run_id"
BATCH_ROWS = 1 << 17
OLDER_FILE_BYTES = 256 << 20  # o- files under this size are merged once there are too many of them
#: how long a compaction's claim in the state database lasts unrenewed (object storage: one at a time)
CLAIM_SECONDS = 300.0


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
    home: Path | str | None = None,
    *,
    older_files_limit: int = 16,
    temporary_age_s: float = 3600.0,
    db: StateDB | None = None,
) -> Compacted:
    """Merge the ``b-`` and ``h-`` files into one ``h-`` and one ``o-`` file; merge small ``o-`` files
    once there are more than ``older_files_limit``; remove temporary files older than an hour. With the
    state database ``db`` (as the maintenance pass compacts), only the files it knows are merged
    (``known``: the others stay where they are, in ``left_out``, for the pass to set aside) and each
    output is recorded before it takes its name."""
    layout = Layout(home)
    if layout.store is not None:
        return _compact_shared(layout, older_files_limit, db)
    if not layout.folder.is_dir():
        return Compacted(skipped="nothing filed")
    removed = _remove_stale_temporary(layout, temporary_age_s)
    with state_of(layout, db) as state:
        if state is None:
            return Compacted(removed_temporary=removed, skipped="nothing filed")
        return _compact_local(layout, state, older_files_limit, removed)


def _compact_local(layout: Layout, state: StateDB, older_files_limit: int, removed: int) -> Compacted:
    ensure_schema_file(layout)
    aside = housekeeping(layout)
    inventory = verified_local(layout, state, reading_schema_file())
    moved = {p for p, _ in aside}
    aside += [(p, why) for p, why in inventory.left_out if p not in moved]
    warn_left_out(aside, stacklevel=4)
    recorded = signed_live(state)
    writing = _local_writing(layout, state, {f.name: f.digest for f in state.trackrecord_live_files()})
    private = tempfile.mkdtemp(prefix="qsolve-compaction-")
    candidates = inventory.readable(BATCH, HEAD)
    inputs, copies = _verified_copies(candidates, _read_local, recorded, private, writing)
    merged = heads = older = 0
    skipped = None
    con = session(duckdb.connect())
    try:
        if len(inputs) > 1 or any(_name_of(p).startswith(f"{BATCH}-") for p in inputs):
            merged, heads, older, skipped = _merge_or_set_aside(
                lambda: _merge_heads(con, copies, writing),
                inputs,
                lambda: _unreadable(inputs),
                lambda p, e: set_aside_one(p, f"its data does not read ({e})"),
            )
        else:
            skipped = "no batch files"
        small = [p for p in inventory.readable(OLDER) if inventory.entry(p).size < OLDER_FILE_BYTES]
        merged_older = 0
        if len(small) > older_files_limit:
            small, small_copies = _verified_copies(small, _read_local, recorded, private, writing)
            with contextlib.suppress(duckdb.IOException):
                _merge_older(con, small_copies, writing)
                merged_older = len(small)
    finally:
        con.close()
        shutil.rmtree(private, ignore_errors=True)
    ensure_views(layout, db=state)  # which warns of each file left out
    left_out = tuple(p for p, _ in aside)
    return Compacted(merged, heads, older, merged_older, removed, skipped, left_out)


def _merge_heads(con: duckdb.DuckDBPyConnection, inputs: list, writing: Writing) -> tuple[int, int]:
    source = parquet_source([str(writing.schema_file)] + [str(p) for p in inputs])
    con.execute(f"CREATE OR REPLACE TEMP TABLE merged AS {_one_copy_per_run(source)}")
    # Only the cases and targets seen more than once need ranking: the others' one row is the latest.
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE contested AS SELECT {GROUP} FROM merged"
        " GROUP BY ALL HAVING count(*) > 1"
    )
    # Of those, the latest row each (an aggregate: cheaper than ranking them), then the rows it replaced.
    row = "struct_pack(filename, file_row_number)"
    later = f"({LATEST_ORDER.replace(' DESC', '')}, filename, file_row_number)"  # greatest: latest
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE latest AS SELECT unnest(arg_max({row}, {later})) FROM merged"
        f" SEMI JOIN contested USING ({GROUP}) GROUP BY {GROUP}"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE replaced AS SELECT filename, file_row_number FROM merged"
        f" SEMI JOIN contested USING ({GROUP}) ANTI JOIN latest USING (filename, file_row_number)"
    )
    rows = "SELECT {cols} FROM merged %s JOIN replaced USING (filename, file_row_number)"
    outputs = [
        _write_selection(con, writing, HEAD, rows % "ANTI"),
        _write_selection(con, writing, OLDER, rows % "SEMI"),
    ]
    writing.commit(outputs, inputs)
    for table in ("merged", "contested", "latest", "replaced"):
        con.execute(f"DROP TABLE {table}")
    return outputs[0][1], outputs[1][1]


def _merge_or_set_aside(merge, inputs, unreadable, set_aside) -> tuple[int, int, int, str | None]:
    """``merge()`` the inputs: (inputs merged, heads, older, why skipped). Where DuckDB fails, the inputs
    whose data does not read (damaged past the footer, which the checks read alone; DuckDB may name that
    an IO error, "could not read enough bytes") are set aside for the next pass to file their runs again;
    with none damaged, an IO error is an input another compaction removed first."""
    try:
        heads, older = merge()
    except duckdb.Error as e:
        bad = unreadable()
        for p in bad:
            set_aside(p, e)
        if bad:
            return 0, 0, 0, f"set aside {len(bad)} damaged file(s); the next pass files their runs again"
        if isinstance(e, duckdb.IOException):
            return 0, 0, 0, f"inputs changed during compaction: {e}"
        raise
    return len(inputs), heads, older, None


def _unreadable(files: list[Path]) -> list[Path]:
    """The files whose rows do not read whole (each read through, every column)."""
    bad = []
    for p in files:
        try:
            pq.read_table(p)
        except FileNotFoundError:
            continue
        except (OSError, ValueError, pa.ArrowException):
            bad.append(p)
    return bad


def _one_copy_per_run(source: str) -> str:
    """The rows of ``source``, a run filed twice once (the copy ``rows`` shows): copies are rare, so
    only the run ids seen twice are ranked."""
    return (
        f"WITH src AS (SELECT * FROM {source}),"
        " twice AS (SELECT run_id FROM src GROUP BY run_id HAVING count(*) > 1)"
        " SELECT * FROM src ANTI JOIN twice USING (run_id)"
        " UNION ALL"
        " SELECT * FROM (SELECT * FROM src SEMI JOIN twice USING (run_id))"
        f" QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY {COPY_ORDER}) = 1"
    )


def _merge_older(con: duckdb.DuckDBPyConnection, files: list, writing: Writing) -> None:
    source = parquet_source([str(writing.schema_file)] + [str(p) for p in files])
    con.execute(f"CREATE OR REPLACE TEMP TABLE merged AS {_one_copy_per_run(source)}")
    out = _write_selection(con, writing, OLDER, "SELECT {cols} FROM merged")
    writing.commit([out], files)
    con.execute("DROP TABLE merged")


def _write_selection(
    con: duckdb.DuckDBPyConnection, writing: Writing, kind: str, select: str
) -> tuple[Path | str | None, int, bool]:
    """Write the rows of ``select`` sorted, in one pass, as a file named (once written) for its run ids."""
    cols = ", ".join(name for name, _, _ in COLUMNS)
    reader = con.sql(f"{select.format(cols=cols)} ORDER BY {ORDER}").to_arrow_reader(BATCH_ROWS)
    run_ids: list[pa.ChunkedArray] = []

    def write(f):
        with pq.ParquetWriter(f, SCHEMA, compression=COMPRESSION) as w:
            for batch in reader:
                table = pa.Table.from_batches([batch]).cast(SCHEMA)
                run_ids.append(table.column("run_id"))
                w.write_table(table, row_group_size=ROW_GROUP_ROWS)

    def name() -> str | None:
        ids = [i for chunk in run_ids for i in chunk.to_pylist()]
        return file_name(kind, ids) if ids else None

    path, made = writing.place(kind, write, name)
    return path, sum(len(c) for c in run_ids), made


@dataclass(frozen=True)
class Writing:
    """Where a compaction writes: ``place(kind, write, name)`` writes an output whole under the name
    ``name()`` gives once written and returns (its location, whether this call made it), recording its
    digest and size in ``made``; ``remove`` removes inputs; ``schema_file`` is what every source reads
    first (this process's own, never the home's or the bucket's); ``state`` is the state database whose
    track-record log gets the compaction's entry and ``live`` its live files' digests, by name."""

    schema_file: Path | str
    place: Callable[[str, Callable[[BinaryIO], None], Callable[[], str | None]], tuple[Any, bool]]
    remove: Callable[[list], None]
    state: Any = None
    live: dict[str, str] = field(default_factory=dict)
    made: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: by name: the input a private copy stands for (what is retired and removed)
    originals: dict[str, Any] = field(default_factory=dict)

    def commit(self, outputs: list[tuple[Any, int, bool]], inputs: list) -> None:
        """The outputs logged (one signed ``compacted`` entry: they are added, the inputs they replace
        retired), then the inputs removed. An output this call did not make under a name no input has
        (another file sits there) commits nothing: the inputs stay, and the outputs are not read."""
        from . import log

        names = {_name_of(p): p for p in inputs}
        adds = []
        for location, rows, made in outputs:
            if location is None:
                continue
            name = _name_of(location)
            if made:
                digest, size = self.made[name]
                adds.append(log.added(name, digest, size, rows, name[2 : -len(".parquet")]))
            elif name not in names:
                return
        kept = {_name_of(o[0]) for o in outputs if o[0] is not None}
        retired = [p for n, p in names.items() if n not in kept]
        retires = [{"name": _name_of(p), "digest": self.live[_name_of(p)]} for p in retired]
        if self.state is not None and (adds or retires):
            self.state.append_trackrecord_entry(log.COMPACTED, adds, retires)
        self.remove([self.originals.get(_name_of(p), p) for p in retired])


def signed_live(state: StateDB) -> dict:
    """The live files compaction may merge, by name: each row of the live set whose digest and size are
    the ones the signed log's fold holds for its name. The log is read from its first entry, each
    entry of its form, its signature holding by the key it names, and linked to the one before;
    folding stops at the first that is not. The live set alone is the state database's writer's to
    change: a digest no entry signed is never merged (and so never signed again as compacted). Which
    keys an operator trusts is ``qsolve trackrecord verify``'s to check (several hosts sign one log)."""
    from . import log

    documents = []
    for text in state.trackrecord_log_documents():
        try:
            documents.append(log.read(text))
        except log.LogRefused:
            break
    chain = log.Chain.of(documents, None)
    folded: dict = {}
    for entry in chain.entries[: chain.sound]:
        log.apply(folded, entry)
    signed = {name: (a.get("digest"), a.get("size")) for name, a in folded.items()}
    return {f.name: f for f in state.trackrecord_live_files() if signed.get(f.name) == (f.digest, f.size)}


def _read_local(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size + 1)


def _verified_copies(inputs: list, read, recorded: dict, private: str, writing: Writing) -> tuple[list, list]:
    """Each input read once (no further than its recorded size and a byte), its bytes checked against
    the digest its log entry recorded, and those very bytes written to this compaction's private folder,
    which is all DuckDB reads: a file rewritten after its check is never merged (it is left out, named,
    for the next pass). Returns the inputs that verified and their private copies, in the same order."""
    from .live import CHANGED

    kept, copies, said = [], [], []
    for where in inputs:
        name = _name_of(where)
        f = recorded.get(name)
        try:
            data = None if f is None else read(where, f.size)
        except (FileNotFoundError, ObjectTooLarge):
            data = None
        if f is None or data is None or len(data) != f.size or digest_bytes(data) != f.digest:
            if f is not None and data is not None:
                said.append((where, CHANGED.format(digest=f.digest)))
            continue
        copy = Path(private) / name
        copy.write_bytes(data)
        writing.originals[name] = where
        kept.append(where)
        copies.append(copy)
    warn_left_out(said, stacklevel=4)
    return kept, copies


def _name_of(location: Path | str) -> str:
    return str(location).rsplit("/", 1)[-1]


def _local_writing(layout: Layout, state: StateDB, live: dict[str, str]) -> Writing:
    made: dict[str, tuple[str, int]] = {}

    def before_link(tmp: Path, path: Path) -> None:
        made[path.name] = digest_file(tmp), tmp.stat().st_size
        state.record_trackrecord_file(path.name, made[path.name][0])

    def place(kind, write, name):
        def named() -> Path | None:
            found = name()
            return None if found is None else layout.folder / found

        return write_named(layout.folder, named, write, before_link=before_link)

    def remove(files: list[Path]) -> None:
        for p in files:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        fsync_folder(layout.folder)

    return Writing(reading_schema_file(), place, remove, state, live, made)


def _compact_shared(layout: Layout, older_files_limit: int, given: StateDB | None) -> Compacted:
    """:func:`compact` in object storage (``shared``), claimed in the state database first: a machine
    that finds the claim held by another (whose claim has not lapsed) merges nothing."""
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._leases import owner_token

    from . import shared

    owner = owner_token()
    with contextlib.ExitStack() as stack:
        db = given if given is not None else stack.enter_context(connect(home=layout.home))
        if not db.claim(shared.COMPACTION_CLAIM, owner, CLAIM_SECONDS):
            return Compacted(skipped="another machine is compacting (claimed in the state database)")
        try:
            return _compact_claimed(
                layout,
                older_files_limit,
                lambda: db.claim(shared.COMPACTION_CLAIM, owner, CLAIM_SECONDS),
                db,
            )
        finally:
            db.release_claim(shared.COMPACTION_CLAIM, owner)


def _compact_claimed(
    layout: Layout, older_files_limit: int, renew: Callable[[], bool], db: StateDB
) -> Compacted:
    from . import shared

    store = layout.store
    inventory = verified_shared(layout, db, str(reading_schema_file()))
    warn_left_out(inventory.left_out, stacklevel=4)
    made: dict[str, tuple[str, int]] = {}
    live = {f.name: f.digest for f in db.trackrecord_live_files()}
    writing = Writing(
        inventory.schema_file,
        shared.placer(store, db.record_trackrecord_file, made),
        shared.remover(store),
        db,
        live,
        made,
    )
    recorded = signed_live(db)
    private = tempfile.mkdtemp(prefix="qsolve-compaction-")

    def read_shared(address: str, size: int) -> bytes:
        return store.get(shared.key_of(store, address), limit=size)

    candidates = inventory.readable(BATCH, HEAD)
    inputs, copies = _verified_copies(candidates, read_shared, recorded, private, writing)
    merged = heads = older = 0
    skipped = None
    con = session(duckdb.connect())
    store.attach(con)
    try:
        if len(inputs) > 1 or any(_name_of(a).startswith(f"{BATCH}-") for a in inputs):
            merged, heads, older, skipped = _merge_or_set_aside(
                lambda: _merge_heads(con, copies, writing),
                inputs,
                lambda: shared.unreadable(store, inputs),
                lambda a, _: shared.set_aside_one(store, a.rsplit("/", 1)[-1]),
            )
        else:
            skipped = "no batch files"
        small = [a for a in inventory.readable(OLDER) if inventory.size(a) < OLDER_FILE_BYTES]
        merged_older = 0
        if len(small) > older_files_limit and renew():
            small, small_copies = _verified_copies(small, read_shared, recorded, private, writing)
            with contextlib.suppress(duckdb.IOException):
                _merge_older(con, small_copies, writing)
                merged_older = len(small)
    finally:
        con.close()
        shutil.rmtree(private, ignore_errors=True)
    left_out = tuple(a for a, _ in inventory.left_out)
    return Compacted(merged, heads, older, merged_older, 0, skipped, left_out)


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
