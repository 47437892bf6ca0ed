"""Counts held to §6 and §5.5 (issue 21, item 4), over a process and an HTTP provider written for the test
(tests/qsolve/providers/bent.py): outcomes one character longer or shorter than the program's bits are
refused naming the provider and the operation, and nothing is sealed; a result that names the calibration
snapshot it ran under is sealed with it, and the receipt verifies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.jobs import Confirmation, JobStopped, ProviderSession
from qsolve.receipts import verify
from qsolve.receipts.keys import load_host_key
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect

BENT = [sys.executable, str(Path(__file__).with_name("bent.py"))]
SHOTS = 100


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture
def provider(home):
    """``provider(transport, twist, arg)``: the bent provider added as ``bent`` and opened as a session."""
    made: list = []

    def make(transport: str, *twist: str) -> ProviderSession:
        if transport == "http":
            proc = subprocess.Popen([*BENT, "--http", *twist], stdout=subprocess.PIPE, text=True)
            made.append(proc)
            url = proc.stdout.readline().strip()
            assert main(["providers", "add", "bent", "--http", url]) == 0
        else:
            assert main(["providers", "add", "bent", "--process", "--", *BENT, "--stdio", *twist]) == 0
        client, entry = open_client("bent", home)
        blobs = BlobStore(home)

        def keep(text: str) -> tuple[str, str]:
            digest = blobs.put(text.encode("utf-8"))
            return digest, str(blobs.path(digest))

        session = ProviderSession(
            name="bent", kind=entry.transport, client=client, book=connect(home=home),
            signer=load_host_key(home), keep=keep, confirmation=Confirmation(), tell=lambda _: None,
        )  # fmt: skip
        made.append(session)
        return session

    yield make
    for m in made:
        if isinstance(m, ProviderSession):
            m.close()
        else:
            m.terminate()
            m.wait(timeout=30)
            m.stdout.close()


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    return circuit


def nothing_sealed(home: Path) -> bool:
    blobs = home / "blobs"
    return not blobs.exists() or not any(p.is_file() for p in blobs.rglob("*"))


@pytest.mark.parametrize("transport", ["process", "http"])
@pytest.mark.parametrize(("twist", "outcome"), [("wide", "'000'"), ("narrow", "'0'")])
def test_outcomes_of_another_width_are_refused_and_nothing_is_sealed(home, provider, transport, twist,
                                                                     outcome):  # fmt: skip
    session = provider(transport, twist)
    with pytest.raises(JobStopped) as caught:
        session.run(bell(), SHOTS, seed=3)
    width = 3 if twist == "wide" else 1
    assert str(caught.value) == (
        f"provider bent: result: protocol: the outcome {outcome} has {width} characters: an outcome is "
        "exactly the program's 2 bits (§6): nothing was sealed"
    )
    (job,) = session.book.list_provider_jobs()
    assert job.status == "failed" and job.receipt is None and job.error == str(caught.value)
    assert nothing_sealed(home)


@pytest.mark.parametrize("transport", ["process", "http"])
def test_the_calibration_a_result_names_is_sealed(home, provider, transport):
    session = provider(transport, "calibration", "cal-after-recal-2")
    sealed = session.run(bell(), SHOTS, seed=3)
    text = Path(sealed.path).read_text()
    assert verify(text).valid
    assert json.loads(text)["result"]["calibration"] == "cal-after-recal-2"


def test_without_one_the_describe_snapshot_is_sealed(home, provider):
    sealed = provider("process", "resonators").run(bell(), SHOTS, seed=3)
    assert sealed.job["result"]["calibration"] == "reference"  # the reference's describe names it


def test_a_calibration_named_by_its_id_alone_is_read_as_that_snapshot():
    from qsolve.providers.messages import AnswerRefused, read_result

    assert read_result({"counts": {"01": 10}, "calibration": "cal-9"}, 10, bits=2).calibration.id == "cal-9"
    with pytest.raises(AnswerRefused, match="calibration is not of its form"):
        read_result({"counts": {"01": 10}, "calibration": 7}, 10, bits=2)
