"""``qsolve providers follow`` on IBM Quantum jobs: a job the ``ibm:`` target recorded (provider ``ibm``, a
``sampler-v2`` context) is followed through IBM's own client, qiskit-ibm-runtime, against the local
stand-in (``ibm_standin.py``), not as a wai.quantum.provider/1 job; one command follows both kinds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from qsolve.cli import main
from qsolve_pipeline.storage.state import connect
from tests.qsolve.targets import test_ibm

# the stand-in and a QSOLVE_HOME whose key and settings reach it, as test_ibm.py makes them
standin = test_ibm.standin
home = test_ibm.home
REPO, TARGET, DEVICE, ROW = test_ibm.REPO, test_ibm.TARGET, test_ibm.DEVICE, test_ibm.ROW
jobs_of, receipt = test_ibm.jobs_of, test_ibm.receipt


def follow(capfd, *args: str) -> tuple[int, str, str]:
    capfd.readouterr()
    code = main(["providers", "follow", *args])
    got = capfd.readouterr()
    return code, got.out, got.err


def recorded_by_a_process_that_died(home: Path, standin) -> str:
    """One Bell job sent by another process, which is killed before it reads the counts: its record."""
    standin.hold = True  # the job stays queued, so its first client cannot have read it
    first = subprocess.Popen(
        [sys.executable, "-c", test_ibm.SUBMITTER, TARGET],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        standin.wait_for(lambda: any(j.status == "submitted" for j in jobs_of(home)), timeout_s=30)
    finally:
        first.kill()
        out, _ = first.communicate(timeout=10)
    assert first.returncode == -9 and b"read its counts" not in out
    (row,) = jobs_of(home)
    (held,) = standin.jobs.values()
    assert (row.provider, row.context["kind"], row.job) == ("ibm", "sampler-v2", held.id)
    assert held.status == "Queued"  # recorded before any result was read
    return row.id


def test_follow_collects_and_seals_an_ibm_job_another_process_recorded(home, standin, capfd):
    record = recorded_by_a_process_that_died(home, standin)
    (held,) = standin.jobs.values()
    assert not standin.sent("GET", f"/api/v1/jobs/{held.id}/results")
    standin.release()

    code, out, err = follow(capfd, record)
    assert code == 0, err
    assert out.startswith(f"provider job {record}: done; receipt ")
    path = out.strip().rsplit("receipt ", 1)[1]
    capfd.readouterr()
    assert main(["verify", path]) == 0  # `qsolve verify` holds the receipt valid
    assert "valid" in capfd.readouterr().out
    job = receipt(path)  # and so does the verifier, called here
    result = job["result"]
    assert result["job"]["id"] == held.id and sum(result["counts"].values()) == 1000
    assert result["provider"]["kind"] == "sampler-v2" and result["provider"]["name"] == "ibm"
    assert result["provider"]["device"] == DEVICE and result["execution"] == ROW
    assert result["accuracy"]["class"] == "simulated"  # the stand-in is not IBM Quantum's service
    assert job["request"]["provider"] == "ibm"
    (done,) = jobs_of(home)
    assert done.status == "done" and Path(path).name == done.receipt
    # followed through IBM's client, not as a provider/1 job: no providers.yaml was read, nothing was sent
    # again, and the counts were read from IBM's results
    assert not (home / "providers.yaml").exists()
    assert len(standin.job_bodies()) == 1 and standin.sent("GET", f"/api/v1/jobs/{held.id}/results")

    code, out, _ = follow(capfd, record)  # sealed once: followed again, the record names its receipt
    assert code == 0 and f"receipt: {path}" in out and "done" in out
    assert len(standin.sent("GET", f"/api/v1/jobs/{held.id}/results")) == 1


def test_follow_reports_an_ibm_job_that_failed_and_seals_nothing(home, standin, capfd):
    record = recorded_by_a_process_that_died(home, standin)
    standin.fail_jobs = "the stand-in's cryostat warmed up"
    standin.release()

    code, out, err = follow(capfd, record)
    assert code == 1 and out == ""
    assert err.startswith(f"qsolve providers: {TARGET}: following job d") and "failed at IBM Quantum" in err
    assert "cryostat warmed up" in err and "nothing was sealed" in err
    (row,) = jobs_of(home)
    assert row.status == "failed" and row.receipt is None
    assert not (home / "blobs").exists()


def test_follow_never_sends_an_ibm_job_again_and_routes_by_the_record_not_the_name(home, standin, capfd):
    description = {"device": DEVICE, "calibration": {"id": None}}
    with connect(home=home) as db:
        context = {"kind": "sampler-v2", "device": DEVICE}
        ibm = db.record_provider_job("ibm", {"format": "qiskit.qpy"}, description, 100, context=context).id
        db.provider_job_submitting(ibm)  # its submit never answered: IBM may have taken it
        # a wai.quantum.provider/1 provider someone named "ibm" records its jobs as http or process
        other = db.record_provider_job("ibm", {}, {}, 100, context={"kind": "http"}).id
        db.provider_job_submitting(other)

    code, out, err = follow(capfd, ibm, "--resubmit", "--yes")
    assert code == 1 and out == ""
    assert "did not complete" in err and "never sent again" in err
    assert standin.job_bodies() == [] and standin.requests == []  # IBM was not even asked

    code, _, err = follow(capfd, other)
    assert code == 2 and "ibm" in err  # a provider/1 job: its provider is looked for in providers.yaml
    assert standin.requests == []
