"""What goes wrong with a provider, as a person reads it (quantum-provider-protocol §3).

Every error names the provider (the person's name for it) and the operation, and never quotes a
credential: :func:`redact` takes the credential out of anything a provider said before it is raised,
since a hostile or careless provider may echo it back. Every error is one line: what a provider said
(a message holding its own traceback, say) has its control characters escaped (``\\n``, ``\\r``) where
the error is formed, and every character that does not show as itself (:func:`qsolve.errors.shown`:
bidirectional overrides, zero-width and other format characters, tag characters, private-use and
unassigned ones) as ``\\uXXXX``; a provider's id for a job is printed as :func:`job_shown` gives it.

    ProviderError            ``provider ref: submit: unauthorized: wrong token``
    └── code                 §3's codes, as the provider answered them, or the client's own:
                             ``transport`` (the transport failed), ``protocol`` (an answer that breaks
                             the protocol), ``timeout`` (no answer in time)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qsolve.errors import QsolveError, shown

#: the codes a provider answers with (§3)
PROVIDER_CODES = (
    "invalid",
    "unsupported",
    "unsupported_version",
    "unauthorized",
    "not_found",
    "refused",
    "quota",
    "unavailable",
    "internal",
)
#: the codes the client gives a failure of its own
CLIENT_CODES = ("transport", "protocol", "timeout")
CODES = PROVIDER_CODES + CLIENT_CODES

REDACTED = "[credential redacted]"


#: the most of what a provider says (an error's message, a failed job's reason) that is said and kept
SAID_CHARS = 1000


def bounded(text: str, limit: int = SAID_CHARS) -> str:
    """``text`` as it is said and kept: its first ``limit`` characters, then ``… (N characters in
    all)`` where it is longer (a provider's 32 MiB message is one line of about ``limit``)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters in all)"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each secret replaced (the longest first)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Iterable[str | None]) -> Any:
    """A parsed JSON value with every string in it (keys included) redacted."""
    keep = tuple(s for s in secrets if s)
    if not keep:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return redact(v, keep)
        if isinstance(v, dict):
            return {redact(k, keep) if isinstance(k, str) else k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


#: how much of an id that does not print as given is shown (``qsolve providers jobs --json`` has it whole)
SHOWN_ID = 24


def job_shown(job: str | None) -> str:
    """A provider's id for a job as it is printed (§5.3: any string the provider chose): as given when
    every character of it prints; otherwise the ``repr`` of its first :data:`SHOWN_ID` characters (quoted,
    control characters escaped) and its length, so an id cannot start a line of its own, nor speak in
    qsolve's voice at length, wherever it is printed."""
    if job is None:
        return "never given"
    if job and job.isprintable() and job.strip() == job:
        return job
    return repr(job) if len(job) <= SHOWN_ID else f"{job[:SHOWN_ID]!r}… ({len(job)} characters)"


class ProviderError(QsolveError):
    """A provider operation that did not give its answer.

    ``provider`` is the person's name for the provider, ``op`` the operation (``describe`` …
    ``cancel``, or ``connect``), ``code`` one of :data:`CODES`, and ``detail`` what went wrong, a
    credential already taken out of it and its control characters escaped, so the error is one line
    whatever the provider said. ``str(e)`` is ``provider NAME: OP: CODE: DETAIL``.
    """

    def __init__(
        self,
        provider: str,
        op: str,
        code: str,
        detail: str,
        *,
        secrets: Iterable[str | None] = (),
    ) -> None:
        keep = tuple(s for s in secrets if s)
        self.provider = shown(redact(provider, keep))
        self.op = shown(redact(op, keep))
        self.code = code if code in CODES else "internal"
        self.detail = shown(bounded(redact(detail, keep)))
        super().__init__(redact(f"provider {self.provider}: {self.op}: {self.code}: {self.detail}", keep))

    def __reduce__(self):  # picklable across processes, as the plain fields it is built from
        return (_rebuild, (self.provider, self.op, self.code, self.detail))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProviderError) and (
            (self.provider, self.op, self.code, self.detail)
            == (other.provider, other.op, other.code, other.detail)
        )

    __hash__ = Exception.__hash__


def _rebuild(provider: str, op: str, code: str, detail: str) -> ProviderError:
    return ProviderError(provider, op, code, detail)
