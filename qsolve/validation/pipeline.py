"""Validation as the platform runs it: the submission checks, then the gates in the sandbox.

``qsolve test`` prints this report; the submission flow's gates stage calls :func:`validate` too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from qsolve.errors import Unconfined
from qsolve.judging.results import CaseResult
from qsolve.sandbox.confine import Protections
from qsolve.validation.checks import SubmissionChecks, check_submission
from qsolve.validation.gates import GateInputs, GateResult, judge

if TYPE_CHECKING:
    from qsolve.sandbox.process import JobProcess
    from qsolve.validation import jobs


class ChecksSummary(BaseModel):
    ok: bool
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class SandboxSummary(BaseModel):
    network: str
    confined: bool = False
    protections: Protections | None = None  # what held in the workflow processes
    timeout_s: int
    memory_mb: int
    seconds: float
    methods_s: float | None = None  # inside the workflow's methods (circuit scoring not counted)
    scoring_s: float | None = None
    module_s: float | None = None  # importing the workflow's module (its own top-level code)
    died: str | None = None
    log_tail: str = ""


class ValidationReport(BaseModel):
    workflow: str | None
    version: str | None
    target: str
    folder: str | None = None  # what the heading names when the manifest does not load
    metric_note: str | None = None  # the manifest's metric.note, shown beside the accuracy
    checks: ChecksSummary
    gates: list[GateResult] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)
    sandbox: SandboxSummary | None = None

    @property
    def passed(self) -> bool:
        return self.checks.ok and bool(self.gates) and all(g.passed for g in self.gates)

    @property
    def case_warnings(self) -> list[str]:
        """What the cases' numbers say may be wrong (a zero baseline, the quantum method beating the
        reference), each naming its case; they never change a verdict."""
        return case_warnings(self.cases)

    def to_json(self) -> dict[str, Any]:
        """The object of DESIGN.md §5, with the sandbox's isolation and the warnings added."""
        return {
            "workflow": self.workflow,
            "version": self.version,
            "target": self.target,
            "checks": {"ok": self.checks.ok, "errors": self.checks.errors},
            "warnings": [*self.checks.warnings, *self.case_warnings],
            "gates": [g.model_dump(mode="json") for g in self.gates],
            "cases": [c.summary() for c in self.cases],
            "sandbox": self.sandbox.model_dump(mode="json", exclude={"log_tail"}) if self.sandbox else None,
        }


def _manifest_alone(root: Path):
    """The manifest, where it reads though the workflow as a whole did not; else None."""
    from qsolve.workflow.folder import load_manifest

    try:
        return load_manifest(Path(root))
    except Exception:  # noqa: BLE001 - the checks' errors say what is wrong
        return None


def case_warnings(cases: list[CaseResult]) -> list[str]:
    """Each case's warnings as ``<case> on <target>: <warning>``."""
    return [f"{c.name} on {c.target}: {w}" for c in cases for w in c.warnings]


def validate(
    root: Path,
    target: str = "sim-cpu",
    case: str | None = None,
    on_event: jobs.Event = lambda e: None,
    process: JobProcess | None = None,
) -> ValidationReport:
    """The submission checks, then (when they pass) the gates in the sandbox (in ``process`` when one
    was started ahead)."""
    return run_gates(root, check_submission(root), target, case, on_event, process)


def run_gates(
    root: Path,
    checks: SubmissionChecks,
    target: str = "sim-cpu",
    case: str | None = None,
    on_event: jobs.Event = lambda e: None,
    process: JobProcess | None = None,
    require_confinement: bool = False,
    tell: jobs.Tell | None = None,
) -> ValidationReport:
    """The gates stage, given the checks' outcome: one sandbox job, or nothing when the checks failed.
    ``require_confinement`` (the platform's flows): no workflow code runs without the full boundary;
    the gates then fail naming what was missing. ``tell``: where a wait for memory is said."""
    wf = checks.workflow
    named = wf.manifest if wf else _manifest_alone(root)  # a case file that fails: still its name
    report = ValidationReport(
        workflow=named.name if named else None,
        version=named.version if named else None,
        target=target,
        folder=str(Path(root).resolve()),
        metric_note=wf.manifest.metric.note if wf else None,
        checks=ChecksSummary(ok=checks.ok, errors=checks.errors, warnings=checks.warnings),
    )
    if not checks.ok:
        return report
    root = checks.snapshot.folder  # what the checks read, never the submitted folder again
    targets = {c.target or target for c in wf.cases.cases if case is None or c.name == case}
    try:
        from qsolve.validation.jobs import run_job  # the sandbox's job: loaded when the gates run

        outcome = run_job(
            root, target, case, wf.manifest.resources, on_event, targets=targets, process=process,
            require_confinement=require_confinement, tell=tell, workflow=wf,
        )
    except Unconfined as e:
        report.gates = judge(GateInputs(root=root, run_target=target, workflow=wf, died=str(e)))
        return report
    report.sandbox = SandboxSummary(
        network=outcome.network,
        confined=outcome.protections.confined,
        protections=outcome.protections,
        timeout_s=outcome.limits.timeout_s,
        memory_mb=outcome.limits.memory_mb,
        seconds=outcome.seconds,
        died=outcome.died,
        log_tail=outcome.log_tail,
    )
    if outcome.report is not None:
        report.sandbox.methods_s = outcome.report["timing"]["methods_s"]
        report.sandbox.scoring_s = outcome.report["timing"]["scoring_s"]
        report.sandbox.module_s = outcome.report["timing"]["module_s"]
        report.gates = [GateResult.model_validate(g) for g in outcome.report["gates"]]
        report.cases = [CaseResult.model_validate(c) for c in outcome.report["cases"]]
    else:  # the job died: judge what needs no run, and fail cases_pass with why
        report.gates = judge(GateInputs(root=root, run_target=target, workflow=wf, died=outcome.died))
    return report
