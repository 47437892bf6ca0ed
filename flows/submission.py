"""The submission flow: lint, submission checks, gates, publication, history (issue 5).

``account`` is the account the submission acts for (``qsolve submit --account``, the submission page's
logged-in account, a deployment run's parameter; None: the local operator's account of the process that
runs the flow): publication records it, and publishes only for a developer of the name or an admin.

A stage that fails stops the flow; the report names the stage and every reason. The flow's final state
carries the report, which is also published as a markdown and a table artifact.
"""

from __future__ import annotations

import re
from pathlib import Path

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)
from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Completed, Failed, State

from qsolve.validation.submission import HistoryOutcome, SubmissionRejected, SubmissionReport
from qsolve_pipeline.flows.endings import crashed, install, record
from qsolve_pipeline.tasks.checks import checks_stage
from qsolve_pipeline.tasks.gates import gates_stage
from qsolve_pipeline.tasks.gates import report_of as gates_report
from qsolve_pipeline.tasks.lint import lint_stage
from qsolve_pipeline.tasks.publication import publication_stage

#: the report's warning for a resubmission of a published version, which the gates did not run again
GATES_SKIPPED = "the gates did not run: this version is already published"

install()  # a rejection ends the flow run Failed with its one line, no engine error in its log


@flow(name="submission", log_prints=True, on_crashed=[crashed])
def submission_flow(folder: str, run_history: bool = True, account: str | None = None) -> State:
    """The submission of ``folder``; ``account``: the account it publishes as (the web pages' logged-in
    account, ``qsolve submit --account``)."""
    report = SubmissionReport(folder=str(folder))
    if not Path(folder).is_dir():  # a deployment run's parameter, say: named as it is, not as lint codes
        what = "is a file, not a workflow folder" if Path(folder).exists() else "no such folder"
        return _finish(report.fail("lint", [f"{folder}: {what} (on the machine running the flow)"]))
    lint = lint_stage(folder)
    report.lint = [str(i) for i in lint.issues]
    if not lint.ok:
        return _finish(report.fail("lint", [str(i) for i in lint.errors]))

    checks = checks_stage(folder)
    report.warnings = checks.warnings
    if checks.workflow is not None:
        report.workflow, report.version = checks.workflow.name, checks.workflow.version
    if not checks.ok:
        report.rejected_cases = [e for e in checks.errors if ": cases[" in e or ": hardware_cases[" in e]
        return _finish(report.fail("checks", checks.errors))

    if _version_exists(checks):  # said before the gates and their sandbox, not after their half minute
        return _publish(report, checks, account, run_history, gates_skipped=True)

    validation = gates_report(gates_stage(folder, checks, return_state=True))
    report.gates = validation.gates
    report.cases = validation.cases
    report.warnings = [*report.warnings, *validation.case_warnings]  # never a verdict changed
    if validation.sandbox and validation.sandbox.protections:
        report.sandbox = validation.sandbox.protections.summary()
    if not validation.passed:
        return _finish(
            report.fail("gates", [f"{g.name}: {g.message}" for g in validation.gates if not g.passed])
        )

    return _publish(report, checks, account, run_history)


def _publish(
    report: SubmissionReport, checks, account: str | None, run_history: bool, *, gates_skipped: bool = False
) -> State:
    """Publication, then the history stage. ``gates_skipped``: the name and version were published
    already, so publication judges at once what the gates would only have delayed (the same content:
    already published, nothing changed; other content: refused with its one line)."""
    published = publication_stage(checks, account)
    report.published = published.published
    if published.error:
        return _finish(report.fail("publication", [published.error]))
    if gates_skipped:
        report.warnings = [*report.warnings, GATES_SKIPPED]
    if run_history:
        record(history=f"{published.published.name} {published.published.version}")  # a crash leaves it
        report.history = _history(published.published.name, published.published.version)
    return _finish(report)


def _version_exists(checks) -> bool:
    """Whether the state database already holds the checked manifest's name and version: a resubmission
    of it goes to publication without the gates (their sandbox is never started)."""
    from qsolve_pipeline.storage.state import NotFound, connect

    manifest = checks.workflow.manifest
    try:
        with connect() as db:
            db.get_version(manifest.name, manifest.version)
    except NotFound:
        return False
    return True


def _history(workflow: str, version: str) -> HistoryOutcome:
    """The history stage as a subflow; if it fails as a whole it shows as skipped, the version published.
    Its flow (the state database's stage claims, the track record's filing) is imported only here:
    ``qsolve submit --no-history`` never loads it."""
    from qsolve_pipeline.flows.history import history_flow

    state = history_flow(workflow, version, return_state=True)
    if state.is_completed():
        return state.result(_sync=True)
    try:
        state.result(_sync=True)
    except BaseException as e:  # noqa: BLE001 - whatever it was, the stage is skipped and says why
        return HistoryOutcome(status="skipped", message=f"{type(e).__name__}: {e}")
    return HistoryOutcome(status="skipped", message=state.message)


def _finish(report: SubmissionReport) -> State:
    prefix = artifact_key(report.workflow or Path(report.folder).name)
    create_markdown_artifact(
        report.markdown(), key=f"{prefix}-submission-report", description="The submission report"
    )
    if report.gates:
        create_table_artifact(
            report.gate_table(), key=f"{prefix}-submission-gates", description="The eight gates"
        )
    if report.accepted:
        return Completed(message="accepted", data=report)
    return Failed(message=report.one_line(), data=SubmissionRejected(report))


def artifact_key(name: str) -> str:
    """A workflow's name as the start of an artifact key (lower-case letters, digits and dashes), so
    that the Artifacts page keeps each workflow's latest report and its history apart."""
    key = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return key or "workflow"


def report_of(state: State) -> SubmissionReport | BaseException:
    """The submission's report from its flow run's final state (a rejected one carries it in its
    exception); the exception itself when the flow crashed."""
    result = state.result(raise_on_failure=False, _sync=True)
    return result.report if isinstance(result, SubmissionRejected) else result


if __name__ == "__main__":
    import sys

    print(submission_flow(str(Path(sys.argv[1]))))
