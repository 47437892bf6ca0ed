"""Nothing twice, nothing lost (issue 11), with real processes on SQLite and PostgreSQL.

Four `qsolve submit` of one folder at once; a `qsolve history` killed with SIGKILL at a chosen point
of its history stage (a crash point, ``QSOLVE_FAILPOINT``), then a maintenance pass and a resubmission.
Whatever happens: one version, one history stage, six runs recorded and charged once each, six current
rows, no hold left open, no run left running.

The commands run as separate processes against the shared Prefect test server, each with the same
``QSOLVE_HOME`` and state database (a fresh SQLite file, or a fresh PostgreSQL schema).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage.state import RunStatus, connect
from storage.trackrecord.sql import run_sql
from tests.conftest import REPO
from tests.storage.state.conftest import POSTGRES_URL, _admin, postgres_problem

LEASE_S = 2.0
CASES = 6  # max-cut's cases


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
    folder = tmp_path_factory.mktemp("wf") / "max-cut"
    shutil.copytree(REPO / "workflows" / "max-cut", folder)
    return folder


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


def publish(home: Home, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Publish ``folder`` in ``home`` as the publication stage does (the gates are another test's)."""
    from qsolve.checks import check_submission
    from tasks.publication import publish

    for name in ("QSOLVE_HOME", "QSOLVE_DATABASE_URL"):
        if name in home.env:
            monkeypatch.setenv(name, home.env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    assert publish(folder, check_submission(folder)).published.created


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


def test_four_submissions_at_once_make_one_history_stage(home: Home, max_cut: Path) -> None:
    processes = [qsolve(home, "submit", str(max_cut)) for _ in range(4)]
    outputs = [finish(p) for p in processes]
    assert [code for code, _ in outputs] == [0] * 4, "\n\n".join(out for _, out in outputs)
    stages = [out.split("## History stage", 1)[1].strip().splitlines()[0] for _, out in outputs]
    ran = [s for s in stages if s.startswith("ran")]
    assert len(ran) == 1, stages
    assert all(s.startswith(("in progress", "already recorded")) for s in stages if s not in ran), stages
    s = assert_six_recorded_once(home)
    assert s["stages"] == 1
    assert len(s["runs"]) == CASES and len(s["charges"]) == CASES


@pytest.mark.parametrize(
    ("point", "again"),
    [("run.started", "history"), ("run.ended:2", "submit"), ("runs.filed", "history")],
    ids=["before-any-case-ends", "after-two-cases", "during-filing"],
)
def test_a_history_stage_killed_is_finished_by_a_pass_and_a_resubmission(
    home: Home, max_cut: Path, point: str, again: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``again``: how the stage is finished, by a resubmission or by `qsolve history`."""
    publish(home, max_cut, monkeypatch)
    code, out = finish(qsolve(home, "history", "max-cut", failpoint=point))
    assert code == -9, out  # SIGKILL, at the crash point
    killed = state_of(home)
    if point == "runs.filed":
        assert len(killed["recorded"]) == CASES and killed["unended"] == []
    else:
        assert killed["unended"], "the kill left no run running: the crash point came too late"

    time.sleep(LEASE_S + 0.5)  # nothing renews the dead process's leases
    code, out = finish(qsolve(home, "maintenance", "--json"))
    assert code == 0, out
    after_pass = state_of(home)
    assert after_pass["unended"] == [] and after_pass["open_holds"] == set()

    if again == "submit":
        code, out = finish(qsolve(home, "submit", str(max_cut)))
        said = out.split("## History stage", 1)[1].strip().splitlines()[0]
    else:
        code, out = finish(qsolve(home, "history", "max-cut", "--json"))
        outcome = json.loads(out.strip().splitlines()[-1])
        said = f"{outcome['status']}: {outcome['message']}"
    assert code == 0, out
    missing = CASES - len(after_pass["recorded"])
    if missing:
        assert said.startswith(f"ran: resumed round 1: ran the {missing} of 6 cases"), said
    else:
        assert said.startswith("already recorded"), said
    s = assert_six_recorded_once(home)
    assert s["stages"] == 1
    earlier = {r.id for r in killed["recorded"]}
    assert earlier <= {r.id for r in s["recorded"]}  # what was recorded before the kill is kept

    code, out = finish(qsolve(home, "history", "max-cut"))
    assert code == 0 and "\nalready recorded: max-cut 1.0.0 has a track record: every case" in out, out
