"""The submission checks of every case and hardware case, before the gates."""

from __future__ import annotations

from prefect import task

from qsolve.validation.checks import SubmissionChecks, check_submission


@task(name="submission checks")
def checks_stage(folder: str) -> SubmissionChecks:
    return check_submission(folder)
