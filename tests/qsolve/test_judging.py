"""Deciding a case: the seed's failure checks, in order, with the seed's messages, each produced by a
workflow that makes that mistake; and the comparison with the baseline for the three metric kinds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from qsolve.judging.deciding import (
    BELOW,
    MATCHES,
    Evidence,
    compare,
    first_failure,
    no_circuit_size,
    settled_accuracy,
    wilson_interval,
)
from qsolve.judging.results import MethodOutcome, Quality
from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.case_runner import run_case
from qsolve.workflow.cases import Expect
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.manifest import Metric
from qsolve.workflow.module_loader import load_module
from tests.conftest import WorkflowDir

HEADER = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult, MethodUnavailable


def evaluate(input, solution):
    return -float(solution["x"])


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})


def x_circuit():
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    return qc
"""


def run(wf: WorkflowDir, quantum_body: str, expect: dict | None = None, extra: str = "", **case) -> object:
    """Run one case of a workflow whose quantum method is ``quantum_body`` (indented code)."""
    wf.write("workflow.py", HEADER + extra + "\n\ndef quantum(input, params, ctx):\n" + quantum_body + "\n")
    if "def extra(" in extra:
        wf.manifest["methods"].append({"name": "extra", "kind": "classical"})
    wf.cases["cases"] = [{"name": "c", "input": {"x": 1}, "seed": 3, "expect": expect or {}, **case}]
    wf.save()
    workflow = load_workflow(wf.root)
    code = ModuleCode(load_module(workflow.module_path))
    return run_case(workflow.manifest, code, workflow.cases.cases[0], {"x": 1}, "sim-cpu")


SAMPLE_AND_ANSWER = "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-1.0, solution={'x': 1})"


def test_a_case_that_passes(wf: WorkflowDir) -> None:
    r = run(wf, SAMPLE_AND_ANSWER, {"max_gap": 0.0, "min_fidelity": 0.99, "max_two_qubit_gates": 0})
    assert (r.passed, r.message, r.gap, r.abs_error, r.verdict) == (True, None, 0.0, 0.0, MATCHES)
    assert (r.fidelity, r.coverage, r.circuits, r.shots, r.max_two_qubit_gates) == (1.0, 1.0, 1, 100, 0)


def test_no_headline_metric(wf: WorkflowDir) -> None:
    r = run(wf, "    raise MethodUnavailable('too big')")
    assert r.message == "no headline metric: quantum and reference could not be compared"
    assert not r.passed and r.gap is None


def test_headline_metric_missing_when_quantum_crashed_comes_first(wf: WorkflowDir) -> None:
    r = run(wf, "    raise ValueError('boom')")
    assert r.message == "no headline metric: quantum and reference could not be compared"
    assert r.methods[0].unavailable == "failed: ValueError: boom (workflow.py:21)"
    assert r.cause == "method quantum failed: ValueError: boom (workflow.py:21)"


def test_method_failed(wf: WorkflowDir) -> None:
    extra = "\n\ndef extra(input, params, ctx):\n    raise ValueError('boom')\n"
    r = run(wf, SAMPLE_AND_ANSWER, extra=extra)
    assert r.message == "method extra failed: ValueError: boom (workflow.py:21)"


def test_merely_unavailable_method_does_not_fail_the_case(wf: WorkflowDir) -> None:
    extra = "\n\ndef extra(input, params, ctx):\n    raise MethodUnavailable('only small inputs')\n"
    r = run(wf, SAMPLE_AND_ANSWER, extra=extra)
    assert r.passed and r.message is None


def test_claim_differs(wf: WorkflowDir) -> None:
    r = run(wf, "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-2.0, solution={'x': 1})")
    assert r.message == "method quantum claimed -2, its solution gives -1"
    assert r.quantum == -1.0  # the platform's number, not the method's


def test_claim_within_1e_6_relative_holds(wf: WorkflowDir) -> None:
    r = run(wf, "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-1.0000009, solution={'x': 1})")
    assert r.passed


def test_sent_no_circuit(wf: WorkflowDir) -> None:
    r = run(wf, "    return MethodResult(-1.0, solution={'x': 1})")
    assert r.message == "quantum method quantum sent no circuit to the backend"


def test_no_mitigation_numbers(wf: WorkflowDir) -> None:
    r = run(wf, SAMPLE_AND_ANSWER, {"min_postselection": 0.5})
    assert r.message == "no mitigation numbers reported"


MID_CIRCUIT = """\
    qc = QuantumCircuit(1, 2)
    qc.h(0)
    qc.measure(0, 0)
    qc.h(0)
    qc.measure(0, 1)
    ctx.sample([qc], 300)
    ctx.sample([x_circuit()], 100)
    return MethodResult(-1.0, solution={'x': 1})"""


def test_low_coverage(wf: WorkflowDir) -> None:
    r = run(wf, MID_CIRCUIT, {"min_fidelity": 0.5})
    assert r.message == (
        "only 25% of the quantum method's shots could be scored against an ideal output "
        "(circuits over 20 qubits or with mid-circuit measurement cannot be scored)"
    )
    assert r.coverage == 0.25


def test_low_fidelity(wf: WorkflowDir) -> None:
    r = run(wf, SAMPLE_AND_ANSWER, {"min_fidelity": 1.5})  # outside 0..1 is not rejected
    assert r.message == "fidelity 1 < 1.5"


def test_low_postselection(wf: WorkflowDir) -> None:
    body = SAMPLE_AND_ANSWER.replace("\n", "\n    ctx.postselected(45, 100)\n", 1)
    r = run(wf, body, {"min_postselection": 0.9})
    assert r.message == "post-selection 0.45 < 0.9"
    assert r.postselection == 0.45


def test_no_circuit_size() -> None:
    # Unreachable through ctx.sample, which records every circuit it runs; the rule is checked directly.
    quantum = MethodOutcome(name="q", kind="quantum", objective=-1.0, dispatches=1)
    baseline = MethodOutcome(name="reference", kind="classical", objective=-1.0)
    e = Evidence(
        [quantum, baseline],
        quantum,
        baseline,
        Expect(max_two_qubit_gates=3),
        Quality(fidelity=None, coverage=None, postselection=None),
    )
    assert no_circuit_size(e) == first_failure(e) == "no circuit size reported"


def test_too_many_two_qubit_gates(wf: WorkflowDir) -> None:
    body = """\
    qc = QuantumCircuit(3)
    qc.h(0)
    qc.cx(0, 1)
    qc.cx(1, 2)
    qc.measure_all()
    ctx.sample([qc], 100)
    return MethodResult(-1.0, solution={'x': 1})"""
    r = run(wf, body, {"max_two_qubit_gates": 1})
    assert r.message == "2 two-qubit gates > 1"


def test_first_check_that_applies_wins(wf: WorkflowDir) -> None:
    r = run(
        wf,
        "    return MethodResult(-2.0, solution={'x': 1})",
        {"min_fidelity": 0.9, "max_two_qubit_gates": 0},
    )
    assert r.message == "method quantum claimed -2, its solution gives -1"


def test_gap_failure_has_no_message(wf: WorkflowDir) -> None:
    r = run(wf, "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-0.5, solution={'x': 0.5})")
    assert (r.passed, r.message, r.gap) == (False, None, 0.5)


def test_max_abs_error_replaces_max_gap_and_is_two_sided(wf: WorkflowDir) -> None:
    worse = "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-0.5, solution={'x': 0.5})"
    assert run(wf, worse, {"max_gap": 0.0, "max_abs_error": 0.6}).passed
    better = "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-2.0, solution={'x': 2})"
    assert run(wf, better, {"max_gap": 0.0}).passed  # a negative gap passes
    assert not run(wf, better, {"max_abs_error": 0.5}).passed  # better by more than it also fails


def test_a_case_that_raises_before_a_result(wf: WorkflowDir) -> None:
    r = run(wf, SAMPLE_AND_ANSWER, target="ibm:ibm_fez")
    assert r.message.startswith("FAIL TargetUnavailable: ibm:ibm_fez: validation has no network")
    assert not r.ran
    r = run(wf, SAMPLE_AND_ANSWER, target="fake:fez@20")
    assert r.message == "FAIL UnknownTarget: fake:fez@20: the scale must be from 1 to 10"


def test_classical_methods_cannot_send_circuits(wf: WorkflowDir) -> None:
    extra = "\n\ndef extra(input, params, ctx):\n    ctx.sample([x_circuit()], 10)\n"
    r = run(wf, SAMPLE_AND_ANSWER, extra=extra)
    assert r.message.startswith(
        "method extra failed: CircuitsRefused: a classical method cannot send circuits"
    )


def test_result_hash_ignores_wall_clock(wf: WorkflowDir) -> None:
    a = run(wf, SAMPLE_AND_ANSWER)
    b = run(wf, SAMPLE_AND_ANSWER)
    assert a.methods[0].seconds != b.methods[0].seconds
    assert a.result_hash == b.result_hash and len(a.result_hash) == 64


# --- comparison with the baseline ------------------------------------------------------------------


def test_relative_gap_only_worse_loses_accuracy() -> None:
    m = Metric()
    assert compare(m, -9.0, -10.0, None, None).accuracy == pytest.approx(0.9)
    better = compare(m, -11.0, -10.0, None, None)
    assert (better.accuracy, better.verdict) == (1.0, MATCHES)
    assert compare(m, -9.0, -10.0, None, None).verdict == BELOW
    assert compare(Metric(tolerance=0.1), -9.0, -10.0, None, None).verdict == MATCHES
    assert compare(Metric(tolerance_abs=1.0), -9.0, -10.0, None, None).verdict == MATCHES
    assert compare(Metric(tolerance_abs=0.99), -9.0, -10.0, None, None).verdict == BELOW


def test_relative_error_with_stderr() -> None:
    m = Metric(kind="relative_error")
    c = compare(m, -1.05, -1.0, 0.03, None)
    assert c.accuracy == pytest.approx(0.95) and c.accuracy_pm == pytest.approx(0.03)
    assert c.verdict == MATCHES  # |q - r| = 0.05 <= 2 * stderr
    assert compare(m, -1.05, -1.0, 0.02, None).verdict == BELOW  # 0.05 > 0.04
    # stderr counts only while it is at most a quarter of |r|
    assert compare(m, -1.5, -1.0, 0.3, None).verdict == BELOW
    assert compare(m, -1.4, -1.0, 0.25, None).verdict == MATCHES
    assert compare(m, -0.95, -1.0, None, None).verdict == BELOW  # better is not enough here
    assert (
        compare(Metric(kind="relative_error", tolerance_abs=0.0016), -1.0015, -1.0, None, None).verdict
        == MATCHES
    )


def test_error_rate_with_wilson_interval() -> None:
    m = Metric(kind="error_rate")
    c = compare(m, 0.10, 0.05, None, 200)
    low, high = wilson_interval(0.10, 200)
    assert c.accuracy == pytest.approx(0.9) and c.accuracy_pm == pytest.approx((high - low) / 2)
    assert low > 0.05 and c.verdict == BELOW
    assert compare(m, 0.07, 0.05, None, 200).verdict == MATCHES  # the interval reaches 0.05
    assert compare(Metric(kind="error_rate", tolerance_abs=0.05), 0.10, 0.05, None, None).verdict == MATCHES
    assert compare(m, 0.10, 0.05, None, None).accuracy_pm is None


def test_wilson_interval_known_value() -> None:
    low, high = wilson_interval(0.5, 100)
    assert (round(low, 4), round(high, 4)) == (0.4038, 0.5962)
    low, high = wilson_interval(0.0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and math.isclose(high, 0.2775, abs_tol=1e-4)


def test_module_importable_by_path(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    (tmp_path / "wf.py").write_text("from helper import VALUE\n")
    assert load_module(tmp_path / "wf.py").VALUE == 7


def test_a_solution_not_matching_the_output_schema_fails_the_method(wf: WorkflowDir) -> None:
    wf.write(
        "schemas/output.json", {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    )
    wf.write(
        "workflow.py",
        HEADER
        + "\n\ndef quantum(input, params, ctx):\n"
        + SAMPLE_AND_ANSWER.replace("solution={'x': 1}", "solution={'y': 1}")
        + "\n",
    )
    wf.cases["cases"] = [{"name": "c", "input": {"x": 1}}]
    wf.save()
    workflow = load_workflow(wf.root)
    r = run_case(
        workflow.manifest,
        ModuleCode(load_module(workflow.module_path)),
        workflow.cases.cases[0],
        {"x": 1},
        "sim-cpu",
        workflow.output_schema,
    )
    assert r.methods[0].unavailable.startswith(
        "failed: SolutionInvalid: the solution does not match the output schema at $: 'x' is a required"
    )
    assert r.message == "no headline metric: quantum and reference could not be compared"


@pytest.mark.parametrize(
    ("check", "expect", "quality", "message"),
    [
        ("low_fidelity", {"min_fidelity": 0.97}, {"fidelity": 0.96999}, "fidelity 0.96999 < 0.97"),
        ("low_fidelity", {"min_fidelity": 0.97}, {"fidelity": 0.91237}, "fidelity 0.9124 < 0.97"),
        (
            "low_postselection",
            {"min_postselection": 0.5},
            {"postselection": 0.49999},
            "post-selection 0.49999 < 0.5",
        ),
        ("low_coverage", {"min_fidelity": 0.5}, {"coverage": 0.8995}, "only 89.95% of"),
        ("low_coverage", {"min_fidelity": 0.5}, {"coverage": 0.5}, "only 50% of"),
    ],
)
def test_a_number_below_its_bound_never_reads_as_the_bound(check, expect, quality, message) -> None:
    """issue 15: 0.96999 must not read "fidelity 0.97 < 0.97", nor a coverage of 0.8995 "only 90%"."""
    import qsolve.judging.deciding as judging

    quantum = MethodOutcome(name="q", kind="quantum", objective=-1.0, dispatches=1)
    baseline = MethodOutcome(name="reference", kind="classical", objective=-1.0)
    numbers = {"fidelity": None, "coverage": 1.0, "postselection": None} | quality
    e = Evidence([quantum, baseline], quantum, baseline, Expect(**expect), Quality(**numbers))
    assert getattr(judging, check)(e).startswith(message)


def test_a_broken_bound_is_shown_beside_the_value_and_never_reads_as_met() -> None:
    from qsolve.judging.deciding import broken_bound
    from qsolve.workflow.cases import Expect

    assert broken_bound(Expect(), -26.0, -26.5) == "gap 0.0189 > max_gap 0"
    assert broken_bound(Expect(max_abs_error=0.1), 1.5, 1.0) == "abs error 0.5 > max_abs_error 0.1"
    assert broken_bound(Expect(max_abs_error=0.1), 1.1, 1.0) is None
    assert broken_bound(Expect(max_gap=0.01), -0.990001, -1.0) is None
    assert broken_bound(Expect(max_gap=0.01), -0.98999, -1.0) == "gap 0.01001 > max_gap 0.01"


def test_a_zero_baseline_has_no_relative_accuracy_and_says_why() -> None:
    """Issue 37: the seed's accuracy divides by abs(r); at r = 0 it is undefined, never -4e12."""
    for kind in ("relative_gap", "relative_error"):
        c = compare(Metric(kind=kind), 4.0, 0.0, None, None)
        assert (c.accuracy, c.accuracy_pm, c.verdict) == (None, None, BELOW)
        assert c.why_none == "the baseline is 0: no relative accuracy"
    c = compare(Metric(tolerance_abs=100), 4.0, 0.0, None, None)  # the verdict by the absolute difference
    assert c.accuracy is None and c.verdict == MATCHES
    assert c.why_none.endswith("(the verdict compares abs error 4 with tolerance_abs 100)")
    assert compare(Metric(), 0.0, 0.0, None, None).verdict == MATCHES  # no worse than the baseline


def test_a_stored_accuracy_is_decided_again_by_the_same_rule() -> None:
    """The track record files (accuracy, accuracy_pm, zero baseline) from a stored result's numbers: a run
    stored before issue 37 kept the seed's number unclamped; the metric kind is not stored."""
    assert settled_accuracy(4.0, 0.0, -3999999999999.0, 5e9) == (None, None, True)  # relative_gap, r = 0
    assert settled_accuracy(-4.0, 0.0, -3999999999999.0, None) == (None, None, True)  # relative_error
    assert settled_accuracy(3.0, 1.0, -1.0, 0.2) == (0.0, 0.2, False)  # twice as bad: clamped
    assert settled_accuracy(0.9, 1.0, 1.0, None) == (1.0, None, False)  # relative_gap: better is 1
    assert settled_accuracy(0.9, 1.0, 0.9, None) == (0.9, None, False)  # relative_error
    # error_rate (1 - q): a perfect classical classifier (r = 0) keeps the quantum one's accuracy
    assert settled_accuracy(0.2, 0.0, 0.8, 0.05) == (0.8, 0.05, False)
    # an error rate of 1.5 is no share of mistakes: no accuracy, as the case's own is (attack 2, finding 6)
    assert settled_accuracy(1.5, 0.1, -0.5, None) == (None, None, False)
    # a baseline of 1e-13 is not 0: the seed's accuracy is defined there, also of a run stored dividing
    # by max(abs(r), 1e-12) (attack 2, finding 10)
    assert settled_accuracy(1.5e-13, 1e-13, 0.95, None) == (pytest.approx(0.5), None, False)
    assert settled_accuracy(1.0, 2.0, 1.0, -0.25) == (1.0, None, False)  # a negative stderr's pm: none
    assert settled_accuracy(None, None, None, None) == (None, None, False)  # nothing compared
    assert settled_accuracy(0.0, 0.0, 1.0, None) == (1.0, None, False)  # 1 - q and q <= r agree: kept


def test_at_a_zero_baseline_tolerance_never_decides() -> None:
    """Issue 37 (attack 6): the relative rule's accuracy is undefined at r = 0, so a relative tolerance
    decides nothing there: tolerance_abs, q <= r (relative_gap) or the stderr rule do."""
    assert compare(Metric(tolerance=0.5), 4e-13, 0.0, None, None).verdict == BELOW
    assert compare(Metric(tolerance=0.5, tolerance_abs=1e-12), 4e-13, 0.0, None, None).verdict == MATCHES
    assert compare(Metric(tolerance=0.5), -4e-13, 0.0, None, None).verdict == MATCHES  # q <= r
    assert compare(Metric(kind="relative_error", tolerance=0.5), 1e-13, 0.0, None, None).verdict == BELOW
    assert compare(Metric(kind="relative_error", tolerance=0.5), 0.0, 0.0, None, None).verdict == MATCHES
    assert compare(Metric(tolerance=0.5), 1.4, 1.0, None, None).verdict == MATCHES  # r != 0: tolerance


def test_an_accuracy_is_never_outside_0_to_1() -> None:
    assert compare(Metric(), 30.0, 10.0, None, None).accuracy == 0.0  # three times worse: 1 - 2 is clamped
    assert compare(Metric(kind="relative_error"), -35.0, -10.0, None, None).accuracy == 0.0
    # an error rate of 1.5 is no share of mistakes: its 1 - q is no accuracy (attack 2, finding 6)
    c = compare(Metric(kind="error_rate"), 1.5, 0.1, None, 100)
    assert (c.accuracy, c.accuracy_pm, c.verdict) == (None, None, BELOW)
    assert c.why_none == "the quantum objective 1.5 is not a share of mistakes (error_rate takes 0 to 1)"
    assert compare(Metric(kind="error_rate"), -0.1, 0.1, None, None).accuracy is None
    assert compare(Metric(kind="error_rate"), 1.0, 0.1, None, None).accuracy == 0.0  # all wrong: a share


def test_warnings_never_change_the_verdict(wf: WorkflowDir) -> None:
    """A sign mistake (the quantum method 'beats' an exact reference) and a zero baseline are warned
    of in the case's result; its pass, message and verdict stay the seed's."""
    better = "    ctx.sample([x_circuit()], 100)\n    return MethodResult(-2.0, solution={'x': 2})"
    r = run(wf, better)
    assert (r.passed, r.message, r.verdict) == (True, None, MATCHES)
    assert r.expect == {"max_gap": 0.0, "max_abs_error": None, "min_fidelity": None,
                        "min_postselection": None, "max_two_qubit_gates": None}
    assert r.warnings == [
        "quantum method quantum beat the reference: -2 against -1 (lower is better), beyond the tolerance; "
        "is `reference` exact, and is `evaluate` lower-is-better (a maximisation returns the negative)?"
    ]
    assert run(wf, SAMPLE_AND_ANSWER).warnings == []
    zero = "    ctx.sample([x_circuit()], 100)\n    return MethodResult(0.0, solution={'x': 0})"
    r = run(wf, zero.replace("0.0", "4.0").replace("'x': 0", "'x': -4"), {"max_abs_error": 100},
            extra="\n\ndef reference(input, params, ctx):\n    return MethodResult(0.0, solution={'x': 0})\n")
    assert (r.passed, r.accuracy, r.gap) == (True, None, 4e12)  # the seed's gap, and no accuracy
    assert r.warnings[0].startswith("the baseline is 0: no relative accuracy, so this case has none")
    assert "set metric.tolerance_abs" in r.warnings[0]


def test_the_reason_of_each_failure_is_kept() -> None:
    from qsolve.judging.deciding import broken_bound

    assert broken_bound(Expect(max_gap=0.0), -0.7, -1.0) == "gap 0.3 > max_gap 0"
    assert broken_bound(Expect(max_abs_error=0.1), -0.5, -1.0) == "abs error 0.5 > max_abs_error 0.1"


def test_what_is_no_number_is_refused_wherever_it_comes_from() -> None:
    """Issue 37 (attack 2, findings 1 to 3): a bool or a string is never read as a number, nor a negative
    stderr kept: a method's own MethodResult refuses them, evaluate's return is refused naming its type,
    and a workflow process that sends them anyway (a hostile one: the honest child never does) sends an
    invalid message, which breaks it (``RemoteCode._model``): it gets no number judged."""
    import types

    import numpy as np
    from pydantic import ValidationError

    from qsolve.sandbox.calls import MethodReturn
    from qsolve.workflow.method import MethodResult

    for bad in (True, "2.5", b"2", np.bool_(False), np.array(["1"])):
        with pytest.raises(ValidationError, match="must be a number, not"):
            MethodResult(bad)
        with pytest.raises(ValidationError, match="must be a number, not"):
            MethodResult(1.0, stderr=bad)
    with pytest.raises(ValidationError, match="stderr\n.*must be at least 0"):
        MethodResult(1.0, stderr=-0.5)
    for fine in (2, 2.5, np.int64(2), np.float32(2.5)):
        assert MethodResult(fine, stderr=fine).objective == pytest.approx(float(fine))
    for sent in ({"objective": True}, {"objective": "2.5"}, {"objective": 1.0, "stderr": -0.5},
                 {"objective": 1.0, "stderr": False}):  # fmt: skip
        with pytest.raises(ValidationError):
            MethodReturn.model_validate(sent)
    assert MethodReturn.model_validate({"objective": 2, "stderr": 0}).objective == 2

    module = types.ModuleType("workflow")
    for returned, said in ((np.bool_(True), "bool (np.True_)"), ("3", "str ('3')"), ([1], "list")):
        module.evaluate = lambda input, solution, r=returned: r
        answer = ModuleCode(module).evaluate({}, {})
        assert answer.value is None and answer.returned.startswith(f"evaluate() returned {said}"), answer
    for returned in (3, np.float64(2.5), np.int32(7)):
        module.evaluate = lambda input, solution, r=returned: r
        assert ModuleCode(module).evaluate({}, {}).value == pytest.approx(float(returned))


def test_an_error_rate_that_is_no_share_is_warned_of_for_either_method() -> None:
    """Issue 37 (attack 2, finding 6): the quantum method's share outside 0 to 1 leaves no accuracy; the
    reference's is warned of too (its verdict stays the seed's)."""
    from qsolve.judging.deciding import case_warnings

    metric = Metric(kind="error_rate")
    quantum = MethodOutcome(name="qsvm", kind="quantum", objective=0.2)
    assert case_warnings(metric, quantum, 0.2, 3.0)[0] == (
        "the reference's objective 3 is not a share of mistakes (error_rate takes 0 to 1): evaluate must "
        "return the share of the test set it got wrong, not a count"
    )  # and the quantum method beat it, which is said too
    assert compare(metric, 0.2, 3.0, None, 100).accuracy == pytest.approx(0.8)
    assert case_warnings(metric, quantum, 0.2, 0.2) == []



def test_a_complex_number_a_claim_that_is_no_number_and_a_negative_zero_are_never_numbers_judged() -> None:
    """Round 2 (findings 1 to 3): a complex number (numpy's too) is refused as no number, never read as
    its real part; an objective that is not finite crosses by its name, the claim a solution never
    gives; a stderr of -0.0 is 0.0 wherever it is kept, so no plus-or-minus is ever -0.0."""
    import types

    import numpy as np
    from pydantic import ValidationError

    from qsolve.judging.deciding import claim_differs
    from qsolve.sandbox.calls import MethodReturn
    from qsolve.workflow.method import MethodResult

    for bad in (1 + 4j, np.complex128(1 + 4j), np.complex64(2), np.array(1 + 0j)):
        with pytest.raises(ValidationError, match="must be a number, not (complex|ndarray)"):
            MethodResult(bad)
        with pytest.raises(ValidationError, match="must be a number, not"):
            MethodResult(1.0, stderr=bad)
    module = types.ModuleType("workflow")
    module.evaluate = lambda input, solution: np.complex128(1 + 4j)
    answer = ModuleCode(module).evaluate({}, {})
    assert answer.value is None and answer.returned.startswith("evaluate() returned complex128"), answer

    for objective, name in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        module.quantum = lambda input, params, ctx, o=objective: MethodResult(o, solution={"v": 1})
        sent = ModuleCode(module).call(
            "quantum", "quantum", {}, {}, types.SimpleNamespace(postselection=None)
        )
        assert (sent.objective, sent.not_finite) == (None, name)
        assert MethodReturn.model_validate_json(sent.model_dump_json()) == sent  # over the process boundary
        outcome = MethodOutcome(name="q", kind="quantum", objective=1.0, claimed=name)
        said = claim_differs(
            Evidence(
                [outcome],
                outcome,
                outcome,
                Expect(),
                Quality(fidelity=None, coverage=None, postselection=None),
            )
        )
        assert said == f"method q claimed {name}, its solution gives 1"
    with pytest.raises(ValidationError):
        MethodReturn(not_finite="NaN (and more)")

    assert str(MethodResult(1.0, stderr=-0.0).stderr) == "0.0"
    assert str(MethodReturn(objective=1.0, stderr=-0.0).stderr) == "0.0"
    for kind in ("relative_gap", "relative_error"):
        assert str(compare(Metric(kind=kind), 1.0, 1.0, -0.0, None).accuracy_pm) == "0.0"
    assert str(settled_accuracy(1.0, 1.0, 1.0, -0.0)[1]) == "0.0"  # a -0.0 stored before


@pytest.mark.parametrize(
    ("n_test", "said"),
    [
        (10**400, "an int of 1329 bits"),
        (1e308, "1e+308"),
        (2**53 + 1, "9007199254740993"),
        (0, "0"),
        (2.5, "2.5"),
        (True, "True"),
        ("100", "'100'"),
    ],
)
def test_an_n_test_that_is_no_test_sets_size_fails_the_case_naming_the_method(n_test, said) -> None:
    """Round 2 (finding 11): ``details['n_test']`` is a whole number from 1 to 2**53; any other is the
    workflow's mistake, named, and never reaches the Wilson interval (10**400 overflowed a double)."""
    from qsolve.validation.case_runner import _n_test

    assert _n_test("qsvm", {"n_test": n_test}) == (
        None,
        "method qsvm's details['n_test'] must be a whole number from 1 to 2**53 (the test set's size), got "
        + said,
    )
    assert _n_test("qsvm", {"n_test": 2**53}) == (2**53, None)
    assert _n_test("qsvm", {"n_test": 100.0}) == (100, None)
    low, high = wilson_interval(0.5, 2**53)  # the largest allowed: a number, no overflow
    assert low <= 0.5 <= high
