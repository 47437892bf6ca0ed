"""Crash points, for the tests that kill a process at a chosen moment (issue 11: a submission killed
during its history stage). ``QSOLVE_FAILPOINT=name`` or ``name:n`` ends this process with SIGKILL the
n-th time (the first by default) it reaches ``failpoint(name)``, as a machine losing power would: no
cleanup, no ``finally``. Unset, as everywhere outside those tests, a failpoint is one lookup."""

from __future__ import annotations

import os
import signal
import threading

VARIABLE = "QSOLVE_FAILPOINT"
_lock = threading.Lock()
_reached: dict[str, int] = {}


def failpoint(name: str) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted or wanted.split(":", 1)[0] != name:
        return
    times = int(wanted.split(":", 1)[1]) if ":" in wanted else 1
    with _lock:
        _reached[name] = _reached.get(name, 0) + 1
        if _reached[name] >= times:
            os.kill(os.getpid(), signal.SIGKILL)
