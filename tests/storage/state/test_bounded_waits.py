"""Bounded waits and progress-bound leases (issue 24), on SQLite and PostgreSQL, with real processes.

A holder frozen with SIGSTOP inside a transaction, or stuck (alive, its lease entered, doing nothing),
loses its history stage: another process takes it over within a minute. On PostgreSQL the server ends
a session idle in its transaction (``idle_in_transaction_session_timeout``), so a frozen holder's row
locks go with it; on SQLite (WAL) a reading transaction never blocks a writer, and qsolve holds no
writing transaction across work.

The tests set the bounds small (:func:`short_bounds`: a lock waited for 2 s on PostgreSQL, 3 s of SQLite's
busy timeout, a session idle in its transaction ended after 3 s), the holder process too, and assert those
bounds are honoured; the documented values every session gets are asserted as they are
(``test_every_postgresql_session_has_bounded_waits`` here, SQLite's in tests/storage/state/test_connect.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from qsolve_pipeline.storage.state import ClaimStatus, StateDB, Version, _engine, connect
from qsolve_pipeline.storage.state._engine import POSTGRES_TIMEOUTS
from tests.conftest import REPO
from tests.storage.state.conftest import default_settings

CASES = [("a", "sim-cpu"), ("b", "sim-cpu")]
LEASE_S = 2.0
TAKEOVER_S = 60.0  # the bound: another process takes over within a minute
#: the bounds the tests set, smaller than the documented ones so that each is reached quickly
SHORT_BUSY_S = 3
SHORT_TIMEOUTS = POSTGRES_TIMEOUTS | {"lock_timeout": "2s", "idle_in_transaction_session_timeout": "3s"}

HOLDER = """
import json, sys, time
from qsolve.runtime.heartbeat import beat
from qsolve_pipeline.storage.state import Lease, _engine, connect
from tests.storage.state.conftest import default_settings

url, how = sys.argv[1], sys.argv[2]
_engine.BUSY_TIMEOUT_S, _engine.POSTGRES_TIMEOUTS = json.loads(sys.argv[3])  # the test's bounds
with connect(url, settings=default_settings()) as db:
    version = db.get_version("max-cut")
    with Lease(db) as lease:
        claim = db.claim_history_stage(version, lease.owner, [("a", "sim-cpu"), ("b", "sim-cpu")],
                                       seconds=lease.seconds)
        lease.hold(claim.stage.id)
        db.create_run(version, "a", "sim-cpu", "history", owner=lease.owner, stage=claim.stage, case_index=0)
        if how == "stuck":
            print("holding", flush=True)
            time.sleep(600)  # alive, its lease entered, no progress
        opened = db._write() if db.engine.dialect.name == "postgresql" else db._read()
        with opened as connection:
            connection.exec_driver_sql("SELECT id FROM history_stages" +
                                       (" FOR UPDATE" if db.engine.dialect.name == "postgresql" else ""))
            print("holding", flush=True)
            while True:  # working, inside the transaction, until frozen
                beat()
                time.sleep(0.05)
"""


@pytest.fixture(autouse=True)
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session this process opens waits at most the tests' short bounds."""
    monkeypatch.setattr(_engine, "BUSY_TIMEOUT_S", SHORT_BUSY_S)
    monkeypatch.setattr(_engine, "POSTGRES_TIMEOUTS", SHORT_TIMEOUTS)


@pytest.fixture
def version(database_url: str, tmp_path: Path) -> Iterator[Version]:
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        yield db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def holder(database_url: str, how: str) -> subprocess.Popen:
    env = os.environ | {"QSOLVE_LEASE_SECONDS": str(LEASE_S), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, database_url, how, json.dumps([SHORT_BUSY_S, SHORT_TIMEOUTS])],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line == "holding\n", (line, process.wait(), process.stdout.read())
    return process


def take_over(db: StateDB, version: Version) -> float:
    """Claim the stage as another owner until it is ours: how long it took."""
    start = time.monotonic()
    while time.monotonic() - start < TAKEOVER_S:
        try:
            claim = db.claim_history_stage(version, "taker", CASES, seconds=60)
        except OperationalError as e:  # a bounded wait ran out: try again, as an operator would
            assert "lock" in str(e).lower() or "timeout" in str(e).lower(), e
            continue
        if claim.status is ClaimStatus.RESUMED:
            assert len(claim.ended) == 1 and claim.todo == (0, 1)
            return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(f"no takeover within {TAKEOVER_S:g} s")


@pytest.mark.parametrize("how", ["frozen", "stuck"])
def test_a_frozen_or_stuck_holder_is_taken_over_within_a_minute(
    database_url: str, tmp_path: Path, version: Version, how: str
) -> None:
    process = holder(database_url, how)
    try:
        if how == "frozen":
            process.send_signal(signal.SIGSTOP)  # inside its transaction, its lease thread frozen too
        with connect(database_url, home=tmp_path, settings=default_settings()) as db:
            took = take_over(db, version)
            assert took < TAKEOVER_S
            assert db.list_runs(version)[0].reason.value == "platform_error"
    finally:
        process.kill()
        process.send_signal(signal.SIGCONT)
        process.wait()
        process.stdout.close()


def shown_timeouts(database_url: str, tmp_path: Path) -> dict[str, str]:
    """What a session qsolve opens shows of each bound."""
    with connect(database_url, home=tmp_path, settings=default_settings()) as db, db.engine.connect() as c:
        return {name: c.execute(sa.text(f"SHOW {name}")).scalar_one() for name in POSTGRES_TIMEOUTS}


def test_every_postgresql_session_has_bounded_waits(database_url: str, tmp_path: Path) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's settings")
    assert shown_timeouts(database_url, tmp_path) == SHORT_TIMEOUTS  # the bounds as set, the tests' here
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_engine, "POSTGRES_TIMEOUTS", POSTGRES_TIMEOUTS)  # and the documented ones
        assert (
            shown_timeouts(database_url, tmp_path)
            == POSTGRES_TIMEOUTS
            == {
                "lock_timeout": "10s",
                "statement_timeout": "1min",
                "idle_in_transaction_session_timeout": "20s",
            }
        )


def test_a_lock_held_too_long_fails_the_waiter_not_hangs_it(
    database_url: str, tmp_path: Path, version: Version
) -> None:
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        claim = db.claim_history_stage(version, "one", CASES, seconds=60)
        other = connect(database_url, home=tmp_path, settings=default_settings())
        try:
            with other._write() as connection:
                connection.exec_driver_sql("UPDATE history_stages SET owner = 'one'")  # holds the row
                start = time.monotonic()
                with pytest.raises(OperationalError):
                    db.create_run(
                        version, "a", "sim-cpu", "history", owner="one", stage=claim.stage, case_index=0
                    )
                waited = time.monotonic() - start
        finally:
            other.close()
    postgres = database_url.startswith("postgresql")
    bound = int(SHORT_TIMEOUTS["lock_timeout"][:-1]) if postgres else SHORT_BUSY_S  # as the test set them
    assert bound * 0.9 < waited < bound + 20
