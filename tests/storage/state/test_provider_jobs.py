"""Provider jobs outlast their client (§5.7), on SQLite and PostgreSQL: recorded before they are sent,
their id stored when known, read from any connection, each move taken once."""

from __future__ import annotations

import pytest

from qsolve_pipeline.storage.state import ProviderJobStatus, RunStateError, StateDB, connect
from tests.storage.state.conftest import default_settings

PROGRAM = {"format": "wai.native/1", "basis": "rzsxxcz", "bits": 1, "gates": [], "measure": []}
DESCRIBE = {"protocol": "wai.quantum.provider/1", "device": "ref", "qubits": 2}


def test_a_job_is_recorded_before_it_is_sent_and_read_by_any_later_connection(
    db: StateDB, database_url: str
) -> None:
    job = db.record_provider_job("ref", PROGRAM, DESCRIBE, 100, seed=1, context={"kind": "process"})
    assert (job.status, job.job, job.program, job.description) == ("recorded", None, PROGRAM, DESCRIBE)
    db.provider_job_submitting(job.id)
    with connect(database_url, settings=default_settings()) as later:  # another process, say
        assert later.get_provider_job(job.id).status is ProviderJobStatus.SUBMITTING
        later.provider_job_submitted(job.id, "j-17")
    again = db.get_provider_job(job.id)
    assert (again.status, again.job) == ("submitted", "j-17") and again.submitted_at is not None
    assert db.provider_job_polled(job.id).polls == 1
    done = db.provider_job_done(job.id, {"counts": {"1": 100}}, "ab" * 32)
    assert (done.status, done.receipt, done.answer) == ("done", "ab" * 32, {"counts": {"1": 100}})
    with pytest.raises(RunStateError, match="is done: it cannot become done"):
        db.provider_job_done(job.id, {}, "cd" * 32)  # a second follower finishes nothing
    assert [j.id for j in db.list_provider_jobs("ref")] == [job.id]


def test_a_submit_that_did_not_complete_stays_submitting_until_sent_again(db: StateDB) -> None:
    job = db.record_provider_job("ref", PROGRAM, DESCRIBE, 100)
    db.provider_job_submitting(job.id)
    with pytest.raises(RunStateError):  # only a recorded job is submitted the first time
        db.provider_job_submitting(job.id)
    assert db.provider_job_resubmitting(job.id).status is ProviderJobStatus.SUBMITTING
    ended = db.provider_job_ended(job.id, "failed", "refused: too many shots")
    assert (ended.status, ended.error) == ("failed", "refused: too many shots")
    with pytest.raises(ValueError, match="ends failed or cancelled"):
        db.provider_job_ended(job.id, "done", "no")


def test_the_job_that_sealed_each_receipt_is_found_by_its_digest(db: StateDB) -> None:
    """What the pages hold a row's receipts to (issue 34, item 3): the job each receipt's digest was
    recorded for, with its run, shots and answer; a digest no job recorded is not there."""
    jobs = []
    for n, digest in enumerate(["ab" * 32, "cd" * 32]):
        job = db.record_provider_job("ref", PROGRAM, DESCRIBE, 100 + n)  # a person's own: no run
        db.provider_job_submitting(job.id)
        db.provider_job_submitted(job.id, f"j-{n}")
        db.provider_job_done(job.id, {"counts": {"1": 100 + n}}, digest)
        jobs.append(job.id)
    found = db.receipt_jobs(["cd" * 32, "ab" * 32, "ef" * 32])
    assert {d: (j.id, j.run_id, j.shots, j.answer) for d, j in found.items()} == {
        "ab" * 32: (jobs[0], None, 100, {"counts": {"1": 100}}),
        "cd" * 32: (jobs[1], None, 101, {"counts": {"1": 101}}),
    }
    assert db.receipt_jobs([]) == {}
