"""A transport carries one JSON message to a provider and brings back its one answer (§2).

A transport knows nothing of operations: :class:`~qsolve.providers.client.ProviderClient` builds the
messages and reads the answers. A transport raises :class:`TransportError` (its ``code`` ``transport``,
``protocol`` or ``timeout``) and the client turns it into a
:class:`~qsolve.providers.errors.ProviderError` naming the provider and the operation.

Both transports read answers the same way (:func:`parse_answer`): UTF-8 JSON, one object, no ``NaN``
or ``Infinity``, at most :data:`MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any, Protocol, runtime_checkable

from qsolve.providers.errors import redact

#: the most bytes an answer may have: a provider cannot exhaust the client's memory
MAX_ANSWER_BYTES = 64 * 2**20


class TransportError(Exception):
    """The exchange did not give an answer; ``code`` is ``transport``, ``protocol`` or ``timeout``."""

    code = "transport"


class TransportProtocolError(TransportError):
    """The provider sent what the protocol does not allow (not one JSON object, or more than one)."""

    code = "protocol"


class TransportTimeout(TransportError):
    """No answer in the time allowed."""

    code = "timeout"


@runtime_checkable
class Transport(Protocol):
    """One message out, its answer back; one exchange at a time on a transport."""

    #: the credential the transport sends, when it has one (the client redacts it from what it raises)
    credential: str | None

    def exchange(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``message`` and return its answer, within ``timeout`` seconds (else TransportTimeout)."""
        ...

    def close(self) -> None:
        """End the transport; a later exchange fails."""
        ...


def encode_message(message: dict[str, Any]) -> bytes:
    """A message as compact UTF-8 JSON, on one line (a newline inside a string is escaped)."""
    if not isinstance(message, dict):
        raise TypeError(f"a message is a JSON object, not {type(message).__name__}")
    return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _Twice(ValueError):
    """An object that names a member twice: its answer reads two ways (which count of an outcome?)."""


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Twice(key)
        out[key] = value
    return out


def parse_answer(data: bytes, secrets: tuple[str | None, ...] = ()) -> dict[str, Any]:
    """An answer's bytes as a JSON object, or TransportProtocolError saying why not (the start of an
    answer that is not JSON quoted with ``secrets`` taken out first, so that no cut leaves part of one)."""
    if len(data) > MAX_ANSWER_BYTES:
        raise TransportProtocolError(f"the answer is longer than {MAX_ANSWER_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TransportProtocolError("the answer is not UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_once)
    except _Twice as e:
        name = redact(str(e), secrets)[:60]
        raise TransportProtocolError(f"the answer names the member {name!r} twice") from None
    except (ValueError, RecursionError):
        shown = redact(text.strip(), secrets)
        shown = shown[:60] + "…" if len(shown) > 60 else shown
        raise TransportProtocolError(f"the answer is not JSON: {shown!r}") from None
    if not isinstance(value, dict):
        raise TransportProtocolError(f"the answer is a JSON {_json_kind(value)}, not an object")
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def is_loopback(host: str | None) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``: this machine."""
    if not host:
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
