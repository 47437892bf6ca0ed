"""qsolve: the domain core of the platform. Imports no Prefect.

Workflow code imports what it needs from here::

    from qsolve import Context, MethodResult, MethodUnavailable
"""

from qsolve.context import ClassicalContext, Context
from qsolve.errors import CircuitsRefused, MethodUnavailable, QsolveError, WorkflowInvalid
from qsolve.method import MethodResult

__all__ = [
    "CircuitsRefused",
    "ClassicalContext",
    "Context",
    "MethodResult",
    "MethodUnavailable",
    "QsolveError",
    "WorkflowInvalid",
]
