"""The history stage: every `cases` entry of a published version run as a platform run, three at a
time, each a track-record row (seed: "How results enter the track record"). Also its own deployment,
and ``qsolve history NAME [--version V] [--again]``, so an operator can finish or repeat it.

Exactly one history stage of a version runs at a time, however many submissions race: the stage is
claimed in the state database under this process's lease (``storage.state``, docs/storage.md). A
claim that finds the stage held by a live process says so and runs nothing; one that finds its
holder dead, or a finished stage with cases unrecorded, ends the holder's runs and runs only the
cases with no recorded run. ``again`` starts a new round of every case: its rows become current, the
old ones history.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)
from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from qsolve.runtime.failpoint import failpoint
from qsolve.runtime.stopping import Stop, stopping, why_of
from qsolve.validation.checks import DEFAULT_TARGET
from qsolve.validation.submission import HistoryOutcome, NotRun
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.publication import unpack
from qsolve_pipeline.flows.endings import crashed, record
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES
from qsolve_pipeline.storage.maintenance import file_runs
from qsolve_pipeline.storage.state import (
    Claim,
    ClaimStatus,
    Lease,
    StageLost,
    StateDB,
    Version,
    connect,
    qsolve_home,
)
from qsolve_pipeline.tasks.history import history_case


@flow(name="history", task_runner=ThreadPoolTaskRunner(max_workers=3), log_prints=True, on_crashed=[crashed])
def history_flow(workflow: str, version: str | None = None, again: bool = False) -> HistoryOutcome:
    """Run the cases of ``workflow`` ``version`` (default: its latest published) that have no recorded
    run; with ``again``, a new round of every case."""
    home = qsolve_home()
    with connect() as db, tempfile.TemporaryDirectory(prefix="qsolve-history-") as tmp:
        v = db.get_version(workflow, version)
        record(history=f"{v.workflow} {v.version}")  # what a crash leaves to finish (flows.endings.crashed)
        try:
            archive = BlobStore(home).get(v.digest, limit=db.blob_limit(v.digest, ARCHIVE_BYTES))
        except (OSError, ValueError) as e:  # gone, too large, not its digest: one line, no traceback
            return HistoryOutcome(status="skipped", message=f"{v.workflow} {v.version}: its archive: {e}")
        folder = unpack(archive, Path(tmp) / "workflow")
        del archive
        wf = load_workflow(folder)
        cases = wf.cases.cases
        with Lease(db) as lease, stopping() as stop:
            claim = db.claim_history_stage(
                v,
                lease.owner,
                [(c.name, c.target or DEFAULT_TARGET) for c in cases],
                seconds=lease.seconds,
                again=again,
            )
            if not claim.held:
                return _not_held(v, claim)
            stage = claim.stage
            lease.hold(stage.id)
            if claim.ended:
                get_run_logger().warning(
                    "ended %d runs of %s %s left by a history stage whose process stopped: %s",
                    len(claim.ended),
                    v.workflow,
                    v.version,
                    ", ".join(claim.ended),
                )
            failpoint("history.claimed")
            futures = [
                history_case.submit(str(folder), v, i, cases[i], wf.manifest.resources, lease.owner, stage)
                for i in claim.todo
            ]
            try:
                outcomes = [f.result() for f in futures]
            except BaseException as e:
                stop.set(why_of(e))
                _stop_cases(db, lease, futures, stop)
                raise
            _file(db, stage.id, home)
            lease.release(stage.id)
            try:
                db.finish_history_stage(stage.id, lease.owner)
                lost = None
            except StageLost as e:
                lost = str(e)
    if not claim.todo:  # a holder that stopped after its last case: its round is finished here
        outcome = HistoryOutcome(
            status="already recorded",
            round=stage.round,
            message=lost
            or f"{v.workflow} {v.version} has a track record: every case of round {stage.round} is "
            "recorded; this stage filed what its stopped holder left and finished the round",
        )
        get_run_logger().info("%s: %s", outcome.status, outcome.message)
        return outcome
    return HistoryOutcome(
        status="ran",
        round=stage.round,
        recorded=[o.case for o in outcomes if o.recorded],
        not_run=[
            NotRun(case=o.case, target=o.target, reason=f"{o.reason}: {o.detail}")
            for o in outcomes
            if not o.recorded
        ],
        already=len(cases) - len(claim.todo),
        credits=float(sum(o.credits for o in outcomes)),
        message=lost or _resumed(claim, len(cases)),
    )


def _stop_cases(db: StateDB, lease: Lease, futures: list, stop: Stop) -> None:
    """A platform stop: the cases were told (their sandbox jobs end, none starts); wait for every one
    of them, end each run still unended as the platform's failure (never recorded), and give the
    stage up at once, so the next ``qsolve history`` resumes it. Only then are the folders removed."""
    log = get_run_logger()
    log.warning("stopping the history stage: %s; waiting for its cases", stop.why)
    pending = list(futures)
    while pending:
        try:
            pending[0].wait()
            pending.pop(0)
        except BaseException:  # noqa: BLE001 - a second signal: the cases still run in this folder
            continue
    lease.close()
    ended = db.end_stopped_runs(lease.owner, f"{stop.why}: the case did not end; it runs again")
    db.let_go(lease.owner)
    log.warning("history stage stopped: %d runs ended as the platform's failure", len(ended))


def _file(db: StateDB, stage_id: int, home: Path) -> None:
    """File the round's recorded runs not filed yet (this stage's, and any an earlier holder left)."""
    file_runs(db, [r for r in db.stage_runs(stage_id) if r.recordable and r.filed_at is None], home)


def _not_held(v: Version, claim: Claim) -> HistoryOutcome:
    """Nothing run: why, said in the run's log (as ``qsolve history`` says it) and as its outcome."""
    outcome = _why_not_held(v, claim)
    get_run_logger().info("%s: %s", outcome.status, outcome.message)
    return outcome


def _why_not_held(v: Version, claim: Claim) -> HistoryOutcome:
    stage = claim.stage
    if claim.status is ClaimStatus.RECORDED:
        return HistoryOutcome(
            status="already recorded",
            round=stage.round,
            message=f"{v.workflow} {v.version} has a track record: every case of round {stage.round} is "
            "recorded (qsolve history --again runs them all again)",
        )
    return HistoryOutcome(
        status="in progress",
        round=stage.round,
        message=f"another process is running the history stage of {v.workflow} {v.version} (round "
        f"{stage.round}, since {stage.started_at:%Y-%m-%d %H:%M:%S} UTC, held by {stage.owner}); "
        "nothing was run twice",
    )


def _resumed(claim: Claim, total: int) -> str | None:
    if claim.status is not ClaimStatus.RESUMED:
        return None
    return (
        f"resumed round {claim.stage.round}: ran the {len(claim.todo)} of {total} cases with no recorded run"
        + (f"; ended {len(claim.ended)} runs its stopped holder left" if claim.ended else "")
    )
