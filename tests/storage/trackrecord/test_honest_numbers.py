"""Honest numbers at the edges (issue 37), end to end without the sandbox: a workflow with a zero
baseline, a sign mistake, a method that changes between rounds on its third case and a method that
crashes, its cases run by the platform's case runner (in this process, as tests/qsolve/test_judging.py
does), shown as ``qsolve test`` shows them, filed over three rounds, and read back by the page and by
plain DuckDB. Each problem gets a number that means what it says and a sentence that names it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest
from rich.console import Console

from qsolve.cli.report_view import show
from qsolve.judging.deciding import MATCHES, NOT_COMPARED
from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.case_runner import run_case
from qsolve.validation.pipeline import ChecksSummary, ValidationReport
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.module_loader import load_module
from qsolve_pipeline.storage.trackrecord import file_rows
from qsolve_pipeline.storage.trackrecord.row import TrackRecordRow
from qsolve_pipeline.storage.trackrecord.workflow_page import page, render_page
from tests.conftest import WorkflowDir

MODULE = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult

ROUNDS = []
REFERENCE = {0: 0, 1: 89, 3: 3, 4: 2}  # x -> the reference's answer


def evaluate(input, solution):
    return float(solution["x"])  # the sign mistake of case 1: a weight to maximise, scored as it is


def reference(input, params, ctx):
    return MethodResult(float(REFERENCE[input["x"]]), solution={"x": REFERENCE[input["x"]]})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 100)
    x = input["x"]
    if x == 4:
        return 1 / 0  # crashes
    if x == 3:  # state kept between runs: a different answer every other round
        ROUNDS.append(1)
        answer = 3 + len(ROUNDS) % 2
    else:
        answer = {0: 4, 1: 86}[x]
    return MethodResult(float(answer), solution={"x": answer})
"""

CASES = [
    {"name": "zero", "input": {"x": 0}, "expect": {"max_abs_error": 100}},
    {"name": "sign", "input": {"x": 1}},
    {"name": "flaky", "input": {"x": 3}},
    {"name": "crash", "input": {"x": 4}},
]
START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_zero_baseline_a_sign_mistake_a_flaky_and_a_crashing_method(wf: WorkflowDir, tmp_path) -> None:
    wf.write("workflow.py", MODULE)
    wf.cases["cases"] = CASES
    wf.save()
    workflow = load_workflow(wf.root)
    code = ModuleCode(load_module(workflow.module_path))
    cases = {c.name: c for c in workflow.cases.cases}

    def run(name: str):
        return run_case(workflow.manifest, code, cases[name], cases[name].input, "sim-cpu")

    first = [run(name) for name in cases]
    zero, sign, flaky, crash = first

    # qsolve test: the numbers and the warnings, never a changed verdict
    assert (zero.passed, zero.accuracy, zero.verdict) == (True, None, "Below the best classical answer")
    assert (sign.passed, sign.accuracy, sign.verdict) == (True, 1.0, MATCHES)
    assert crash.message == "no headline metric: quantum and reference could not be compared"
    report = ValidationReport(
        workflow="honest", version="1.0.0", target="sim-cpu", checks=ChecksSummary(ok=True), cases=first
    )
    said = report.to_json()["warnings"]
    assert said[0].startswith("zero on sim-cpu: the baseline is 0: no relative accuracy")
    assert said[1].startswith("sign on sim-cpu: quantum method quantum beat the reference: 86 against 89")
    assert len(said) == 2 and report.to_json()["cases"][0]["warnings"] == zero.warnings
    console = Console(record=True, width=200)
    show(report, console)
    text = console.export_text()
    assert "warning: zero on sim-cpu: the baseline is 0" in text
    assert "is `evaluate` lower-is-better" in text

    # three rounds filed: the flaky case's answer changes between them
    home = tmp_path / "home"
    results = [*first, run("flaky"), run("flaky")]
    rows = [
        TrackRecordRow.from_result(
            r,
            workflow="honest",
            version="1.0.0",
            source="history",
            run_id=f"r{i}",
            device="aer_simulator",
            credits=0,
            recorded_at=START + timedelta(minutes=i),
        )
        for i, r in enumerate(results)
    ]
    file_rows(rows, home)
    by_id = {r.run_id: r for r in rows}
    assert (by_id["r3"].status, by_id["r3"].verdict) == ("crash", NOT_COMPARED)
    assert by_id["r3"].reason.startswith("method quantum failed: ZeroDivisionError: division by zero")
    assert by_id["r2"].reason == "gap 0.3333 > max_gap 0" and '"max_gap":0.0' in by_id["r2"].expect
    assert by_id["r0"].accuracy is None and by_id["r0"].warnings == zero.warnings

    # the page
    p = page("honest", home=home)
    assert p.headline_accuracy == pytest.approx(5 / 6) and p.without_accuracy == 2  # sign 1, flaky 2/3
    assert p.none_said() == "2 rows have none: the baseline is 0 in 1, nothing compared in 1"
    assert [(n.case_name, n.runs, n.answers, n.run_ids) for n in p.nondeterministic] == [
        ("flaky", 3, 2, ["r2", "r4", "r5"])
    ]
    console = Console(record=True, width=400)
    render_page(p, console)
    text = console.export_text()
    said = [
        "(median of 2 track-record rows; 2 rows have none: the baseline is 0 in 1, nothing compared in 1)",
        'flaky on sim-cpu (seed 0, params {"shots":100}) is not reproducible: 2 different answers over 3 '
        "rounds",
        "2026-12-01 12:02:00 r2 FAIL",
        "must come from ctx.rng",
        "CRASH: method quantum failed: ZeroDivisionError",
        "warning: sign on sim-cpu: quantum method quantum beat",
        "warning: zero on sim-cpu: the baseline is 0",
    ]
    assert [s for s in said if s not in text] == []

    # plain DuckDB, as an analyst opens the home
    con = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    try:
        match = "SELECT bool_and(verdict = 'Matches the best classical answer') FROM track_record"
        assert con.sql(match).fetchall() == [(False,)]  # the crash is not a match, nor unknown
        why = con.sql("SELECT reason, count(*) FROM rows WHERE NOT passed GROUP BY reason ORDER BY 1")
        assert [r[0] for r in why.fetchall()] == [
            "gap 0.3333 > max_gap 0",
            by_id["r3"].reason,
        ]
        flagged = "SELECT case_name, runs, result_hashes, passed FROM nondeterministic"
        assert con.sql(flagged).fetchall() == [("flaky", 3, 2, [False, True, False])]
        cards = "SELECT headline_accuracy, without_accuracy FROM workflow_cards"
        assert con.sql(cards).fetchall() == [(pytest.approx(5 / 6), 2)]
    finally:
        con.close()


def test_a_headline_no_row_can_have_says_none_not_none_yet(tmp_path, monkeypatch) -> None:
    """Every track-record row ran and has no accuracy (a zero baseline, a crash): the page, in the
    terminal and on the web, says the headline is none and why, never "none yet", which waits for a row
    that will come (the web list's card already said "no accuracy")."""
    from fastapi.testclient import TestClient

    from qsolve.judging.deciding import BELOW, ZERO_BASELINE
    from qsolve.web.app import create_app
    from tests.storage.trackrecord import builders

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    zero = f"{ZERO_BASELINE}, so this case has none and is left out of the headline"
    file_rows(
        [
            builders.row("z1", case="zero", accuracy=None, verdict=BELOW, warnings=[zero]),
            builders.row(
                "c1",
                case="crash",
                minute=1,
                passed=False,
                accuracy=None,
                status="crash",
                verdict=NOT_COMPARED,
                quantum=None,
                gap=None,
                abs_error=None,
            ),
        ],  # fmt: skip
        home,
    )
    said = "Headline accuracy: none (2 rows have none: the baseline is 0 in 1, nothing compared in 1)"
    console = Console(record=True, width=400)
    render_page(page("max-cut", home=home), console)
    text = console.export_text()
    assert said in text and "none yet" not in text
    with TestClient(create_app(home), base_url="http://127.0.0.1:8000", follow_redirects=False) as client:
        html = client.get("/workflows/max-cut").text
    assert (
        'Headline accuracy: <span class="none">none (2 rows have none: the baseline is 0 in 1, nothing '
        in html
    )
    assert "none yet" not in html


def test_a_row_whose_error_rate_is_no_share_says_why_it_has_no_accuracy(tmp_path) -> None:
    """Issue 37 (attack 2, finding 6): an error_rate objective of 1.5 leaves the row without accuracy;
    the page says why, beside the headline, as it does for a zero baseline."""
    import warnings

    from qsolve.judging.deciding import BELOW, case_warnings
    from qsolve.judging.results import MethodOutcome
    from qsolve.workflow.manifest import Metric
    from qsolve_pipeline.storage.trackrecord import file_rows
    from qsolve_pipeline.storage.trackrecord.workflow_page import page
    from tests.storage.trackrecord import builders

    quantum = MethodOutcome(name="qsvm", kind="quantum", objective=1.5)
    said = case_warnings(Metric(kind="error_rate"), quantum, 1.5, 0.1)
    rows = [
        builders.row("a", case="counts", accuracy=None, verdict=BELOW, warnings=said),
        builders.row("b", case="fine", minute=1),
    ]
    home = tmp_path / "home"
    file_rows(rows, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = page("max-cut", home=home)
    assert p.headline_accuracy == 1.0 and p.without_accuracy == 1
    assert p.none_said() == "1 row has none: an error rate that is no share in 1"
