"""qsolve: the domain core of the platform. Imports no Prefect.

Workflow code imports what it needs from here::

    from qsolve import Context, MethodResult, MethodUnavailable

The names load on first use, so that importing a part of qsolve (the command line, the sandbox's
child process) does not pay for all of it.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

_HOMES = {
    "CircuitsRefused": "errors",
    "ClassicalContext": "workflow.context",
    "Context": "workflow.context",
    "MethodResult": "workflow.method",
    "MethodUnavailable": "errors",
    "QsolveError": "errors",
    "WorkflowInvalid": "errors",
}

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
