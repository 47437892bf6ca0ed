"""``qsolve server start|stop|status`` keeps one Prefect server that later commands use, and a command's
temporary server that does not start is one line and exit 2 (issue 23, item 1). Real servers, real
commands in their own processes; every server started here is stopped before the test ends."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from qsolve.runtime.janitor import start_time
from qsolve_pipeline.flows.server import RECORD, Recorded, read_record

QSOLVE = [sys.executable, "-c", "from qsolve.cli import run; run()"]


def environment(tmp_path: Path, **more: str) -> dict[str, str]:
    unset = ("PREFECT_API_URL", "QSOLVE_DATABASE_URL", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    return env | {"QSOLVE_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")} | more


def qsolve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QSOLVE, *args], env=env, capture_output=True, text=True)


def flow_runs(url: str) -> list[str]:
    request = urllib.request.Request(
        url + "/flow_runs/filter", data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return [run["name"] for run in json.loads(answer.read())]


def gone(pid: int, started: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if start_time(pid) != started:
            return True
        time.sleep(0.2)
    return False


def test_a_kept_server_is_started_once_used_by_a_command_and_stopped(tmp_path: Path) -> None:
    env = environment(tmp_path)
    home = tmp_path / "home"
    started = qsolve(env, "server", "start", "--timeout", "900")
    try:
        assert started.returncode == 0, started.stderr
        recorded = read_record(home)
        assert recorded is not None and recorded.alive()
        assert recorded.database == f"sqlite+aiosqlite:///{(home / 'prefect' / 'prefect.db').resolve()}"
        assert (home / "prefect" / "prefect.db").is_file()  # its database under QSOLVE_HOME
        assert f"runs on {recorded.url}" in started.stdout
        listening = socket.create_connection(("127.0.0.1", recorded.port), timeout=10)
        listening.close()

        again = qsolve(env, "server", "start")  # found running: no second server
        assert again.returncode == 0 and f"already runs on {recorded.url}" in again.stdout
        assert read_record(home) == recorded

        status = qsolve(env, "server", "status")
        assert status.returncode == 0 and recorded.url in status.stdout

        before = flow_runs(recorded.url)
        done = qsolve(env, "maintenance")  # a command that runs a flow, PREFECT_API_URL unset
        assert done.returncode == 0, done.stderr
        assert "temporary server" not in done.stderr
        assert len(flow_runs(recorded.url)) == len(before) + 1  # its flow run is on the kept server
    finally:
        stopped = qsolve(env, "server", "stop")
    assert stopped.returncode == 0 and f"stopped the Prefect server on {recorded.url}" in stopped.stdout
    assert gone(recorded.pid, recorded.started)
    assert not (home / RECORD).exists()
    status = qsolve(env, "server", "status")
    assert status.returncode == 1 and "no Prefect server of qsolve server runs" in status.stdout


def test_a_record_of_a_dead_or_foreign_server_is_not_used(tmp_path: Path) -> None:
    env = environment(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    me = os.getpid()
    for pid, started, host in ((dead.pid, 1, socket.gethostname()), (me, start_time(me), "elsewhere")):
        recorded = Recorded(pid, started, 9, host, str(home / "log"), "sqlite")
        (home / RECORD).write_text(json.dumps(recorded.__dict__))
        assert not recorded.alive()
        status = qsolve(env, "server", "status")
        assert status.returncode == 1 and "no Prefect server" in status.stdout
        stopped = qsolve(env, "server", "stop")
        assert stopped.returncode == 0 and "no Prefect server" in stopped.stdout
        assert not (home / RECORD).exists()  # the stale record is gone; this process was not signalled


def test_a_temporary_server_that_does_not_start_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    env = environment(tmp_path, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    done = qsolve(env, "maintenance")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 2 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("qsolve: starting Prefect's temporary server (10 to 30 s, at most 1 s;")
    assert lines[1].startswith("qsolve: Prefect's temporary server did not start within 1 s")
    assert "raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS (it is 1) higher" in lines[1]
    assert done.stdout == ""


def test_a_history_of_nothing_published_starts_no_server(tmp_path: Path) -> None:
    done = qsolve(environment(tmp_path), "history", "nothing-published")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "temporary server" not in done.stderr
