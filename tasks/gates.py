"""The gates stage: the eight gates as one sandbox job."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from qsolve.checks import SubmissionChecks
from qsolve.sandbox import confinement_required
from qsolve.validation import ValidationReport, run_gates


@task(name="gates", cache_policy=NO_CACHE)
def gates_stage(folder: str, checks: SubmissionChecks) -> ValidationReport:
    logger = get_run_logger()

    def progress(event: dict) -> None:
        if event.get("event") == "result":
            message = event["message"] or ""
            failed = message if message.startswith("FAIL") else f"FAIL {message}"  # a crash says FAIL already
            verdict = "pass" if event["passed"] else failed
            logger.info("case %s/%s %s: %s", event["index"] + 1, event["total"], event["name"], verdict)

    return run_gates(Path(folder), checks, on_event=progress, require_confinement=confinement_required())
