"""The platform's own work on a workflow's input, in a process that can be killed (issue 22).

Decoding a batch of circuits, simulating and scoring it, and validating a solution against the
workflow's schemas are platform code, but their cost is the submitter's to choose: a QPY of a few
hundred bytes can claim billions of qubits, a regular expression in a schema can backtrack for
centuries, a batch can simulate for minutes. Each piece of that work runs in a *platform worker*: a
child forked from the platform process (it never runs workflow code: the workflow's code is only
ever in workflow processes), with an address-space bound, killed at its deadline. The platform gets
the work's value back, or :class:`WorkStopped` naming why it did not.

A fork costs milliseconds and shares the platform's loaded Qiskit and Aer, so the bound is cheap
enough for every batch and every solution. Parallel libraries are told to stay on one thread in
the worker: a thread pool of the parent does not exist in a forked child.
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
from collections.abc import Callable
from typing import Any

from qsolve.errors import OutOfTime

#: what a worker may allocate beyond what the platform had mapped when it forked, by default
MEMORY_MB = 2048
#: the most the worker may send back
RESULT_MAX_BYTES = 256 * 2**20
POLL_S = 0.5
#: the most one validation against a workflow's schema may take: no honest schema needs seconds
SCHEMA_S = 10.0


class WorkStopped(Exception):  # noqa: N818
    """The platform stopped its own work on the workflow's input; ``str(e)`` says why."""


class WorkOutOfTime(WorkStopped):
    """The work reached its deadline and was killed."""


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _child(fn: Callable[..., Any], args: tuple, memory_mb: int, write_fd: int) -> None:
    code = 0
    try:
        limit = _mapped_bytes() + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.environ.update({"QISKIT_IN_PARALLEL": "TRUE", "OMP_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1"})
        try:
            out: tuple = ("ok", fn(*args))
        except MemoryError:
            out = ("memory", None)
        except BaseException as e:  # noqa: BLE001 - the work's own failure, reported as it is
            out = ("raised", (type(e).__name__, str(e)[:2000]))
        try:
            data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            data = pickle.dumps(("raised", (type(e).__name__, f"its result does not pickle: {e}")))
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view[: 1 << 20]) :]
    except MemoryError:
        code = 3
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 4
    finally:
        os._exit(code)


class Raised(Exception):  # noqa: N818
    """What the work raised in the worker, by its type's name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message


def run(
    fn: Callable[..., Any],
    *args: Any,
    what: str,
    deadline: float,
    memory_mb: int = MEMORY_MB,
) -> Any:
    """``fn(*args)`` in a platform worker, by ``deadline`` (``time.monotonic()``) and within
    ``memory_mb`` more than the platform holds. Its value, or: :class:`Raised` (what it raised),
    :class:`WorkOutOfTime` (killed at the deadline), :class:`WorkStopped` (out of memory, or died)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the worker
        os.close(read_fd)
        _child(fn, args, memory_mb, write_fd)
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    status: int | None = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkOutOfTime(f"the platform stopped {what} at its deadline")
            ready, _, _ = select.select([read_fd], [], [], min(left, POLL_S))
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > RESULT_MAX_BYTES:
                most = RESULT_MAX_BYTES // 2**20
                raise WorkStopped(f"the platform stopped {what}: its result is over {most} MiB")
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_fd)
        if status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if not chunks:
        died = (
            f"killed by {signal.Signals(-os.waitstatus_to_exitcode(status)).name}"
            if os.WIFSIGNALED(status)
            else f"exited with status {os.waitstatus_to_exitcode(status)}"
        )
        raise WorkStopped(
            f"the platform's worker {died} while it did {what} (its memory bound is {memory_mb} MB)"
        )
    kind, value = pickle.loads(b"".join(chunks))  # the platform's own worker: nothing of the workflow's
    if kind == "ok":
        return value
    if kind == "memory":
        raise WorkStopped(f"{what} needs more than the platform's memory bound of {memory_mb} MB")
    raise Raised(*value)


def out_of_time(timeout_s: int) -> OutOfTime:
    """The job's own failure when the platform's work on it reached the job's deadline."""
    return OutOfTime(f"the sandbox job was stopped at its time limit of {timeout_s} s")


class SchemaStopped(WorkStopped):
    """A validation against a workflow's schema that the platform stopped; ``str(e)`` says why."""


def schema_error(
    schema: dict[str, Any],
    value: Any,
    what: str,
    *,
    deadline: float | None = None,
    memory_mb: int = MEMORY_MB,
) -> str | None:
    """:func:`qsolve.params.schema_error` of a workflow's schema, in a platform worker: at most
    :data:`SCHEMA_S` seconds and never past ``deadline`` (the job's). :class:`SchemaStopped` when the
    platform stopped it (a pattern that backtracks, say), :class:`WorkOutOfTime` at ``deadline``."""
    from qsolve.params import schema_error as check

    own = time.monotonic() + SCHEMA_S
    try:
        return run(check, schema, value, what=f"validating {what}", deadline=min(own, deadline or own),
                   memory_mb=memory_mb)
    except WorkOutOfTime:
        if deadline is not None and deadline <= own:
            raise
        raise SchemaStopped(
            f"the platform stopped validating {what} after {SCHEMA_S:g} s (a regular expression that "
            "backtracks, or a schema as costly)"
        ) from None
    except Raised as e:
        raise SchemaStopped(f"the platform could not validate {what}: {e}") from None
    except SchemaStopped:
        raise
    except WorkStopped as e:
        raise SchemaStopped(str(e)) from None
