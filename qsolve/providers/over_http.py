"""A provider at a URL (quantum-provider-protocol §2.1), through httpx.

Every message is the body of a ``POST`` to the one URL, ``Content-Type: application/json``; the answer
is the body of a ``200`` response. Any other status is a transport failure and its body is never read
as an answer, however good it looks. Redirects are not followed (a redirect is a status but 200), so a
credential goes nowhere but the URL the person named. A credential travels as
``Authorization: Bearer …``, and never over ``http://`` to anything but this machine: the transport
refuses to be built so, before anything connects.

Every read has the time-out of the exchange, and the whole answer must arrive within it too, so a
provider that drips bytes cannot hold the client; the answer has at most
:data:`~qsolve.providers.transport.MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from qsolve.providers.transport import (
    MAX_ANSWER_BYTES,
    TransportError,
    TransportProtocolError,
    TransportTimeout,
    encode_message,
    is_loopback,
    parse_answer,
)


class InsecureCredential(TransportError):
    """A credential asked to go over plain ``http://`` to another machine (§2.1)."""


class HttpTransport:
    """POST each message to ``url``; the answer is the body of a 200 response."""

    def __init__(self, url: str, *, credential: str | None = None, verify: bool | str = True) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError(f"{url!r} is not an http:// or https:// address")
        if parts.username is not None or parts.password is not None:
            raise TransportError("the URL names a user or a password: a credential goes in the credential")
        if credential and parts.scheme == "http" and not is_loopback(parts.hostname):
            raise InsecureCredential(
                f"a credential goes only over https://, or over http:// to this machine, "
                f"not to {parts.hostname} (§2.1)"
            )
        self.url = url
        self.credential = credential or None
        self._lock = threading.Lock()
        # on this machine no proxy from the environment stands between the client and the provider
        self._client = httpx.Client(
            follow_redirects=False, trust_env=not is_loopback(parts.hostname), verify=verify
        )
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpTransport({self.url!r}{', with a credential' if self.credential else ''})"

    def exchange(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        body = encode_message(message)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.credential:
            headers["Authorization"] = f"Bearer {self.credential}"
        with self._lock:
            if self._closed:
                raise TransportError("the transport was closed")
            deadline = time.monotonic() + timeout
            try:
                with self._client.stream(
                    "POST", self.url, content=body, headers=headers, timeout=httpx.Timeout(timeout)
                ) as response:
                    if response.status_code != 200:
                        reason = response.reason_phrase or ""
                        raise TransportError(
                            f"HTTP {response.status_code}{' ' + reason if reason else ''}: "
                            "only a 200 response carries an answer"
                        )
                    chunks, size = [], 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > MAX_ANSWER_BYTES:
                            raise TransportProtocolError(
                                f"the answer is longer than {MAX_ANSWER_BYTES} bytes"
                            )
                        if time.monotonic() > deadline:
                            raise TransportTimeout(f"the answer did not arrive whole within {timeout:g} s")
                        chunks.append(chunk)
            except httpx.TimeoutException:
                raise TransportTimeout(f"no answer within {timeout:g} s") from None
            except httpx.HTTPError as exc:
                raise TransportError(f"{type(exc).__name__}: {exc}") from None
        return parse_answer(b"".join(chunks), (self.credential,))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._client.close()

    def __enter__(self) -> HttpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
