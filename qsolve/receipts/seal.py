"""The seal: a receipt's digest, and sealing a job (quantum-provider-protocol §8.2 "The seal", "The time").

The digest is BLAKE3 of d ‖ u64(|Q|) ‖ Q ‖ u64(|T|) ‖ T, with d the 27 bytes
``wai:quantum-service-receipt`` and one domain byte: ``0x01`` for the first form (Q and T in its
writer's text), ``0x02`` for the canonical form (RFC 8785 text), ``0x03`` for a canonical receipt with a
time, whose digest adds u64(|V|) ‖ V, V the time's canonical text. u64 is 8 bytes, big-endian. The
signature is Ed25519 over the 32 digest bytes.

A host refuses a request holding a whole number past ±(2^53 - 1), or any number the canonical text
cannot write, and writes a whole number no double holds in a result as that double (§8.4, "What a host
seals, its own verifier accepts"). A time is sealed only when asked for.
"""

from __future__ import annotations

import importlib.metadata
import math
from enum import Enum
from typing import Any, Protocol

from blake3 import blake3

from qsolve.errors import QsolveError
from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.first_form import first_form_bytes
from qsolve.receipts.strict_json import EXACT_LIMIT, Document

ENGINE_NAME = "wai-quantum"
"""``engine.name``: the protocol's constant, which every conforming verifier requires (§8.1)."""

DOMAIN = b"wai:quantum-service-receipt"
ALG = "ed25519"
CANON = "rfc8785"
MAX_MS = 2**53 - 1


class Form(Enum):
    """A receipt's form and its domain byte (§8.2)."""

    FIRST = 0x01
    CANONICAL = 0x02
    TIMED = 0x03


def engine() -> dict[str, str]:
    """The ``engine`` member of a result this host seals: ``wai-quantum``, and ``qsolve/<version>``."""
    try:
        version = importlib.metadata.version("qsolve")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {"name": ENGINE_NAME, "version": f"qsolve/{version}"}


def _u64(n: int) -> bytes:
    return n.to_bytes(8, "big")


def digest(form: Form, q: bytes, t: bytes, v: bytes | None = None) -> bytes:
    """The 32 digest bytes over the texts ``Q``, ``T`` and, for a timed receipt, ``V``."""
    if (form is Form.TIMED) != (v is not None):
        raise ValueError("a time's text goes with the domain byte 0x03, and only with it")
    parts = [DOMAIN, bytes((form.value,)), _u64(len(q)), q, _u64(len(t)), t]
    if v is not None:
        parts += (_u64(len(v)), v)
    return blake3(b"".join(parts)).digest()


SET_FORMAT = "wai.quantum.set/1"


def sealed_part(result: dict[str, Any]) -> dict[str, Any]:
    """A result less its ``receipt``: what ``T`` is the text of."""
    part = dict(result)
    part.pop("receipt", None)
    return part


def head_of(result: dict[str, Any]) -> dict[str, Any]:
    """A set's result less ``items`` and ``receipt``: what its receipt seals beside its request (§8.6)."""
    return {k: v for k, v in result.items() if k not in ("items", "receipt")}


def is_set(result: dict[str, Any]) -> bool:
    return result.get("format") == SET_FORMAT


def job_digest(request: Any, sealed: Any, form: Form, time: Any = None, doc: Document | None = None) -> bytes:
    """The digest of a request and a sealed result (or set head), in the receipt's form."""
    if form is Form.FIRST:
        return digest(form, first_form_bytes(request), first_form_bytes(sealed))
    plain = doc is not None and doc.plain
    q = canonical_bytes(request, plain=plain)
    t = canonical_bytes(sealed, plain=plain)
    if form is Form.TIMED:
        return digest(form, q, t, canonical_bytes(time))
    return digest(form, q, t)


class Signer(Protocol):
    """What seals: a public key and a signature over 32 digest bytes (the host key, keys.py)."""

    @property
    def public_hex(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...


class Unsealable(QsolveError):
    """A request or result this host does not seal; ``message`` says why and where."""


def _check_sealable(value: Any, where: str, *, request: bool) -> Any:
    """A copy of ``value`` fit to seal: JSON types only, every number one the canonical text writes."""
    t = type(value)
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise Unsealable(f"{where}: a member name {k!r} is not a string")
            _check_string(k, where)
            out[k] = _check_sealable(v, f"{where}.{k}", request=request)
        return out
    if t is list or t is tuple:
        return [_check_sealable(v, f"{where}[{i}]", request=request) for i, v in enumerate(value)]
    if t is str:
        _check_string(value, where)
        return value
    if value is None or t is bool:
        return value
    if t is float:
        if not math.isfinite(value):
            raise Unsealable(f"{where}: {value} has no JSON text")
        return value
    if t is int:
        if -EXACT_LIMIT < value < EXACT_LIMIT:
            return value
        if request:
            raise Unsealable(f"{where}: the whole number {value} is past ±(2^53 - 1)")
        try:
            return float(value)  # the double it seals
        except OverflowError:
            raise Unsealable(f"{where}: {value} is past every double") from None
    raise Unsealable(f"{where}: a {t.__name__} is not a JSON value")


def _check_string(s: str, where: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise Unsealable(f"{where}: a string holds a lone surrogate") from None


def _check_time(issued_ms: int, not_after_ms: int | None) -> dict[str, int]:
    for name, v in (("issued_ms", issued_ms), ("not_after_ms", not_after_ms)):
        if v is not None and (type(v) is not int or not 0 <= v <= MAX_MS):
            raise Unsealable(f"time.{name}: {v!r} is not a whole number from 0 to 2^53 - 1")
    if not_after_ms is None:
        return {"issued_ms": issued_ms}
    if not_after_ms <= issued_ms:
        raise Unsealable("time.not_after_ms: not after issued_ms")
    return {"issued_ms": issued_ms, "not_after_ms": not_after_ms}


def seal(
    request: dict[str, Any],
    result: dict[str, Any],
    signer: Signer,
    *,
    issued_ms: int | None = None,
    not_after_ms: int | None = None,
) -> dict[str, Any]:
    """The job ``{"request", "result"}`` with ``result`` sealed in the canonical form.

    ``issued_ms`` (the signer's clock, read by the caller) seals a time; with none, no time is sealed
    and the same key and job give the same receipt byte for byte. A ``receipt`` already in ``result``
    is replaced. A set's result (``sets.seal_set`` makes one) is sealed by its head, its items kept.
    """
    if type(request) is not dict or type(result) is not dict:
        raise Unsealable("a job's request and result are both objects")
    request = _check_sealable(request, "request", request=True)
    body = _check_sealable(sealed_part(result), "result", request=False)
    digested = head_of(body) if is_set(body) else body
    receipt: dict[str, Any] = {"alg": ALG, "canon": CANON, "key": signer.public_hex}
    if issued_ms is None:
        if not_after_ms is not None:
            raise Unsealable("a receipt's end is sealed only with the time it was issued")
        d = job_digest(request, digested, Form.CANONICAL)
    else:
        time = _check_time(issued_ms, not_after_ms)
        d = job_digest(request, digested, Form.TIMED, time)
        receipt["time"] = time
    receipt["digest"] = d.hex()
    receipt["signature"] = signer.sign(d).hex()
    return {"request": request, "result": {**body, "receipt": receipt}}


def check_sealable_request(request: Any, where: str = "request") -> Any:
    """A request fit to seal (its whole numbers within ±(2^53 - 1)), or :class:`Unsealable`."""
    return _check_sealable(request, where, request=True)
