"""The gates job, on the platform's side: read the workflow, run its cases, run the first one again in a
fresh workflow process, judge the gates.

No workflow code runs here: every call goes to a workflow process (:mod:`qsolve.sandbox`), and every
number judged is the platform's own, from what came back as data and the circuits it ran itself.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qsolve.errors import HostShortOfMemory, OutOfTime, Unconfined, WorkflowInvalid, WorkflowProcessFailed
from qsolve.judging.results import CaseResult
from qsolve.sandbox.calls import WorkflowCode
from qsolve.validation.case_runner import case_params, run_case
from qsolve.validation.checks import case_input
from qsolve.validation.gates import GateInputs, judge
from qsolve.workflow.cases import Case
from qsolve.workflow.folder import Workflow, load_workflow

Emit = Callable[[dict[str, Any]], None]
#: a started workflow process's code (its module imported, or why it did not import)
Start = Callable[[], Any]


def _failed(case: Case, target: str, why: str) -> CaseResult:
    return CaseResult.failed(case, case.target or target, why)


class Runner:
    """Runs cases in one workflow process at a time; a process that failed is replaced by a new one,
    started by ``start()``, for the next case."""

    def __init__(self, workflow: Workflow, target: str, start: Start) -> None:
        self.workflow, self.target, self._start = workflow, target, start
        self.code: Any = None
        self.import_seconds = 0.0

    def _code(self) -> Any:
        if self.code is None:
            self.code = self._start()
            self.import_seconds += self.code.import_seconds
        return self.code

    def run(self, case: Case) -> CaseResult:
        try:
            value = case_input(self.workflow.root, case)
        except Exception as e:
            return _failed(case, self.target, f"{type(e).__name__}: {e}")
        try:
            code = self._code()
            if code.import_error is not None:
                return _failed(case, self.target, code.import_error)
            wf = self.workflow
            return run_case(wf.manifest, code, case, value, self.target, wf.output_schema)
        except (OutOfTime, Unconfined, HostShortOfMemory):
            raise
        except WorkflowProcessFailed as e:
            self.code = None
            return _failed(case, self.target, stopped(e, case.name))

    def estimate(self, case: Case) -> tuple[dict[str, Any] | None, str | None]:
        try:
            code: WorkflowCode = self._code()
            if code.import_error is not None:
                return None, None
            answer = code.estimate(copy.deepcopy(case_input(self.workflow.root, case)),
                                   case_params(self.workflow.manifest, case))
        except (OutOfTime, Unconfined, HostShortOfMemory):
            raise
        except WorkflowProcessFailed as e:
            self.code = None
            return None, f"estimate() failed: {e}"
        except Exception as e:
            return None, f"estimate() failed: {type(e).__name__}: {e}"
        if answer.error is not None:
            return None, answer.error
        if answer.absent:
            return None, None
        if not isinstance(answer.value, dict):
            got = "NoneType" if answer.value is None else type(answer.value).__name__
            return None, f"estimate() must return {{'circuits': int, 'shots': int}}, got {got}"
        return answer.value, None


def run_gates(
    root: Path, target: str, only_case: str | None, emit: Emit, start: Start, start_fresh: Start,
    workflow: Workflow | None = None,
) -> GateInputs:
    """Everything the gates judge, gathered; :func:`qsolve.validation.gates.judge` then gives the verdicts.
    ``start()`` gives the code of the process the cases run in, ``start_fresh()`` that of the fresh
    process the first case runs in again (and its estimate is asked of). ``workflow``: the folder at
    ``root`` as the submission checks read it (not read again), else read here."""
    inputs = GateInputs(root=root, run_target=target)
    if workflow is not None and Path(workflow.root) == Path(root):
        inputs.workflow = workflow
    else:
        try:
            inputs.workflow = load_workflow(root)
        except WorkflowInvalid as e:
            inputs.load_issues = e.issues
            return inputs
    cases = [c for c in inputs.workflow.cases.cases if only_case is None or c.name == only_case]
    runner = Runner(inputs.workflow, target, start)
    ran: list[Case] = []
    now = ""  # the case running, for a time limit's message
    try:
        for i, case in enumerate(cases):
            now = case.name
            emit({"event": "case", "index": i, "total": len(cases), "name": case.name})
            result = runner.run(case)
            inputs.results.append(result)
            ran.append(case)
            emit({"event": "result", "index": i, "total": len(cases), "name": case.name,
                  "passed": result.passed, "message": result.message, "why": result.why(),
                  "warnings": result.warnings})
        first = next((c for c, r in zip(ran, inputs.results, strict=True) if r.to_a_result), None)
        if first is not None:
            now = f"{first.name} (its second run, for reproducible)"
            emit({"event": "rerun", "name": first.name})
            again = Runner(inputs.workflow, target, start_fresh)
            inputs.rerun = again.run(first)
            now = f"{first.name} (its estimate)"
            inputs.estimate, inputs.estimate_error = again.estimate(first)
            runner.import_seconds += again.import_seconds
    except (OutOfTime, HostShortOfMemory) as e:  # the job's time, or the host's memory: the job ends
        inputs.died = stopped(e, now) + f"; {len(inputs.results)} of {len(cases)} cases finished"
        emit({"event": "stopped", "why": inputs.died})
    inputs.module_seconds = runner.import_seconds
    return inputs


def stopped(e: WorkflowProcessFailed, case: str) -> str:
    """Why the workflow process ended, naming the case and the method it ended in:
    ``the sandbox job was stopped at its time limit of 300 s in case big-18, in method qaoa``,
    ``the workflow process exited with status 3 in the middle of a call in case x1, in method quantum``."""
    doing = getattr(e, "doing", None)
    return f"{e} in case {case}" + (f", in {doing}" if doing else "")


def run_one(
    root: Path, index: int, target: str, emit: Emit, proceed: Callable[[dict[str, Any]], bool],
    start: Start, *, on_target: bool = False,
) -> CaseResult | None:
    """One case, ``cases[index]``, as a platform run: its estimate first (emitted, and given to
    ``proceed``), then, if ``proceed(event)``, the case. ``None`` when the run was not allowed to go on.
    Cases are found by position: two may share a name (on different targets). ``on_target`` runs the
    case on ``target`` instead of its own."""
    workflow = load_workflow(root)
    if not 0 <= index < len(workflow.cases.cases):
        raise LookupError(f"no cases[{index}]: {len(workflow.cases.cases)} cases")
    case = workflow.cases.cases[index]
    if on_target:  # qsolve run --target: the case on that target, whatever its own
        case = case.model_copy(update={"target": target})
    runner = Runner(workflow, target, start)
    said, error = runner.estimate(case)
    event = {"event": "estimate", "estimate": said, "error": error}
    emit(event)
    if not proceed(event):
        return None
    try:
        return runner.run(case)
    except OutOfTime as e:
        raise OutOfTime(stopped(e, case.name)) from None


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
