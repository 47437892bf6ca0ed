"""The submission checks of every case and hardware case, before the gates."""

from __future__ import annotations

from prefect import task

from qsolve.validation.checks import SubmissionChecks, check_submission
from qsolve_pipeline.tasks import ahead


@task(name="submission checks")
def checks_stage(folder: str) -> SubmissionChecks:
    """The checks of ``folder``: those ``qsolve submit`` ran ahead (tasks/ahead.py), else run now."""
    kept = ahead.take("checks", folder)
    return kept if kept is not None else check_submission(folder)
