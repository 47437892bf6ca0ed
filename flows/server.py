"""One local Prefect server that every later command uses (issue 23, item 1), and the Prefect server a
command that runs a flow runs on; its commands, ``qsolve server start|stop|status``, are
:mod:`qsolve.cli.server`.

A command that runs a flow (``submit``, ``history``, ``maintenance``, ``evaluate``, ``confirm``) runs it on,
in this order: the server of ``PREFECT_API_URL`` when it is set; else the server ``qsolve server start``
left running for this ``QSOLVE_HOME`` (recorded in ``QSOLVE_HOME/prefect-server.json``: its pid, port and
host); else Prefect's temporary server, started inside the command, with a start-up time-out a busy machine
meets (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, 600 s unless set) and one progress line while
it starts. Only the first command pays the server's start-up when one is kept running; a command that
has work needing no server (``qsolve submit``: lint, the checks, the gates) starts the temporary server
first (:func:`begin_prefect`) and does that work while it starts (issue 39, item 1). The database the
first temporary server builds on a fresh ``PREFECT_HOME`` is kept in qsolve's cache (:class:`Template`), and
the next fresh ``PREFECT_HOME`` starts from a copy of it instead of building it again.

The kept server is ``prefect server start`` on 127.0.0.1 and a free port, in a session of its own (so no
command's janitor and no Ctrl-C in the terminal stops it), its database
``QSOLVE_HOME/prefect/prefect.db`` (unless ``PREFECT_SERVER_DATABASE_CONNECTION_URL`` names another) and its
log ``QSOLVE_HOME/prefect/server.log``. Two ``qsolve server start`` at once start one server: the record
is claimed under an exclusive ``flock`` of ``QSOLVE_HOME/prefect/server.lock`` (the kernel's, held by
whichever process has it). This module imports no Prefect, and starts the temporary server without it.
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

from qsolve.home import qsolve_home
from qsolve.runtime.janitor import start_time
from qsolve_pipeline.flows.prefect_template import Template

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
    return begin_prefect(say).wait()


def begin_prefect(say: Callable[[str], None] | None = None, *, announce: bool = True) -> Pending:
    """Find the Prefect server this command's flows will run on, or start the temporary one and return
    at once (issue 39, item 1): :meth:`Pending.wait` then waits for it, so that what needs no server
    runs while it starts. ServerError at once when the server of ``PREFECT_API_URL`` does not answer.
    ``announce=False``: the temporary server's line is said when the command waits for it, so that a
    command refused meanwhile (its one line) says nothing of a server it no longer needs."""
    say = say or (lambda line: print(f"qsolve: {line}", file=sys.stderr, flush=True))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    url = os.environ.get("PREFECT_API_URL")
    if url:
        if not healthy(url):
            raise ServerError(
                f"PREFECT_API_URL is {url}, and no Prefect server answers there: start one (qsolve server "
                "start, or prefect server start), or unset PREFECT_API_URL to run with a temporary one"
            )
        return Pending("PREFECT_API_URL")
    if "prefect" in sys.modules and _prefect_api_url():  # a server set in this process (a test harness)
        return Pending("PREFECT_API_URL")
    kept = running()
    if kept is not None:
        _point_at(kept.url)
        return Pending("qsolve server")
    return Pending("temporary", Temporary(say, announce=announce))


def _prefect_api_url() -> str | None:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def _point_at(url: str) -> None:
    """This process's flows run on the server at ``url`` (Prefect's settings read again if loaded)."""
    os.environ["PREFECT_API_URL"] = url
    if "prefect" in sys.modules:
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()


class Pending:
    """The Prefect server a command's flows will run on: ``kind`` as :func:`use_prefect` says it, and
    the temporary server while it starts."""

    def __init__(self, kind: str, temporary: Temporary | None = None) -> None:
        self.kind = kind
        self.temporary = temporary

    def failed(self) -> bool:
        """Whether the server is known already not to start (its process ended, its time is up)."""
        return self.temporary is not None and self.temporary.failed()

    def wait(self) -> str:
        """Wait until the server answers; its kind. ServerError, one line, when it does not start
        (the temporary server stopped then: nothing of it is left)."""
        if self.temporary is not None:
            url = self.temporary.wait()
            # a flow run's "View at" line would name a UI this server does not serve, gone after the command
            os.environ.setdefault("PREFECT_UI_URL", "")
            _point_at(url)
        return self.kind


class Temporary:
    """Prefect's temporary server for one command, started at once without importing Prefect here:
    the process Prefect's own ``SubprocessASGIServer`` runs (uvicorn on Prefect's API app, no UI, the
    database of ``PREFECT_HOME``) on 127.0.0.1 and a free port, its output in a file of the command's
    temporary folder. The flows reach it through ``PREFECT_API_URL`` (so this process never loads
    Prefect's server modules); it is stopped when the command ends, after Prefect has sent what it
    still held (an exit function registered before Prefect's own: those run first), and its time-out
    counts from its start (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, 600 s unless set). A
    fresh ``PREFECT_HOME`` gets a copy of the kept :class:`Template`, else the database it builds is kept."""

    def __init__(self, say: Callable[[str], None], announce: bool = True) -> None:
        import atexit
        import tempfile

        self.set_by_person = bool(os.environ.get(EPHEMERAL_VARIABLE))
        os.environ.setdefault(EPHEMERAL_VARIABLE, str(EPHEMERAL_TIMEOUT_S))
        self.timeout = os.environ[EPHEMERAL_VARIABLE]
        try:
            limit = float(self.timeout)
        except ValueError:
            raise ServerError(f"{EPHEMERAL_VARIABLE} is {self.timeout!r}: give a number of seconds") from None
        self.say = say
        self.line: str | None = (
            f"starting Prefect's temporary server (10 to 30 s, at most {self.timeout} s; qsolve server start "
            "keeps one running for every command) ..."
        )
        if announce:
            self._announce()
        fd, log = tempfile.mkstemp(prefix="prefect-temporary-server-", suffix=".log")
        os.close(fd)
        self.log = Path(log)
        self.deadline = time.monotonic() + limit
        self.error: ServerError | None = None
        self.url: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.relaunches = 0
        self.template: Template | None = None
        self.seeded = self.builds = False
        self._launch()
        atexit.register(self.stop)

    def _launch(self) -> None:
        import importlib.util

        spec = importlib.util.find_spec("prefect")
        packages = Path(spec.origin).resolve().parents[1]  # where prefect is installed: uvicorn's app dir
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env |= {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
        if self.relaunches == 0:
            self.template = Template.of(packages)
            # only a database this server builds is kept: never one of a person's PREFECT_HOME
            self.builds = self.template is not None and not self.template.database.exists()
            self.seeded = self.builds and self.template.seed()
        if self.seeded:  # the installed head's schema and block types: nothing to migrate nor to register
            env |= {"PREFECT_API_DATABASE_MIGRATE_ON_START": "0", "PREFECT_API_BLOCKS_REGISTER_ON_START": "0"}
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "uvicorn", "--app-dir", str(packages), "--factory",
                    "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
                    "--log-level", "error", "--lifespan", "on",
                ],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, close_fds=True,
            )  # fmt: skip

    @property
    def _url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def failed(self) -> bool:
        if self.error is not None:
            return True
        if self.url is not None or self.process is None:
            return self.url is None
        code = self.process.poll()
        return (code is not None and (code != 3 or self.relaunches >= 2)) or time.monotonic() >= self.deadline

    def _announce(self) -> None:
        line, self.line = self.line, None
        if line is not None:
            self.say(line)

    def wait(self) -> str:
        """The server's API URL once it answers; ServerError (and the server stopped) if it does not."""
        self._announce()
        while self.url is None and self.error is None:
            code = self.process.poll()
            if code == 3 and self.relaunches < 2 and time.monotonic() < self.deadline:
                self.relaunches += 1  # uvicorn's start-up failure: its port taken meanwhile, say; another
                self._launch()
            elif code is not None:
                self._fail(f"it exited with code {code}")
            elif healthy(self._url, timeout=5):
                self.url = self._url
                if self.builds and not self.seeded:
                    self.template.keep()  # the database this server built, for the next fresh PREFECT_HOME
            elif time.monotonic() >= self.deadline:
                self._fail(f"no answer on {self._url}")
            else:
                time.sleep(0.1)
        if self.error is not None:
            raise self.error
        return self.url

    def _fail(self, why: str) -> None:
        said = _last_line(self.log)
        how = (
            f"raise {EPHEMERAL_VARIABLE} (it is {self.timeout})"
            if self.set_by_person
            else f"set {EPHEMERAL_VARIABLE}"
        )
        self.stop()
        self.error = ServerError(
            f"Prefect's temporary server did not start within {self.timeout} s ({why}"
            + (f": {said}" if said else "")
            + f"): {how} higher, or start one with qsolve server start"
        )

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 5 s) and remove its output; a second call does
        nothing."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            if self.url is not None:
                _settled(self.url)
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.unlink(missing_ok=True)


#: a task run's last states reach Prefect as events, recorded by a service of the server after the flow
#: run's own final state: a server stopped at once showed a task run of an ended flow run as still Running
SETTLE_SECONDS = 5.0
_ENDED = ["COMPLETED", "FAILED", "CRASHED", "CANCELLED"]
#: when this command began (this module is loaded at its start): the flow runs it started began later
_BEGAN = time.time()
_ANSWER_BYTES = 1 << 20


def _settled(url: str, within: float = SETTLE_SECONDS, since: float | None = None) -> bool:
    """Wait, at most ``within`` seconds in all, until the server holds no task run still Pending or
    Running under a flow run that began after ``since`` (this command's start, by default: a task run
    PREFECT_HOME's database kept from an earlier command, which Prefect may leave Pending for good, is not
    waited on) and has ended; whether it got there."""
    from datetime import UTC, datetime

    after = datetime.fromtimestamp(_BEGAN if since is None else since, UTC).isoformat()
    query = json.dumps(
        {
            "task_runs": {"state": {"type": {"any_": ["PENDING", "RUNNING"]}}},
            "flow_runs": {"state": {"type": {"any_": _ENDED}}, "start_time": {"after_": after}},
            "limit": 1,
        }
    ).encode()
    deadline = time.monotonic() + within
    while True:
        ask = urllib.request.Request(
            url.rstrip("/") + "/task_runs/filter", query, {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(ask, timeout=max(deadline - time.monotonic(), 0.1)) as answer:
                body = b""
                while chunk := answer.read1(65536):  # the bound holds for the whole answer, not each read
                    body += chunk
                    if time.monotonic() >= deadline or len(body) > _ANSWER_BYTES:
                        return False
                if not json.loads(body):
                    return True
        except (OSError, ValueError):
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


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
