"""Crash points, for the tests that kill a process at a chosen moment (issue 11: a submission killed
during its history stage). ``QSOLVE_FAILPOINT=name`` or ``name:n`` ends this process with SIGKILL the
n-th time (the first by default) it reaches ``failpoint(name)``, as a machine losing power would: no
cleanup, no ``finally``. ``name:pause`` holds it there instead (issue 24: a window a test opens and
closes): the process writes ``QSOLVE_HOME/failpoint.name`` and waits until the test removes it.
Unset, as everywhere outside those tests, a failpoint is one lookup."""

from __future__ import annotations

import os
import signal
import threading
import time

from qsolve.home import qsolve_home

VARIABLE = "QSOLVE_FAILPOINT"
PAUSE_MAX_S = 600
_lock = threading.Lock()
_reached: dict[str, int] = {}


def failpoint(name: str) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted or wanted.split(":", 1)[0] != name:
        return
    if wanted == f"{name}:pause":
        _pause(name)
        return
    times = int(wanted.split(":", 1)[1]) if ":" in wanted else 1
    with _lock:
        _reached[name] = _reached.get(name, 0) + 1
        if _reached[name] >= times:
            os.kill(os.getpid(), signal.SIGKILL)


def pause_file(name: str) -> os.PathLike:
    return qsolve_home() / f"failpoint.{name}"


def _pause(name: str) -> None:
    marker = pause_file(name)
    marker.write_text(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_MAX_S
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
