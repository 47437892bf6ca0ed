"""What `qsolve test` prints while it runs and after."""

from __future__ import annotations

import io

from rich.console import Console

from qsolve.cli.report_view import Progress


def printed(events: list[dict]) -> str:
    out = io.StringIO()
    progress = Progress(Console(file=out, width=200, color_system=None))
    for event in events:
        progress(event)
    return out.getvalue()


def test_progress_says_fail_once_with_why() -> None:
    text = printed(
        [
            {"event": "case", "index": 0, "total": 2, "name": "a"},
            {"event": "result", "index": 0, "total": 2, "name": "a", "passed": True, "message": None},
            {"event": "case", "index": 1, "total": 2, "name": "b"},
            {
                "event": "result",
                "index": 1,
                "total": 2,
                "name": "b",
                "passed": False,
                "message": "FAIL ValueError: bad input",
            },
            {"event": "rerun", "name": "a"},
        ]
    )
    assert "[1/2] a: pass (" in text
    assert "[2/2] b: FAIL ValueError: bad input (" in text and "FAIL FAIL" not in text
    assert "running a again (reproducible)" in text


def test_a_failed_check_is_shown_with_its_message() -> None:
    text = printed(
        [
            {
                "event": "result",
                "index": 0,
                "total": 1,
                "name": "c",
                "passed": False,
                "message": "fidelity 0.91 < 0.97",
            }
        ]
    )
    assert "[1/1] c: FAIL fidelity 0.91 < 0.97 (" in text


def test_the_heading_names_the_folder_when_the_workflow_does_not_load(wf) -> None:
    from qsolve.cli.report_view import show
    from qsolve.validation.pipeline import validate

    wf.write("manifest.yaml", "name: [\n")
    out = io.StringIO()
    show(validate(wf.root), Console(file=out, width=200))
    assert out.getvalue().splitlines()[0] == f"{wf.root} on sim-cpu"


def test_the_metric_note_is_shown_beside_the_accuracy(wf) -> None:
    from qsolve.cli.report_view import show
    from qsolve.validation.pipeline import ValidationReport

    report = ValidationReport.model_validate(
        {"workflow": "w", "version": "1", "target": "sim-cpu", "checks": {"ok": True}, "metric_note": "Q"}
    )
    from qsolve.judging.results import CaseResult

    one = CaseResult(name="one", target="sim-cpu", seed=1, params={}, passed=True, message=None)
    report.cases.append(one)
    out = io.StringIO()
    show(report, Console(file=out, width=200))
    assert "accuracy: Q" in out.getvalue()


def test_the_heading_names_the_workflow_when_only_its_case_file_fails_the_checks(wf, monkeypatch) -> None:
    """It said ``. on sim-cpu`` for ``qsolve test .`` (issue 37): the manifest still names it."""
    from qsolve.cli.report_view import show
    from qsolve.validation.pipeline import validate

    wf.write("benchmarks/cases.yaml", "cases:\n  - name: one\n    input: {x: 1}\n    expect: {max_gapp: 0}\n")
    monkeypatch.chdir(wf.root)
    out = io.StringIO()
    report = validate(wf.root.relative_to(wf.root.parent).parent / ".")
    show(report, Console(file=out, width=200))
    assert out.getvalue().splitlines()[0] == f"{wf.manifest['name']} {wf.manifest['version']} on sim-cpu"


def test_a_case_message_is_not_wrapped_into_a_narrow_column() -> None:
    from qsolve.cli.report_view import print_cases
    from qsolve.judging.results import CaseResult

    why = "method qaoa failed: ZeroDivisionError: division by zero in a rather long message (workflow.py:41)"
    one = CaseResult(name="one", target="sim-cpu", seed=1, params={}, passed=False, message=why)
    out = io.StringIO()
    print_cases([one], Console(file=out, width=80, color_system=None))
    assert f"  one: FAIL {why}\n" in out.getvalue()  # one line below the table, however narrow
