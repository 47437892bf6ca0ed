"""The sandbox: workflow code runs only in a confined workflow process; everything else on the platform.

    jobs.py       the gates job and one case as a platform run: run_job, run_case_job, Limits, Outcome
    process.py    starting a workflow process, the bounded channel, ending it (JobProcess)
    remote.py     the platform's side of the calls: RemoteCode, circuits run by the platform's context
    calls.py      what a call returns, as data (MethodReturn, Answer); ModuleCode, the calls in-process
    circuits.py   circuits as QPY, checked from their headers before they are read
    worker.py     the platform's own work on a workflow's input (decoding, simulating, scoring,
                  schemas) in a forked worker, within a memory bound and by a deadline
    child.py      the workflow process itself (python -m qsolve.sandbox.child)
    confine.py    how it confines itself, and what held (Protections)
    rootfs.py     the filesystem made for it, in its own mount namespace
    landlock.py, seccomp.py, privileges.py   the kernel's parts: Landlock, seccomp, uid and capabilities
    guard.py      audit hooks: friendly early errors in the workflow process, not the boundary

The names load on first use: the workflow process imports only what it runs.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

_HOMES = {
    "CopyRefused": "jobs",
    "Event": "jobs",
    "JobProcess": "process",
    "Limits": "jobs",
    "Outcome": "jobs",
    "Protections": "confine",
    "TIMEOUT_RANGE": "jobs",
    "confinement_required": "jobs",
    "run_case_job": "jobs",
    "run_job": "jobs",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
