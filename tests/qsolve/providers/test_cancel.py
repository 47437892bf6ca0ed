"""Cancel (issue 21, item 8; quantum-provider-protocol §5.6): ``qsolve providers cancel JOB`` passes the
cancel on to the provider of a recorded job its device still runs, from another process than the one
that sent it, and a cancelled hardware run does so for each of its jobs (``cancel_run``). A device whose
describe says ``cancels: false`` is sent no cancel, and the person is told the job runs on. The providers
are HTTP servers written for the test (tests/qsolve/providers/bent.py) that log every message's op."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.jobs import Confirmation, ProviderSession, StillRunning
from qsolve.receipts.keys import load_host_key
from qsolve.targets.cancel import cancel_run
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect

BENT = [sys.executable, str(Path(__file__).with_name("bent.py"))]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture
def provider(home, tmp_path):
    """``provider(name, *twist, run_id=None)``: the bent HTTP provider added as ``name``, a session of it
    that waits 0.3 s for a job, and the file its ops are logged in."""
    made: list = []

    def make(name: str, *twist: str, run_id: str | None = None) -> tuple[ProviderSession, Path]:
        log = tmp_path / f"{name}.ops"
        env = {**os.environ, "BENT_LOG": str(log)}
        proc = subprocess.Popen([*BENT, "--http", *twist], stdout=subprocess.PIPE, text=True, env=env)
        made.append(proc)
        url = proc.stdout.readline().strip()
        assert main(["providers", "add", name, "--http", url]) == 0
        client, entry = open_client(name, home)
        blobs = BlobStore(home)

        def keep(text: str) -> tuple[str, str]:
            digest = blobs.put(text.encode("utf-8"))
            return digest, str(blobs.path(digest))

        session = ProviderSession(
            name=name, kind=entry.transport, client=client, book=connect(home=home),
            signer=load_host_key(home), keep=keep, confirmation=Confirmation(), tell=lambda _: None,
            wait_s=0.3, run_id=run_id,
        )  # fmt: skip
        made.append(session)
        return session, log

    yield make
    for m in made:
        if isinstance(m, ProviderSession):
            m.close()
        else:
            m.terminate()
            m.wait(timeout=30)
            m.stdout.close()


def probe() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.x(0)
    circuit.measure([0, 1], [0, 1])
    return circuit


def left_running(session: ProviderSession) -> str:
    with pytest.raises(StillRunning) as caught:
        session.run(probe(), 10, seed=1)
    return caught.value.record


def ops(log: Path) -> list[str]:
    return log.read_text().split()


def test_a_job_still_running_is_cancelled_at_its_provider(home, provider, capsys):
    session, log = provider("lab", "runs-on")
    record = left_running(session)
    session.client.close()  # the process that sent it is gone
    capsys.readouterr()
    assert main(["providers", "cancel", record]) == 0
    assert capsys.readouterr().out.strip().endswith(": cancelled")
    assert ops(log)[-1] == "cancel"
    with connect(home=home) as db:
        job = db.get_provider_job(record)
    assert job.status == "cancelled" and job.error == "cancelled at lab (§5.6)"
    assert main(["providers", "cancel", record]) == 0  # ended: nothing more is sent
    assert "already cancelled: nothing to cancel" in capsys.readouterr().out
    assert ops(log).count("cancel") == 1


def test_a_device_that_cannot_cancel_is_sent_no_cancel_and_the_person_is_told(home, provider, capsys):
    session, log = provider("keeps", "cannot-cancel")
    record = left_running(session)
    capsys.readouterr()
    assert main(["providers", "cancel", record]) == 1
    err = capsys.readouterr().err
    assert (
        "keeps cannot cancel a job (its describe says cancels: false): nothing was sent; the job runs on "
        f"and may be billed; `qsolve providers follow {record}` reads it"
    ) in err
    assert "cancel" not in ops(log)
    assert session.book.get_provider_job(record).status == "submitted"


def test_a_job_that_finished_or_is_unknown(home, provider, capsys):
    session, _ = provider("ref", "calibration", "c-1")
    sealed = session.run(probe(), 10, seed=1)
    capsys.readouterr()
    assert main(["providers", "cancel", sealed.record]) == 0
    assert "already done: nothing to cancel" in capsys.readouterr().out
    assert main(["providers", "cancel", "no-such-record"]) == 2
    assert "no provider job no-such-record" in capsys.readouterr().err


def test_a_cancelled_run_passes_the_cancel_on_where_its_devices_allow(home, provider):
    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "e2" * 32, [])[0]
        run = db.create_run(version, "single-edge", "provider:lab", "hardware")
        other = db.create_run(version, "single-edge", "provider:lab", "hardware")
    lab, lab_log = provider("lab", "runs-on", run_id=run.id)
    keeps, keeps_log = provider("keeps", "cannot-cancel", run_id=run.id)
    elsewhere, _ = provider("else", "runs-on", run_id=other.id)
    first, second, third = left_running(lab), left_running(keeps), left_running(elsewhere)
    with connect(home=home) as db:
        done = cancel_run(db, run.id, home=home)
        assert [(c.record, c.stopped) for c in done] == [(first, True), (second, False)]
        assert "cannot cancel a job" in done[1].line
        assert db.get_provider_job(first).status == "cancelled"
        assert db.get_provider_job(second).status == "submitted"
        assert db.get_provider_job(third).status == "submitted"  # another run's job is left alone
    assert ops(lab_log)[-1] == "cancel" and "cancel" not in ops(keeps_log)


def test_the_hardware_flows_cancellation_hook_cancels_its_quotes_jobs(home, provider):
    from types import SimpleNamespace

    from qsolve_pipeline.flows.hardware import _cancelled

    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "e2" * 32, [])[0]
        db.open_account("alice")
        batch = db.request_batch(version, "alice", target="provider:lab")
        quote = db.add_quote(batch.id, 0, "single-edge", "provider:lab", 1, {}, unknown_cost=False)
    lab, log = provider("lab", "runs-on", run_id=quote.run_id)
    record = left_running(lab)
    said = _cancelled(None, SimpleNamespace(parameters={"quote": quote.id}), None)  # as Prefect calls it
    assert lab.book.get_provider_job(record).status == "cancelled" and ops(log)[-1] == "cancel"
    (line,) = said
    assert line.startswith(f"run {quote.run_id}: provider job {record} (lab, its id ref-")
    assert line.endswith(": cancelled")
