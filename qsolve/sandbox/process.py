"""Starting a workflow process, talking to it, and ending it (standard library only).

The process (:mod:`qsolve.sandbox.child`) starts before its job is known, so that its imports overlap
the platform's. Its environment is rebuilt from nothing; it runs in a session of its own and, where the
kernel allows, in new network, PID, IPC, mount and UTS namespaces (``unshare`` between fork and exec;
the platform then checks in ``/proc`` which it got). The platform reads from it only JSON objects of
at most :data:`MAX_LINE` bytes and :data:`MAX_VALUES` values a line, nested at most :data:`MAX_DEPTH`
deep, :data:`MAX_EVENTS` lines and :data:`MAX_BYTES` in all, each before a deadline; anything else
ends the use of the process (:class:`~qsolve.errors.ProtocolBroken`).
"""

from __future__ import annotations

import contextlib
import ctypes
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
from functools import cache
from pathlib import Path
from typing import Any

from qsolve.errors import OutOfTime, PlatformStopped, ProcessDied, ProtocolBroken
from qsolve.runtime import cgroups
from qsolve.runtime.heartbeat import beat
from qsolve.runtime.stopping import stopped

LOG_MAX_BYTES = 64 * 2**20
MAX_LINE = 24 * 2**20  # a batch of circuits of 16 MiB, in base64, and room
MAX_EVENTS = 200_000
MAX_BYTES = 1 << 30
MAX_VALUES = 500_000  # in one line: Python objects of JSON cost 30 times its bytes
MAX_DEPTH = 64  # lists and objects within each other: the platform's own walks over them stay shallow
PIPE_CHUNK = 1 << 16
KEPT_ENV = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")
PACKAGE = Path(__file__).resolve().parents[1]  # the qsolve package: the one part of the platform it reads

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP = 0x20000000, 0x40000000, 0x02000000
#: tried in this order until one is granted: all, then what an unprivileged user may still get. A cgroup
#: namespace of its own: ``/proc/self/cgroup`` shows ``/``, not the host's cgroup paths
NAMESPACES = (
    CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWCGROUP,
    CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWUTS,
    CLONE_NEWNET | CLONE_NEWPID,
    CLONE_NEWNET,
)


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _namespace(pid: int | str, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")  # NaN, Infinity: json.loads takes them otherwise


def _depth(value: Any) -> int:
    """How deep lists and objects nest in a parsed JSON value (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def environment(tmp: Path) -> dict[str, str]:
    """Only what Python needs: no platform setting, no credential crosses."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    scratch = tmp / "scratch"
    env.update(
        {
            "PATH": "/usr/bin:/bin",
            "HOME": str(scratch),
            "TMPDIR": str(scratch),
            "PYTHONPATH": str(tmp / "lib"),
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
            "QISKIT_PARALLEL": "FALSE",
            "QISKIT_SETTINGS": str(scratch / "qiskit-settings.conf"),
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
    )
    env.setdefault("LANG", "C.UTF-8")
    return env


def _prepare(cgroup_fds: list[int]):
    """What the child does between fork and exec: its cgroups (before its cgroup namespace, which then
    shows them as ``/``), its first limits, and namespaces of its own."""
    unshare = _libc().unshare  # looked up before the fork

    def apply() -> None:
        cgroups.join(cgroup_fds)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_MAX_BYTES, LOG_MAX_BYTES))
        for flags in NAMESPACES:
            if unshare(flags) == 0:
                break

    return apply


def oom_kills() -> int | None:
    """The kernel's count of processes its out-of-memory killer has ended since boot (/proc/vmstat)."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def why_it_died(
    returncode: int, memory_mb: int | None, oom_before: int | None = None, over_limit: bool = False
) -> str:
    """Why a workflow process ended in the middle of a call. A SIGKILL is said to be for memory only
    when the kernel's out-of-memory killer ended some process meanwhile; ``over_limit``: it ended one
    of the process's own cgroup, for the job's memory limit."""
    if returncode < 0:
        # a realtime signal past SIGRTMIN has no name in signal.Signals: its number is said instead
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        oom = oom_before is not None and (oom_kills() or 0) > oom_before
        if over_limit:
            killed = (
                f" (over its memory limit of {memory_mb} MB, the job's one budget with the platform's work "
                "for it: the kernel's out-of-memory killer ended it)"
            )
        elif oom:
            killed = (
                f" (out of memory: the kernel's out-of-memory killer ended it; its limit is {memory_mb} MB)"
            )
        else:
            killed = " (by a signal from outside the sandbox, not for memory)"
        hint = {
            signal.SIGKILL: killed,
            signal.SIGXFSZ: f" (a file or the output grew past {LOG_MAX_BYTES // 2**20} MB)",
            signal.SIGSEGV: " (a crash in native code)",
            signal.SIGSYS: " (a system call the sandbox forbids)",
        }.get(sig, "")
        return f"the workflow process was killed by {name}{hint}"
    return f"the workflow process exited with status {returncode} in the middle of a call"


class JobProcess:
    """One workflow process, in a temporary folder of its own: ``workflow/`` (its copy, read only),
    ``scratch/`` (its HOME, TMPDIR and working directory, the one place it may write), ``lib/`` (what
    it imports of the platform) and ``job.log`` (what it prints)."""

    def __init__(self) -> None:
        self.memory_mb: int | None = None
        self.oom_before = oom_kills()  # a SIGKILL is put down to memory only if this count grew
        self.started = time.monotonic()
        self.deadline = float("inf")
        self.limit_s: int | None = None  # the job's time limit, as the job said it (the deadline is its own)
        self.tmp = Path(tempfile.mkdtemp(prefix="qsolve-sandbox-"))
        (self.tmp / "scratch").mkdir()
        (self.tmp / "lib").mkdir()
        (self.tmp / "lib" / "qsolve").symlink_to(PACKAGE, target_is_directory=True)
        self.log_path = self.tmp / "job.log"
        # its memory and its threads counted by the kernel, its own: memory_mb bounds it from begin()
        self.cgroup = cgroups.Cgroup.make()
        joining = self.cgroup.joining()
        self.channel, write_fd = os.pipe()
        env = environment(self.tmp) | {"QSOLVE_RESULT_FD": str(write_fd)}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-m", "qsolve.sandbox.child"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.tmp / "scratch",
                env=env,
                pass_fds=(write_fd,),
                start_new_session=True,
                preexec_fn=_prepare(joining),
            )
        os.close(write_fd)
        for fd in joining:
            os.close(fd)
        os.set_blocking(self.proc.stdin.fileno(), False)  # send() waits for room by the deadline
        self.platform_worker: Any = None  # the platform's worker for this process's batches (worker.py)
        self.inner: int | None = None  # the process that runs the job, once it has said which
        self._inner_fd: int | None = None  # a pidfd of it: a signal never reaches a reused pid
        self._buffer = b""
        self._closed = False
        self._events = 0
        self._bytes = 0

    @property
    def workflow(self) -> Path:
        return self.tmp / "workflow"

    @property
    def scratch(self) -> Path:
        return self.tmp / "scratch"

    def namespaces(self) -> dict[str, bool]:
        """Which namespaces the process has of its own, as ``/proc`` shows them from here."""
        pid = self.inner or self.proc.pid
        out = {}
        for kind in ("net", "pid", "ipc", "mnt"):
            # the first process's own children are in its new PID namespace, not itself
            theirs = "pid_for_children" if kind == "pid" and self.inner is None else kind
            own, its = _namespace("self", kind), _namespace(pid, theirs)
            out[kind] = bool(own and its and own != its)
        return out

    def status(self) -> dict[str, str]:
        """``/proc/<pid>/status`` of the process that runs the job, as read from outside it."""
        try:
            text = Path(f"/proc/{self.inner or self.proc.pid}/status").read_text()
        except OSError:
            return {}
        return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)

    def send(self, message: dict[str, Any]) -> None:
        """One line to the process, by the deadline: one that reads nothing cannot block the platform."""
        data = memoryview(json.dumps(message, allow_nan=False).encode() + b"\n")
        fd = self.proc.stdin.fileno()
        while data:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self._out_of_time()
            self._unless_stopped()
            _, ready, _ = select.select([], [fd], [], min(left, 1.0))
            if not ready:
                continue
            try:
                data = data[os.write(fd, data[:PIPE_CHUNK]) :]
            except BlockingIOError:
                continue
            except OSError:
                raise self._died() from None

    def _unless_stopped(self) -> None:
        """End the job at once if the flow it runs for was stopped (within a second: the waits poll);
        else the job, bounded by its deadline, is progress that keeps its run's lease."""
        beat()
        why = stopped()
        if why is not None:
            self.kill()
            raise PlatformStopped(f"the sandbox job was ended because {why}")

    def _out_of_time(self) -> OutOfTime:
        self.kill()
        return OutOfTime(f"the sandbox job was stopped at its time limit of {self.timeout_s} s")

    def receive(self) -> dict[str, Any]:
        """The next JSON object the process sends, by the deadline; the process's failure otherwise."""
        while b"\n" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self._out_of_time()
            self._unless_stopped()
            ready, _, _ = select.select([self.channel], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self.channel, 1 << 20)
            if not chunk:
                raise self._died()
            self._bytes += len(chunk)
            self._buffer += chunk
            if b"\n" not in self._buffer and len(self._buffer) > MAX_LINE:
                raise self.broke(f"a line longer than {MAX_LINE // 2**20} MiB")
            if self._bytes > MAX_BYTES:
                raise self.broke(f"more than {MAX_BYTES // 2**20} MiB in all")
        line, self._buffer = self._buffer.split(b"\n", 1)
        if len(line) > MAX_LINE:
            raise self.broke(f"a line longer than {MAX_LINE // 2**20} MiB")
        self._events += 1
        if self._events > MAX_EVENTS:
            raise self.broke(f"more than {MAX_EVENTS:,} messages")
        if line.count(b",") + line.count(b"[") + line.count(b"{") > MAX_VALUES:  # before it is built
            raise self.broke(f"a line of more than {MAX_VALUES:,} values")
        try:
            event = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise self.broke(f"a line that is not JSON: {line[:60]!r}") from None
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            raise self.broke(f"a line that is not an event: {line[:60]!r}")
        if _depth(event) > MAX_DEPTH:
            raise self.broke(f"a value nested more than {MAX_DEPTH} deep")
        return event

    @property
    def timeout_s(self) -> int:
        # a process started ahead began after the job did: its own start says nothing of the limit
        return self.limit_s if self.limit_s is not None else round(self.deadline - self.started)

    def broke(self, what: str) -> ProtocolBroken:
        self.kill()
        return ProtocolBroken(f"the workflow process broke the protocol: it sent {what}")

    def _died(self) -> ProcessDied:
        status = self.kill(wait=1.0)
        return ProcessDied(why_it_died(status, self.memory_mb, self.oom_before, self.cgroup.oom_killed()))

    def found(self, pid: int | None) -> None:
        """The process that runs the job, as it said: kept only if it is this process's child."""
        try:
            if pid and pid != self.proc.pid and self._parent_of(pid) == self.proc.pid:
                self._inner_fd, self.inner = os.pidfd_open(pid), pid
        except OSError:
            pass

    @staticmethod
    def _parent_of(pid: int) -> int | None:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
        return None

    def kill(self, wait: float | None = None) -> int:
        """End the process and the one that runs its job; the exit status (``wait``: give it that
        long to end on its own first, as it does when the channel closed because it exited)."""
        if wait is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return self.proc.wait(wait)
        if self._inner_fd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._inner_fd, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait()

    def end(self, wait_s: float = 10.0) -> None:
        """End the process and wait, up to ``wait_s``, until the one that ran its job has exited too;
        then drop the page cache it filled (:meth:`~qsolve.runtime.cgroups.Cgroup.drop_cache`)."""
        self.kill()
        if self._inner_fd is not None:
            with contextlib.suppress(OSError):
                select.select([self._inner_fd], [], [], wait_s)  # a pidfd is readable once it exited
        self.cgroup.drop_cache()

    def close(self) -> None:
        if self._closed:  # its descriptors' numbers may be another file's by now
            return
        self._closed = True
        self.kill()
        if self.platform_worker is not None:
            self.platform_worker.close()
        if self._inner_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._inner_fd)
            self._inner_fd = None
        with contextlib.suppress(OSError):
            os.close(self.channel)
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()
        self.cgroup.remove()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, self.log_path.stat().st_size - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""
