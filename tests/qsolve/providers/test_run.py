"""``qsolve run DIR --case NAME --target provider:NAME [--yes] --json`` against the reference provider, as a
process and over HTTP, free and unpriced (quantum-provider-protocol §7, §8.1): the case, its receipts,
each valid, and nothing in the track record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.providers.client import ProviderClient
from qsolve.receipts import verify
from qsolve_pipeline.storage.state import connect

REPO = Path(__file__).resolve().parents[3]
MAX_CUT = str(REPO / "workflows" / "max-cut")
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture(scope="module")
def http_reference(tmp_path_factory):
    """The HTTP reference: its URL and the folder it keeps its jobs in (one file a submit it took)."""
    jobs = tmp_path_factory.mktemp("http-jobs")
    proc = subprocess.Popen(
        [*REFERENCE, "--http", "127.0.0.1:0", "--quiet", "--jobs", str(jobs)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        yield url, jobs
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(capsys, target: str, *flags: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", target, "--json", *flags])
    return code, json.loads(capsys.readouterr().out)


def receipts_of(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        verdict = verify(text)
        assert verdict.valid, (path, verdict.reasons)
        out.append(json.loads(text))
    return out


def no_track_record(home: Path) -> None:
    assert not (home / "trackrecord").exists()
    assert not (home / "trackrecord.duckdb").exists()


def free_run_holds(home: Path, capsys, kind: str) -> None:
    code, got = run(capsys, "provider:ref")
    assert code == 0
    case = got["case"]
    assert case["name"] == "single-edge" and case["passed"] is True and case["target"] == "provider:ref"
    assert got["receipts"] and len(got["receipts"]) == case["circuits"]
    for job in receipts_of(got["receipts"]):
        result = job["result"]
        assert result["method"] == "provider" and result["accuracy"]["class"] == "simulated"
        assert result["provider"]["kind"] == kind and result["provider"]["name"] == "ref"
        assert result["provider"]["provenance"].startswith("simulator: qiskit-aer")
        assert result["cost"]["free"] is True and result["cost"]["confirmed"] is False
        assert job["request"]["provider"] == "ref"
    with connect(home=home) as db:
        jobs = db.list_provider_jobs()
    assert [j.status for j in jobs] == ["done"] * len(got["receipts"])
    assert sorted(Path(p).name for p in got["receipts"]) == sorted(j.receipt for j in jobs)
    no_track_record(home)


def test_run_on_the_process_reference(home, capsys, tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()  # what it writes: made here, and allowed by name (nothing else is writable)
    argv = [*REFERENCE, "--stdio", "--jobs", str(jobs)]
    assert main(["providers", "add", "ref", "--process", "--allow-write", str(jobs), "--", *argv]) == 0
    free_run_holds(home, capsys, "process")
    with connect(home=home) as db:
        assert len(list(jobs.glob("ref-*.json"))) == len(db.list_provider_jobs())


def test_run_on_the_http_reference(home, capsys, http_reference):
    url, _ = http_reference
    assert main(["providers", "add", "ref", "--http", url]) == 0
    free_run_holds(home, capsys, "http")
    # another connection, so another of the server's threads, after the run's ended: it still simulates
    # (Qiskit's core first loaded in a request's thread that ended crashed the next thread that used it)
    probe = {
        "format": "wai.native/1",
        "basis": "rzsxxcz",
        "bits": 1,
        "gates": [{"gate": "x", "qubits": [0]}],
        "measure": [{"qubit": 0, "bit": 0}],
    }
    with ProviderClient.over_http("ref", url) as client:
        assert client.result(client.submit(probe, 10, seed=1), 10).counts == {"1": 10}


def test_run_on_an_unpriced_reference_needs_yes(home, capsys, tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    argv = [*REFERENCE, "--stdio", "--unpriced", "--jobs", str(jobs)]
    assert main(["providers", "add", "ref", "--process", "--allow-write", str(jobs), "--", *argv]) == 0

    capsys.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", "provider:ref", "--json"])
    printed = capsys.readouterr()
    got = json.loads(printed.out)
    assert code == 1
    assert got["case"]["passed"] is False and got["receipts"] == []
    assert "this run has no confirmation (--yes, or yes when asked): nothing was submitted" in printed.err
    assert not jobs.exists() or list(jobs.glob("ref-*.json")) == []  # no submit reached the provider
    with connect(home=home) as db:
        assert db.list_provider_jobs() == []  # nothing recorded: a job is recorded once it may be sent
    assert not (home / "blobs").exists()

    code, got = run(capsys, "provider:ref", "--yes")
    assert code == 0 and got["case"]["passed"] is True
    receipts = receipts_of(got["receipts"])
    assert receipts and len(list(jobs.glob("ref-*.json"))) == len(receipts)
    for job in receipts:
        cost = job["result"]["cost"]
        assert cost["free"] is False and cost["confirmed"] is True
        assert cost["estimate"]["priced"] is False and cost["estimate"]["unknown"]
        assert "amount" not in cost["estimate"]
    no_track_record(home)


@pytest.mark.parametrize("transport", ["process", "http"])
def test_run_after_a_submit_whose_result_fails_names_the_jobs_record(home, capsys, tmp_path, transport):
    """Issue 21, item 5: a job was sent (and, on a priced device, billed) though its result failed; the
    person is told its record and its state, never "no provider job was sent"."""
    from tests.flows.priced_provider import PricedServer, ops, process_command

    price, record = tmp_path / "price.txt", tmp_path / "received.jsonl"
    price.write_text("free")
    server = None
    if transport == "process":
        command = process_command(tmp_path, price, record, "result")
        writes = ["--allow-write", str(record)]
        assert main(["providers", "add", "lossy", "--process", *writes, "--", *command]) == 0
    else:
        server = PricedServer(price, record, "result")
        assert main(["providers", "add", "lossy", "--http", server.url]) == 0
    try:
        _names_the_record(home, capsys, record, ops)
    finally:
        if server is not None:
            server.stop()


def _names_the_record(home, capsys, record, ops) -> None:
    capsys.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", "provider:lossy"])
    printed = capsys.readouterr()
    assert code == 1 and "submit" in ops(record)
    with connect(home=home) as db:
        jobs = db.list_provider_jobs("lossy")
    assert jobs and {j.status for j in jobs} == {"failed"}
    assert "no provider job was sent" not in printed.out + printed.err
    for job in jobs:
        assert f"job record {job.id} (the provider's id {job.job}): failed" in printed.out
        assert f"qsolve providers follow {job.id}" in printed.out

    code, got = run(capsys, "provider:lossy")
    assert code == 1 and got["receipts"] == []
    assert [j["status"] for j in got["jobs"]] and {j["status"] for j in got["jobs"]} == {"failed"}
