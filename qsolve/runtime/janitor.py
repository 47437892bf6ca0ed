"""Nothing left behind by a command that is killed (issue 15, item 12).

``qsolve submit`` and the other commands that run a flow start helpers of their own: Prefect's
temporary server (a uvicorn process), sandbox scratch folders, temporary copies of a workflow. A
command killed with SIGKILL runs no ``finally`` and no ``atexit``, so :func:`guard` starts a janitor
first: a small process in a session of its own that holds a pidfd of the command, notes the command's
descendants twice a second while it lives, and when it ends (however it ends) kills those still
running (each checked by its start time, so a reused pid is never hit) and removes the command's
private temporary folder, where ``TMPDIR`` points for the command and everything it starts, and the
cgroups it made for its workflow processes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLL_S = 0.5
PREFIX = "qsolve-run-"


def guard() -> Path:
    """Give this process a private temporary folder and a janitor; the folder's path."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # tempfile reads TMPDIR again: every later temporary file goes there
    subprocess.Popen(
        [sys.executable, "-m", "qsolve.runtime.janitor", str(os.getpid()), str(folder)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not in the command's group: a Ctrl-C there does not stop it
        close_fds=True,
    )
    return folder


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _children(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return out


def _descendants(pid: int) -> dict[int, int]:
    """``pid -> start time`` of every process below ``pid``."""
    seen: dict[int, int] = {}
    todo = _children(pid)
    while todo:
        child = todo.pop()
        started = start_time(child)
        if child in seen or started is None:
            continue
        seen[child] = started
        todo += _children(child)
    return seen


def watch(pid: int, folder: Path) -> None:
    """Wait for ``pid`` to end, then kill its descendants still running and remove ``folder``."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        pidfd = None
    known: dict[int, int] = {}
    if pidfd is not None:
        import select

        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll(POLL_S * 1000):
            known.update(_descendants(pid))
        os.close(pidfd)
    known.pop(os.getpid(), None)  # the janitor is one of the command's children too
    _end_all(known)
    time.sleep(0.1)
    shutil.rmtree(folder, ignore_errors=True)
    from qsolve.runtime.cgroups import remove_all_of  # the workflow processes' cgroups it made

    remove_all_of(pid)


def _end_all(known: dict[int, int]) -> None:
    """Kill every process of ``known`` still running (each checked by its start time) and everything
    below them now, started since the last look (a worker's flow runs in process groups of their own):
    each stopped first, so that none starts another while the tree is read, then killed."""
    alive = {pid: started for pid, started in known.items() if start_time(pid) == started}
    for _ in range(5):
        for pid, started in list(alive.items()):
            if start_time(pid) == started:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
        more = {}
        for pid in list(alive):
            more.update(_descendants(pid))
        more.pop(os.getpid(), None)
        if not set(more) - set(alive):
            break
        alive.update(more)
    for pid, started in alive.items():
        if start_time(pid) == started:  # still the same process, not a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]), Path(sys.argv[2]))
