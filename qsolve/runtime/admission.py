"""A machine-wide budget of the memory that concurrent sandbox jobs may claim (issue 35, item 4).

Every sandbox job claims its whole memory budget (its ``memory_mb`` and the overhead its cgroup allows:
:data:`qsolve.runtime.cgroups.JOB_OVERHEAD_MB`) before its first workflow process gets its job; the
claims of the jobs running on a host at once never add up to more than the host's budget
(``QSOLVE_JOBS_MEMORY_MB``, by default :data:`SHARE` of the machine's memory). A job that does not fit
waits, saying so once (one line), and is admitted when enough is released; one larger than the whole
budget waits until it is alone, then runs alone.

The claims hold across threads and processes (the history stage's three cases at once, two flow runs
on one host), and outlive no process: each is a file in a per-host folder held with an exclusive
``flock`` on its own open file, which the kernel releases when its holder ends, however it ends. An
admission counts the claims under a lock on the folder's ``lock`` file: a claim it can lock itself is
a dead holder's, and is removed. A claim's size is in its name, so that nothing is read that a holder
may still be writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from qsolve.errors import PlatformStopped
from qsolve.runtime.heartbeat import beat
from qsolve.runtime.stopping import stopped

VARIABLE = "QSOLVE_JOBS_MEMORY_MB"
#: the machine's memory the jobs may claim together by default: the rest is the platform's own (its
#: flows' processes, the Prefect server, the state database)
SHARE = 0.75
POLL_S = 0.25
SUFFIX = ".claim"


class BudgetSettingInvalid(ValueError):
    """``QSOLVE_JOBS_MEMORY_MB`` is not a positive whole number of MB."""


def machine_mb() -> int:
    """The machine's memory (``MemTotal`` in ``/proc/meminfo``), in MB."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20


def budget_mb() -> int:
    """The host's budget for concurrent jobs: ``QSOLVE_JOBS_MEMORY_MB``, else :data:`SHARE` of its memory."""
    raw = os.environ.get(VARIABLE, "").strip()
    if not raw:
        return int(machine_mb() * SHARE)
    if not raw.isdigit() or int(raw) <= 0:
        raise BudgetSettingInvalid(f"{VARIABLE}={raw[:40]!r} is not a positive whole number of MB")
    return int(raw)


@dataclass(frozen=True)
class Claims:
    """What the live claims of a host hold together, and how many there are."""

    mb: int
    jobs: int


def _size(path: Path) -> int | None:
    try:
        return int(path.name.split("-", 1)[0])
    except ValueError:
        return None


def _live(folder: Path) -> Claims:
    """The live claims in ``folder`` (its lock held): a claim whose file can be locked here is a dead
    holder's, and is removed."""
    total = jobs = 0
    for path in folder.glob(f"*{SUFFIX}"):
        size = _size(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # released meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held: its holder lives
            total, jobs = total + (size or 0), jobs + 1
            continue
        finally:
            os.close(fd)  # a lock taken here goes with it
        with contextlib.suppress(OSError):
            path.unlink()
    return Claims(total, jobs)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for a few system calls by each admission
        yield
    finally:
        os.close(fd)


def _claim(folder: Path, mb: int) -> tuple[int, Path]:
    """A claim of ``mb``, held by the descriptor returned (its folder's lock held)."""
    path = folder / f"{mb}-{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: no one else holds it
    return fd, path


@contextlib.contextmanager
def admitted(
    folder: Path, mb: int, what: str, tell: Callable[[str], None], budget: int | None = None
) -> Iterator[float]:
    """Hold a claim of ``mb`` on the host's budget (``budget``, else :func:`budget_mb`) while inside;
    wait, saying so once through ``tell``, until it fits. Yields the seconds waited. A platform stop
    while it waits raises :class:`~qsolve.errors.PlatformStopped`."""
    budget = budget_mb() if budget is None else budget
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    began = time.monotonic()
    said = False
    while True:
        with _locked(folder):
            held = _live(folder)
            if held.jobs == 0 or held.mb + mb <= budget:
                fd, path = _claim(folder, mb)
                break
        if not said:
            tell(
                f"{what} waits for memory: its budget of {mb} MB and the {held.mb} MB held by {held.jobs} "
                f"running job{'s' if held.jobs != 1 else ''} are more than this host's {budget} MB for "
                f"jobs at once ({VARIABLE}); it starts when enough is released"
            )
            said = True
        beat()  # a wait for memory is the job's progress: its holder lives
        if (why := stopped()) is not None:
            raise PlatformStopped(f"the sandbox job was ended because {why}, while it waited for memory")
        time.sleep(POLL_S)
    try:
        yield time.monotonic() - began
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # its name first, then its lock (with the file)
        os.close(fd)
