"""The platform's own work on a workflow's input, in a process that can be killed (issue 22).

Decoding a batch of circuits, simulating and scoring it, and validating a solution against the
workflow's schemas are platform code, but their cost is the submitter's to choose: a QPY of a few
hundred bytes can claim billions of qubits, a regular expression in a schema can backtrack for
centuries, a batch can simulate for minutes. Each piece of that work runs in a *platform worker*: a
child forked from the platform process (it never runs workflow code: the workflow's code is only
ever in workflow processes), with an address-space bound, killed at its deadline. The platform gets
the work's value back, or :class:`WorkStopped` naming why it did not.

A fork costs milliseconds and shares the platform's loaded Qiskit and Aer. The batches of one
workflow process go to one :class:`Worker`, kept while it stays within its bounds, so that what a
target builds once (a pass manager, a noise model) is built once; a validation gets a worker of its
own (:func:`run`). Parallel libraries stay on one thread in a worker: a thread pool of the parent
does not exist in a forked child.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from qsolve.errors import OutOfTime

if TYPE_CHECKING:
    from qsolve.runtime.cgroups import Cgroup

#: what a worker may allocate beyond what the platform had mapped when it forked, by default
MEMORY_MB = 2048
#: the most the worker may send back
RESULT_MAX_BYTES = 256 * 2**20
POLL_S = 0.5
#: a worker is what the kernel's out-of-memory killer ends first (the most it takes: 1000)
OOM_SCORE_ADJ = 1000
#: the most one validation against a workflow's schema may take: no honest schema needs seconds
SCHEMA_S = 10.0


class WorkStopped(Exception):  # noqa: N818
    """The platform stopped its own work on the workflow's input; ``str(e)`` says why."""


class WorkOutOfTime(WorkStopped):
    """The work reached its deadline and was killed."""


class HostShort(WorkStopped):
    """The worker was killed (SIGKILL) while its job's own cgroup recorded no out-of-memory kill of its
    own: the host's out-of-memory killer took it (its ``oom_score_adj`` of :data:`OOM_SCORE_ADJ`
    makes it the first taken, whatever its job holds), or something else of the host's did. The
    platform's failure, never the workflow's: its case is not filed against the workflow, nor charged."""


#: what a :class:`HostShort` says of the host, in its one line
HOST_SHORT = "the host ran short of memory"


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Raised(Exception):  # noqa: N818
    """What the work raised in the worker, by its type's name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message


_MEMORY = pickle.dumps(("memory", None))


def _answer(fn: Callable[..., Any], args: tuple) -> bytes:
    try:
        out: tuple = ("ok", fn(*args))
    except MemoryError:
        return _MEMORY
    except BaseException as e:  # noqa: BLE001 - the work's own failure, reported as it is
        out = ("raised", (type(e).__name__, str(e)[:2000]))
    try:
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return _MEMORY
    except Exception as e:
        return pickle.dumps(("raised", (type(e).__name__, f"its result does not pickle: {e}")))


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view[: 1 << 20]) :]


def _bound(memory_mb: int) -> None:
    limit = _mapped_bytes() + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # the kernel's out-of-memory killer takes the worker first, in its job's cgroup as on the machine:
    # its work is the platform's to stop (it fails its case, naming the budget), never the platform's
    # own processes, the database's or another job's
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write(str(OOM_SCORE_ADJ))
    # a thread pool of the parent does not exist in a forked child: parallel libraries stay on this one
    os.environ.update({"QISKIT_IN_PARALLEL": "TRUE", "OMP_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1"})


def _serve(requests: int, answers: int, memory_mb: int) -> None:  # pragma: no cover - the worker
    """The worker's loop: a request (a function of the platform's and its arguments), its answer."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the platform's: it ends this
        _bound(memory_mb)
        while True:
            head = _read_exact(requests, 8)
            if head is None:
                break
            body = _read_exact(requests, int.from_bytes(head, "big"))
            if body is None:
                break
            fn, args = pickle.loads(body)  # from the platform process that forked this one
            data = _answer(fn, args)
            _write_all(answers, data)
            if data is _MEMORY:
                break  # what is left of a worker that ran out of memory is not used again
    except MemoryError:
        code = 3
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 4
    finally:
        os._exit(code)


class Worker:
    """A platform worker kept for a workflow process's cases: forked on first use, so that what the
    platform's targets build once (pass managers, noise models, Aer's own set-up) is built once in it
    too; killed at a deadline and replaced after any failure."""

    def __init__(self, memory_mb: int = MEMORY_MB) -> None:
        self.memory_mb = memory_mb
        self.pid: int | None = None
        self._requests = self._answers = -1
        self.cgroup: Cgroup | None = None  # the job's memory cgroup its work is charged to (charge_to)
        self._in: Cgroup | None = None  # the one it is in now

    def charge_to(self, cgroup: Cgroup) -> None:
        """Charge the worker's work from now on to ``cgroup`` (the memory cgroup of the workflow process
        it works for): the job's one memory budget holds both (issue 35). The worker moves into it
        before its next piece of work (at once, when forked, before it has done any)."""
        self.cgroup = cgroup

    def _join(self) -> None:
        cgroup = self.cgroup
        if cgroup is not None and self._in is not cgroup and self.pid is not None and cgroup.take(self.pid):
            self._in = cgroup

    def over_budget(self) -> bool:
        """Whether the kernel ended a process of the cgroup the worker is charged to, for its limit."""
        return self._in is not None and self._in.oom_killed()

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker
            os.close(req_w)
            os.close(ans_r)
            _serve(req_r, ans_w, self.memory_mb)
        os.close(req_r)
        os.close(ans_w)
        self.pid, self._requests, self._answers = pid, req_w, ans_r

    def call(self, fn: Callable[..., Any], *args: Any, what: str, deadline: float) -> Any:
        """``fn(*args)`` in the worker by ``deadline`` (``time.monotonic()``), within its memory bound.
        Its value, or :class:`Raised`, :class:`WorkOutOfTime` or :class:`WorkStopped`."""
        if self.pid is None:
            self._start()
        self._join()
        try:
            return self._call(fn, args, what, deadline)
        except (WorkStopped, OSError) as e:
            self.close()
            if isinstance(e, WorkStopped):
                raise
            raise self._died(what) from None

    def _call(self, fn: Callable[..., Any], args: tuple, what: str, deadline: float) -> Any:
        data = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(self._requests, data)  # the worker reads at once: it is the platform's own
        head = self._receive(8, what, deadline)
        size = int.from_bytes(head, "big")
        if size > RESULT_MAX_BYTES:
            most = RESULT_MAX_BYTES // 2**20
            raise WorkStopped(f"the platform stopped {what}: its result is over {most} MiB")
        kind, value = pickle.loads(self._receive(size, what, deadline))  # the platform's own worker
        if kind == "ok":
            return value
        if kind == "memory":
            raise WorkStopped(f"{what} needs more than the platform's memory bound of {self.memory_mb} MB")
        raise Raised(*value)

    def _receive(self, n: int, what: str, deadline: float) -> bytes:
        parts, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkOutOfTime(f"the platform stopped {what} at its deadline")
            ready, _, _ = select.select([self._answers], [], [], min(left, POLL_S))
            if not ready:
                continue
            chunk = os.read(self._answers, min(n - got, 1 << 20))
            if not chunk:
                raise self._died(what)
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _died(self, what: str) -> WorkStopped:
        over = self.over_budget()
        status = self._reap()
        if status is not None and os.WIFSIGNALED(status):
            how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = "exited" if status is None else f"exited with status {os.waitstatus_to_exitcode(status)}"
        killed = status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        if killed and not over:  # not its job's cgroup's doing: the host's (its memory, most likely)
            return HostShort(
                f"the platform's worker {how} while it did {what}: {HOST_SHORT} (the kernel's "
                f"out-of-memory killer takes the platform's workers first; the job was within its memory "
                f"budget of {self.memory_mb} MB): the platform's failure, not the workflow's"
            )
        if over and killed:
            return WorkStopped(
                f"the platform's worker {how} while it did {what}: over the job's memory budget of "
                f"{self.memory_mb} MB (its workflow process and the platform's work for it, together; the "
                "kernel's out-of-memory killer ended it)"
            )
        return WorkStopped(
            f"the platform's worker {how} while it did {what} (its memory bound is {self.memory_mb} MB)"
        )

    def _reap(self) -> int | None:
        if self.pid is None:
            return None
        pid, self.pid, self._in = self.pid, None, None
        for fd in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            return os.waitpid(pid, 0)[1]
        return None

    def close(self) -> None:
        """End the worker (it keeps nothing anyone needs)."""
        self._reap()


@contextlib.contextmanager
def kept(memory_mb: int = MEMORY_MB) -> Iterator[Worker]:
    """A worker for a run of pieces of work (the checks of every case, say), ended afterwards."""
    one = Worker(memory_mb)
    try:
        yield one
    finally:
        one.close()


def run(
    fn: Callable[..., Any],
    *args: Any,
    what: str,
    deadline: float,
    memory_mb: int = MEMORY_MB,
) -> Any:
    """``fn(*args)`` in a worker of its own, by ``deadline`` and within ``memory_mb`` more than the
    platform holds: its value, or :class:`Raised`, :class:`WorkOutOfTime`, :class:`WorkStopped`."""
    one = Worker(memory_mb)
    try:
        return one.call(fn, *args, what=what, deadline=deadline)
    finally:
        one.close()


def out_of_time(timeout_s: int) -> OutOfTime:
    """The job's own failure when the platform's work on it reached the job's deadline."""
    return OutOfTime(f"the sandbox job was stopped at its time limit of {timeout_s} s")


class SchemaStopped(WorkStopped):
    """A validation against a workflow's schema that the platform stopped; ``str(e)`` says why."""
