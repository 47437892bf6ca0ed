"""A set-up built once for the whole test run, under pytest-xdist too: the first worker to need it builds it
in the run's temporary folder, which the workers share; the others wait for it and read it. Only for
set-ups the tests read or copy, never change (a worker's tests run beside another worker's).

``--dist loadgroup`` cannot do this here: with pytest 9.2 it groups nothing (pytest-xdist issue 1386), so
a module's tests, and a module-scoped fixture with them, reach every worker."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)``, called once for the run in an empty ``folder`` of its own; its value (pickled to
    the other workers)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # not under xdist
        return make(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent / name  # the run's, shared by its workers
    with open(root.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = root / "built.pickle"
            if not done.exists():
                if root.exists():
                    pytest.fail(f"another worker's build of {root} failed: see its error")
                root.mkdir()
                value = make(root)
                done.write_bytes(pickle.dumps(value))
            return pickle.loads(done.read_bytes())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
