"""The command line's exit codes and output (DESIGN.md §5)."""

from __future__ import annotations

from qsolve.cli import main
from tests.conftest import REPO, WorkflowDir

MAX_CUT = str(REPO / "workflows" / "max-cut")


def test_the_parser_loads_no_command_it_does_not_run() -> None:
    import subprocess
    import sys

    code = (
        "import sys, qsolve.cli as c; c.build_parser(); "
        "print(sorted(m for m in sys.modules if 'receipts' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['qsolve.cli.receipts']"  # the command's parser, none of the verifier's modules


def test_lint_clean_exits_0(capsys) -> None:
    assert main(["lint", MAX_CUT]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


def test_lint_error_exits_1_and_prints_code_file_and_key(wf: WorkflowDir, capsys) -> None:
    wf.manifest["metric"] = {"kind": "accuracy"}
    wf.save()
    assert main(["lint", str(wf.root)]) == 1
    out = capsys.readouterr().out
    assert f"E020 {wf.root}/manifest.yaml: metric.kind: unknown metric kind 'accuracy'" in out
    assert "1 error, 0 warnings" in out


def test_lint_missing_folder_exits_2(tmp_path, capsys) -> None:
    assert main(["lint", str(tmp_path / "nowhere")]) == 2
    assert "not a workflow folder" in capsys.readouterr().err


def test_misuse_exits_2(capsys) -> None:
    assert main(["lint"]) == 2
    assert main(["no-such-command"]) == 2


def test_check_exits_1_naming_the_case(wf: WorkflowDir, capsys) -> None:
    wf.cases["cases"][1]["input_file"] = "../outside.json"
    wf.save()
    assert main(["check", str(wf.root)]) == 1
    out = capsys.readouterr().out
    assert "error: benchmarks/cases.yaml: cases[1] (two): input_file '../outside.json' contains '..'" in out


def test_check_passes_max_cut(capsys) -> None:
    assert main(["check", MAX_CUT]) == 0
    assert "6 cases and 1 hardware case pass the submission checks" in capsys.readouterr().out


def test_test_json_on_max_cut(capsys, monkeypatch) -> None:
    import json

    from qsolve.sandbox import process

    started = []

    class Counted(process.JobProcess):
        def __init__(self) -> None:
            started.append(self)
            super().__init__()

    from qsolve.validation import jobs

    monkeypatch.setattr(process, "JobProcess", Counted)
    monkeypatch.setattr("qsolve.sandbox.JobProcess", Counted)
    monkeypatch.setattr(jobs, "JobProcess", process.JobProcess.__mro__[1])  # the rerun's own: not counted
    assert main(["test", MAX_CUT, "--json"]) == 0
    assert len(started) == 1  # the child started ahead is the one that runs the job
    assert started[0].memory_mb == 2048
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"workflow", "version", "target", "checks", "gates", "cases"}
    assert (report["workflow"], report["target"], report["checks"]) == (
        "max-cut",
        "sim-cpu",
        {"ok": True, "errors": []},
    )
    assert [g["passed"] for g in report["gates"]] == [True] * 8
    keys = {
        "name",
        "target",
        "passed",
        "message",
        "quantum",
        "baseline",
        "gap",
        "abs_error",
        "accuracy",
        "accuracy_pm",
        "verdict",
        "fidelity",
        "coverage",
        "postselection",
        "max_two_qubit_gates",
        "circuits",
        "shots",
        "result_hash",
    }
    assert all(keys <= set(c) for c in report["cases"])
    noisy = next(c for c in report["cases"] if c["target"] == "fake:fez@1.6")
    assert noisy["fidelity"] >= 0.9 and noisy["max_two_qubit_gates"] <= 40


def test_test_refuses_unknown_target_and_case(capsys) -> None:
    assert main(["test", MAX_CUT, "--target", "gpu"]) == 2
    assert main(["test", MAX_CUT, "--target", "fake:fez@20"]) == 2
    assert "fake:fez@20: the scale must be from 1 to 10" in capsys.readouterr().err
    assert main(["test", MAX_CUT, "--case", "no-such-case"]) == 2
    assert "no case named 'no-such-case'" in capsys.readouterr().err


def test_test_stops_at_the_checks(wf: WorkflowDir, capsys) -> None:
    wf.cases["cases"][0]["input"] = {"x": -5}
    wf.save()
    assert main(["test", str(wf.root)]) == 1
    out = capsys.readouterr().out
    assert "Submission checks failed" in out and "cases[0] (one): input does not match" in out


def test_query_and_page_are_wired(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    assert main(["query", "select count(*) as n from rows", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "0"]
    assert main(["page", "never-published"]) == 2
    assert "never-published" in capsys.readouterr().err
    assert main(["query", "select * from no_such_view"]) == 2


def test_history_of_a_version_never_published_is_a_usage_error(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    assert main(["history", "never-published", "--version", "9.9.9"]) == 2
    assert "no published version never-published 9.9.9" in capsys.readouterr().err


def test_a_case_failing_its_gap_says_the_bound_while_its_json_message_stays_null(
    wf: WorkflowDir, capsys
) -> None:
    import json

    from tests.conftest import SAMPLING_MODULE

    worse = SAMPLING_MODULE.rsplit("return MethodResult(", 1)[0] + (
        'return MethodResult(1 - float(input["x"]), solution={"x": input["x"] - 1})\n'
    )
    wf.write("workflow.py", worse)  # one worse than the reference on every case: gap 1/x
    wf.save()
    assert main(["test", str(wf.root)]) == 1
    printed = capsys.readouterr()
    assert "one: FAIL gap 1 > max_gap 0 (" in printed.err  # the progress line
    assert "FAIL gap 0.5 > max_gap 0" in printed.out  # the table
    assert main(["test", str(wf.root), "--json"]) == 1
    (case, *_) = json.loads(capsys.readouterr().out)["cases"]
    assert (case["passed"], case["message"], case["bound"]) == (False, None, "gap 1 > max_gap 0")


def test_a_file_given_for_a_folder_says_it_is_a_file(capsys) -> None:
    assert main(["test", str(REPO / "README.md")]) == 2
    assert "README.md: is a file; give the workflow's folder" in capsys.readouterr().err


def test_an_unknown_fake_device_is_a_usage_error_naming_known_ones(capsys) -> None:
    assert main(["test", MAX_CUT, "--target", "fake:nosuch"]) == 2
    err = capsys.readouterr().err
    assert "fake:nosuch: no such fake device (known: " in err and "fez" in err


def test_a_prefect_server_that_does_not_answer_is_one_line_and_exit_2(monkeypatch, capsys) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert main(["submit", MAX_CUT]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qsolve: PREFECT_API_URL is http://127.0.0.1:9/api, and no")
