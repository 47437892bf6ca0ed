"""The lint stage: lint codes only; any error stops the submission."""

from __future__ import annotations

from prefect import task

from qsolve.lint import LintReport, lint
from qsolve_pipeline.tasks import ahead


@task(name="lint")
def lint_stage(folder: str) -> LintReport:
    """Lint's report of ``folder``: the one ``qsolve submit`` computed ahead (tasks/ahead.py), else now."""
    kept = ahead.take("lint", folder)
    return kept if kept is not None else lint(folder)
