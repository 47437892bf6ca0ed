"""A tester's attacks on issue 37 as merged (honest numbers at the edges), from the seed
(benchmarks-and-gates.md: the accuracy, the gap, the verdicts) and the issue's own promises, each a finding
that failed then (``xfail(strict=True)``) and passes since it was mended (i37-fix: the markers taken off, the
assertions kept).

- a run the state database stored before issue 37 (the seed's unclamped accuracy: -3999999999999 for a
  zero baseline, -1 for an answer twice as bad) is filed as it was stored, by the maintenance pass that
  upgrades an older home or files a backlog: the track record then holds accuracies outside [0, 1] and the
  page's headline is -100%;
- the same case run before the upgrade and after it (a deterministic method, same version, seed and
  params) hashes differently wherever the upgrade clamped or nulled the accuracy, so the
  ``nondeterministic`` view and the page call a platform upgrade the method's randomness ("must come from
  ctx.rng"); f744e54 meant runs from before and after issue 37 to hash the same;
- the page shows no warning of a row on a device target (a zero baseline, the quantum method beating an
  exact reference): its accuracy is blank with nothing saying why;
- with a zero baseline and a relative ``tolerance``, a quantum objective a hair above 0 is judged a match by
  the relative rule, whose accuracy is undefined there (the docs: the verdict is then decided by
  ``tolerance_abs``, or ``q <= r`` for ``relative_gap``);
- with ``metric.tolerance_abs`` set, a zero baseline's result never says its verdict came from
  ``tolerance_abs`` (``Comparison.why_none`` is computed and dropped), and its warning says to set it;
- a method random only in its ``stderr`` fails ``reproducible`` naming a platform number
  (``accuracy_pm``), not the method's own value;
- the web list's card shows the headline without saying how many rows had none, and "no accuracy yet" for
  a workflow whose every row has a zero baseline;
- W043's message of a keyword-only ``ctx`` reads ``quantum(input, params, ctx) ... cannot be called as
  quantum(input, params, ctx)``; a method written as a top-level lambda of the wrong arity gets no W043.
"""

from __future__ import annotations

import re
import warnings
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from rich.console import Console

from qsolve.judging.deciding import BELOW, compare
from qsolve.judging.results import MethodOutcome
from qsolve.lint import lint
from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.case_runner import run_case
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.manifest import Metric
from qsolve.workflow.module_loader import load_module
from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import CreditSettings, connect
from qsolve_pipeline.storage.trackrecord import file_rows
from qsolve_pipeline.storage.trackrecord.row import TrackRecordRow
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from qsolve_pipeline.storage.trackrecord.workflow_page import page, render_page
from tests.conftest import WorkflowDir
from tests.storage.trackrecord import builders

START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SETTINGS = CreditSettings(
    per_run_limit=Decimal(50), history_run_limit=Decimal(20), history_run_seconds=900, prices={}
)
MATCHES = "Matches the best classical answer"


def _stored_before_issue_37(name: str, q: float, r: float, accuracy: float) -> dict:
    """A case result as the platform stored it before issue 37: the seed's accuracy unclamped, no
    ``expect`` and no ``warnings`` keys."""
    result = builders.result(
        name=name,
        target="sim-cpu",
        quantum=q,
        baseline=r,
        gap=(q - r) / max(abs(r), 1e-12),
        abs_error=abs(q - r),
        accuracy=accuracy,
        verdict=BELOW if q > r else MATCHES,
        methods=[
            MethodOutcome(name="qaoa", kind="quantum", objective=q),
            MethodOutcome(name="reference", kind="classical", objective=r),
        ],
    )
    stored = result.model_dump(mode="json")
    del stored["expect"], stored["warnings"]
    return stored


def test_runs_stored_before_issue_37_are_filed_with_accuracies_in_0_1(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'state.db'}", home=tmp_path, settings=SETTINGS) as db:
        version = db.publish_version("sat", "1.0.0", "d1" * 32, [])[0]
        # the issue's "minimise the unsatisfied weight" (reference 0), an answer twice as bad, an exact one
        for name, q, r, accuracy in [("zero", 4.0, 0.0, -3999999999999.0), ("worse", 3.0, 1.0, -1.0),
                                     ("exact", 1.0, 1.0, 1.0)]:  # fmt: skip
            run = db.create_run(version, name, "sim-cpu", "history")
            db.start_run(run.id)
            db.finish_run(run.id, "finished", result=_stored_before_issue_37(name, q, r, accuracy))
        home = tmp_path / "home"
        maintenance.file_ended_runs(db, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = run_sql("SELECT case_name, accuracy FROM rows", home)
        accuracies = dict(
            zip(table.column("case_name").to_pylist(), table.column("accuracy").to_pylist(), strict=True)
        )
        p = page("sat", home=home)
    assert all(a is None or 0.0 <= a <= 1.0 for a in accuracies.values()), accuracies
    assert accuracies["zero"] is None  # the baseline is 0: no relative accuracy
    assert p.headline_accuracy is not None and 0.0 <= p.headline_accuracy <= 1.0
    assert p.without_accuracy == 1


def test_a_platform_upgrade_is_not_flagged_as_a_methods_randomness(wf: WorkflowDir, tmp_path: Path) -> None:
    wf.write(
        "workflow.py",
        """\
from qiskit import QuantumCircuit
from qsolve import MethodResult

REFERENCE = {0: 0.0, 1: 1.0}
QUANTUM = {0: 4.0, 1: 3.0}  # a zero baseline; an answer three times the reference's


def evaluate(input, solution):
    return float(solution["v"])


def reference(input, params, ctx):
    return MethodResult(REFERENCE[input["x"]], solution={"v": REFERENCE[input["x"]]})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    return MethodResult(QUANTUM[input["x"]], solution={"v": QUANTUM[input["x"]]})
""",
    )
    wf.write("schemas/output.json", {"type": "object"})
    wf.cases["cases"] = [
        {"name": "zero", "input": {"x": 0}, "expect": {"max_abs_error": 100}},
        {"name": "worse", "input": {"x": 1}, "expect": {"max_gap": 5}},
    ]
    wf.save()
    workflow = load_workflow(wf.root)
    code = ModuleCode(load_module(workflow.module_path))
    rows = []
    for i, case in enumerate(workflow.cases.cases):
        now = run_case(workflow.manifest, code, case, case.input, "sim-cpu")
        assert now.accuracy in (None, 0.0)  # nulled (zero baseline), clamped (1 - 2)
        seed_formula = 1 - max((now.quantum - now.baseline) / max(abs(now.baseline), 1e-12), 0.0)
        # the same run as the platform filed it before issue 37: the seed's number, unclamped
        before = now.model_copy(update={"accuracy": seed_formula, "warnings": [], "expect": None}).with_hash()
        for j, result in enumerate([before, now]):
            rows.append(
                TrackRecordRow.from_result(
                    result,
                    workflow="tiny",
                    version="1.0.0",
                    source="history",
                    run_id=f"r{i}{j}",
                    device="aer_simulator",
                    credits=0,
                    recorded_at=START + timedelta(days=j, minutes=i),
                )  # fmt: skip
            )
    home = tmp_path / "home"
    file_rows(rows, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flagged = run_sql("SELECT case_name FROM nondeterministic", home).to_pylist()
        p = page("tiny", home=home)
    assert flagged == []
    assert p.nondeterministic == []


def test_the_page_shows_the_warnings_of_a_device_row(tmp_path: Path) -> None:
    zero = (
        "the baseline is 0: no relative accuracy, so this case has none and is left out of the headline: "
        "add a constant to evaluate so that the reference's objective is not 0, or set metric.tolerance_abs"
    )
    rows = [
        builders.row("s1", case="ring-6", minute=0),
        builders.row(
            "h1",
            case="hw-zero",
            target="ibm:ibm_fez",
            minute=1,
            accuracy=None,
            verdict=BELOW,
            quantum=4.0,
            baseline=0.0,
            gap=4e12,
            abs_error=4.0,
            warnings=[zero],
        ),  # fmt: skip
    ]
    home = tmp_path / "home"
    file_rows(rows, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = page("max-cut", home=home)
    assert [r.run_id for r in p.on_hardware] == ["h1"]
    console = Console(record=True, width=400)
    render_page(p, console)
    assert "the baseline is 0: no relative accuracy" in console.export_text()


def test_a_zero_baseline_verdict_never_comes_from_the_relative_rule() -> None:
    # no tolerance_abs, q > r: docs/writing-a-workflow.md says the verdict is tolerance_abs's or q <= r's
    assert compare(Metric(kind="relative_gap", tolerance=0.5), 4e-13, 0.0, None, None).verdict == BELOW
    assert compare(Metric(kind="relative_error", tolerance=0.5), -4e-13, 0.0, None, None).verdict == BELOW


LINT_BASE = """\
from qsolve import MethodResult


def evaluate(input, solution):
    return -float(solution["x"])


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})

"""


def test_w043_names_the_signature_as_written(wf: WorkflowDir) -> None:
    wf.write("workflow.py", LINT_BASE + "\ndef quantum(input, params, *, ctx):\n    pass\n")
    (issue,) = [i for i in lint(wf.root).issues if i.code == "W043"]
    assert "quantum(input, params, *, ctx)" in issue.message, issue.message


def test_w043_sees_a_top_level_lambda(wf: WorkflowDir) -> None:
    wf.write("workflow.py", LINT_BASE + "\nquantum = lambda input, ctx: MethodResult(-1.0)\n")
    codes = [i.code for i in lint(wf.root).issues]
    assert "E042" not in codes  # lint takes the lambda for the method...
    assert "W043" in codes  # ...and should see that it cannot take (input, params, ctx)


def test_the_cards_headline_says_how_many_rows_had_none(tmp_path: Path, monkeypatch) -> None:
    from fastapi.testclient import TestClient

    from qsolve.web.app import create_app

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    zero = "the baseline is 0: no relative accuracy, so this case has none and is left out of the headline"
    file_rows(
        [
            builders.row("s1", case="ring-6", minute=0),
            builders.row("s2", case="zero", minute=1, accuracy=None, verdict=BELOW, warnings=[zero]),
            builders.row(
                "q1",
                workflow="qubo",
                version="2",
                case="a",
                minute=2,
                accuracy=None,
                verdict=BELOW,
                warnings=[zero],
            ),
        ],  # fmt: skip
        home,
    )
    with TestClient(create_app(home), base_url="http://127.0.0.1:8000", follow_redirects=False) as client:
        html = client.get("/workflows").text
    cards = dict(re.findall(r'<article class="card" data-workflow="([^"]+)">(.*?)</article>', html, re.S))
    assert "100.0%" in cards["max-cut"]
    # as the workflow's own page says it: "1 row has none: the baseline is 0 in 1"
    assert "none" in cards["max-cut"] or "without" in cards["max-cut"], cards["max-cut"]
    assert "no accuracy yet" not in cards["qubo"], cards["qubo"]  # it ran: its baseline is 0


def test_reproducible_names_a_methods_own_stderr(wf: WorkflowDir) -> None:
    from qsolve.validation.gate_run import run_gates
    from qsolve.validation.gates import judge

    wf.write(
        "workflow.py",
        """\
import os

from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return -float(solution["x"])


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    noise = int.from_bytes(os.urandom(4), "big") / 2**32  # not ctx.rng
    return MethodResult(-1.0, solution={"x": 1}, stderr=0.01 + noise / 10)
""",
    )
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()

    def start() -> ModuleCode:
        return ModuleCode.load(wf.path("workflow.py"))

    gate = {g.name: g for g in judge(run_gates(wf.root, "sim-cpu", None, lambda e: None, start, start))}
    reproducible = gate["reproducible"]
    assert not reproducible.passed and "ctx.rng" in reproducible.message
    assert reproducible.message.startswith("one ran again with method quantum's stderr: "), (
        reproducible.message
    )


def test_a_zero_baseline_judged_by_tolerance_abs_says_so(wf: WorkflowDir) -> None:
    import json

    wf.write(
        "workflow.py",
        """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return float(solution["v"])


def reference(input, params, ctx):
    return MethodResult(0.0, solution={"v": 0})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    return MethodResult(4.0, solution={"v": 4})
""",
    )
    wf.write("schemas/output.json", {"type": "object"})
    wf.manifest["metric"] = {"kind": "relative_gap", "tolerance": 0.0, "tolerance_abs": 5.0}
    wf.cases["cases"] = [{"name": "zero", "input": {"x": 0}, "expect": {"max_abs_error": 5}}]
    wf.save()
    workflow = load_workflow(wf.root)
    (case,) = workflow.cases.cases
    result = run_case(
        workflow.manifest, ModuleCode(load_module(workflow.module_path)), case, case.input, "sim-cpu"
    )
    assert (result.accuracy, result.verdict) == (None, MATCHES)  # by tolerance_abs: abs error 4 <= 5
    said = json.dumps(result.summary())  # what qsolve test --json prints of the case
    assert "tolerance_abs 5" in said, said  # the issue: "the absolute difference judged by tolerance_abs"
    assert not any(w.endswith("or set metric.tolerance_abs") for w in result.warnings), result.warnings
