"""A host-wide budget of the memory that one user's concurrent sandbox jobs may claim (issue 35, item 4).

Every sandbox job claims its whole memory budget (its ``memory_mb`` and the overhead its cgroup allows:
:data:`qsolve.runtime.cgroups.JOB_OVERHEAD_MB`) before its first workflow process gets its job; the
claims of the jobs running on a host at once never add up to more than the host's budget
(``QSOLVE_JOBS_MEMORY_MB``, by default :data:`SHARE` of the machine's memory). A job that does not fit
waits, saying so once (one line), and is admitted when enough is released; one larger than the whole
budget waits until it is alone, then runs alone.

The claims hold across threads and processes of one user on one host, whatever their ``QSOLVE_HOME``
(the history stage's three cases at once, a worker's flow runs, a person's ``qsolve test`` in
``./.qsolve``), and outlive no process: each is a file in the user's folder of claims on this host
(:func:`claims_folder`: ``QSOLVE_JOBS_MEMORY_DIR``, else ``$XDG_RUNTIME_DIR/qsolve/jobs-memory``, else
``/run/qsolve/jobs-memory`` for root, else ``/tmp/qsolve-UID/jobs-memory``; each folder of it made
0700, and used only where it is a folder, not a link, and the user's own) held with an exclusive
``flock`` on its own open file, which the kernel releases when its holder ends, however it ends. An
admission counts the claims under a lock on the folder's ``lock`` file: a claim it can lock itself is
a dead holder's, and is removed. A claim's size is in its name, so that nothing is read that a holder
may still be writing.

Nothing in the folder blocks an admission: a claim is opened ``O_NONBLOCK | O_NOFOLLOW`` and anything
that is not a regular file (a FIFO, a socket, a device, a link) is removed unread, and the folder's
lock is taken without blocking, polling (saying once that it waits, hearing a platform stop). The
platform's workers are forked without exec (:mod:`qsolve.runtime.worker`), and a fork shares every open
file description of its parent, with its ``flock`` (open file description locks, ``F_OFD_SETLK``, are
shared the same way; only POSIX record locks are not, and those are per process, not per thread). So
every descriptor this module holds is registered, and a child forked while one is open closes its copy
at once (``os.register_at_fork``): the lock and the claims stay the admitting thread's alone. A fork
that this module never saw (a C library's) can still keep the folder's lock: the wait then says so and
ends at a stop, rather than blocking unheard.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from qsolve.errors import PlatformStopped
from qsolve.runtime.heartbeat import beat
from qsolve.runtime.stopping import stopped

VARIABLE = "QSOLVE_JOBS_MEMORY_MB"
#: the setting that names the folder of claims in place of the user's default (:func:`claims_folder`): the
#: jobs that share a budget are those that name one folder
FOLDER_VARIABLE = "QSOLVE_JOBS_MEMORY_DIR"
#: the machine's memory the jobs may claim together by default: the rest is the platform's own (its
#: flows' processes, the Prefect server, the state database)
SHARE = 0.75
POLL_S = 0.25
SUFFIX = ".claim"
#: the most digits QSOLVE_JOBS_MEMORY_MB may have (a billion TB is more than any host)
MAX_DIGITS = 12

#: the descriptors this module holds open (the folder's lock, claims), closed in any child forked
#: meanwhile; ``_fds_lock`` is held across a fork, so that none is opened and not yet registered then
_fds: set[int] = set()
_fds_lock = threading.Lock()


def _close_inherited() -> None:  # pragma: no cover - in a forked child
    global _fds_lock
    for fd in list(_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _fds.clear()
    _fds_lock = threading.Lock()


def _release_after_fork() -> None:
    _fds_lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=lambda: _fds_lock.acquire(),
        after_in_parent=_release_after_fork,
        after_in_child=_close_inherited,
    )


def _open(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open``, the descriptor registered (closed in a forked child): :func:`_close`."""
    with _fds_lock:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
        _fds.add(fd)
    return fd


def _close(fd: int) -> None:
    with _fds_lock:
        _fds.discard(fd)
        os.close(fd)


class BudgetSettingInvalid(ValueError):
    """``QSOLVE_JOBS_MEMORY_MB`` is not a positive whole number of MB."""


class ClaimsFolderUnsafe(BudgetSettingInvalid):
    """The folder of claims (or one of the folders it is made in) is a link, not a folder, or another
    user's: no job is admitted through it (its callers say so in one line, as for a bad budget)."""


def claims_folder() -> Path:
    """The folder of this user's claims on this host, made and checked (:func:`_private`):
    ``QSOLVE_JOBS_MEMORY_DIR`` (an absolute path), else ``jobs-memory`` in ``$XDG_RUNTIME_DIR/qsolve``
    (where that is the user's own runtime folder), else in ``/run/qsolve`` for root, else in
    ``/tmp/qsolve-UID``. Never in a ``QSOLVE_HOME``: every home of the host shares it."""
    raw = os.environ.get(FOLDER_VARIABLE, "").strip()
    if raw:
        if not os.path.isabs(raw):
            raise ClaimsFolderUnsafe(f"{FOLDER_VARIABLE}={raw[:80]!r} is not an absolute path")
        folder = Path(os.path.normpath(raw))
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # the operator's own folders
        _private(folder, len(folder.parts))
        return folder
    base = default_base(os.geteuid(), os.environ.get("XDG_RUNTIME_DIR", ""))
    folder = base / "jobs-memory"
    _private(folder, len(base.parts))  # from the first folder of qsolve's own: the rest is the system's
    return folder


def default_base(uid: int, runtime: str) -> Path:
    """The user's folder of qsolve's on this host, where its claims' folder is made: ``qsolve`` in
    ``runtime`` (``$XDG_RUNTIME_DIR``) where that is a folder of the user's closed to others, else
    ``/run/qsolve`` for root, else ``/tmp/qsolve-UID``."""
    if runtime and os.path.isabs(runtime):
        with contextlib.suppress(OSError):
            st = os.lstat(runtime)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077:
                return Path(os.path.normpath(runtime)) / "qsolve"
    return Path("/run/qsolve") if uid == 0 and os.path.isdir("/run") else Path(f"/tmp/qsolve-{uid}")


def _private(folder: Path, first: int) -> None:
    """Make ``folder``, and the folders it lies in from its ``first`` part on, each 0700 and each
    checked as it is: a folder, not a link (never followed: ``O_NOFOLLOW``), and this user's own, else
    :class:`ClaimsFolderUnsafe`; one of this user's that is open to others is closed (0700). Those above
    it (``/tmp``, ``/run``) are the system's: another user can neither replace nor enter a folder made
    so in them."""
    uid = os.geteuid()
    parts = folder.parts
    for n in range(max(first, 2), len(parts) + 1):
        path = Path(*parts[:n])
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise ClaimsFolderUnsafe(
                f"the folder of jobs' memory claims {path} is not a folder of its own (a link, or not a "
                f"folder: {e.strerror}); no job is admitted through it ({FOLDER_VARIABLE} names another)"
            ) from None
        try:
            st = os.fstat(fd)
            if st.st_uid != uid:
                raise ClaimsFolderUnsafe(
                    f"the folder of jobs' memory claims {path} is user {st.st_uid}'s, not this user's "
                    f"({uid}); no job is admitted through it ({FOLDER_VARIABLE} names another)"
                )
            if st.st_mode & 0o077:
                os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


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
    if not re.fullmatch(rf"[0-9]{{1,{MAX_DIGITS}}}", raw, re.ASCII) or int(raw) <= 0:
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
    holder's, and is removed; so is anything named as a claim that is not a regular file (a FIFO, a
    link: never opened in a way that can block)."""
    total = jobs = 0
    for path in folder.glob(f"*{SUFFIX}"):
        size = _size(path)
        try:
            fd = _open(path, os.O_RDONLY)
        except FileNotFoundError:  # released meanwhile
            continue
        except OSError:  # a link (ELOOP), or what cannot be opened: not a claim of ours
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # held: its holder lives
                total, jobs = total + (size or 0), jobs + 1
                continue
        finally:
            _close(fd)  # a lock taken here goes with it
        with contextlib.suppress(OSError):
            path.unlink()
    return Claims(total, jobs)


def _lock_file(folder: Path) -> int:
    """The folder's ``lock``, opened without blocking; anything else in its place is removed first."""
    path = folder / "lock"
    for _ in range(3):
        try:
            fd = _open(path, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            continue
        except OSError as e:  # a link in its place
            with contextlib.suppress(OSError):
                path.unlink()
            last = e
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        _close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
    raise OSError(f"the lock of {folder} cannot be opened as a file: {locals().get('last', 'not a file')}")


@contextlib.contextmanager
def _locked(folder: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """The folder's lock, held for a few system calls by each admission. Taken without blocking:
    ``waiting()`` is called between tries (it says so, hears a stop), so that a holder that lives on
    (a fork that kept its descriptor) never makes a wait unheard."""
    fd = _lock_file(folder)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waiting is not None:
                    waiting()
                time.sleep(POLL_S / 10)
        yield
    finally:
        _close(fd)


def _claim(folder: Path, mb: int) -> tuple[int, Path]:
    """A claim of ``mb``, held by the descriptor returned (its folder's lock held)."""
    path = folder / f"{mb}-{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}"
    fd = _open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
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
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _private(folder, len(folder.parts))
    began = time.monotonic()
    said = False
    locked_since: list[float] = []

    def waiting() -> None:
        """Between tries of the folder's lock: after a second, said once; a stop heard."""
        now = time.monotonic()
        if not locked_since:
            locked_since.append(now)
        if len(locked_since) == 1 and now - locked_since[0] >= 1.0:
            locked_since.append(now)  # said
            tell(
                f"{what} waits for memory: this host's claims of memory ({folder}) are held by another "
                "process; it starts when they are released"
            )
        beat()
        if (why := stopped()) is not None:
            raise PlatformStopped(f"the sandbox job was ended because {why}, while it waited for memory")

    while True:
        with _locked(folder, waiting):
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
        _close(fd)
