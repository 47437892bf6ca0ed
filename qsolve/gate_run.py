"""The body of the gates job: read the workflow, run its cases, run the first one again, judge the gates.

This runs workflow code; the platform runs it only inside the sandbox (:mod:`qsolve.sandbox`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from qsolve.case_runner import case_params, run_case
from qsolve.cases import Case
from qsolve.checks import case_input
from qsolve.errors import WorkflowInvalid
from qsolve.gates import GateInputs, judge
from qsolve.module_loader import load_module
from qsolve.results import CaseResult
from qsolve.workflow import Workflow, load_workflow

Emit = Callable[[dict[str, Any]], None]


def _failed(case: Case, target: str, e: BaseException) -> CaseResult:
    return CaseResult.failed(case, case.target or target, f"{type(e).__name__}: {e}")


class _Runner:
    def __init__(self, workflow: Workflow, target: str) -> None:
        self.workflow, self.target = workflow, target
        self.module: ModuleType | None = None
        self.import_error: BaseException | None = None
        start = time.perf_counter()
        try:
            self.module = load_module(workflow.module_path)
        except (Exception, SystemExit) as e:
            self.import_error = e
        self.import_seconds = time.perf_counter() - start  # the workflow's own top-level code

    def run(self, case: Case) -> CaseResult:
        if self.import_error is not None:
            return _failed(case, self.target, self.import_error)
        try:
            value = case_input(self.workflow.root, case)
        except Exception as e:
            return _failed(case, self.target, e)
        wf = self.workflow
        return run_case(wf.manifest, self.module, case, value, self.target, wf.output_schema)

    def estimate(self, case: Case) -> tuple[dict[str, Any] | None, str | None]:
        fn = getattr(self.module, "estimate", None)
        if fn is None:
            return None, None
        try:
            said = fn(
                copy.deepcopy(case_input(self.workflow.root, case)), case_params(self.workflow.manifest, case)
            )
        except (Exception, SystemExit) as e:
            return None, f"estimate() failed: {type(e).__name__}: {e}"
        if not isinstance(said, dict):
            return (
                None,
                f"estimate() must return {{'circuits': int, 'shots': int}}, got {type(said).__name__}",
            )
        return said, None


def run_gates(
    root: Path, target: str = "sim-cpu", only_case: str | None = None, emit: Emit = lambda event: None
) -> GateInputs:
    """Everything the gates judge, gathered; :func:`qsolve.gates.judge` then gives the verdicts."""
    inputs = GateInputs(root=root, run_target=target)
    try:
        inputs.workflow = load_workflow(root)
    except WorkflowInvalid as e:
        inputs.load_issues = e.issues
        return inputs
    cases = [c for c in inputs.workflow.cases.cases if only_case is None or c.name == only_case]
    runner = _Runner(inputs.workflow, target)
    ran: list[Case] = []
    for i, case in enumerate(cases):
        emit({"event": "case", "index": i, "total": len(cases), "name": case.name})
        result = runner.run(case)
        inputs.results.append(result)
        ran.append(case)
        emit(
            {
                "event": "result",
                "index": i,
                "total": len(cases),
                "name": case.name,
                "passed": result.passed,
                "message": result.message,
            }
        )
    first = next((c for c, r in zip(ran, inputs.results, strict=True) if r.ran), None)
    if first is not None:
        emit({"event": "rerun", "name": first.name})
        inputs.rerun = runner.run(first)
        inputs.estimate, inputs.estimate_error = runner.estimate(first)
    inputs.module_seconds = runner.import_seconds
    return inputs


def run_one(
    root: Path, case_name: str, target: str, emit: Emit, proceed: Callable[[], bool]
) -> CaseResult | None:
    """One case as a platform run: its estimate first (emitted), then, if ``proceed()``, the case.

    ``None`` when the run was not allowed to go on. A workflow that does not read is the platform's to
    refuse before this; here it raises :class:`WorkflowInvalid`.
    """
    workflow = load_workflow(root)
    case = next((c for c in workflow.cases.cases if c.name == case_name), None)
    if case is None:
        raise LookupError(f"no case named {case_name!r}")
    runner = _Runner(workflow, target)
    said, error = runner.estimate(case) if runner.module is not None else (None, None)
    emit({"event": "estimate", "estimate": said, "error": error})
    if not proceed():
        return None
    return runner.run(case)


def gate_report(inputs: GateInputs) -> dict[str, Any]:
    """The job's answer, as JSON: the gates, every case's result, and where the time went."""
    runs = inputs.results + ([inputs.rerun] if inputs.rerun else [])
    methods = [m for r in runs for m in r.methods]
    scoring = sum(m.scoring_seconds for m in methods)
    return {
        "gates": [g.model_dump(mode="json") for g in judge(inputs)],
        "cases": [r.model_dump(mode="json") for r in inputs.results],
        "timing": {
            "methods_s": sum(m.seconds for m in methods),
            "scoring_s": scoring,
            "module_s": inputs.module_seconds,
        },
    }
