"""The gates stage: the eight gates as one sandbox job."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State

from qsolve.validation.checks import SubmissionChecks
from qsolve.validation.jobs import confinement_required
from qsolve.validation.pipeline import ValidationReport, run_gates
from qsolve_pipeline.tasks import ahead


class GatesFailed(Exception):
    """A gates task run that failed: its report inside, so the flow reads it as from one that passed."""

    def __init__(self, report: ValidationReport) -> None:
        super().__init__(", ".join(g.name for g in report.gates if not g.passed) or "the checks fail")
        self.report = report

    def __reduce__(self):
        return (GatesFailed, (self.report,))


def report_of(state: State) -> ValidationReport:
    """The gates' report from the task run's final state, passed or failed."""
    result = state.result(raise_on_failure=False, _sync=True)
    if isinstance(result, GatesFailed):
        return result.report
    if isinstance(result, BaseException):
        raise result
    return result


@task(name="gates", cache_policy=NO_CACHE)
def gates_stage(folder: str, checks: SubmissionChecks) -> ValidationReport | State:
    """The eight gates; a gate that fails makes the task run Failed, naming the gates. The gates'
    sandbox job that ``qsolve submit`` ran ahead on these checks (tasks/ahead.py) is recorded, its
    lines logged as they would have been, rather than run again."""
    logger = get_run_logger()
    kept = ahead.take("gates", folder)
    if kept is not None and kept.ran_on(checks):
        for level, line in kept.lines:
            logger.log(level, line)
        report = kept.report
    else:

        def progress(event: dict) -> None:
            if (line := ahead.progress_line(event)) is not None:
                logger.log(*line)

        report = run_gates(
            Path(folder), checks, on_event=progress,
            require_confinement=confinement_required(), tell=logger.warning,
        )  # fmt: skip
    failed = [g.name for g in report.gates if not g.passed]
    if failed or not report.checks.ok:  # the task run says so in the UI: Failed, its report as its data
        return Failed(
            message=f"{len(failed)} of {len(report.gates)} gates fail: {', '.join(failed)}"
            if failed
            else "the submission checks fail",
            data=GatesFailed(report),
        )
    return report
