"""Failures that name their cause: a method's or ``evaluate``'s exception (type, message, the workflow's
own frame) in the case's result, the progress line, the table, the page's row and ``--json``; a time
limit that names the case and the method it stopped in and keeps the cases that finished."""

from __future__ import annotations

import json
import re

from qsolve.cli import main
from qsolve.judging.results import CaseResult
from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.case_runner import run_case
from qsolve.validation.jobs import Limits, run_job
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.manifest import Resources
from qsolve.workflow.module_loader import load_module
from tests.conftest import WorkflowDir

NO_METRIC = "no headline metric: quantum and reference could not be compared"

# Line numbers matter below: ``1 / 0`` is on line 13, ``def quantum`` on line 11.
MODULE = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    if solution.get("x") == 0:
        raise ZeroDivisionError("field is zero")
    return -float(solution["x"])


def quantum(input, params, ctx):
    if input["x"] == 1:
        return 1 / 0
    if input["x"] == 2:
        return 3.5
    if input["x"] == 3:
        return MethodResult(-1.0, solution={"x": "three"})
    if input["x"] == 4:
        return MethodResult(-1.0, solution={"x": 0})
    if input["x"] == 5:
        return {"objective": -1.0, "answer": 1}
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1})


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})
"""

EXPECTED = {
    1: "method quantum failed: ZeroDivisionError: division by zero (workflow.py:13)",
    2: "method quantum failed: TypeError: quantum() returned float, not a MethodResult or a dict of its "
    "keys (workflow.py:11)",
    3: "method quantum failed: SolutionInvalid: the solution does not match the output schema at $.x:",
    4: "method quantum failed: evaluate(solution) raised ZeroDivisionError: field is zero (workflow.py:7)",
    5: "method quantum failed: TypeError: quantum() returned a dict that is not a MethodResult: answer: "
    "Extra inputs are not permitted (workflow.py:11)",
}


def results(wf: WorkflowDir, module: str = MODULE, xs=(1, 2, 3, 4, 5)) -> list[CaseResult]:
    """Every case in this process (trusted code), one per input ``x``."""
    wf.write("workflow.py", module)
    wf.cases["cases"] = [{"name": f"x{x}", "input": {"x": x}} for x in xs]
    wf.save()
    workflow = load_workflow(wf.root)
    code = ModuleCode(load_module(workflow.module_path))
    return [
        run_case(workflow.manifest, code, c, c.input, "sim-cpu", workflow.output_schema)
        for c in workflow.cases.cases
    ]


def test_each_mistake_is_named_with_the_workflows_own_line(wf: WorkflowDir) -> None:
    for x, r in zip((1, 2, 3, 4, 5), results(wf), strict=True):
        assert r.message == NO_METRIC  # the seed's message, first in the seed's order, stays
        assert r.cause is not None and r.cause.startswith(EXPECTED[x]), (x, r.cause)
        assert r.why() == f"FAIL {r.cause}"  # what the table, the progress line and the page show
        assert r.summary()["cause"] == r.cause  # and --json


def test_a_renamed_method_or_evaluate_says_which_function_is_missing(wf: WorkflowDir) -> None:
    (r,) = results(wf, MODULE.replace("def quantum(", "def vqe("), xs=(9,))
    assert r.cause == "method quantum failed: AttributeError: workflow.py has no top-level function 'quantum'"
    (r,) = results(wf, MODULE.replace("def evaluate(", "def score("), xs=(9,))
    assert r.cause == (
        "method quantum failed: evaluate(solution) raised AttributeError: workflow.py has no top-level "
        "function 'evaluate'; method reference failed: evaluate(solution) raised AttributeError: "
        "workflow.py has no top-level function 'evaluate'"
    )


def test_the_cause_crosses_the_sandbox_and_reaches_the_gate(wf: WorkflowDir) -> None:
    wf.write("workflow.py", MODULE)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}, {"name": "x4", "input": {"x": 4}}]
    wf.save()
    outcome = run_job(wf.root, "sim-cpu", None, Resources(), limits=Limits(timeout_s=120, memory_mb=2048))
    assert outcome.died is None, outcome.log_tail
    one, four = (CaseResult.model_validate(c) for c in outcome.report["cases"])
    assert one.cause == EXPECTED[1] and four.cause == EXPECTED[4]
    gate = next(g for g in outcome.report["gates"] if g["name"] == "cases_pass")
    assert f"x1 ({EXPECTED[1]})" in gate["message"]


def test_qsolve_test_prints_the_cause_in_the_progress_line_table_and_json(wf: WorkflowDir, capsys) -> None:
    wf.write("workflow.py", MODULE)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    assert main(["test", str(wf.root)]) == 1
    printed = capsys.readouterr()
    assert f"x1: FAIL {EXPECTED[1]} (" in printed.err  # the progress line, whole on one line
    assert "ZeroDivisionError" in printed.out and "workflow.py:13" in printed.out.replace("\n", "")
    assert main(["test", str(wf.root), "--json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    assert (case["message"], case["cause"]) == (NO_METRIC, EXPECTED[1])


def test_the_page_row_names_the_cause(wf: WorkflowDir) -> None:
    from qsolve_pipeline.storage.trackrecord.row import TrackRecordRow

    (r,) = results(wf, xs=(1,))
    row = TrackRecordRow.from_result(
        r, workflow="tiny", version="1.0.0", run_id="r1", source="history", device="aer", credits=0.0
    )
    assert row.message == EXPECTED[1]


def test_a_time_limit_names_the_case_and_method_and_keeps_the_cases_that_finished(wf: WorkflowDir) -> None:
    # the slow case waits without spinning: it held a core for the whole 40 s, slowing every other test
    slow = MODULE.replace(
        '    if input["x"] == 1:\n',
        '    while input["x"] == 7:\n        __import__("time").sleep(0.05)\n    if input["x"] == 1:\n',
        1,
    )
    wf.write("workflow.py", slow)
    wf.cases["cases"] = [
        {"name": "quick", "input": {"x": 9}},
        {"name": "slow", "input": {"x": 7}},
        {"name": "never", "input": {"x": 9}},
    ]
    wf.save()
    events: list[dict] = []
    outcome = run_job(
        wf.root, "sim-cpu", None, Resources(), events.append, limits=Limits(timeout_s=40, memory_mb=2048)
    )
    assert events[-1] == {"event": "stopped", "why": outcome.died}  # the progress line's
    # the limit as the process counts it, from its own start (a busy machine can make it 39 s)
    assert re.fullmatch(
        r"the sandbox job was stopped at its time limit of (39|40) s in case slow, in method quantum; "
        r"1 of 3 cases finished",
        outcome.died,
    ), outcome.died
    (quick,) = outcome.report["cases"]
    assert quick["name"] == "quick" and quick["passed"]
    gate = next(g for g in outcome.report["gates"] if g["name"] == "cases_pass")
    assert gate == {"name": "cases_pass", "passed": False, "message": outcome.died}


def test_an_import_error_is_named_and_confinement_is_read_as_for_any_run(wf: WorkflowDir) -> None:
    wf.cases["cases"] = [{"name": "one", "input": {"x": 9}}]
    wf.write("workflow.py", MODULE)
    wf.save()
    limits = Limits(timeout_s=120, memory_mb=2048)
    fine = run_job(wf.root, "sim-cpu", None, Resources(), limits=limits)
    wf.write("workflow.py", "import math\n\nmath.sqrt(-1)\n" + MODULE)
    broken = run_job(wf.root, "sim-cpu", None, Resources(), limits=limits)
    (case,) = broken.report["cases"]
    assert case["message"] == "FAIL ValueError: math domain error (workflow.py:3)"
    # the process that failed its import is read from outside as every other one is (it once read
    # as the root parent that waits for it: "NOT CONFINED ... runs as root")
    assert broken.protections.missing == fine.protections.missing
    assert broken.protections.uid == fine.protections.uid


def test_the_progress_line_says_where_the_time_limit_stopped_the_job() -> None:
    import io

    from rich.console import Console

    from qsolve.cli.report_view import Progress

    out = io.StringIO()
    why = (
        "the sandbox job was stopped at its time limit of 300 s in case slow, in method qaoa; 1 of 3 "
        "cases finished"
    )
    Progress(Console(file=out, width=80))({"event": "stopped", "why": why})
    assert out.getvalue() == f"  stopped: {why}\n"  # one line, however narrow the console
