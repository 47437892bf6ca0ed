"""``--json`` on every command that reports: lint, check, confirm and credits print one JSON object
(``test``, ``quote``, ``history``, ``maintenance`` and ``run`` have their own tests)."""

from __future__ import annotations

import json

import pytest

from qsolve.cli import main
from tests.conftest import WorkflowDir


def test_lint_json_lists_each_issue_with_its_code_file_and_key(wf: WorkflowDir, capsys) -> None:
    wf.manifest["metrik"] = wf.manifest.pop("metric")
    wf.save()
    assert main(["lint", str(wf.root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["ok"], out["errors"], out["warnings"]) == (False, 1, 0)
    (issue,) = out["issues"]
    assert issue == {
        "code": "E003", "severity": "error", "file": "manifest.yaml", "key": "metrik",
        "message": "unknown key; did you mean 'metric'?",
        "text": "E003 manifest.yaml: metrik: unknown key; did you mean 'metric'?",
    }  # fmt: skip


def test_check_json_says_ok_and_names_the_cases(wf: WorkflowDir, capsys) -> None:
    assert main(["check", str(wf.root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["ok"], out["cases"], out["hardware_cases"]) == (True, ["one", "two"], ["hw"])
    wf.cases["cases"][0]["expect"] = {"max_gapp": 0}
    wf.save()
    assert main(["check", str(wf.root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and "did you mean 'max_gap'?" in out["errors"][0]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return tmp_path / "home"


def test_credits_json(home, capsys) -> None:
    assert main(["credits", "grant", "dev", "2.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"account": "dev", "granted": "2.5", "balance": "2.5"}
    assert main(["credits", "balance", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"account": "dev", "balance": "2.5"}


def test_confirm_json_prints_the_confirmed_quote(home, tmp_path, capsys) -> None:
    from qsolve_pipeline.storage.state import connect
    from tests.flows.hardware_setup import add_reference, publish

    add_reference()
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
    capsys.readouterr()
    assert main(["quote", "hw-max-cut", "--target", "provider:ref", "--account", "dev", "--json"]) == 0
    (quote,) = json.loads(capsys.readouterr().out)["quotes"]
    assert main(["confirm", quote["id"], "--yes", "--account", "dev", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["id"], out["status"], out["run_id"]) == (quote["id"], "confirmed", quote["run_id"])
    assert out["authorised"] is not None and "started" in out
