"""One maintenance pass (DESIGN.md §5 ``qsolve maintenance``; benchmarks-and-gates.md, "How they run",
step 5): what keeps the state database and the track record in order between runs.

In this order, each step safe to run twice and alongside another pass:

1. runs still ``created`` or ``running`` whose owner's lease lapsed (it died: nothing renewed it), or
   past their own deadline whatever their lease says, were left by a worker that stopped: they end
   ``failed`` with ``platform_error``, which the track record does not keep, and their credit hold is
   released in the same transaction (``StateDB.end_lapsed_runs``; leases in docs/storage.md);
2. credit holds older than the longest a run may take (a sandbox job's 7200 s and a margin) that were
   never settled: released (``StateDB.release_stale_holds``), the credits back to their account;
3. the track record is checked against the state database, the source of truth: a file that fails its
   checks, and a data file the database does not know by name and content (``trackrecord.known``: a
   copy under another's name, other values under the right runs, a file no filing made), is set aside
   (``trackrecord/left-out/``) and named in the report; where the rows of the readable files no longer
   count the runs marked filed (a file damaged, cut short, deleted or set aside), every filed run
   missing from them is filed again (``refile_lost_runs``): a run counts as filed only while its row is
   readable;
4. ended runs the track record keeps and has not filed, oldest first, at most 20 a pass, are filed as
   rows (a run failed for platform reasons never is; a crash or a timeout is, as failed);
5. the track record is compacted (``storage.trackrecord.compact``), so ``current`` stays quick.

``rebuild_track_record`` (``qsolve maintenance --rebuild``) writes the whole track record again from the
state database, then removes the files it replaced.

The Prefect flow ``flows/maintenance.py`` runs the steps as tasks, in that order, on a schedule. The
history stage files its own runs as it ends; a pass files whatever else has ended (hardware runs)
and whatever a crash left unfiled. Filing again is harmless: a batch of the same runs is the same file.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel

from qsolve.runtime.failpoint import failpoint
from qsolve.validation.jobs import TIMEOUT_RANGE
from qsolve_pipeline.storage.state import StateDB
from qsolve_pipeline.storage.trackrecord import known
from qsolve_pipeline.storage.trackrecord.compaction import compact
from qsolve_pipeline.storage.trackrecord.filing import file_rows
from qsolve_pipeline.storage.trackrecord.layout import Layout
from qsolve_pipeline.storage.trackrecord.row import TrackRecordRow

RUNS_PER_PASS = 20
REFILE_BATCH = 10_000  # runs a file when the track record is filed again from the state database
#: past this, no job can still be running a run: the longest a sandbox job may take, and a margin
ABANDONED_AFTER = timedelta(seconds=TIMEOUT_RANGE[1]) + timedelta(minutes=10)


class MaintenanceReport(BaseModel):
    """What one pass did."""

    abandoned: list[str] = []  # runs ended platform_error: left by a worker that died
    released: list[str] = []  # runs whose stale credit hold was released
    refiled: int = 0  # filed runs whose rows were no longer readable, filed again from the state database
    set_aside: list[str] = []  # data files the state database does not know, set aside: "where: why"
    filed: list[str] = []  # runs filed into the track record by this pass
    waiting: int = 0  # runs still waiting to be filed: the next passes take them, 20 at a time
    compaction: str = "not run"

    def summary(self) -> str:
        lines = [
            f"filed {_runs(len(self.filed))} into the track record"
            + (
                f"; {_runs(self.waiting)} {'waits' if self.waiting == 1 else 'wait'} for the next pass"
                if self.waiting
                else ""
            ),
            f"ended {_runs(len(self.abandoned))} left running by a worker that died (platform_error)",
            f"released {len(self.released)} stale credit hold{'' if len(self.released) == 1 else 's'}",
            f"compaction: {self.compaction}",
        ]
        if self.refiled:
            again = f"filed {_runs(self.refiled)} again from the state database: their rows were gone"
            again += " or set aside" if self.set_aside else ""
            lines.insert(1, again)
        lines[1:1] = [f"set aside {line}" for line in self.set_aside]
        return "\n".join(lines)

    def markdown(self) -> str:
        body = "\n".join(f"- {line}" for line in self.summary().splitlines())
        listed = [
            ("Filed", self.filed),
            ("Ended as abandoned", self.abandoned),
            ("Holds released", self.released),
        ]
        runs = "".join(f"\n\n{title}: " + ", ".join(f"`{r}`" for r in ids) for title, ids in listed if ids)
        return f"# Maintenance pass\n\n{body}{runs}\n"


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def end_abandoned_runs(db: StateDB, older_than: timedelta = ABANDONED_AFTER) -> list[str]:
    """End ``platform_error``, holds released, every unended run whose owner's lease lapsed, that is
    past its deadline, or that has no lease (made before leases) and is older than ``older_than``."""
    return db.end_lapsed_runs(older_than)


def file_ended_runs(db: StateDB, home: Path, limit: int = RUNS_PER_PASS) -> tuple[list[str], int]:
    """File at most ``limit`` unfiled runs the track record keeps, oldest first; (the ids this pass
    marked filed, how many are still waiting). The rows are written before the runs are marked filed:
    a pass that stops between the two files them again next time, as the same file."""
    runs = db.unfiled_runs(limit)
    return file_runs(db, runs, home), db.count_unfiled()


def file_runs(db: StateDB, runs: list, home: Path) -> list[str]:
    """File ended runs as one batch, each row naming its device jobs' receipts, then mark them filed
    (the maintenance pass, the history stage and the hardware flow all file so). Rows first: a
    process that stops between the two files the same runs again, as the same file. The ids this call
    marked filed: a run another process marked first (two passes at once) is not reported twice."""
    if not runs:
        return []
    file_rows([_row(db, r, home) for r in runs], home, db.record_trackrecord_file, db=db)
    failpoint("runs.filed")
    return db.mark_filed_ids(r.id for r in runs)


def _row(db: StateDB, run, home: Path) -> TrackRecordRow:
    """A run's row, naming its device jobs' receipts, ``measured`` by the class each one seals."""
    from qsolve_pipeline.storage.trackrecord.receipts_check import receipt_classes

    receipts = db.run_receipts(run.id)
    return TrackRecordRow.from_run(run, receipts, receipt_classes(receipts, home) if receipts else None)


class Refiled(BaseModel):
    """What the check of the track record against the state database did."""

    runs: list[str] = []  # filed runs whose rows no readable file held, filed again
    set_aside: list[str] = []  # data files the database does not know, set aside: "where: why"


def refile_lost_runs(db: StateDB, home: Path) -> Refiled:
    """Set aside every data file of the folder (or bucket) the state database does not know
    (``trackrecord.known``) or that fails its checks; retire from the track-record log every live file
    that is missing or whose bytes are not those recorded (one signed ``retired`` entry); then file
    again, from the state database, every run marked filed whose row no live file holds. Cheap when
    nothing was lost: each file's digest (kept while it is unchanged) is looked up, and the live files'
    row counts weighed against the count of filed runs; every run id is read only when the two disagree
    or a file was set aside or retired. ``trackrecord.duckdb`` is built again when it is missing or
    damaged, or when this changed the files; one only behind on a filing is left as the filing left it
    (the compaction step, or the next reader, brings it up to date)."""
    from qsolve_pipeline.storage.trackrecord import log

    filed = db.count_filed()
    layout = Layout(home)
    listing = _listing(layout)
    aside = known.set_aside(db, layout, known.unknown_files(db, layout, listing))
    db.forget_trackrecord_files(str(p).rsplit("/", 1)[-1] for p in listing.readable())
    inventory = _inventory(layout, db, build=False)
    live = {f.name: f.digest for f in db.trackrecord_live_files()}
    bad = [str(p).rsplit("/", 1)[-1] for p, _ in inventory.left_out]
    retires = [{"name": n, "digest": live[n]} for n in bad if n in live]
    if retires:
        db.append_trackrecord_entry(log.RETIRED, [], retires)
        inventory = _inventory(layout, db, build=False)
    if not aside and not retires and inventory.rows() == filed:
        return Refiled()
    wanted = db.filed_run_ids()  # before the files are read: each of these was written before its mark
    lost = sorted(wanted - _run_ids_on_disk(layout, db))
    for runs in _in_batches(db, lost):
        file_rows([_row(db, r, home) for r in runs], home, db.record_trackrecord_file, db=db)
    _inventory(layout, db)  # the files changed: trackrecord.duckdb brought up to date
    return Refiled(runs=lost, set_aside=aside)


def _listing(layout: Layout):
    """Every file of the folder (or bucket), each checked from its footer; those that fail set aside."""
    from qsolve_pipeline.storage.trackrecord import inventory, shared

    if layout.store is not None:
        return shared.set_aside(layout.store, shared.take_inventory(layout.store))
    if not layout.folder.is_dir():
        return inventory.Inventory(layout.folder, layout.schema_file, ())
    return inventory.set_aside(inventory.take_inventory(layout))


def rebuild_track_record(db: StateDB, home: Path) -> int:
    """Write the whole track record again from the state database (every ended run it keeps, filed
    or not, then marked filed), retire the files it replaced from the track-record log (one signed
    ``retired`` entry: only files live when it began, never a batch filed meanwhile), remove them and
    compact; returns the runs written. Crash-safe as filing is: the old files go only once the new ones
    are whole and logged, and until then the views show each run once."""
    from qsolve_pipeline.storage.trackrecord import log

    layout = Layout(home)
    # the live set as the rebuild begins: only these it retires, never a batch another process files
    # while it runs (whose runs this rebuild may not hold)
    was_live = {(f.name, f.digest) for f in db.trackrecord_live_files()}
    before = set(_inventory(layout, db).readable()) | (set(layout.files()) if layout.store is None else set())
    ids = db.recordable_run_ids()
    written: set[Path] = set()
    for runs in _in_batches(db, ids):
        done = file_rows([_row(db, r, home) for r in runs], home, db.record_trackrecord_file, db=db)
        if done.path is not None:
            written.add(done.path)
        db.mark_filed(r.id for r in runs)
    failpoint("trackrecord.rebuilt")
    kept = {str(p).rsplit("/", 1)[-1] for p in written}
    retires = [{"name": n, "digest": d} for n, d in sorted(was_live) if n not in kept]
    if retires:
        db.append_trackrecord_entry(log.RETIRED, [], retires)
    for path in before - written:
        _remove(layout, path)
    # A compaction elsewhere meanwhile may have kept its output under a name of ``before`` (the same
    # runs as an old h- file) and removed this rebuild's batches: whatever is gone is filed again.
    refile_lost_runs(db, home)
    compact(home, db=db)
    return len(ids)


def _in_batches(db: StateDB, ids: list[str]):
    """The runs of these ids, REFILE_BATCH at a time (a batch of ids none of which exists is skipped)."""
    for i in range(0, len(ids), REFILE_BATCH):
        if runs := db.runs_by_id(ids[i : i + REFILE_BATCH]):
            yield runs


def _inventory(layout: Layout, db: StateDB | None = None, *, build: bool = True):
    """The live files, each checked (``db``'s live set), ``trackrecord.duckdb`` brought up to date unless
    ``build`` is false; without ``db``, every file of the folder or bucket that passes its footer checks
    (what ``known`` looks up)."""
    if db is None:
        return _listing(layout)
    from qsolve_pipeline.storage.trackrecord.views import inventory_of

    return inventory_of(layout, db, behind=not build)


def _remove(layout: Layout, path) -> None:
    if layout.store is not None:
        from qsolve_pipeline.storage.trackrecord.shared import key_of

        layout.store.delete(key_of(layout.store, path))
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _run_ids_on_disk(layout: Layout, db: StateDB) -> set[str]:
    """The run ids of every live file that passes its check (a file a compaction removes meanwhile:
    listed again)."""
    import io

    import pyarrow.parquet as pq

    for attempt in range(3):
        found: set[str] = set()
        try:
            for where in _inventory(layout, db, build=False).readable():
                if layout.store is not None:
                    from qsolve_pipeline.storage.trackrecord.shared import key_of, read_bounded

                    where = io.BytesIO(read_bounded(layout.store, key_of(layout.store, where)))
                found.update(pq.read_table(where, columns=["run_id"]).column("run_id").to_pylist())
            return found
        except FileNotFoundError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # the last attempt returns or raises


def compact_track_record(db: StateDB, home: Path) -> str:
    done = compact(home, db=db)
    if done.skipped:
        return f"nothing to merge ({done.skipped})"
    return (
        f"merged {done.merged_files} file{'' if done.merged_files == 1 else 's'} into the latest rows "
        f"({done.heads}) and older rows ({done.older})"
        + (f"; merged {done.merged_older_files} older files" if done.merged_older_files else "")
    )
