"""The sandbox: the gates run as one job in a child process (seed: "Writing good cases"; issue 3).

The workflow is copied to a temporary folder; the environment is scrubbed to what Python needs; the
network is cut (a new network namespace where the kernel allows it, otherwise audit hooks refuse
sockets); memory is capped at ``resources.memory_mb`` (at most 8192); wall time is
``resources.timeout_s`` raised to at least 300 and capped at 7200, after which the job's whole process
group is killed. A job that dies is reported with why. Results cross back as JSON, never pickles.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from qsolve.manifest import Resources

TIMEOUT_RANGE = (300, 7200)
MEMORY_MAX_MB = 8192
LOG_MAX_BYTES = 64 * 2**20
KEPT_ENV = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")

Event = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Limits:
    timeout_s: int
    memory_mb: int

    @classmethod
    def of(cls, resources: Resources) -> Limits:
        lo, hi = TIMEOUT_RANGE
        return cls(
            timeout_s=min(max(resources.timeout_s, lo), hi), memory_mb=min(resources.memory_mb, MEMORY_MAX_MB)
        )


@dataclass
class Outcome:
    """What came back: the job's report, or why it died; how it was isolated; its log's last lines."""

    report: dict[str, Any] | None
    died: str | None
    network: str
    limits: Limits
    seconds: float
    log_tail: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


@cache
def network_isolation() -> str:
    """``namespace`` when ``unshare --net`` works here, else ``audit hook``."""
    unshare = shutil.which("unshare")
    if unshare:
        try:
            ok = subprocess.run([unshare, "--net", "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return "namespace"
    return "audit hook"


def _environment(tmp: Path) -> dict[str, str]:
    import qsolve

    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env.update(
        {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp),
            "TMPDIR": str(tmp),
            "PYTHONPATH": str(Path(qsolve.__file__).resolve().parents[1]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
            "QISKIT_PARALLEL": "FALSE",
            "QISKIT_SETTINGS": str(tmp / "qiskit-settings.conf"),
        }
    )
    env.setdefault("LANG", "C.UTF-8")
    return env


def _limit(memory_mb: int) -> Callable[[], None]:
    def apply() -> None:
        size = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_MAX_BYTES, LOG_MAX_BYTES))
        resource.setrlimit(resource.RLIMIT_NPROC, (512, 512))

    return apply


def _why(returncode: int, limits: Limits) -> str:
    if returncode < 0:
        sig = signal.Signals(-returncode)
        hint = {
            signal.SIGKILL: f" (out of memory? the limit is {limits.memory_mb} MB)",
            signal.SIGXFSZ: f" (a file or the output grew past {LOG_MAX_BYTES // 2**20} MB)",
            signal.SIGSEGV: " (a crash in native code)",
        }.get(sig, "")
        return f"the sandbox job was killed by {sig.name}{hint}"
    return f"the sandbox job exited with status {returncode} without a report"


def run_job(
    root: Path,
    target: str,
    case: str | None,
    resources: Resources,
    on_event: Event = lambda e: None,
    *,
    limits: Limits | None = None,
) -> Outcome:
    """Run the gates of the workflow at ``root`` in a sandboxed child process. ``limits`` overrides
    the manifest's resources (tests use seconds where the seed's floor is 300)."""
    job = {"mode": "gates", "target": target, "case": case}
    return _run(root, job, limits or Limits.of(resources), on_event)


def run_case_job(
    root: Path,
    case: str,
    target: str,
    limits: Limits,
    approve: Callable[[dict[str, Any]], bool],
    on_event: Event = lambda e: None,
) -> Outcome:
    """Run one case as a platform run: the child sends the case's estimate, ``approve(event)`` decides
    (a credit hold, say) before anything of the case runs, and only then does it run. The report's
    ``result`` is the case's result; ``report`` is ``None`` when the run was not approved."""
    return _run(root, {"mode": "case", "target": target, "case": case}, limits, on_event, approve)


def _run(
    root: Path,
    job: dict[str, Any],
    limits: Limits,
    on_event: Event,
    approve: Callable[[dict[str, Any]], bool] | None = None,
) -> Outcome:
    network = network_isolation()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="qsolve-sandbox-") as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "workflow"
        shutil.copytree(
            root, work, ignore=shutil.ignore_patterns("__pycache__", ".git"), ignore_dangling_symlinks=True
        )
        log_path = tmp / "job.log"
        cmd = [sys.executable, "-m", "qsolve.sandbox.job"]
        if network == "namespace":
            cmd = [shutil.which("unshare"), "--net", "--", *cmd]
        read_fd, write_fd = os.pipe()
        env = _environment(tmp) | {"QSOLVE_RESULT_FD": str(write_fd)}
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=work,
                env=env,
                pass_fds=(write_fd,),
                start_new_session=True,
                preexec_fn=_limit(limits.memory_mb),
            )
        os.close(write_fd)
        job = {**job, "root": str(work), "network": network}

        def send(line: str, close: bool) -> None:
            with contextlib.suppress(BrokenPipeError, ValueError):
                proc.stdin.write(line.encode() + b"\n")
                proc.stdin.flush()
                if close:
                    proc.stdin.close()

        def handle(event: dict[str, Any]) -> None:
            if event.get("event") == "estimate" and approve is not None:
                send("go" if approve(event) else "stop", close=True)
            on_event(event)

        send(json.dumps(job), close=approve is None)
        try:
            report, events, timed_out = _collect(read_fd, start + limits.timeout_s, handle)
        finally:
            _kill_group(proc)
            returncode = proc.wait()
        died = None
        if timed_out:
            died = f"the sandbox job was stopped at its time limit of {limits.timeout_s} s"
        elif report is None:
            died = _why(returncode, limits)
        tail = _tail(log_path)
    return Outcome(
        report=report,
        died=died,
        network=network,
        limits=limits,
        seconds=time.monotonic() - start,
        log_tail=tail,
        events=events,
    )


def _collect(fd: int, deadline: float, on_event: Event) -> tuple[dict | None, list[dict], bool]:
    """Read JSON lines until the channel closes or the deadline passes."""
    buffer = b""
    report = None
    events: list[dict] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return report, events, True
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return report, events, False
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # not ours: the channel carries only JSON objects, one a line
                if not isinstance(event, dict):
                    continue
                if event.get("event") == "report":
                    report = event
                else:
                    events.append(event)
                    on_event(event)
    finally:
        os.close(fd)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
