"""Issue 35, item 3: a provider job's wait is the job's time. A job that never finishes kept ``qsolve run``
going 618 s against a 300 s limit, with 2,783 polls, each a write to the state database. Now the wait
stops at the job's own limit, says that limit, polls with backoff, and writes its polls once."""

from __future__ import annotations

import time

import pytest

from qsolve.providers.jobs import StillRunning
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
    session.hold_to(0.0)  # a job whose time is up when it is submitted: sent, recorded, asked once
    with pytest.raises(StillRunning) as caught:
        session.run(bell(), SHOTS, seed=3)
    record = caught.value.record
    assert "is still running after the job's time limit of 0 s; it was not cancelled" in str(caught.value)
    assert provider.ops.count("status") == 1 and book.polled == [1]
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
