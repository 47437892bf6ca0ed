"""The command line's exit codes and output (DESIGN.md §5)."""

from __future__ import annotations

from qsolve.cli import main
from tests.conftest import REPO, WorkflowDir

MAX_CUT = str(REPO / "workflows" / "max-cut")


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
