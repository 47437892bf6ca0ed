"""The lint stage: lint codes only; any error stops the submission."""

from __future__ import annotations

from prefect import task

from qsolve.lint import LintReport, lint


@task(name="lint")
def lint_stage(folder: str) -> LintReport:
    return lint(folder)
