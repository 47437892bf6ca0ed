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
