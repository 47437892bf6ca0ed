"""The targets' errors (importing them loads no Qiskit)."""

from __future__ import annotations

from qsolve.errors import QsolveError


class UnknownTarget(QsolveError):
    """A target string that names no target this platform has (or a scale out of range)."""


class TargetUnavailable(QsolveError):
    """A real target that cannot be reached from here (validation has no device access)."""
