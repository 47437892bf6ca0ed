"""One local Prefect server that every later command uses (issue 23, item 1), and the Prefect server a
command that runs a flow runs on; its commands, ``qsolve server start|stop|status``, are
:mod:`qsolve.cli.server`.

A command that runs a flow (``submit``, ``history``, ``maintenance``, ``evaluate``, ``confirm``) runs it on,
in this order: the server of ``PREFECT_API_URL`` when it is set; else the server ``qsolve server start``
left running for this ``QSOLVE_HOME`` (recorded in ``QSOLVE_HOME/prefect-server.json``: its pid, port and
host); else Prefect's temporary server, started inside the command, with a start-up time-out a busy machine
meets (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, 600 s unless set) and one progress line while
it starts. Only the first command pays the server's start-up when one is kept running.

The kept server is ``prefect server start`` on 127.0.0.1 and a free port, in a session of its own (so no
command's janitor and no Ctrl-C in the terminal stops it), its database
``QSOLVE_HOME/prefect/prefect.db`` (unless ``PREFECT_SERVER_DATABASE_CONNECTION_URL`` names another) and its
log ``QSOLVE_HOME/prefect/server.log``. Two ``qsolve server start`` at once start one server: the record
is claimed under an exclusive ``flock`` of ``QSOLVE_HOME/prefect/server.lock`` (the kernel's, held by
whichever process has it). This module imports no Prefect; :func:`use_prefect` imports it only to start
the temporary server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from qsolve.home import qsolve_home
from qsolve.runtime.janitor import start_time

RECORD = "prefect-server.json"
FOLDER = "prefect"
START_TIMEOUT_S = 600
#: the temporary server's start-up time-out when the person set none (Prefect's default, 20 s, is missed
#: on a busy 2-core machine; FACTS.md: 180 s let the same command pass at load 7 to 30)
EPHEMERAL_TIMEOUT_S = 600
EPHEMERAL_VARIABLE = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DATABASE_VARIABLES = ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")


class ServerError(Exception):
    """The server could not be started, or a command's Prefect server did not answer: one line, exit 2."""

    #: the command line says it in one line and exits 2, as a misuse (qsolve/cli/__init__.py's ``main``)
    usage = True


@dataclass(frozen=True)
class Recorded:
    """A kept server as ``QSOLVE_HOME/prefect-server.json`` records it."""

    pid: int
    started: int  # the process's start time in clock ticks since boot: a reused pid is never taken for it
    port: int
    host: str  # the machine's name: a QSOLVE_HOME on shared storage names servers of other machines too
    log: str
    database: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def alive(self) -> bool:
        return (
            self.host == socket.gethostname()
            and start_time(self.pid) == self.started
            and not _zombie(self.pid)
        )


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def record_path(home: Path | None = None) -> Path:
    return qsolve_home(home) / RECORD


def read_record(home: Path | None = None) -> Recorded | None:
    try:
        return Recorded(**json.loads(record_path(home).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def healthy(url: str, timeout: float = 5) -> bool:
    """Whether a Prefect server answers ``url``'s health check."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as answer:
            return answer.status == 200
    except (OSError, ValueError):
        return False


def running(home: Path | None = None) -> Recorded | None:
    """The kept server of this home, when it runs and answers."""
    recorded = read_record(home)
    if recorded is not None and recorded.alive() and healthy(recorded.url, timeout=10):
        return recorded
    return None


@contextlib.contextmanager
def _claimed(home: Path) -> Iterator[None]:
    folder = home / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "server.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def start(
    home: Path | None = None, timeout: float = START_TIMEOUT_S, say: Callable[[str], None] = print
) -> Recorded:
    """Start the kept server (or find it running) and wait until it answers; ServerError if it does not."""
    home = qsolve_home(home)
    with _claimed(home):
        recorded = read_record(home)
        if recorded is not None and recorded.alive():
            if _wait(recorded, timeout, None):  # another start may still be waiting for it
                return recorded
            raise ServerError(
                f"the Prefect server recorded in {record_path(home)} (pid {recorded.pid}) runs but does not "
                f"answer {recorded.url}: qsolve server stop, then start"
            )
        log = home / FOLDER / "server.log"
        env = dict(os.environ)
        database = next((env[v] for v in DATABASE_VARIABLES if env.get(v)), None)
        if database is None:
            database = f"sqlite+aiosqlite:///{(home / FOLDER / 'prefect.db').resolve()}"
            env[DATABASE_VARIABLES[0]] = database
        port = _free_port()
        env |= {
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",  # the UI off port 4200 needs it
        }
        env.pop("PREFECT_API_URL", None)
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "prefect",
                    "server",
                    "start",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=home,
                start_new_session=True,  # no command's janitor, no Ctrl-C in this terminal stops it
                close_fds=True,
            )
        started = start_time(process.pid)
        recorded = Recorded(process.pid, started or 0, port, socket.gethostname(), str(log), _shown(database))
        record_path(home).write_text(json.dumps(asdict(recorded)))
        say(f"starting the Prefect server on {recorded.url} (its database {recorded.database}) ...")
        if _wait(recorded, timeout, process):
            return recorded
        _kill(recorded)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        record_path(home).unlink(missing_ok=True)
        said = _last_line(log)
        why = (
            f"it exited with code {process.returncode}"
            if process.returncode is not None
            else f"it did not answer within {timeout:g} s (qsolve server start --timeout S)"
        )
        raise ServerError(
            f"the Prefect server did not start: {why}; its log {log}" + (f": {said}" if said else "")
        )


def _shown(database: str) -> str:
    """The database URL without a password."""
    if "@" in database and "://" in database:
        scheme, rest = database.split("://", 1)
        who, where = rest.rsplit("@", 1)
        return f"{scheme}://{who.split(':', 1)[0]}:***@{where}" if ":" in who else database
    return database


def _wait(recorded: Recorded, timeout: float, process: subprocess.Popen[bytes] | None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if process is None and not recorded.alive():
            return False
        if healthy(recorded.url, timeout=5):
            return True
        time.sleep(0.5)
    return False


def _kill(recorded: Recorded, grace_s: float = 15) -> None:
    """SIGTERM the server's session (the server and anything it started), then SIGKILL after ``grace_s``."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
        if not recorded.alive():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(recorded.pid, sig)
        deadline = time.monotonic() + wait
        while recorded.alive() and time.monotonic() < deadline:
            time.sleep(0.1)


def stop(home: Path | None = None) -> Recorded | None:
    """Stop the kept server; the record of the one stopped, None when none ran."""
    home = qsolve_home(home)
    with _claimed(home):
        recorded = read_record(home)
        if recorded is None:
            return None
        alive = recorded.alive()
        if alive:
            _kill(recorded)
        record_path(home).unlink(missing_ok=True)
        return recorded if alive else None


# the Prefect server of a command that runs a flow


def use_prefect(say: Callable[[str], None] | None = None) -> str:
    """Make ready the Prefect server this command's flows run on; what it is (``PREFECT_API_URL``,
    ``qsolve server``, ``temporary``). Call before anything imports Prefect. ServerError when the server
    of ``PREFECT_API_URL`` does not answer or the temporary server does not start."""
    say = say or (lambda line: print(f"qsolve: {line}", file=sys.stderr, flush=True))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    url = os.environ.get("PREFECT_API_URL")
    if url:
        if not healthy(url):
            raise ServerError(
                f"PREFECT_API_URL is {url}, and no Prefect server answers there: start one (qsolve server "
                "start, or prefect server start), or unset PREFECT_API_URL to run with a temporary one"
            )
        return "PREFECT_API_URL"
    if "prefect" in sys.modules and _prefect_api_url():  # a server set in this process (a test harness)
        return "PREFECT_API_URL"
    kept = running()
    if kept is not None:
        os.environ["PREFECT_API_URL"] = kept.url
        if "prefect" in sys.modules:
            from prefect.context import refresh_global_settings_context

            refresh_global_settings_context()
        return "qsolve server"
    _start_temporary(say)
    return "temporary"


def _prefect_api_url() -> str | None:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def _start_temporary(say: Callable[[str], None]) -> None:
    """Start Prefect's temporary server now, with one line while it starts, so that a server that does
    not start is one line; the flows then find it running (Prefect keeps one a process)."""
    set_by_person = bool(os.environ.get(EPHEMERAL_VARIABLE))
    os.environ.setdefault(EPHEMERAL_VARIABLE, str(EPHEMERAL_TIMEOUT_S))
    timeout = os.environ[EPHEMERAL_VARIABLE]
    import logging

    from prefect.server.api.server import SubprocessASGIServer

    # Prefect's own two lines about its temporary server are this line instead
    logging.getLogger("prefect").addFilter(_QuietTemporaryServer())
    say(
        f"starting Prefect's temporary server (10 to 30 s, at most {timeout} s; qsolve server start keeps "
        "one running for every command) ..."
    )
    try:
        SubprocessASGIServer().start(timeout=int(timeout))
    except RuntimeError as e:
        how = (
            f"raise {EPHEMERAL_VARIABLE} (it is {timeout})" if set_by_person else f"set {EPHEMERAL_VARIABLE}"
        )
        code = " ".join(str(e).split()[:14])
        raise ServerError(
            f"Prefect's temporary server did not start within {timeout} s ({code}): {how} higher, or start "
            "one with qsolve server start"
        ) from None


def stop_temporary_servers() -> None:
    """Stop every temporary Prefect server this process started, now. Prefect stops them only at the
    interpreter's exit, logging "Stopping temporary server" to the stream its console handler was
    given, which may be closed by then (pytest's capture: a ``--- Logging error ---`` after pytest's
    summary); a harness whose start failed leaves its server running and registered the same way."""
    server = sys.modules.get("prefect.server.api.server")
    if server is None:
        return
    for instance in set(server.SubprocessASGIServer._instances.values()):
        if instance.server_process is not None:
            instance.stop()


class _QuietTemporaryServer:
    def filter(self, record: Any) -> bool:
        message = str(record.msg)
        return not message.startswith(("Starting temporary server", "Stopping temporary server"))
