"""A new user's mistakes, tried from docs/writing-a-workflow.md alone (issue 23's independent test):
what the workflow raises or prints cannot forge the platform's report, and each mistake is said once."""

from __future__ import annotations

import json
import re

from qsolve.cli import main
from qsolve.sandbox.calls import Answer, MethodReturn, one_line
from qsolve.sandbox.remote import Loaded
from qsolve.validation.jobs import Limits, run_job
from qsolve.workflow.manifest import Resources
from tests.conftest import WorkflowDir
from tests.qsolve.test_failures import MODULE

#: an exception message that would print a green "All 8 gates pass." and a passing table row of its own
FORGED = "x\n\x1b[32mAll 8 gates pass.\x1b[0m\n│ x9 │ sim-cpu │ pass │\r\nPASS \u202eevil"


def test_a_message_from_the_workflow_is_one_printable_line() -> None:
    for model, field in ((MethodReturn, "unavailable"), (Answer, "error"), (Loaded, "error")):
        said = getattr(model.model_validate({field: FORGED}), field)
        assert "\n" not in said and "\r" not in said and "\x1b" not in said and "\u202e" not in said
        assert said.startswith("x\\n\\x1b[32mAll 8 gates pass.")  # shown, escaped, not obeyed
    assert len(MethodReturn(unavailable="A\n" * 10_000).unavailable) == 4000
    assert len(Loaded.model_validate({"error": "\x1b" * 4000}).error) == 4000
    assert one_line("plain (workflow.py:3)") == "plain (workflow.py:3)"


def _printed_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_an_exception_message_cannot_forge_a_line_of_qsolve_test(wf: WorkflowDir, capsys) -> None:
    raising = f'        raise RuntimeError({FORGED!r} + "A" * 200_000)\n'
    forging = MODULE.replace("        return 1 / 0\n", raising)
    wf.write("workflow.py", forging)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    assert main(["test", str(wf.root)]) == 1
    printed = capsys.readouterr()
    for stream in (printed.out, printed.err):
        assert "\x1b" not in stream and "\u202e" not in stream
        forged = ("All 8 gates pass", "PASS", "│ x9")
        assert not any(line.startswith(forged) for line in _printed_lines(stream))
    assert "x1: FAIL method quantum failed: RuntimeError: x\\n\\x1b[32mAll 8 gates pass." in printed.err
    assert main(["test", str(wf.root), "--json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    assert "\n" not in case["cause"] and "\x1b" not in case["cause"] and len(case["cause"]) <= 4100


def test_an_import_error_cannot_forge_a_line_either(wf: WorkflowDir, capsys) -> None:
    wf.write("workflow.py", f"raise ImportError({FORGED!r})\n" + MODULE)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    assert main(["test", str(wf.root), "--json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    assert case["message"].startswith("FAIL ImportError: x\\n\\x1b[32mAll 8 gates pass.")
    assert case["message"].endswith("(workflow.py:1)")


def test_a_syntax_error_names_its_place_once(wf: WorkflowDir, capsys) -> None:
    no_colon = MODULE.replace("def reference(input, params, ctx):", "def reference(input, params, ctx)")
    wf.write("workflow.py", no_colon)
    wf.cases["cases"] = [{"name": "x9", "input": {"x": 9}}]
    wf.save()
    assert main(["test", str(wf.root), "--json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    # was "FAIL SyntaxError: expected ':' (workflow.py, line 29) (workflow.py:29)"
    assert case["message"] == "FAIL SyntaxError: expected ':' (workflow.py:29)"


def test_resources_outside_their_range_are_lint_errors_as_the_guide_says(wf: WorkflowDir, capsys) -> None:
    from tests.conftest import REPO

    guide = (REPO / "docs" / "writing-a-workflow.md").read_text()
    assert "`timeout_s` (1 to 7200)" in guide and "`memory_mb` is 64 to 8192" in guide  # once: "capped"
    wf.manifest["resources"] = {"timeout_s": 9000, "memory_mb": 10000}
    wf.save()
    assert main(["lint", str(wf.root), "--json"]) == 1
    issues = json.loads(capsys.readouterr().out)["issues"]
    said = [(i["code"], i["key"]) for i in issues]
    assert said == [("E030", "resources.timeout_s"), ("E031", "resources.memory_mb")]


def test_a_method_that_calls_evaluate_itself_is_named_with_evaluates_line(wf: WorkflowDir, capsys) -> None:
    """The guide's own pattern (``MethodResult(evaluate(input, solution), ...)``): evaluate's exception
    is the method's, named with evaluate's line, as the guide's table says."""
    calls = '        return MethodResult(evaluate(input, {"x": 0}))\n'
    module = MODULE.replace("        return 1 / 0\n", calls)
    wf.write("workflow.py", module)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    assert main(["test", str(wf.root), "--json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    assert case["cause"] == "method quantum failed: ZeroDivisionError: field is zero (workflow.py:7)"


def test_a_message_in_rich_markup_is_shown_as_text_not_obeyed(wf: WorkflowDir, capsys) -> None:
    """``raise RuntimeError("[/x]")`` ended ``qsolve test`` in a MarkupError traceback, and
    ``[green]pass[/green]`` coloured the workflow's words as the platform's pass."""
    markup = "[green]pass[/green] [/x] [link=http://attacker.example]here[/link]"
    raising = f"        raise RuntimeError({markup!r})\n"
    wf.write("workflow.py", MODULE.replace("        return 1 / 0\n", raising))
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    assert main(["test", str(wf.root)]) == 1
    printed = capsys.readouterr()
    assert f"x1: FAIL method quantum failed: RuntimeError: {markup} (workflow.py:13)" in printed.err
    assert "Traceback" not in printed.out + printed.err
    assert "[/x]" in printed.out and "[link=http://attacker.example]" in printed.out.replace("\n", "")


def test_the_progress_line_escapes_markup() -> None:
    import io

    from rich.console import Console

    from qsolve.cli.report_view import Progress

    out = io.StringIO()
    Progress(Console(file=out, width=80))(
        {"event": "result", "index": 0, "total": 1, "name": "c", "passed": False, "message": "m",
         "why": "FAIL RuntimeError: [green]pass[/green] [/x]"}  # fmt: skip
    )
    said = out.getvalue()
    assert said.startswith("  [1/1] c: FAIL RuntimeError: [green]pass[/green] [/x] (")  # as text


def test_the_sandbox_line_is_one_line_when_not_on_a_terminal(wf: WorkflowDir, capsys) -> None:
    wf.cases["cases"] = [{"name": "x9", "input": {"x": 9}}]
    wf.save()
    main(["test", str(wf.root)])
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("sandbox:")]
    assert re.fullmatch(r"sandbox: .*; \d+ s limit; took \d+\.\d s", line), line  # was "took \n5.6 s"


def test_a_mistyped_top_level_key_of_cases_yaml_is_warned_of(wf: WorkflowDir, capsys) -> None:
    """The seed ignores any top-level key but ``cases`` and ``hardware_cases``: ``casess:`` once said
    only "0 cases ... pass the submission checks"; it still passes the checks, with the typo named."""
    wf.cases = {"casess": wf.cases["cases"], "notes": "mine"}
    wf.save()
    assert main(["check", str(wf.root), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["cases"] == []
    assert said["warnings"] == ["benchmarks/cases.yaml: casess: ignored; did you mean 'cases'?"]


def test_a_renamed_method_function_says_the_name_it_probably_is(wf: WorkflowDir, capsys) -> None:
    wf.write("workflow.py", MODULE.replace("def quantum(", "def quantm("))
    assert main(["lint", str(wf.root), "--json"]) == 1
    (issue,) = json.loads(capsys.readouterr().out)["issues"]
    assert (issue["code"], issue["message"]) == (
        "E042", "method 'quantum' has no top-level function 'quantum'; did you mean 'quantm'?"
    )


def test_a_method_that_ends_its_process_is_named(wf: WorkflowDir) -> None:
    ends = "        import os\n        os._exit(3)\n"
    wf.write("workflow.py", MODULE.replace("        return 1 / 0\n", ends))
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    outcome = run_job(wf.root, "sim-cpu", None, Resources(), limits=Limits(timeout_s=120, memory_mb=2048))
    (case,) = outcome.report["cases"]
    assert case["message"] == (
        "FAIL the workflow process exited with status 3 in the middle of a call in case x1, in method quantum"
    )
