"""One case as an ordinary platform run: estimate, credit hold, sandbox, settlement (seed: "How
results enter the track record"). Plain functions over the domain core and storage; the Prefect tasks
that call them stay thin.

A run the platform could not run (a target it cannot reach, credits it could not hold, a sandbox that
would not start) ends ``failed`` with the platform's reason and is not recorded. A run that failed
because of the workflow (it raised, crashed the job, or ran out of time) is recorded as failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md): the cases are simulated here
from sqlalchemy.exc import OperationalError

from qsolve.errors import PlatformStopped, Unconfined
from qsolve.judging.results import CaseResult
from qsolve.runtime.admission import BudgetSettingInvalid
from qsolve.runtime.failpoint import failpoint
from qsolve.runtime.heartbeat import beat
from qsolve.runtime.stopping import stopped
from qsolve.targets import TargetUnavailable, UnknownTarget, check_target, open_target
from qsolve.validation.checks import DEFAULT_TARGET
from qsolve.validation.jobs import Limits, Outcome, admitted, run_case_job
from qsolve.workflow.cases import Case
from qsolve.workflow.manifest import Resources
from qsolve_pipeline.storage.state import (
    CaseTaken,
    CreditError,
    FailureReason,
    InsufficientCredits,
    Run,
    RunStateError,
    RunStatus,
    Source,
    Stage,
    StageLost,
    StateDB,
    UnpricedTarget,
    Version,
)


@dataclass(frozen=True)
class RunOutcome:
    case: str
    target: str
    run_id: str | None  # None: no run was made (the case already had one in its round)
    recorded: bool
    status: str  # finished, failed, or not run
    reason: str | None = None  # the failure reason (platform's or the workflow's)
    detail: str | None = None
    credits: Decimal = Decimal(0)
    why: str = ""  # pass, or FAIL and why (a recorded run); empty when the platform could not run it

    def line(self) -> str:
        """What its log says: ``pass``, ``FAIL gap 0.0189 > max_gap 0``, or why it was not run."""
        return self.why if self.recorded else f"not run ({self.reason}): {self.detail}"


def run_case(
    db: StateDB,
    folder: Path,
    version: Version,
    index: int,
    case: Case,
    source: Source,
    account: str,
    resources: Resources,
    *,
    owner: str | None = None,
    stage: Stage | None = None,
    default_target: str = DEFAULT_TARGET,
    run: Run | None = None,
    cap: Decimal | None = None,
    tell: Callable[[str], None] | None = None,
) -> RunOutcome:
    """``cases[index]`` as a run of ``account``, kept alive by ``owner``'s lease; in a history stage,
    ``stage`` gives the case its one place in the round. ``run``: a run made already (a confirmed
    quote's), used instead of a new one; ``cap``: the most its hold may take (what was authorised).
    The case's job first claims its memory budget on the host's budget for jobs at once, waiting
    (said once through ``tell``) until it fits, before its run is made: its run's deadline counts
    from then."""
    target = case.target or default_target
    limits = db.settings.limits(source)
    own = Limits.of(resources)  # the manifest's, raised to 300 s and capped as the seed says
    job_limits = Limits(timeout_s=limits.seconds or own.timeout_s, memory_mb=own.memory_mb)
    try:
        with admitted(job_limits, f"case {index} {case.name}", tell):
            return _admitted(
                db, folder, version, index, case, source, account, job_limits, owner, stage, target, run, cap
            )
    except (PlatformStopped, BudgetSettingInvalid) as e:  # stopped while it waited; a bad setting
        reason = FailureReason.PLATFORM_ERROR.value
        return RunOutcome(case.name, target, None, False, "not run", reason, str(e))


def _admitted(
    db: StateDB,
    folder: Path,
    version: Version,
    index: int,
    case: Case,
    source: Source,
    account: str,
    job_limits: Limits,
    owner: str | None,
    stage: Stage | None,
    target: str,
    run: Run | None,
    cap: Decimal | None,
) -> RunOutcome:
    beat()
    if why := stopped():  # the flow was stopped before this case began
        return RunOutcome(case.name, target, None, False, "not run", FailureReason.PLATFORM_ERROR.value, why)
    try:
        run = run or db.create_run(
            version,
            case.name,
            target,
            source,
            owner=owner,
            seconds=job_limits.timeout_s,
            stage=stage,
            case_index=index,
        )
    except (CaseTaken, StageLost) as e:
        return RunOutcome(case.name, target, None, False, "not run", "taken", str(e))
    except OperationalError as e:  # a bounded wait ran out (a lock held too long), a lost database
        detail = f"the state database did not take the run: {str(e.orig or e).splitlines()[0]}"
        return RunOutcome(
            case.name, target, None, False, "not run", FailureReason.PLATFORM_ERROR.value, detail
        )
    beat()
    if why := stopped():  # stopped while the run was being made (waiting on a lock, say)
        db.end_stopped_runs(None, f"{why}: the case did not start; it runs again", run_id=run.id)
        current = db.get_run(run.id)
        return RunOutcome(case.name, target, run.id, False, "failed", str(current.reason), current.detail)
    try:
        return _run(db, folder, run, index, case, account, job_limits, cap)
    except RunStateError as e:  # ended meanwhile by another process (its lease lapsed, or its deadline)
        reason = FailureReason.PLATFORM_ERROR.value
        return RunOutcome(case.name, target, run.id, False, "failed", reason, str(e))


def _platform_stop(folder: Path, outcome: Outcome) -> str | None:
    """Why a case that did not come back with a result was stopped by the platform: its flow was
    stopped, its workflow folder (the platform's copy) went away under it, or the host killed the platform's
    worker for it (short of memory, the job within its budget). ``None``: it was not."""
    if outcome.report is not None and outcome.report["result"].get("ran"):
        return None  # a result came back: it is the case's, whatever happened since
    if why := stopped():
        return why
    if outcome.host_failure:  # the host killed the platform's worker for it: not the workflow's crash
        return outcome.died or "the host failed the job"
    if not folder.is_dir():
        return f"the platform's copy of the workflow ({folder}) was removed while the case ran"
    return None


def _run(
    db: StateDB,
    folder: Path,
    run: Run,
    index: int,
    case: Case,
    account: str,
    job_limits: Limits,
    cap: Decimal | None = None,
) -> RunOutcome:
    target = run.target

    def refuse(reason: FailureReason, detail: str) -> RunOutcome:
        db.finish_run(run.id, RunStatus.FAILED, reason=reason, detail=detail)
        return RunOutcome(case.name, target, run.id, False, "failed", reason.value, detail)

    try:
        check_target(target)
        if not target.startswith(("sim-", "fake:")):
            open_target(target)  # ibm: and provider: are refused here: no device access for platform runs yet
        db.settings.price(target)
    except (UnknownTarget, TargetUnavailable, UnpricedTarget) as e:
        return refuse(FailureReason.UNSUPPORTED_TARGET, str(e))

    refused: list[tuple[FailureReason, str]] = []

    def approve(event: dict[str, Any]) -> bool:
        said = event.get("estimate") or {}
        if why := stopped():
            refused.append((FailureReason.PLATFORM_ERROR, why))
            return False
        if event.get("error"):
            refused.append((FailureReason.PLATFORM_ERROR, f"the run could not be priced: {event['error']}"))
            return False
        try:
            if "circuits" in said and "shots" in said:
                price = db.estimate_price(target, int(said["circuits"]), int(said["shots"]))
            else:
                price = db.settings.limits(run.source).credits  # no estimate: the most the run may cost
            db.hold(account, run.id, price if cap is None else min(Decimal(str(price)), cap))
            db.start_run(run.id)
            failpoint("run.started")
            return True
        except InsufficientCredits as e:
            refused.append((FailureReason.INSUFFICIENT_CREDITS, str(e)))
        except (CreditError, ValueError, TypeError) as e:
            refused.append((FailureReason.PLATFORM_ERROR, f"the run could not be priced: {e}"))
        return False

    try:
        outcome = run_case_job(folder, index, target, job_limits, approve, admit=False)  # admitted already
    except OSError as e:
        return refuse(FailureReason.PLATFORM_ERROR, f"the sandbox did not start: {e}")
    except Unconfined as e:
        return refuse(FailureReason.PLATFORM_ERROR, str(e))

    beat()
    if why := _platform_stop(folder, outcome):  # the platform's doing, never the workflow's crash
        detail = why if why == outcome.died else f"{why}: the case did not end; it runs again"
        db.end_stopped_runs(None, detail, run_id=run.id)
        current = db.get_run(run.id)
        return RunOutcome(case.name, target, run.id, False, "failed", str(current.reason), current.detail)
    current = db.get_run(run.id)
    if current.status is RunStatus.FAILED:  # refused before it started (insufficient_credits)
        reason, detail = refused[0] if refused else (current.reason, current.detail)
        return RunOutcome(case.name, target, run.id, False, "failed", str(reason), detail)
    if current.status is RunStatus.CREATED:  # never approved: not priced, or the job died first
        reason, detail = (
            refused[0] if refused else (FailureReason.PLATFORM_ERROR, outcome.died or "no estimate")
        )
        return refuse(reason, detail)

    def record(result: CaseResult) -> dict[str, Any]:
        """The run's record: its result, and what held in the sandbox it ran in."""
        return result.model_dump(mode="json") | {"sandbox": outcome.protections.model_dump(mode="json")}

    if outcome.report is not None:
        result = CaseResult.model_validate(outcome.report["result"])
        cost = db.estimate_price(target, result.circuits, result.shots)
        settled = db.settle(run.id, cost)
        if result.ran:
            db.finish_run(run.id, RunStatus.FINISHED, result=record(result))
            status, reason = "finished", None
        else:  # the case raised before it had a result: the workflow's failure
            db.finish_run(
                run.id,
                RunStatus.FAILED,
                reason=FailureReason.CRASH,
                result=record(result),
                detail=result.message,
            )
            status, reason = "failed", FailureReason.CRASH
    else:  # the job died: out of time, or crashed
        timed_out = outcome.died and "time limit" in outcome.died
        reason = FailureReason.TIMEOUT if timed_out else FailureReason.CRASH
        settled = db.settle(run.id, db.get_hold(run.id).amount)  # the time was used: charge the hold
        result = CaseResult.failed(case, target, f"{reason.value}: {outcome.died}")
        db.finish_run(
            run.id,
            RunStatus.FAILED,
            reason=reason,
            result=record(result),
            detail=outcome.died,
        )
        status = "failed"
    failpoint("run.ended")
    return RunOutcome(
        case.name,
        target,
        run.id,
        True,
        status,
        None if reason is None else reason.value,
        result.message,
        settled.charged,
        result.why(),
    )
