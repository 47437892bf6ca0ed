"""``qsolve submit`` with no Prefect server running (issue 39, item 1): the temporary server's process
starts first, lint, the checks and the gates' sandbox job run while it starts, and the flow's stages
then record what was computed, once; a server that does not start is one line and leaves nothing
published and no flow run. Real commands in processes of their own, on a fresh ``PREFECT_HOME``; the
order is what the command did, as an audit hook and the stages' keeping saw it (no timing)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, WorkflowDir

#: the command as a person runs it, with an audit hook noting, in order, the processes it starts (the
#: temporary server, workflow processes), each stage computed ahead, and each time it asks a server
WRAPPER = """
import os, sys

notes = open(os.environ["QSOLVE_TEST_EVENTS"], "a", buffering=1)


def hook(event, args):
    if event == "subprocess.Popen":
        argv = [str(a) for a in (args[1] or [])]
        if "uvicorn" in argv:
            notes.write("server process started, port " + argv[argv.index("--port") + 1] + "\\n")
            with open(os.environ["QSOLVE_TEST_EVENTS"] + ".server", "a") as server:
                migrates = (args[3] or os.environ).get("PREFECT_API_DATABASE_MIGRATE_ON_START", "default")
                server.write(f"migrates on start: {migrates}\\n")
        elif "qsolve.sandbox.child" in argv:
            notes.write("workflow process started\\n")
    elif event == "http.client.connect":
        notes.write(f"asked port {args[2]}\\n")


sys.addaudithook(hook)
import qsolve_pipeline.tasks.ahead as ahead

keep = ahead.keep


def noted(stage, folder, value):
    notes.write(f"computed {stage}\\n")
    keep(stage, folder, value)


ahead.keep = noted
from qsolve.cli import run

run()
"""


def submit(
    tmp_path: Path, folder: Path, prefect: str = "prefect", **more: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    unset = ("PREFECT_API_URL", "QSOLVE_DATABASE_URL", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    events = tmp_path / f"events-{prefect}"
    env = {k: v for k, v in os.environ.items() if k not in unset} | {
        "QSOLVE_HOME": str(tmp_path / "home"),
        "PREFECT_HOME": str(tmp_path / prefect),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "QSOLVE_TEST_EVENTS": str(events),
        "PYTHONPATH": str(REPO),
        **more,
    }
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "submit", str(folder), "--no-history"],
        env=env, capture_output=True, text=True, cwd=REPO, timeout=1800,
    )  # fmt: skip
    return done, events.read_text().splitlines() if events.exists() else []


def prefect_rows(tmp_path: Path, sql: str, prefect: str = "prefect") -> list[tuple]:
    """Rows of the temporary server's database (``PREFECT_HOME/prefect.db``), none if it has no such table."""
    database = tmp_path / prefect / "prefect.db"
    if not database.exists():
        return []
    with sqlite3.connect(database) as db:
        try:
            return db.execute(sql).fetchall()
        except sqlite3.OperationalError:  # its tables were never made
            return []


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return True
    return False


def test_the_gates_run_while_the_temporary_server_starts_and_the_flow_records_them(
    tmp_path: Path, wf: WorkflowDir
) -> None:
    done, events = submit(tmp_path, wf.root)  # the tiny workflow: its gates run, fidelity_checked fails
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Rejected at the gates stage" in done.stdout
    assert "fidelity_checked" in done.stdout

    server = events[0]
    assert server.startswith("server process started, port "), events
    port = int(server.rsplit(" ", 1)[1])
    asked = events.index(f"asked port {port}")  # the command's first look at whether it answers
    # the server's process first, then the workflow process and every stage, all before the command
    # first asked the server anything: nothing of them waited for it
    before = events[1:asked]
    assert before[0] == "workflow process started", events
    computed = [e for e in before if e.startswith("computed ")]
    assert computed == ["computed lint", "computed checks", "computed gates"], events
    # the gates' job may start a fresh process of its own (reproducible); none after it: the flow's
    # gates stage ran no job again
    assert "workflow process started" not in events[events.index("computed gates") :], events
    assert refused(port)  # the temporary server ended with the command

    # the flow recorded them as its own stages: the same task runs, states, logs and artifacts
    (flow,) = prefect_rows(tmp_path, "select id, state_type from flow_run")
    assert flow[1] == "FAILED"
    tasks = dict(
        prefect_rows(tmp_path, f"select name, state_type from task_run where flow_run_id = '{flow[0]}'")
    )
    # Prefect records a task run's states from the events it sends, after the flow run's own final
    # state: the temporary server is stopped once they are taken in, so none shows as still Running
    expected = {"lint": "COMPLETED", "submission checks": "COMPLETED", "gates": "FAILED"}
    recorded = {name.rsplit("-", 1)[0]: state for name, state in tasks.items()}
    assert recorded == expected, recorded
    logged = [
        m
        for (m,) in prefect_rows(
            tmp_path,
            "select l.message from log l join task_run t on l.task_run_id = t.id where t.name like 'gates-%'",
        )
    ]
    assert any(m.startswith("case 1/2 one: ") for m in logged), logged
    assert any(m.startswith("case 2/2 two: ") for m in logged), logged
    artifacts = dict(prefect_rows(tmp_path, "select key, type from artifact"))
    assert artifacts == {"tiny-submission-report": "markdown", "tiny-submission-gates": "table"}
    report = dict(prefect_rows(tmp_path, "select key, data from artifact"))["tiny-submission-report"]
    assert "Rejected at the gates stage" in json.loads(report)


def test_a_temporary_server_that_does_not_start_is_one_line_and_nothing_half_done(
    tmp_path: Path, wf: WorkflowDir
) -> None:
    done, events = submit(tmp_path, wf.root, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 2 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("qsolve: starting Prefect's temporary server (10 to 30 s, at most 1 s;")
    assert lines[1].startswith("qsolve: Prefect's temporary server did not start within 1 s")
    assert "raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS (it is 1) higher" in lines[1]
    assert done.stdout == ""
    port = int(events[0].rsplit(" ", 1)[1])
    assert refused(port)  # stopped, not left starting
    assert prefect_rows(tmp_path, "select id from flow_run") == []  # no flow run began
    state = tmp_path / "home" / "state.db"
    if state.exists():  # nothing published
        with sqlite3.connect(state) as db:
            assert db.execute("select count(*) from versions").fetchone() == (0,)


def test_a_fresh_prefect_home_starts_from_the_database_the_first_one_built(
    tmp_path: Path, wf: WorkflowDir
) -> None:
    """The first temporary server on a fresh PREFECT_HOME migrates its database, which is kept (schema and
    block types, no run); the next fresh PREFECT_HOME starts from a copy, its server told not to migrate,
    and records the flow's stages as the first did."""
    cache = tmp_path / "cache"
    first, _ = submit(tmp_path, wf.root, "prefect", QSOLVE_CACHE=str(cache))
    assert first.returncode == 1 and "Rejected at the gates stage" in first.stdout, first.stderr
    assert (tmp_path / "events-prefect.server").read_text() == "migrates on start: default\n"
    (kept,) = cache.glob("*.db")
    with sqlite3.connect(kept) as db:
        assert db.execute("select count(*) from flow_run").fetchone() == (0,)
        assert db.execute("select count(*) from block_type").fetchone()[0] > 0
        (revision,) = db.execute("select version_num from alembic_version").fetchone()
    assert prefect_rows(tmp_path, "select version_num from alembic_version") == [(revision,)]

    second, _ = submit(tmp_path, wf.root, "again", QSOLVE_CACHE=str(cache))  # the same home: not published
    assert second.returncode == 1 and "Rejected at the gates stage" in second.stdout, second.stderr
    assert (tmp_path / "events-again.server").read_text() == "migrates on start: 0\n"
    assert prefect_rows(tmp_path, "select version_num from alembic_version", "again") == [(revision,)]
    (flow,) = prefect_rows(tmp_path, "select id, state_type from flow_run", "again")
    assert flow[1] == "FAILED"
    artifacts = dict(prefect_rows(tmp_path, "select key, type from artifact", "again"))
    assert artifacts == {"tiny-submission-report": "markdown", "tiny-submission-gates": "table"}
    tasks = prefect_rows(tmp_path, "select name, state_type from task_run", "again")
    expected = {"lint": "COMPLETED", "submission checks": "COMPLETED", "gates": "FAILED"}
    assert {name.rsplit("-", 1)[0]: state for name, state in tasks}.items() <= expected.items(), tasks
