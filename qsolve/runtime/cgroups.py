"""A control group of its own for each workflow process: the kernel counts its memory and its threads.

The address-space cap (``RLIMIT_AS``) bounds what a process maps, not what it holds: a memory file
(``memfd_create``) written and never mapped, or a ``tmpfs`` file, holds memory in no address space
(a job of 256 MB held 1 GiB so). And ``RLIMIT_NPROC`` counts the threads of a *uid*, every workflow
process's together: one job saw how many threads the others held, and could take them all.

Each workflow process is put in a cgroup of its own, made by the platform (root) beneath the
platform's own, before the process runs anything (between fork and exec), and before it takes a
cgroup namespace of its own (so that it sees its cgroup as ``/``):

- ``memory``: every page it holds (anonymous memory, memory files, its ``tmpfs`` scratch, the page
  cache it fills) is charged to it, up to :data:`RUNTIME_MB` (the Python runtime and Qiskit loaded)
  plus the job's ``memory_mb``, and no swap; past that the kernel's out-of-memory killer ends it, and the
  platform says so (:meth:`Cgroup.oom_killed`);
- ``pids``: at most :data:`THREADS` threads, its own count and no one else's.

The memory cgroup has two leaves (issue 35): :data:`WORKFLOW`, the process's, with the limit above, and
:data:`WORKER`, into which the job's platform worker is moved (:meth:`Cgroup.take`) while it works for
the process; the cgroup around both is bounded by the job's budget, ``memory_mb`` and
:data:`JOB_OVERHEAD_MB`: one job, one budget, whatever its worker simulates.

Once a process has exited, what is still charged to its memory cgroup (the page cache it filled) is
dropped before the next process of the job starts (:meth:`Cgroup.drop_cache`), so that the re-run of
``reproducible`` cannot time reads to learn which files the first process read.

Both hierarchies of cgroup v1 (``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``) and the
unified one of v2 (``memory.max``, ``memory.swap.max``) are used, whichever holds the controller
(this machine has v1's; the v2 names are the kernel's documented ones, not tried here). Each
cgroup is named by the platform process's pid and a random part; ``mkdir`` of a cgroup that exists
fails, so no two processes, of one platform process or of two, ever share one: the kernel keeps that
claim. A platform process killed before it removed its cgroups leaves them to its janitor
(:mod:`qsolve.runtime.janitor`, :func:`remove_all_of`), or, with none, to the next platform process to make
one (:func:`remove_left`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

#: what the runtime holds, allowed on top of the job's memory_mb: Python, NumPy, Qiskit and Aer loaded
#: and a small simulation charged 75 to 78 MB to a workflow process's cgroup here (at most, over the
#: jobs of tests/qsolve/sandbox/test_sandbox.py)
RUNTIME_MB = 256
#: allowed on top of that where the job's platform worker is charged to the same cgroup (issue 35): the
#: platform's pages it copies on first write (Python writes every object it reads: its count of
#: references), Aer's and the transpiler's own working set. The worker charged 90 to 260 MB here over
#: the example workflows' gates (memory.max_usage_in_bytes, less the workflow process's own)
WORKER_MB = 512
#: a job's memory budget is its ``memory_mb`` and this: its workflow process's runtime and its worker's
JOB_OVERHEAD_MB = RUNTIME_MB + WORKER_MB
#: the two leaves of a job's memory cgroup, whose limit is the job's budget: the workflow process's own
#: (its limit as before: RUNTIME_MB and memory_mb) and the platform worker's (bounded by the job's)
WORKFLOW, WORKER = "workflow", "worker"
CONTROLLERS = ("memory", "pids")
#: every cgroup of a workflow process is named ``qsolve-sandbox-<platform pid>-<random>``
PREFIX = "qsolve-sandbox-"
#: the most threads a workflow process may run (``pids.max``; ``RLIMIT_NPROC`` where no cgroup counts them)
THREADS = 512
#: how long :meth:`Cgroup.remove` waits for the processes it killed to be gone from the cgroup
REMOVE_WAIT_S = 10.0


@dataclass(frozen=True)
class _Hierarchy:
    path: Path  # the platform's own cgroup in it
    v2: bool


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """``(root, mount point, type, super options)`` of each cgroup filesystem this process sees."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, after = left.split(), right.split()
                if len(fields) >= 5 and len(after) >= 3 and after[0] in ("cgroup", "cgroup2"):
                    out.append((fields[3], fields[4], after[0], set(after[2].split(","))))
    except OSError:
        pass
    return out


def _own(controller: str) -> _Hierarchy | None:
    """The platform's own cgroup in the hierarchy that holds ``controller``, when it is mounted here."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    mine = {}
    for line in lines:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            mine[name] = path
    for root, point, kind, options in _mounts():
        if kind == "cgroup" and controller in options and controller in mine:
            rel = os.path.relpath(mine[controller], root)
        elif kind == "cgroup2" and "" in mine and controller in _v2_controllers(Path(point)):
            rel = os.path.relpath(mine[""], root)
        else:
            continue
        if rel.startswith(".."):
            continue
        return _Hierarchy(Path(point) / rel, kind == "cgroup2")
    return None


def _v2_controllers(point: Path) -> set[str]:
    try:
        return set((point / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


@dataclass
class Cgroup:
    """A workflow process's cgroups, one a controller; ``missing`` says what could not be made."""

    name: str
    paths: dict[str, Path] = field(default_factory=dict)
    v2: dict[str, bool] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    memory_mb: int | None = None
    #: the leaves of its memory cgroup (:data:`WORKFLOW`, :data:`WORKER`); none where they could not be made
    leaves: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def make(cls) -> Cgroup:
        """Make the cgroups beneath the platform's own; what fails is in ``missing``. The first time,
        remove what platform processes that have ended left (:func:`remove_left`)."""
        remove_left()
        made = cls(f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}")
        for controller in CONTROLLERS:
            own = _own(controller)
            if own is None:
                made.missing.append(f"no {controller} cgroup: no {controller} controller is mounted here")
                continue
            path = own.path / made.name
            try:
                path.mkdir(mode=0o700)  # fails if it exists: the name is this process's alone
                if own.v2:
                    (own.path / "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError as e:
                made.missing.append(f"no {controller} cgroup of its own: {e.strerror or e}")
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            made.paths[controller], made.v2[controller] = path, own.v2
        made._make_leaves()
        if "pids" in made.paths:
            made._write("pids", "pids.max", str(THREADS))
        return made

    def _make_leaves(self) -> None:
        """The memory cgroup's two leaves: the process joins :data:`WORKFLOW`, a job's platform worker
        :data:`WORKER` (:meth:`take`). Where they cannot be made, both are in the one cgroup."""
        top = self.paths.get("memory")
        if top is None:
            return
        try:
            if self.v2["memory"]:  # the unified hierarchy: its controllers passed on to the leaves
                both = self.paths.get("pids") == top
                (top / "cgroup.subtree_control").write_text("+memory +pids" if both else "+memory")
            for leaf in (WORKFLOW, WORKER):
                (top / leaf).mkdir(mode=0o700)
                self.leaves[leaf] = top / leaf
        except OSError:
            for path in self.leaves.values():
                with contextlib.suppress(OSError):
                    path.rmdir()
            self.leaves.clear()

    def joining(self) -> list[int]:
        """Descriptors of each cgroup's ``cgroup.procs`` (the memory cgroup's :data:`WORKFLOW` leaf), opened
        before the fork: :func:`join` writes the process's pid in them between fork and exec."""
        fds, seen = [], set()
        for path in self.paths.values():
            where = self.leaves.get(WORKFLOW, path) if path == self.paths.get("memory") else path
            if where in seen:  # cgroup v2: one hierarchy for both controllers
                continue
            seen.add(where)
            with contextlib.suppress(OSError):
                fds.append(os.open(where / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        return fds

    @property
    def counts_threads(self) -> bool:
        return "pids" in self.paths

    def limit(self, memory_mb: int, overhead_mb: int = RUNTIME_MB, worker_mb: int = 0) -> None:
        """Bound the memory the process may hold: ``overhead_mb`` (what its runtime holds:
        :data:`RUNTIME_MB`) plus ``memory_mb``, no swap; and the cgroup's processes together (the
        process and the job's worker, :meth:`take`) to ``worker_mb`` more (:data:`WORKER_MB`)."""
        if "memory" not in self.paths:
            return
        self.memory_mb = memory_mb
        self._bound(self.paths["memory"], overhead_mb + worker_mb + memory_mb)
        if WORKFLOW in self.leaves:
            self._bound(self.leaves[WORKFLOW], overhead_mb + memory_mb)

    def _bound(self, path: Path, mb: int) -> None:
        cap = str(mb * 2**20)
        if self.v2["memory"]:
            (path / "memory.max").write_text(cap)
            (path / "memory.swap.max").write_text("0")
        else:  # v1: the limit of memory and swap together may never be below the limit of memory
            with contextlib.suppress(OSError):  # raised first (lowered after, refused here then)
                (path / "memory.memsw.limit_in_bytes").write_text(cap)
            (path / "memory.limit_in_bytes").write_text(cap)
            with contextlib.suppress(FileNotFoundError):
                (path / "memory.memsw.limit_in_bytes").write_text(cap)

    def take(self, pid: int) -> bool:
        """Move process ``pid`` (the job's platform worker) into this memory cgroup: what it allocates
        from now on is charged here, against the same limit as the workflow process (what it held
        before stays charged where it was). Whether it moved."""
        path = self.paths.get("memory")
        if path is None:
            return False
        try:
            (self.leaves.get(WORKER, path) / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def _write(self, controller: str, name: str, value: str, missing_ok: bool = False) -> None:
        try:
            (self.paths[controller] / name).write_text(value)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def oom_killed(self) -> bool:
        """Whether the kernel's out-of-memory killer ended a process of this cgroup or its leaves (for
        a limit of theirs)."""
        path = self.paths.get("memory")
        if path is None:
            return False
        name = "memory.events" if self.v2["memory"] else "memory.oom_control"
        for where in (path, *self.leaves.values()):
            try:
                text = (where / name).read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, count = line.partition(" ")
                if key == "oom_kill" and count.strip().isdigit() and int(count) > 0:
                    return True
        return False

    def drop_cache(self) -> None:
        """Once its processes have exited: drop from memory what is still charged to the cgroup, the
        page cache its process filled above all. A file it read stays cached otherwise, and a process
        after it (``reproducible``'s re-run) could time a read to learn which files it read: a value
        passed on (v1 ``memory.force_empty``, v2 ``memory.reclaim``)."""
        path = self.paths.get("memory")
        if path is None:
            return
        with contextlib.suppress(OSError):  # EBUSY, EAGAIN: what could not be reclaimed stays
            if self.v2["memory"]:
                (path / "memory.reclaim").write_text((path / "memory.current").read_text().strip() or "0")
            else:
                (path / "memory.force_empty").write_text("0")

    def remove(self) -> None:
        """Kill what is left in the cgroups (and their leaves) and remove them."""
        for top in self.paths.values():
            for leaf in (WORKFLOW, WORKER):
                _remove_one(top / leaf)
            _remove_one(top)
        self.paths.clear()
        self.leaves.clear()


def _remove_one(path: Path) -> None:
    """Kill what is left in one cgroup and remove it (gone already: nothing to do)."""
    until = time.monotonic() + REMOVE_WAIT_S
    while True:
        for pid in _pids(path):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY: a killed process not yet gone
            if time.monotonic() > until:
                return
            time.sleep(0.01)


def remove_all_of(pid: int) -> None:
    """Remove the cgroups a platform process ``pid`` made and left (it was killed): its janitor's work."""
    _remove_where(lambda owner: owner == str(pid))


@cache
def remove_left() -> None:
    """Remove the cgroups of platform processes that ended without removing them (killed with no
    janitor, as a test's platform is): named by a pid no process has now. Once a process."""
    _remove_where(lambda owner: owner.isdigit() and not os.path.exists(f"/proc/{owner}"))


def _remove_where(owned: Callable[[str], bool]) -> None:
    """Remove each workflow process's cgroup whose platform process's pid (in its name) is ``owned``."""
    for controller in CONTROLLERS:
        own = _own(controller)
        if own is None:
            continue
        with contextlib.suppress(OSError):
            for path in own.path.glob(f"{PREFIX}*-*"):
                if owned(path.name.removeprefix(PREFIX).split("-", 1)[0]):
                    Cgroup(path.name, paths={controller: path}).remove()


def join(fds: list[int]) -> None:
    """Between fork and exec: this process into each cgroup of ``fds`` (:meth:`Cgroup.joining`)."""
    pid = str(os.getpid()).encode()
    for fd in fds:
        os.write(fd, pid)
        os.close(fd)


def _pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []
