"""The sandbox's child process, which can be started before its job is known (standard library only).

Started early, the child imports Qiskit and the platform (most of a second) while the platform reads the
workflow; it then waits for its job on standard input. Its environment is rebuilt from nothing; it runs in
a new session (so its whole process group can be killed) and, where the kernel allows it, in a network
namespace of its own. Its memory cap (``RLIMIT_AS`` at the workflow's ``memory_mb``) is set by the
parent with ``prlimit`` once the manifest has been read, before the child is sent its job.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

LOG_MAX_BYTES = 64 * 2**20
KEPT_ENV = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the qsolve package


CLONE_NEWNET = 0x40000000


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _network_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def environment(tmp: Path) -> dict[str, str]:
    """Only what Python needs: no platform setting, no credential crosses."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env.update(
        {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp),
            "TMPDIR": str(tmp),
            "PYTHONPATH": str(SOURCE_ROOT),
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
            "QISKIT_PARALLEL": "FALSE",
            "QISKIT_SETTINGS": str(tmp / "qiskit-settings.conf"),
        }
    )
    env.setdefault("LANG", "C.UTF-8")
    return env


def _prepare():
    """What the child does between fork and exec: its limits (its memory cap comes with its job,
    :meth:`JobProcess.limit_memory`), and a network namespace of its own where the kernel allows it
    (``unshare(CLONE_NEWNET)``; the parent then sees which, in ``/proc``)."""
    unshare = _libc().unshare  # looked up before the fork

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_MAX_BYTES, LOG_MAX_BYTES))
        resource.setrlimit(resource.RLIMIT_NPROC, (512, 512))
        unshare(CLONE_NEWNET)  # fails without privilege: the audit hook then refuses sockets

    return apply


class JobProcess:
    """One sandbox child, in a temporary folder of its own (its HOME, TMPDIR and working directory)."""

    def __init__(self) -> None:
        self.memory_mb: int | None = None
        self.started = time.monotonic()
        self.tmp = Path(tempfile.mkdtemp(prefix="qsolve-sandbox-"))
        self.log_path = self.tmp / "job.log"
        cmd = [sys.executable, "-m", "qsolve.sandbox.job"]
        self.channel, write_fd = os.pipe()
        env = environment(self.tmp) | {"QSOLVE_RESULT_FD": str(write_fd)}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.tmp,
                env=env,
                pass_fds=(write_fd,),
                start_new_session=True,
                preexec_fn=_prepare(),
            )
        os.close(write_fd)
        own, its = _network_namespace("self"), _network_namespace(self.proc.pid)
        #: ``namespace``: the child has a network of its own, with nothing in it; ``audit hook``: it
        #: shares the host's, and the job's audit hook refuses sockets
        self.network = "namespace" if own and its and own != its else "audit hook"

    def limit_memory(self, memory_mb: int) -> None:
        """Cap the child's address space (``RLIMIT_AS``), before it is sent its job."""
        size = memory_mb * 2**20
        with contextlib.suppress(ProcessLookupError):  # it died already: its job will say so
            resource.prlimit(self.proc.pid, resource.RLIMIT_AS, (size, size))
        self.memory_mb = memory_mb

    def send(self, line: str, close: bool = False) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
            if close:
                self.proc.stdin.close()

    def kill(self) -> int:
        """Kill the whole process group; the child's exit status."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait()

    def close(self) -> None:
        self.kill()
        with contextlib.suppress(OSError):
            os.close(self.channel)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, self.log_path.stat().st_size - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""
