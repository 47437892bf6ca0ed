"""Issue 35, item 3: a provider job's wait is the job's time. A job that never finishes kept ``qsolve run``
going 618 s against a 300 s limit, with 2,783 polls, each a write to the state database. Now the wait
stops at the job's own limit, says that limit, polls with backoff, and writes its polls once."""

from __future__ import annotations

import time

import pytest

from qsolve.providers.jobs import StillRunning, TimeLimitReached
from tests.qsolve.providers.test_misbehaving import (  # noqa: F401 - the fixtures, by name
    SHOTS,
    Process,
    bell,
    home,
    nothing_sealed,
    process_session,
    sessions,
)


class CountingBook:
    """The real state database, with its writes of polls counted."""

    def __init__(self, book) -> None:
        self._book, self.polled = book, []

    def provider_job_polled(self, job_id, count=1):
        self.polled.append(count)
        return self._book.provider_job_polled(job_id, count)

    def __getattr__(self, name):
        return getattr(self._book, name)


def test_a_job_that_never_finishes_stops_at_the_jobs_limit(home, sessions, tmp_path):  # noqa: F811
    provider = Process(tmp_path, "endless", "running:1000000")
    session = process_session(sessions, provider, wait_s=600)  # the command's own wait is far longer
    book = session.book = CountingBook(session.book)
    session.hold_to(0.0)  # a job whose time is up before it is sent: nothing is (round-2 finding 10)
    with pytest.raises(TimeLimitReached) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        "provider endless: stopped at the job's time limit of 0 s before its describe: "
        "no further job was sent"
    )
    assert not {"estimate", "submit"} & set(provider.ops) and not session.records
    session.deadline = session.limit_s = None
    session.wait_s = 0.0  # a job whose wait is up when it is submitted: sent, recorded, asked once
    with pytest.raises(StillRunning) as caught:
        session.run(bell(), SHOTS, seed=3)
    record = caught.value.record
    assert "is still running after 0 s; it was not cancelled" in str(caught.value)
    assert provider.ops.count("status") == 1 and book.polled == [1]
    session.wait_s = 600
    session.hold_to(2.0)  # followed again, within a limit of 2 s
    began = time.monotonic()
    with pytest.raises(StillRunning) as caught:
        session.follow(record)
    took = time.monotonic() - began
    assert "is still running after the job's time limit of 2 s; it was not cancelled" in str(caught.value)
    assert f"`qsolve providers follow {record}` reads it later" in str(caught.value)
    assert 2.0 <= took < 2.0 + 3.0  # the limit; no exchange runs past it (each is given what is left)
    polls = provider.ops.count("status") - 1
    assert 2 <= polls <= 5  # backoff: after 0.2, 0.6, 1.4 s ... not one every 0.2 s
    assert book.polled == [1, polls]  # one write for each whole wait
    assert session.book.get_provider_job(record).polls == polls + 1
    assert "cancel" not in provider.ops
    assert nothing_sealed(home)


@pytest.mark.parametrize("op", ["describe", "estimate", "submit"])
def test_each_exchange_of_a_job_is_held_to_what_is_left_of_its_limit(home, sessions, tmp_path, op):  # noqa: F811
    """Round-2 finding 10: a provider taking its entry's whole time-out (20 s) over a describe, an
    estimate or a submit held the job 221 s past a limit of 3 s. Each is now given what is left of the
    job's limit: a describe or an estimate that outlasts it stops the job (nothing sent, no further job);
    a submit that does is recorded as one that may have been taken, the limit named."""
    from qsolve.providers.jobs import SubmitIncomplete

    provider = Process(tmp_path, "slow", f"hang:{op}", timeout=20.0)
    session = process_session(sessions, provider)
    compiled = None
    if op != "describe":  # read and compiled before the job is admitted, so that its time is the exchanges'
        compiled = session.compile(bell(), 3)
    session.hold_to(2.5)
    began = time.monotonic()
    with pytest.raises(SubmitIncomplete if op == "submit" else TimeLimitReached) as caught:
        session.run(bell(), SHOTS, seed=3, compiled=compiled)
    took = time.monotonic() - began
    assert took < 2.5 + 10.0, took  # the limit (and some time under load), never the entry's 20 s
    said = str(caught.value)
    assert "\n" not in said and "the job's time limit of 2.5 s" in said
    if op == "submit":
        assert said.startswith("provider slow: submit: timeout:") and len(session.records) == 1
    else:
        assert said == (
            f"provider slow: {op}: no answer within the time left of the job's time limit of 2.5 s: "
            "no further job was sent"
        )
        assert "submit" not in provider.ops and not session.records
    with pytest.raises(TimeLimitReached, match="no further job was sent"):
        time.sleep(max(0.0, session.deadline - time.monotonic()))
        session.run(bell(), SHOTS, seed=3)  # past the limit: nothing is begun
    assert provider.ops.count("submit") == (op == "submit")
    assert nothing_sealed(home)
