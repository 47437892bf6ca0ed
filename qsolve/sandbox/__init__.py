"""The sandbox: workflow code runs only in a confined workflow process; everything else on the platform.

    process.py    starting a workflow process, the bounded channel, ending it (JobProcess)
    remote.py     the platform's side of the calls: RemoteCode, circuits run by the platform's context
    calls.py      what a call returns, as data (MethodReturn, Answer); ModuleCode, the calls in-process
    circuits.py   circuits as QPY, checked from their headers before they are read
    child.py      the workflow process itself (python -m qsolve.sandbox.child)
    confine.py    how it confines itself, and what held (Protections)
    rootfs.py     the filesystem made for it, in its own mount namespace
    landlock.py, seccomp.py, privileges.py   the kernel's parts: Landlock, seccomp, uid and capabilities
    guard.py      audit hooks: friendly early errors in the workflow process, not the boundary
    launcher.py   a process provider's program confined from the same parts (python -m
                  qsolve.sandbox.launcher; the platform's side is qsolve.providers.confined)

The gates job run in it is :mod:`qsolve.validation.jobs`; the platform's own bounded work (a forked
worker) and the processes' cgroups are :mod:`qsolve.runtime`. The names load on first use: the workflow
process imports only what it runs.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

_HOMES = {
    "JobProcess": "process",
    "Protections": "confine",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
