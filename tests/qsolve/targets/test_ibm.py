"""``ibm:<device>`` through the real qiskit-ibm-runtime client (0.51), against the local stand-in for IBM
Quantum (``ibm_standin.py``) on 127.0.0.1: no mock of the client. The client reaches the stand-in through
settings only (``QISKIT_IBM_URL``, ``IAM_URL``, ``GLOBAL_SEARCH_URL``, ``GLOBAL_CATALOG_URL``,
``QISKIT_IBM_INSTANCE``), as it would reach any server; the API key is kept in the owner-only file of the
credential store (``PYTHON_KEYRING_BACKEND`` is the failing keyring, as on a headless machine)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.cli.ibm import main as ibm_main
from qsolve.providers.credentials import CredentialStore, Secret
from qsolve.providers.jobs import Confirmation, NotConfirmed, StillRunning
from qsolve.receipts import verify
from qsolve.targets import TargetUnavailable
from qsolve.targets.ibm import (
    ENVIRONMENT,
    IbmJobStopped,
    IbmSettings,
    IbmUnavailable,
    describe,
    execution_of,
    is_the_row,
)
from qsolve_pipeline.storage.sessions import ibm_backend
from qsolve_pipeline.storage.state import connect
from tests.qsolve.providers.test_credential_nowhere import found_in
from tests.qsolve.targets.ibm_standin import CRN, IbmStandIn, read_pubs

REPO = Path(__file__).resolve().parents[3]
MAX_CUT = str(REPO / "workflows" / "max-cut")
API_KEY = "PLANTED-ibm-key-4d1c9e"
WRONG = "WRONG-ibm-key-77aa01"
DEVICE = "ibm_prague"
TARGET = f"ibm:{DEVICE}"
#: §8.3's sampler-v2 row, as a receipt states it
ROW = {
    "stated_by": "client",
    "mitigation": "default",
    "twirling": "off",
    "decoupling": "off",
    "remapping": "default",
    "optimisation": "default",
    "verbatim": False,
    "sent": {
        "fields": ["backend", "params", "program_id"],
        "settings": {
            "/params/options/dynamical_decoupling/enable": False,
            "/params/options/twirling/enable_gates": False,
            "/params/options/twirling/enable_measure": False,
        },
    },
}


@pytest.fixture
def standin():
    with IbmStandIn(API_KEY) as server:
        yield server


@pytest.fixture
def home(tmp_path, monkeypatch, standin):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # the owner-only file
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # where qiskit's save_account would write
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for name, value in standin.environment().items():
        monkeypatch.setenv(name, value)
    CredentialStore(home).put("ibm", Secret(API_KEY))
    yield home
    import qsolve.targets

    for device_access in (False, True):  # `qsolve run` made its backend this process's ibm: target
        qsolve.targets._opened.pop((TARGET, device_access), None)


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    return circuit


def opened(**kwargs):
    return ibm_backend(TARGET, confirmation=Confirmation(yes=True), poll_s=0.05, **kwargs)


def jobs_of(home: Path) -> list:
    with connect(home=home) as db:
        return db.list_provider_jobs()


def receipt(path: str) -> dict:
    text = Path(path).read_text(encoding="utf-8")
    verdict = verify(text)
    assert verdict.valid, (path, verdict.reasons)
    return json.loads(text)


def test_a_sampler_job_through_the_real_client(home, standin):
    backend = opened()
    try:
        started = time.perf_counter()
        (counts,) = backend.execute(backend.transpile([bell()], seed=7), 4000, seed=1)
        seconds = time.perf_counter() - started
    finally:
        backend.close()
    # the counts, from the shots: a Bell pair's, within the device's readout errors and the shots' spread
    assert sum(counts.values()) == 4000
    ideal = {"00": 0.5, "11": 0.5, "01": 0.0, "10": 0.0}
    assert 0.5 * sum(abs(counts.get(k, 0) / 4000 - p) for k, p in ideal.items()) < 0.05
    assert seconds < 10
    # what was sent: a sampler job with decoupling and twirling off, and nothing else set
    (body,) = standin.job_bodies()
    assert sorted(body) == ["backend", "params", "program_id"]
    assert body["program_id"] == "sampler" and body["backend"] == DEVICE
    assert body["params"]["options"] == {
        "dynamical_decoupling": {"enable": False},
        "twirling": {"enable_gates": False, "enable_measure": False},
    }
    ((sent_circuit, shots),) = read_pubs(body["params"])
    assert shots == 4000
    # the receipt verifies, and states what was sent: the sampler-v2 row, built from that very body
    (sealed,) = backend.sealed
    job = receipt(sealed.path)
    result = job["result"]
    assert result["execution"] == ROW == execution_of(body)
    assert is_the_row(result["execution"], result["provider"]["provenance"])
    assert result["counts_source"] == "shots" and result["counts"] == counts
    assert result["provider"]["kind"] == "sampler-v2" and result["provider"]["name"] == "ibm"
    assert result["provider"]["device"] == DEVICE and result["provider"]["basis"] == "rzsxxcz"
    assert result["provider"]["provenance"].startswith(
        "simulator: the device ibm_prague as served by http://"
    )
    assert result["accuracy"]["class"] == "simulated"
    assert result["cost"]["free"] is False and result["cost"]["confirmed"] is True
    assert "no price" in result["cost"]["estimate"]["unknown"]
    assert result["ideal"]["computed"] is True and result["ideal"]["hellinger_fidelity"] > 0.95
    (held,) = standin.jobs.values()
    assert result["job"]["id"] == held.id and job["request"]["provider"] == "ibm"
    from qiskit import qasm3

    assert qasm3.dumps(sent_circuit) == result["compiled"]["qasm3"]  # the program sealed is the one sent
    (row,) = jobs_of(home)
    assert (row.provider, row.job, row.status, row.receipt) == ("ibm", held.id, "done", sealed.digest)
    # every API request carried a bearer token from IAM and the instance, never the key
    api = standin.sent("GET", "/api/v1") + standin.sent("POST", "/api/v1")
    assert api and all(r.headers["Authorization"].startswith("Bearer ") for r in api)
    assert all(r.headers["Service-CRN"] == CRN and r.headers.get("IBM-API-Version") for r in api)


def test_a_wrong_key_is_refused_at_iam_with_a_clear_error(home, standin):
    CredentialStore(home).put("ibm", Secret(WRONG))
    with pytest.raises(IbmUnavailable) as raised:
        opened()
    message = str(raised.value)
    assert message.startswith(f"{TARGET}: opening the device: IBM Quantum did not accept the API key from ")
    assert "a file only its owner can read" in message  # where the key was found, not the key
    assert WRONG not in message and API_KEY not in message
    iam = standin.sent("POST", "/iam/identity/token")
    assert iam and all(r.status == 401 for r in iam)
    assert not [r for r in standin.requests if r.path.startswith("/api/")]  # nothing reached the API
    assert all(r.path == "/iam/identity/token" for r in standin.requests if found_in(r.body, WRONG))


def test_a_failing_job_gives_a_clear_error_and_no_receipt(home, standin):
    standin.fail_jobs = "the stand-in's control electronics failed"
    backend = opened()
    try:
        with pytest.raises(IbmJobStopped) as raised:
            backend.execute(backend.transpile([bell()], seed=7), 500, seed=1)
    finally:
        backend.close()
    message = str(raised.value)
    assert message.startswith(f"{TARGET}: following job d")
    assert "it failed at IBM Quantum" in message and "control electronics failed" in message
    assert message.endswith("nothing was sealed") and raised.value.reason == "platform_error"
    assert backend.stopped == [message] and backend.sealed == []
    (row,) = jobs_of(home)
    assert row.status == "failed" and "control electronics failed" in row.error and row.receipt is None
    assert not (home / "blobs").exists()


def test_a_cancelled_job_is_cancelled_at_ibm_and_says_so(home, standin):
    standin.hold = True  # the job stays queued until it is cancelled
    backend = opened()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            backend.execute(backend.transpile([bell()], seed=7), 500, seed=1)
        except BaseException as e:
            raised.append(e)

    follower = threading.Thread(target=run)
    follower.start()
    try:
        standin.wait_for(lambda: any(j.status == "submitted" for j in jobs_of(home)))
        (record,) = [j.id for j in jobs_of(home)]
        assert backend.cancel() == [record]  # passed on to IBM
        follower.join(10)
    finally:
        standin.release()
        follower.join(10)
        backend.close()
    (error,) = raised
    assert isinstance(error, IbmJobStopped) and error.reason == "cancelled"
    assert str(error).startswith(f"{TARGET}: following job d") and "cancelled at IBM Quantum" in str(error)
    (held,) = standin.jobs.values()
    assert held.status == "Cancelled"
    assert standin.sent("POST", f"/api/v1/jobs/{held.id}/cancel")
    assert not standin.sent("GET", f"/api/v1/jobs/{held.id}/results")
    (row,) = jobs_of(home)
    assert row.status == "cancelled" and row.receipt is None


def test_a_job_that_stays_queued_is_followed_only_to_the_jobs_own_limit(home, standin):
    # issue 35, item 3: a hardware run or `qsolve run` on ibm: waits within the job's own limit, as on a
    # provider, and says the limit it used (before, 600 s whatever the job's limit)
    standin.hold = True
    backend = opened()
    backend.hold_to(1.0)
    began = time.monotonic()
    try:
        with pytest.raises(StillRunning, match="after the job's time limit of 1 s; it was not cancelled"):
            backend.execute(backend.transpile([bell()], seed=7), 500, seed=1)
    finally:
        standin.release()
        backend.close()
    assert time.monotonic() - began < 60 and backend.wait_s == 600.0
    (row,) = jobs_of(home)
    assert row.status == "submitted"  # handed over: `collect` reads it later


def test_a_device_that_is_down_sends_nothing(home, standin):
    standin.down.add(DEVICE)
    backend = opened()
    try:
        with pytest.raises(IbmJobStopped) as raised:
            backend.execute(backend.transpile([bell()], seed=7), 500, seed=1)
    finally:
        backend.close()
    message = str(raised.value)
    assert raised.value.reason == "backend_unavailable"
    assert message.startswith(f"{TARGET}: submitting a job: the device is not available")
    assert "not operational (maintenance)" in message and message.endswith("nothing was sent")
    assert standin.job_bodies() == [] and jobs_of(home) == []


def test_without_a_confirmation_nothing_is_sent(home, standin):
    from qsolve.targets import _open

    with pytest.raises(TargetUnavailable, match="validation has no network"):
        _open(TARGET, False)
    with pytest.raises(TargetUnavailable, match="opened by the command that runs it"):
        _open(TARGET, True)  # the core has no book to keep the jobs in: qsolve run opens it
    backend = ibm_backend(TARGET)  # no confirmation, so a job of unknown cost waits for one
    try:
        with pytest.raises(NotConfirmed, match="the cost is unknown .* nothing was submitted"):
            backend.execute(backend.transpile([bell()], seed=7), 500, seed=1)
    finally:
        backend.close()
    assert standin.job_bodies() == [] and jobs_of(home) == []


SUBMITTER = """
import sys
from qiskit import QuantumCircuit
from qsolve.providers.jobs import Confirmation
from qsolve_pipeline.storage.sessions import ibm_backend

backend = ibm_backend(sys.argv[1], confirmation=Confirmation(yes=True), poll_s=0.05)
circuit = QuantumCircuit(2, 2)
circuit.h(0)
circuit.cx(0, 1)
circuit.measure([0, 1], [0, 1])
backend.execute(backend.transpile([circuit], seed=7), 1000, seed=1)
print("the first client read its counts")
"""


def test_the_job_id_is_recorded_first_and_another_process_collects_it(home, standin, capsys):
    standin.hold = True
    first = subprocess.Popen(
        [sys.executable, "-c", SUBMITTER, TARGET], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        standin.wait_for(lambda: any(j.status == "submitted" for j in jobs_of(home)), timeout_s=30)
        (row,) = jobs_of(home)
        (held,) = standin.jobs.values()
        assert row.job == held.id and held.status == "Queued"  # recorded before any result was read
        assert not standin.sent("GET", f"/api/v1/jobs/{held.id}/results")
    finally:
        first.kill()  # the first client dies before it reads the counts
        out, _ = first.communicate(timeout=10)
    assert first.returncode == -9 and b"read its counts" not in out
    standin.release()
    capsys.readouterr()
    assert ibm_main(["collect", row.id]) == 0  # this process, not the one that sent it, collects it
    path = capsys.readouterr().out.strip().rsplit("receipt ", 1)[1]
    job = receipt(path)
    assert job["result"]["job"]["id"] == held.id and job["result"]["execution"] == ROW
    assert sum(job["result"]["counts"].values()) == 1000
    (done,) = jobs_of(home)
    assert done.status == "done" and Path(path).name == done.receipt
    capsys.readouterr()
    assert ibm_main(["collect", row.id]) == 0  # sealed once: asked again, the record gives its receipt
    assert capsys.readouterr().out.strip().endswith(f"receipt {path}")
    assert len(list((home / "blobs").rglob("*"))) == 2  # one folder, one receipt


def run_cli(capfd, *flags: str) -> tuple[int, str, str]:
    capfd.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", TARGET, "--json", *flags])
    got = capfd.readouterr()
    return code, got.out, got.err


def test_qsolve_run_on_the_standin(home, standin, capfd):
    code, out, err = run_cli(capfd)  # no --yes: the cost is unknown, so nothing is sent
    assert code == 1 and json.loads(out)["receipts"] == []
    assert "the cost is unknown" in err and "nothing was submitted" in err
    assert standin.job_bodies() == [] and jobs_of(home) == []

    code, out, err = run_cli(capfd, "--yes")
    assert code == 0, err
    got = json.loads(out)
    case = got["case"]
    assert case["name"] == "single-edge" and case["passed"] is True and case["target"] == TARGET
    assert len(got["receipts"]) == case["circuits"] == len(standin.job_bodies())
    for path in got["receipts"]:  # every receipt verifies, and states the sampler-v2 row
        result = receipt(path)["result"]
        assert result["provider"]["kind"] == "sampler-v2" and result["execution"] == ROW
        assert result["accuracy"]["class"] == "simulated" and result["cost"]["confirmed"] is True
    assert [j.status for j in jobs_of(home)] == ["done"] * len(got["receipts"])
    assert not (home / "trackrecord").exists() and not (home / "trackrecord.duckdb").exists()


def test_the_key_is_in_no_output_log_or_file_but_the_credential_store(home, standin, capfd, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)  # the client's, requests', urllib3's and the IAM SDK's logs, all of them
    outputs = []
    code, out, err = run_cli(capfd, "--yes")
    assert code == 0, err
    outputs.append(out + err)
    standin.fail_jobs = "a failure"
    backend = opened()
    with pytest.raises(IbmJobStopped) as raised:
        backend.execute(backend.transpile([bell()], seed=7), 100, seed=1)
    backend.close()
    outputs.append(str(raised.value))
    CredentialStore(home).put("ibm", Secret(WRONG))
    code, out, err = run_cli(capfd, "--yes")
    assert code == 1 and "did not accept the API key" in err
    outputs.append(out + err)
    CredentialStore(home).put("ibm", Secret(API_KEY))
    got = capfd.readouterr()
    outputs.append(got.out + got.err)

    iam = standin.sent("POST", "/iam/identity/token")
    assert any(found_in(r.body, API_KEY) for r in iam) and any(found_in(r.body, WRONG) for r in iam)
    for key in (API_KEY, WRONG):
        for text in [*outputs, caplog.text]:
            assert not found_in(text.encode(), key)
        for path in home.rglob("*"):
            if path.is_file() and "credentials" not in path.relative_to(home).parts:
                assert not found_in(path.read_bytes(), key), path
        # the key went to IAM, and nowhere else: no API request holds it, in its headers or its body
        for r in standin.requests:
            if r.path != "/iam/identity/token":
                assert not found_in(json.dumps(r.headers).encode() + r.body, key), r.path
    assert (home / "credentials" / "ibm").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "user" / ".qiskit").exists()  # save_account's plain file was never written
    # the IAM SDK, built while its logger was at DEBUG, left http.client's wire dumps off for the process
    # (its own print broke botocore's uploads answered "100 Continue", in CI)
    import http.client

    assert http.client.HTTPConnection.debuglevel == 0 and "print" not in vars(http.client)


def test_settings_point_the_client_only_where_the_key_is_safe_and_name_provenance(home, standin):
    assert IbmSettings.from_environment({}).is_ibm
    assert IbmSettings.from_environment({"QISKIT_IBM_URL": "https://cloud.ibm.com"}).is_ibm
    with pytest.raises(IbmUnavailable, match="over https:// only"):
        IbmSettings.from_environment({"QISKIT_IBM_URL": "http://quantum.example.org"})
    with pytest.raises(IbmUnavailable, match="set IAM_URL, GLOBAL_SEARCH_URL, GLOBAL_CATALOG_URL too"):
        IbmSettings.from_environment({"QISKIT_IBM_URL": standin.url})
    with pytest.raises(IbmUnavailable, match="QISKIT_IBM_CHANNEL"):
        IbmSettings.from_environment({"QISKIT_IBM_CHANNEL": "local"})
    settings = IbmSettings.from_environment(dict(os.environ))
    assert not settings.is_ibm and settings.url == standin.url
    backend = opened()
    try:  # the same device, as IBM Quantum's own service would describe it, is silicon
        assert describe(backend.backend, IbmSettings())["provenance"] == "silicon"
        assert backend.description["provenance"] == "simulator"
    finally:
        backend.close()
