"""``qsolve calibrate``: runs recorded with one line each and a summary, --json, --import, exit codes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from qsolve.cli.calibration import add_commands
from qsolve_pipeline.storage.calibration import open_store
from tests.qsolve.calibration.test_importing import folder, good


def calibrate(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["calibrate", *argv])
    return args.func(args)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    return tmp_path / "home"


def test_a_calibration_with_faults_is_recorded_and_summed_up(home: Path, capsys) -> None:
    code = calibrate("--tasks", "ReadoutClassification", "--qubits", "4-5", "--faults", "--day", "2026-12-03")
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert len(out) == 4
    assert out[0].split()[:5] == ["ReadoutClassification", "Q04", "completed", "true", "SUCCESS"]
    assert "POOR_READOUT (readout_near_half)" in out[2] and "average_readout_fidelity = 0.5" in out[2]
    assert out[3].startswith("3 task result(s) recorded for fake:fez on 2026-12-03: 3 completed, 0 failed")
    store = open_store(home)
    try:
        recorded = store.list(day="2026-12-03")
        assert [(r.qid, r.true_status) for r in recorded] == [
            ("Q04", "SUCCESS"), ("Q05", "SUCCESS"), ("Q05", "POOR_READOUT")
        ]  # fmt: skip
        latest = store.latest("ReadoutClassification", "fake:fez")
        assert [r.fault for r in latest] == [None, "readout_near_half"]
        assert all(store.figure_bytes(f) for r in recorded for f in r.figures)
    finally:
        store.close()


def test_json_prints_one_object(home: Path, capsys) -> None:
    assert calibrate("--tasks", "CheckRabi", "--qubits", "6", "--json", "--device", "fake:fez@1.6") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chip"] == "fake:fez@1.6" and report["summary"]["results"] == 1
    (row,) = report["results"]
    assert row["task"] == "CheckRabi" and row["qid"] == "Q06" and row["true_status"] == "SUCCESS"
    assert set(row["outputs"]) == {"pi_amplitude", "oscillations"} and len(row["figures"]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "CheckT3"], "unknown task"),
        (["--qubits", "x"], "not a number"),
        (["--day", "2026-13-01"], "not a day"),
        (["--device", "sim-cpu"], "fake:<device>"),
        (["--device", "fake:nosuch", "--tasks", "CheckT1", "--qubits", "0"], "no such fake device"),
    ],
)
def test_misuse_exits_2_saying_why(home: Path, capsys, argv: list[str], message: str) -> None:
    assert calibrate(*argv) == 2
    assert message in capsys.readouterr().err


def test_import_records_a_folder_or_nothing(home: Path, tmp_path: Path, capsys) -> None:
    root = folder(tmp_path / "in", {"t1.json": good()})
    assert calibrate("--import", str(root)) == 0
    assert "1 task result(s) imported" in capsys.readouterr().out
    bad = folder(tmp_path / "bad", {"t1.json": good(qid="Q9")})
    assert calibrate("--import", str(bad), "--json") == 2
    err = capsys.readouterr().err
    assert "t1.json: qid:" in err and "nothing imported" in err
    store = open_store(home)
    try:
        assert len(store.list()) == 1
    finally:
        store.close()


def test_write_examples_check_says_what_is_stale(tmp_path: Path, capsys) -> None:
    examples = tmp_path / "CheckRabi" / "examples"
    examples.mkdir(parents=True)
    (examples / "01-success.md").write_text(
        "---\ntype: qdash.calibration-example\nprofile: qdash-calibration/v1\ntitle: Healthy\n"
        "source: {chip: 'fake:fez', qubit: 10, fault: null, seed: 1}\n---\n# Healthy\n\nBody.\n"
    )
    assert calibrate("--write-examples", str(tmp_path), "--check") == 1
    assert "stale: CheckRabi/examples/01-success.md" in capsys.readouterr().out
    assert not (examples / "01-success.png").exists()
    assert calibrate("--write-examples", str(tmp_path)) == 0
    assert calibrate("--write-examples", str(tmp_path), "--check") == 0
    text = (examples / "01-success.md").read_text()
    assert "status: SUCCESS" in text and "figure: 01-success.png" in text and text.endswith("Body.\n")
    shipped = Path(__file__).resolve().parents[3] / "task-knowledge/CheckRabi/examples/01-success.png"
    assert (examples / "01-success.png").read_bytes() == shipped.read_bytes()
