"""The ``ibm:`` target's errors, each with the ``reason`` the platform reads, and the scrub that keeps the
API key out of every message made from a library's."""

from __future__ import annotations

from qsolve.providers.credentials import Secret
from qsolve.providers.jobs import JobStopped
from qsolve.targets.errors import TargetUnavailable


class IbmUnavailable(TargetUnavailable):
    """An ``ibm:`` target that could not be opened; ``reason`` is the platform's reason for it."""

    def __init__(self, message: str, *, reason: str = "platform_error") -> None:
        super().__init__(message)
        self.reason = reason


class IbmJobStopped(JobStopped):
    """An IBM job that gave no counts: not sent, failed, cancelled, or not sealed; ``reason`` is the
    platform's reason (``backend_unavailable``, ``cancelled``, ``platform_error``)."""

    def __init__(self, message: str, *, reason: str = "platform_error", record: str | None = None) -> None:
        super().__init__(message, record=record)
        self.reason = reason


def _scrub(text: str, secret: Secret | None) -> str:
    """A message with the credential taken out, should any library have put it in."""
    if secret is None:
        return text
    return text.replace(secret.reveal(), "[the API key]")
