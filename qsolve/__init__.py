"""qsolve: the domain core of the platform. Imports no Prefect.

Workflow code imports what it needs from here::

    from qsolve import Context, MethodResult, MethodUnavailable

The names load on first use, so that importing a part of qsolve (the command line, the sandbox's
child process) does not pay for all of it.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "CircuitsRefused": "qsolve.errors",
    "ClassicalContext": "qsolve.context",
    "Context": "qsolve.context",
    "MethodResult": "qsolve.method",
    "MethodUnavailable": "qsolve.errors",
    "QsolveError": "qsolve.errors",
    "WorkflowInvalid": "qsolve.errors",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'qsolve' has no attribute {name!r}")
