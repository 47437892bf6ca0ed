"""A second attacker's findings on issue 37 (honest numbers at the edges), each a test that failed when
found (``xfail(strict=True)`` until mended) and passes now.

Found by writing, from docs/writing-a-workflow.md alone, a small workflow with a zero baseline, a sign
mistake, a method random on its third case (``random``, not ``ctx.rng``) and a method that crashes on
one case, then running ``qsolve lint``, ``test`` (and ``--json``), ``submit``, ``history --again``,
``page``, ``query`` and plain DuckDB on it; then edge numbers through the case runner. The four
problems were each named at every place; what still breaks:

1. ``evaluate`` returning a bool or a numeric string is taken as a number (``True`` is 1.0, ``"3"``
   is 3.0): ``ModuleCode.evaluate`` floats it before ``_recompute``'s bool check can see it;
2. a method's own objective given as a bool or a string (``MethodResult(True)``,
   ``{"objective": "2.5"}``) is coerced to a number by pydantic's lax mode;
3. a negative ``stderr`` is kept: the case shows ``accuracy_pm -0.25`` (the web: "75.0% ± -25.0%");
4. a method that crashed in one of two runs is named ``None``: the ``reproducible`` gate says
   ``method qaoa's objective: None then 0.0`` and the page's not-reproducible sentence ``qaoa none``,
   where the track record holds ``failed: ZeroDivisionError: ...``;
5. the gates take a case whose quantum method crashed as one that "ran to a result": a workflow whose
   every case crashes shows ``reproducible`` and ``estimate_honest`` passing (the seed: six gates), and
   when the first case crashed, ``estimate_honest`` judges that case ("sent no circuits") instead of
   the first case that ran to a result, passing an estimate off by 100 times;
6. an ``error_rate`` objective outside [0, 1] (1.5 mistakes per case) is clamped to accuracy 0 with no
   warning: the number says nothing of a share that cannot be one;
7. the page names the rounds of a not-reproducible case by the minute: two rounds within one minute
   read the same (``2026-12-01 12:00 FAIL quantum none reference 0.0`` twice), its run ids unshown;
8. the ``nondeterministic`` view (and so the page) compares only the methods' objectives: a case that
   passes then fails over two rounds with other circuits, shots, fidelity and result hash (a method
   random in its circuits, on a case the ``reproducible`` gate does not re-run) is flagged nowhere;
9. a bound that is NaN passes lint and the submission checks (``max_gap``, ``max_abs_error``,
   ``min_fidelity``, ``min_postselection``, ``metric.tolerance_abs``): ``min_fidelity: .nan`` on a fake:
   target passes ``fidelity_checked`` and can never fail a case, and ``--json`` prints it as null;
10. a baseline below 1e-12 that is not 0 (``1e-13``) is said to be 0 and gets no accuracy, though the
    seed's formula divides by ``abs(r)`` and is defined there (docs/validation.md: null only "where the
    seed's formula is undefined, a baseline of 0"): the reference's own answer has no accuracy.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.case_runner import run_case
from qsolve.validation.gate_run import run_gates
from qsolve.validation.gates import judge
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.module_loader import load_module
from qsolve_pipeline.storage.trackrecord.workflow_page import Nondeterministic
from tests.conftest import WorkflowDir

MODULE = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return {EVAL}


def reference(input, params, ctx):
    return {REF}


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    return {QUANTUM}
"""


def _case(wf: WorkflowDir, evaluate: str, reference: str, quantum: str, metric: dict | None = None):
    """The one case of a workflow whose functions return what they are given, run by the platform's
    case runner in this process (as ``qsolve test`` runs it in the sandbox)."""
    wf.write(
        "workflow.py",
        MODULE.replace("{EVAL}", evaluate).replace("{REF}", reference).replace("{QUANTUM}", quantum),
    )
    wf.write("schemas/output.json", {"type": "object"})
    if metric is not None:
        wf.manifest["metric"] = metric
    wf.cases["cases"] = [{"name": "c", "input": {"x": 0}, "expect": {"max_abs_error": 100}}]
    wf.save()
    workflow = load_workflow(wf.root)
    (case,) = workflow.cases.cases
    code = ModuleCode(load_module(workflow.module_path))
    return run_case(workflow.manifest, code, case, case.input, "sim-cpu")


@pytest.mark.parametrize(
    ("returned", "kind"), [("solution['v'] == 1", "bool"), ("str(solution['v'])", "str")]
)
def test_evaluate_must_return_a_number(wf: WorkflowDir, returned: str, kind: str) -> None:
    result = _case(
        wf,
        returned,
        "MethodResult(1.0, solution={'v': 1})",
        "MethodResult(1.0, solution={'v': 1})",
    )
    # today: passed, quantum 1.0, baseline 1.0, "Matches the best classical answer"
    assert not result.passed
    said = f"{result.message} {result.cause}"
    assert kind in said and "not a number" in said, said


@pytest.mark.parametrize(
    ("reference", "kind"),
    [("MethodResult(True)", "bool"), ("MethodResult('2.5')", "str"), ("{'objective': '2.5'}", "str")],
)
def test_a_methods_objective_must_be_a_number(wf: WorkflowDir, reference: str, kind: str) -> None:
    result = _case(wf, "float(solution['v'])", reference, "MethodResult(2.5)")
    # today: the reference's True is 1.0, its "2.5" is 2.5, and the case is judged on them
    assert result.baseline is None and not result.passed, (result.baseline, result.verdict)
    assert kind in f"{result.message} {result.cause}", (result.message, result.cause)


def test_a_negative_stderr_gives_no_negative_plus_or_minus(wf: WorkflowDir) -> None:
    result = _case(
        wf,
        "float(solution['v'])",
        "MethodResult(2.0)",
        "MethodResult(2.5, stderr=-0.5)",
        {"kind": "relative_error", "tolerance": 0.0},
    )
    # today: accuracy 0.75, accuracy_pm -0.25, the case passing with nothing said
    assert result.accuracy_pm is None or result.accuracy_pm >= 0, result.accuracy_pm
    assert result.accuracy_pm is not None or not result.passed or result.warnings


CRASHES_THE_SECOND_TIME = """\
from pathlib import Path

from qiskit import QuantumCircuit
from qsolve import MethodResult

MARK = Path({mark!r})


def evaluate(input, solution):
    return float(solution["v"])


def reference(input, params, ctx):
    return MethodResult(1.0, solution={{"v": 1}})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    if MARK.exists():  # the second run of the case: a crash
        return 1 / 0
    MARK.write_text("ran")
    return MethodResult(1.0, solution={{"v": 1}})
"""


def _gates(wf: WorkflowDir) -> dict:
    def start() -> ModuleCode:
        return ModuleCode.load(wf.path("workflow.py"))

    return {g.name: g for g in judge(run_gates(wf.root, "sim-cpu", None, lambda e: None, start, start))}


def test_reproducible_names_the_crash_of_its_second_run(wf: WorkflowDir, tmp_path: Path) -> None:
    wf.write("workflow.py", CRASHES_THE_SECOND_TIME.format(mark=str(tmp_path / "ran-once")))
    wf.write("schemas/output.json", {"type": "object"})
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    reproducible = _gates(wf)["reproducible"]
    assert not reproducible.passed and "ctx.rng" in reproducible.message
    # today: "one ran again with method quantum's objective: 1.0 then None; ..."
    assert "ZeroDivisionError" in reproducible.message, reproducible.message


def test_the_pages_not_reproducible_sentence_names_the_crash() -> None:
    crashed = "failed: ZeroDivisionError: division by zero (workflow.py:29)"
    reference = {
        "name": "reference",
        "kind": "classical",
        "objective": 0.0,
        "available": True,
        "reason": None,
    }
    said = Nondeterministic(
        case_name="pair",
        target="sim-cpu",
        seed=4,
        params='{"shots":200}',
        result_hashes=2,
        runs=2,
        run_ids=["run-a", "run-b"],
        rounds=[datetime(2026, 12, 1, 12, 0, tzinfo=UTC), datetime(2026, 12, 2, 12, 0, tzinfo=UTC)],
        hashes=["a", "b"],
        passed=[True, False],
        answers=2,
        answered=[
            [
                {"name": "qaoa", "kind": "quantum", "objective": 0.0, "available": True, "reason": None},
                reference,
            ],
            [
                {"name": "qaoa", "kind": "quantum", "objective": None, "available": False, "reason": crashed},
                reference,
            ],
        ],
    ).sentence()
    # today: "... 2026-12-02 12:00 FAIL qaoa none reference 0.0); ..." while the row holds the crash
    assert "ZeroDivisionError" in said, said


ALWAYS_CRASHES = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return float(solution["v"])


def estimate(input, params):
    return {"circuits": 100, "shots": 10000}  # a hundred times what a run sends


def reference(input, params, ctx):
    return MethodResult(1.0, solution={"v": 1})


def quantum(input, params, ctx):
    if input["x"] == 0:
        return 1 / 0
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    return MethodResult(1.0, solution={"v": 1})
"""


def test_a_workflow_whose_every_case_crashes_passes_no_run_gate(wf: WorkflowDir) -> None:
    wf.write("workflow.py", ALWAYS_CRASHES)
    wf.write("schemas/output.json", {"type": "object"})
    wf.cases["cases"] = [{"name": "a", "input": {"x": 0}}, {"name": "b", "input": {"x": 0}, "seed": 2}]
    wf.save()
    gates = _gates(wf)
    assert not gates["cases_pass"].passed
    # the seed: "added only when at least one case ran to a result, so a workflow whose every case
    # raises shows six gates"; today both are there and pass ("ran again with the same result hash",
    # "note: a sent no circuits, nothing to compare")
    said = {
        name: (g.passed, g.message)
        for name, g in gates.items()
        if name in ("reproducible", "estimate_honest")
    }
    assert not any(passed for passed, _ in said.values()), said


def test_estimate_honest_judges_the_first_case_that_ran_to_a_result(wf: WorkflowDir) -> None:
    wf.write("workflow.py", ALWAYS_CRASHES)
    wf.write("schemas/output.json", {"type": "object"})
    wf.cases["cases"] = [{"name": "crashes", "input": {"x": 0}}, {"name": "runs", "input": {"x": 1}}]
    wf.save()
    gates = _gates(wf)
    # today: pass, "note: crashes sent no circuits, nothing to compare"; "runs" sent 1 circuit of 100
    # shots where estimate() says 100 circuits and 10000 shots
    assert not gates["estimate_honest"].passed, gates["estimate_honest"].message
    assert "runs" in gates["estimate_honest"].message, gates["estimate_honest"].message


def test_an_error_rate_above_one_is_named(wf: WorkflowDir) -> None:
    result = _case(
        wf,
        "float(solution['v'])",
        "MethodResult(0.1, details={'n_test': 100})",
        "MethodResult(1.5, details={'n_test': 100})",
        {"kind": "error_rate", "tolerance": 0.0},
    )
    # today: accuracy 0.0 (1 - 1.5, clamped), "Below the best classical answer", no warning, no message
    said = " ".join([result.message or "", result.cause or "", *result.warnings])
    assert "1.5" in said, (result.accuracy, result.message, result.warnings)


def test_the_page_tells_two_rounds_within_a_minute_apart() -> None:
    at = datetime(2026, 12, 1, 12, 0, 5, tzinfo=UTC)
    crashed = "failed: ZeroDivisionError: division by zero (workflow.py:29)"
    ok = [{"name": "quantum", "kind": "quantum", "objective": 0.0, "available": True, "reason": None}]
    failed = [
        {"name": "quantum", "kind": "quantum", "objective": None, "available": False, "reason": crashed}
    ]
    said = Nondeterministic(
        case_name="pair",
        target="sim-cpu",
        seed=4,
        params="{}",
        result_hashes=2,
        runs=3,
        run_ids=["run-a", "run-b", "run-c"],
        rounds=[at, at + timedelta(seconds=12), at + timedelta(seconds=24)],
        hashes=["a", "b", "b"],
        passed=[True, False, False],
        answers=2,
        answered=[ok, failed, failed],
    ).sentence()
    inside = said.split(" rounds (", 1)[1].split("); ", 1)[0]
    rounds = inside.split(", ")
    # today: "2026-12-01 12:00 FAIL quantum none" twice: which two runs, the page does not say
    assert len(set(rounds)) == len(rounds), rounds


def test_rounds_that_pass_then_fail_on_the_same_objectives_are_flagged(tmp_path: Path) -> None:
    import warnings

    from qsolve_pipeline.storage.trackrecord import file_rows
    from qsolve_pipeline.storage.trackrecord.sql import run_sql
    from qsolve_pipeline.storage.trackrecord.workflow_page import page
    from tests.storage.trackrecord import builders

    # A method random in its circuits (angles from numpy.random, not ctx.rng) that answers the same cut:
    # the same case, seed and params, its objectives equal, two rounds, one passing and one failing its
    # min_fidelity with other circuits, shots and result hashes. The reproducible gate would say
    # "method qaoa's circuits differ, the same answer or not" of a first case; on a third case nothing does.
    rows = [
        builders.row("round-1", case="third", minute=0, circuits=3, shots=12000, fidelity=0.99),
        builders.row("round-2", case="third", minute=10, circuits=2, shots=8000, fidelity=0.91, passed=False),
    ]
    assert rows[0].methods == rows[1].methods and rows[0].result_hash != rows[1].result_hash
    home = tmp_path / "home"
    file_rows(rows, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flagged = run_sql("SELECT case_name FROM nondeterministic", home).to_pylist()
        p = page("max-cut", home=home)
    # today: [] and no page warning, as the issue found before it was built
    assert flagged == [{"case_name": "third"}], flagged
    assert [n.case_name for n in p.nondeterministic] == ["third"]


@pytest.mark.parametrize(
    "key", ["max_gap", "max_abs_error", "min_fidelity", "min_postselection", "tolerance_abs"]
)
def test_a_bound_that_is_not_a_number_is_refused(wf: WorkflowDir, key: str) -> None:
    from qsolve.validation.checks import check_submission

    # `min_fidelity: .nan` on a fake: target passes fidelity_checked ("sets min_fidelity nan") and can
    # never fail a case (fidelity < nan is false); `max_gap: .nan` fails every case with
    # "gap 0 > max_gap nan"; `tolerance_abs: .nan` is said in the warning ("with tolerance_abs nan");
    # `qsolve test --json` prints each as null in the case's `expect`, as if it were not set
    if key == "tolerance_abs":
        wf.manifest["metric"] = {"kind": "relative_gap", "tolerance": 0.0, "tolerance_abs": float("nan")}
    else:
        wf.cases["cases"] = [
            {"name": "c", "input": {"x": 0}, "target": "fake:fez@1.6", "expect": {key: float("nan")}}
        ]
    wf.save()
    assert key in wf.path("manifest.yaml").read_text() + wf.path("benchmarks/cases.yaml").read_text()
    from qsolve.lint import lint

    refused = check_submission(wf.root).errors + [str(i) for i in lint(wf.root).errors]
    assert any(key in e for e in refused), f"{key}: .nan accepted ({refused})"


def test_a_tiny_baseline_that_is_not_zero_has_the_seeds_accuracy() -> None:
    from qsolve.judging.deciding import compare
    from qsolve.workflow.manifest import Metric

    # docs/validation.md: null "where the seed's formula is undefined, a baseline of 0"; at r = 1e-13
    # the seed's 1 - abs(q - r) / abs(r) is defined: 1 for the reference's own answer, 0.5 for 1.5e-13
    metric = Metric(kind="relative_error", tolerance=0.0)
    same, half = compare(metric, 1e-13, 1e-13, None, None), compare(metric, 1.5e-13, 1e-13, None, None)
    # today: accuracy None, "the baseline is 0: no relative accuracy", for both
    assert (same.accuracy, same.why_none) == (1.0, None), same
    assert half.accuracy == pytest.approx(0.5), half
