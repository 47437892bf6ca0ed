"""A provider at a URL (quantum-provider-protocol §2.1), through httpx.

Every message is the body of a ``POST`` to the one URL, ``Content-Type: application/json``; the answer
is the body of a ``200`` response. Any other status is a transport failure and its body is never read
as an answer, however good it looks. Redirects are not followed (a redirect is a status but 200), so a
credential goes nowhere but the URL the person named. A credential travels as
``Authorization: Bearer …``, and never over ``http://`` to anything but this machine: the transport
refuses to be built so, before anything connects.

Every read has the time-out of the exchange, and the whole answer must arrive within it too, so a
provider that drips bytes cannot hold the client; the answer has at most
:data:`~qsolve.providers.transport.MAX_ANSWER_BYTES`, counted as it is decoded (issue 35): an answer in
a content encoding (gzip, deflate, nested as ``gzip, gzip``) is decoded here, :data:`CHUNK` bytes a
step through every coding, and refused the moment it passes the bound; the compressed bytes are never
held, and the decoded ones once.
"""

from __future__ import annotations

import contextlib
import mmap
import threading
import time
import zlib
from collections.abc import Iterator
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

#: the most bytes read or decoded at a time: an answer is never decoded past its bound in one step
CHUNK = 1 << 16
#: what the client takes (``Accept-Encoding``) and decodes itself, bounded (:func:`_decoded`)
ENCODINGS = ("gzip", "deflate")
#: the most content codings an answer may name (``gzip, gzip`` is two); more is refused in one line
MAX_CODINGS = 4


class _Inflate:
    """One content coding's decoder (gzip or deflate) that gives at most :data:`CHUNK` bytes a step."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._wbits = 16 + zlib.MAX_WBITS if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self._z = zlib.decompressobj(self._wbits)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                out = self._z.decompress(data, CHUNK)
            except zlib.error:
                if self.coding == "deflate" and not self._started:  # a raw deflate stream, as some send
                    self._wbits, self._started = -zlib.MAX_WBITS, True
                    self._z = zlib.decompressobj(self._wbits)
                    continue
                raise TransportProtocolError(f"the answer is not valid {self.coding}") from None
            self._started = True
            if out:
                yield out
            data = self._z.unconsumed_tail
            if self._z.eof:
                data = self._z.unused_data
                if data:  # gzip's next member
                    self._z = zlib.decompressobj(self._wbits)


def _decoders(codings: list[str]) -> list[_Inflate]:
    """The decoders of ``Content-Encoding``, outermost first (the codings are applied in the order
    named, so they are undone from the last); one the client does not take is refused."""
    named = [c.strip().lower() for c in codings if c.strip()]
    if len(named) > MAX_CODINGS:
        raise TransportProtocolError(
            f"the answer names {len(named)} content codings; the client takes at most {MAX_CODINGS}"
        )
    out = []
    for coding in reversed(named):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise TransportProtocolError(
                f"the answer is in the content encoding {coding[:40]!r}, which the client does not take"
            )
        out.append(_Inflate(coding))
    return out


def _decoded(raw: Iterator[bytes], decoders: list[_Inflate]) -> Iterator[bytes]:
    """The answer's bytes as they are decoded, through every coding, :data:`CHUNK` at a time: nothing
    is decoded further than its reader asks, so a small bomb never becomes a large answer in memory."""
    stream: Iterator[bytes] = raw
    for decoder in decoders:
        stream = _through(stream, decoder)
    yield from stream


def _through(stream: Iterator[bytes], decoder: _Inflate) -> Iterator[bytes]:
    for chunk in stream:
        yield from decoder.feed(chunk)


def _timed(raw: Iterator[bytes], deadline: float, timeout: float) -> Iterator[bytes]:
    """The answer's raw chunks, each looked at against the exchange's deadline as it arrives, whether
    or not it decodes to anything (a stream of empty gzip members decodes to nothing)."""
    for chunk in raw:
        if time.monotonic() > deadline:
            raise TransportTimeout(f"the answer did not arrive whole within {timeout:g} s")
        yield chunk


class _Watchdog:
    """The whole exchange, headers included, held to its deadline: at the deadline the connection's
    socket is shut down, which ends any read httpx is blocked in (its own time-out is a read's, so
    headers dripped a byte at a time would hold it for as long as they drip). httpcore's ``trace``
    extension names the socket as each connection is made; the transport's one client uses one
    connection at a time (its lock), so the last one named is the one in use."""

    EVENTS = ("connection.connect_tcp.complete", "connection.start_tls.complete")

    def __init__(self) -> None:
        self.socket: Any = None
        self.fired = False
        self._done = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event in self.EVENTS and info.get("return_value") is not None:
            self.socket = info["return_value"].get_extra_info("socket")

    def arm(self, timeout: float) -> None:
        with self._lock:
            self.fired, self._done = False, False
        self._timer = threading.Timer(timeout, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        import socket

        with self._lock:
            if self._done:
                return
            self.fired = True
            if self.socket is not None:
                with contextlib.suppress(OSError):
                    self.socket.shutdown(socket.SHUT_RDWR)


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
            follow_redirects=False,
            trust_env=not is_loopback(parts.hostname),
            verify=verify,
            limits=httpx.Limits(max_keepalive_connections=1),
        )
        self._watchdog = _Watchdog()
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpTransport({self.url!r}{', with a credential' if self.credential else ''})"

    def exchange(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        body = encode_message(message)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": ", ".join(ENCODINGS),
        }
        if self.credential:
            headers["Authorization"] = f"Bearer {self.credential}"
        with self._lock:
            if self._closed:
                raise TransportError("the transport was closed")
            deadline = time.monotonic() + timeout
            watchdog = self._watchdog
            watchdog.arm(timeout)
            try:
                with self._client.stream(
                    "POST",
                    self.url,
                    content=body,
                    headers=headers,
                    timeout=httpx.Timeout(timeout),
                    extensions={"trace": watchdog.trace},
                ) as response:
                    if response.status_code != 200:
                        reason = response.reason_phrase or ""
                        raise TransportError(
                            f"HTTP {response.status_code}{' ' + reason if reason else ''}: "
                            "only a 200 response carries an answer"
                        )
                    decoders = _decoders(response.headers.get_list("content-encoding", split_commas=True))
                    # its pages are taken only as the answer fills them, and never copied as it grows
                    with mmap.mmap(-1, MAX_ANSWER_BYTES + CHUNK) as buffer:
                        size = 0
                        for chunk in _decoded(_timed(response.iter_raw(CHUNK), deadline, timeout), decoders):
                            if size + len(chunk) > MAX_ANSWER_BYTES:
                                raise TransportProtocolError(
                                    f"the answer is longer than {MAX_ANSWER_BYTES} bytes (decoded)"
                                )
                            if time.monotonic() > deadline:
                                raise TransportTimeout(
                                    f"the answer did not arrive whole within {timeout:g} s"
                                )
                            buffer[size : size + len(chunk)] = chunk
                            size += len(chunk)
                        answer = buffer[:size]
            except httpx.TimeoutException:
                raise TransportTimeout(f"no answer within {timeout:g} s") from None
            except httpx.HTTPError as exc:
                if watchdog.fired:
                    raise TransportTimeout(f"the answer did not arrive whole within {timeout:g} s") from None
                raise TransportError(f"{type(exc).__name__}: {exc}") from None
            finally:
                watchdog.disarm()
            if watchdog.fired:  # its connection was shut at the deadline: what arrived is not the answer
                raise TransportTimeout(f"the answer did not arrive whole within {timeout:g} s")
        return parse_answer(answer, (self.credential,))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._client.close()

    def __enter__(self) -> HttpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
