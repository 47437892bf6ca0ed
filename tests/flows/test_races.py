"""Nothing twice, nothing lost (issue 11), with real processes on SQLite and PostgreSQL.

Two `qsolve submit` of one folder at once; a `qsolve history` killed with SIGKILL at a chosen point
of its history stage (a crash point, ``QSOLVE_FAILPOINT``), then a maintenance pass and a resubmission.
Whatever happens: one version, one history stage, each case's run recorded and charged once, a current
row each, no hold left open, no run left running.

The racing and the killed commands run as separate processes against the shared Prefect test server, each
with the same ``QSOLVE_HOME`` and state database (a fresh SQLite file, or a fresh PostgreSQL schema); the
commands that only reach or look at a state in between (the maintenance pass, the resubmission that
finishes a stage, the last look) run in the test's process, through the same ``main``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve.cli import main
from qsolve_pipeline.storage.state import RunStatus, connect
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.flows.cheap_max_cut import FEW, copy_cheap_max_cut
from tests.storage.state.conftest import POSTGRES_URL, _admin, postgres_problem

LEASE_S = 6.0  # progress-bound: a busy machine leaves a few seconds between beats
CASES = len(FEW)  # four of max-cut's cases: more than a history stage's three case threads


@pytest.fixture(scope="module")
def api_url(prefect) -> str:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


@dataclass(frozen=True)
class Home:
    """A QSOLVE_HOME, and the environment of the commands that share it."""

    path: Path
    env: dict[str, str]


@pytest.fixture(params=["sqlite", "postgresql"])
def home(request: pytest.FixtureRequest, tmp_path: Path, api_url: str) -> Iterator[Home]:
    """A fresh QSOLVE_HOME and database that the commands share."""
    folder = tmp_path / "home"
    folder.mkdir()
    env = {
        **os.environ,
        "QSOLVE_HOME": str(folder),
        "PREFECT_API_URL": api_url,
        "QSOLVE_LEASE_SECONDS": str(LEASE_S),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("QSOLVE_FAILPOINT", None)
    schema = None
    if request.param == "postgresql":
        if problem := postgres_problem():
            pytest.skip(f"no PostgreSQL server: {problem}")
        schema = f"qsolve_race_{uuid.uuid4().hex[:12]}"
        with _admin().connect() as connection:
            connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        env["QSOLVE_DATABASE_URL"] = url.render_as_string(hide_password=False)
    else:
        env.pop("QSOLVE_DATABASE_URL", None)
    try:
        yield Home(folder, env)
    finally:
        if schema:
            with _admin().connect() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(scope="module")
def max_cut(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of max-cut, four of its cases at the cheaper params (the races are the platform's, not
    QAOA's)."""
    return copy_cheap_max_cut(tmp_path_factory.mktemp("wf") / "max-cut", only=FEW)


def qsolve(home: Home, *args: str, failpoint: str | None = None) -> subprocess.Popen:
    env = dict(home.env) | ({"QSOLVE_FAILPOINT": failpoint} if failpoint else {})
    return subprocess.Popen(
        [sys.executable, "-m", "qsolve.cli", *args],
        env=env,
        cwd=home.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def enter(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's own process in ``home``, with the commands' environment."""
    for name in ("QSOLVE_HOME", "QSOLVE_DATABASE_URL", "QSOLVE_LEASE_SECONDS", "QSOLVE_FAILPOINT"):
        if name in home.env:
            monkeypatch.setenv(name, home.env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(home.path)


def publish(home: Home, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Publish ``folder`` in ``home`` as the publication stage does (the gates are another test's)."""
    from qsolve.validation.checks import check_submission
    from qsolve_pipeline.tasks.publication import publish

    enter(home, monkeypatch)
    assert publish(check_submission(folder)).published.created


def qsolve_here(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """A command that only reaches or shows a state, run in the test's process (entered in its home):
    its exit code, and what it wrote. No race needs its own process, and each process pays Prefect's
    and Qiskit's imports."""
    capsys.readouterr()
    code = main(list(args))
    said = capsys.readouterr()
    return code, said.out + said.err


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out


def state_of(home: Home) -> dict:
    """What the state database and the track record hold for max-cut."""
    url = home.env.get("QSOLVE_DATABASE_URL")
    with connect(url, home=home.path) as db:
        with db.engine.connect() as connection:
            versions = connection.execute(sa.text("SELECT count(*) FROM versions")).scalar_one()
            stages = connection.execute(sa.text("SELECT count(*) FROM history_stages")).scalar_one()
        runs = db.list_runs(db.get_version("max-cut"))
        transfers = db.list_transfers()
        holds = {t.run_id for t in transfers if t.kind == "hold"}
        released = {t.run_id for t in transfers if t.kind == "release"}
        charges = [t.run_id for t in transfers if t.kind == "charge"]
    current = run_sql("SELECT run_id, case_name, target FROM current WHERE workflow = 'max-cut'", home.path)
    rows = run_sql("SELECT run_id FROM rows WHERE workflow = 'max-cut'", home.path).column("run_id")
    return {
        "versions": versions,
        "stages": stages,
        "runs": runs,
        "recorded": [r for r in runs if r.recordable],
        "unended": [r for r in runs if r.status in (RunStatus.CREATED, RunStatus.RUNNING)],
        "open_holds": holds - released,
        "charges": charges,
        "current": current.to_pylist(),
        "rows": rows.to_pylist(),
    }


def assert_six_recorded_once(home: Home) -> dict:
    s = state_of(home)
    recorded = {r.id for r in s["recorded"]}
    assert s["versions"] == 1
    assert len(recorded) == CASES, [(r.case_name, r.target, r.status, r.reason) for r in s["runs"]]
    assert len({(r.case_index, r.stage_id) for r in s["recorded"]}) == CASES  # each case once
    assert s["unended"] == []
    assert s["open_holds"] == set()
    assert len(s["charges"]) == len(set(s["charges"]))  # no run charged twice
    assert set(s["charges"]) <= {r.id for r in s["runs"]}
    assert {c["run_id"] for c in s["current"]} == recorded  # six current rows, the recorded runs
    assert len(s["current"]) == CASES
    assert sorted(s["rows"]) == sorted(recorded)  # a row per recorded run, none twice, none other
    return s


#: submissions at once: two is the race (both run the gates, meet at publication and at the history
#: stage's claim); each one more is another whole submission's gates on a 2-core machine and meets the
#: same lock the second already meets
RACERS = 2


def test_two_submissions_at_once_make_one_history_stage(
    home: Home, max_cut: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    processes = [qsolve(home, "submit", str(max_cut)) for _ in range(RACERS)]
    outputs = [finish(p) for p in processes]
    assert [code for code, _ in outputs] == [0] * RACERS, "\n\n".join(out for _, out in outputs)
    stages = [out.split("## History stage", 1)[1].strip().splitlines()[0] for _, out in outputs]
    ran = [s for s in stages if s.startswith("ran")]
    assert len(ran) == 1, stages
    assert all(s.startswith(("in progress", "already recorded")) for s in stages if s not in ran), stages
    enter(home, monkeypatch)  # the track record is read with the commands' state database (issue 34)
    s = assert_six_recorded_once(home)
    assert s["stages"] == 1
    assert len(s["runs"]) == CASES and len(s["charges"]) == CASES


#: the crash points, each on the backends it is run on: the earliest (runs left running, every case to
#: resume) on both; the two later ones, whose recovery is the same code on either backend past the lock the
#: earliest already shows, one on each (each such test takes about a minute of CPU; CI has 20 minutes)
KILLS = [
    pytest.param("run.started", "history", backend, id=f"{backend}-before-any-case-ends")
    for backend in ("sqlite", "postgresql")
] + [
    pytest.param("run.ended:2", "submit", "postgresql", id="postgresql-after-two-cases"),
    pytest.param("runs.filed", "history", "sqlite", id="sqlite-during-filing"),
]


@pytest.mark.parametrize(("point", "again", "home"), KILLS, indirect=["home"])
def test_a_history_stage_killed_is_finished_by_a_pass_and_a_resubmission(
    home: Home,
    max_cut: Path,
    point: str,
    again: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``again``: how the stage is finished, by a resubmission or by `qsolve history`."""
    publish(home, max_cut, monkeypatch)
    code, out = finish(qsolve(home, "history", "max-cut", failpoint=point))
    leases_out = time.monotonic() + LEASE_S + 0.5  # nothing renews the dead process's leases
    assert code == -9, out  # SIGKILL, at the crash point
    killed = state_of(home)
    if point == "runs.filed":
        assert len(killed["recorded"]) == CASES and killed["unended"] == []
    else:
        assert killed["unended"], "the kill left no run running: the crash point came too late"

    time.sleep(max(0.0, leases_out - time.monotonic()))  # counted from the kill, not after the look
    code, out = qsolve_here(capsys, "maintenance", "--json")
    assert code == 0, out
    after_pass = state_of(home)
    assert after_pass["unended"] == [] and after_pass["open_holds"] == set()

    if again == "submit":
        code, out = qsolve_here(capsys, "submit", str(max_cut))
        said = out.split("## History stage", 1)[1].strip().splitlines()[0]
    else:
        code, out = qsolve_here(capsys, "history", "max-cut", "--json")
        outcome = json.loads(out.strip().splitlines()[-1])
        said = f"{outcome['status']}: {outcome['message']}"
    assert code == 0, out
    missing = CASES - len(after_pass["recorded"])
    if missing:
        assert said.startswith(f"ran: resumed round 1: ran the {missing} of {CASES} cases"), said
    else:
        assert said.startswith("already recorded"), said
    s = assert_six_recorded_once(home)
    assert s["stages"] == 1
    earlier = {r.id for r in killed["recorded"]}
    assert earlier <= {r.id for r in s["recorded"]}  # what was recorded before the kill is kept

    code, out = qsolve_here(capsys, "history", "max-cut")
    assert code == 0 and "\nalready recorded: max-cut 1.0.0 has a track record: every case" in f"\n{out}", out


@contextmanager
def stage_locked(home: Home) -> Iterator[Callable[[], None]]:
    """Hold the lock the cases of a history stage take first (the stage's row; on SQLite, the write
    lock), from a connection of the test's own; yields a wait until the cases are waiting on it."""
    url = home.env.get("QSOLVE_DATABASE_URL")
    if url is None:
        connection = sqlite3.connect(home.path / "state.db", isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield lambda: time.sleep(3)  # nothing shows a waiter here; the cases start within this
        finally:
            connection.execute("ROLLBACK")
            connection.close()
        return
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT id FROM history_stages FOR UPDATE"))
            holder = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()

            def waiting() -> None:
                query = sa.text(  # behind the holder, and behind those behind it (a row's queue)
                    "WITH RECURSIVE w(pid) AS (SELECT pid FROM pg_stat_activity WHERE :p = ANY("
                    "pg_blocking_pids(pid)) UNION SELECT a.pid FROM pg_stat_activity a JOIN w ON "
                    "w.pid = ANY(pg_blocking_pids(a.pid))) SELECT count(*) FROM w"
                )
                with engine.connect() as look:
                    deadline = time.monotonic() + 40
                    while look.execute(query, {"p": holder}).scalar_one() < 3:  # the three case threads
                        look.rollback()  # pg_stat_activity is read once a transaction
                        activity = look.execute(
                            sa.text(
                                "SELECT pid, state, wait_event_type, pg_blocking_pids(pid), left(query, 90) "
                                "FROM pg_stat_activity WHERE datname = current_database()"
                            )
                        ).all()
                        assert time.monotonic() < deadline, f"the cases never waited on the stage: {activity}"
                        time.sleep(0.1)

            yield waiting
            connection.rollback()
    finally:
        engine.dispose()


def test_a_history_stage_stopped_while_its_cases_wait_on_a_lock_records_no_crash(
    home: Home, max_cut: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: SIGTERM of `qsolve history` while its cases wait on a row lock. The stage stops its
    cases, waits for them, ends them as the platform's failures and only then removes its folder: no
    case is `crash`, the next `qsolve history` runs every case, each has a current row."""
    publish(home, max_cut, monkeypatch)
    process = qsolve(home, "history", "max-cut", failpoint="history.claimed:pause")
    marker = home.path / "failpoint.history.claimed"
    deadline = time.monotonic() + 300
    while not marker.exists():  # the stage is claimed; no case has begun
        assert process.poll() is None and time.monotonic() < deadline, finish(process)
        time.sleep(0.05)
    with stage_locked(home) as cases_waiting:
        marker.unlink()
        try:
            cases_waiting()
        except AssertionError:
            process.kill()
            raise AssertionError(finish(process)[1]) from None
        process.send_signal(signal.SIGTERM)
        time.sleep(1.5)  # the stop reaches the cases while they still wait
    code, out = finish(process)
    assert code not in (0, -9), out
    stopped = state_of(home)
    assert stopped["unended"] == [] and stopped["open_holds"] == set(), out
    assert stopped["recorded"] == [], [(r.case_name, r.status, r.reason, r.detail) for r in stopped["runs"]]
    assert all(r.reason and r.reason.value == "platform_error" for r in stopped["runs"]), stopped["runs"]

    code, out = qsolve_here(capsys, "maintenance", "--json")
    assert code == 0, out
    code, out = qsolve_here(capsys, "history", "max-cut", "--json")
    assert code == 0, out
    outcome = json.loads(out.strip().splitlines()[-1])
    assert outcome["status"] == "ran" and len(outcome["recorded"]) + len(outcome["not_run"]) == CASES, outcome
    s = assert_six_recorded_once(home)
    assert not any(r.reason and r.reason.value == "crash" for r in s["runs"]), s["runs"]
