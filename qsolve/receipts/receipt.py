"""A receipt's own reasons (quantum-provider-protocol §8.2, §8.4): ``receipt_form``, ``digest_mismatch``,
``bad_key``, ``bad_signature`` and ``inexact_number``.

``receipt_form``: the receipt is not an object; its ``alg`` is not ``ed25519``; it has a ``canon`` other
than ``rfc8785``; its ``key``, ``digest`` or ``signature`` is not lower-case hex of its length; or it has
a ``time`` not of its form, or a time and no ``canon``. When it is reported, the next three are not
checked. ``bad_key`` is reported instead of checking the signature. ``bad_signature`` is judged over the
digest the receipt states, so a body changed after sealing gives ``digest_mismatch`` alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qsolve.receipts.canonical import es6_number
from qsolve.receipts.first_form import INT_MAX, INT_MIN
from qsolve.receipts.seal import ALG, CANON, Form, job_digest
from qsolve.receipts.signature import is_lower_hex, key_is_strict, verify_strict
from qsolve.receipts.strict_json import EXACT_LIMIT, Document
from qsolve.receipts.values import MAX_WHOLE, MISSING, whole

_TIME_MEMBERS = frozenset({"issued_ms", "not_after_ms"})


def read_time(time: Any) -> dict[str, int] | None:
    """A receipt's ``time`` as whole numbers, or ``None`` when it is not of its form (§8.2 "The time")."""
    if type(time) is not dict or "issued_ms" not in time or not time.keys() <= _TIME_MEMBERS:
        return None
    issued = whole(time["issued_ms"])
    if issued is None or not 0 <= issued <= MAX_WHOLE:
        return None
    if "not_after_ms" not in time:
        return {"issued_ms": issued}
    end = whole(time["not_after_ms"])
    if end is None or not issued < end <= MAX_WHOLE:
        return None
    return {"issued_ms": issued, "not_after_ms": end}


def time_statement(receipt: Any) -> dict[str, Any] | None:
    """What a verdict states of the time: ``{"sealed": true, "issued_ms", "not_after_ms"}`` or
    ``{"sealed": false}``; ``None`` when the receipt is no object or its time is not of its form."""
    if type(receipt) is not dict:
        return None
    raw = receipt.get("time", MISSING)
    if raw is MISSING:
        return {"sealed": False}
    time = read_time(raw)
    if time is None:
        return None
    return {"sealed": True, "issued_ms": time["issued_ms"], "not_after_ms": time.get("not_after_ms")}


@dataclass
class ReceiptFound:
    """What the receipt's check found."""

    reasons: list[str]
    form: Form | None
    """The receipt's form, ``None`` when ``receipt_form`` is reported (it names no form)."""
    time: dict[str, int] | None
    """Its sealed time, when it is of its form and seals one."""


def _form_of(receipt: Any) -> tuple[Form | None, dict[str, int] | None]:
    """The receipt's form and time, or ``(None, None)`` when ``receipt_form`` applies."""
    if type(receipt) is not dict or receipt.get("alg", MISSING) != ALG:
        return None, None
    canon = receipt.get("canon", MISSING)
    if canon is not MISSING and canon != CANON:
        return None, None
    if not (
        is_lower_hex(receipt.get("key"), 64)
        and is_lower_hex(receipt.get("digest"), 64)
        and is_lower_hex(receipt.get("signature"), 128)
    ):
        return None, None
    if "time" not in receipt:
        return (Form.FIRST if canon is MISSING else Form.CANONICAL), None
    time = read_time(receipt["time"])
    if time is None or canon is MISSING:
        return None, None
    return Form.TIMED, time


def check_receipt(receipt: Any, request: Any, sealed: Any, doc: Document | None = None) -> ReceiptFound:
    """``receipt_form``, ``digest_mismatch``, ``bad_key`` and ``bad_signature`` for a receipt over
    ``request`` and ``sealed`` (a result less its receipt, or a set's head)."""
    form, time = _form_of(receipt)
    if form is None:
        return ReceiptFound(["receipt_form"], None, None)
    reasons = []
    stated = bytes.fromhex(receipt["digest"])
    if job_digest(request, sealed, form, time, doc) != stated:
        reasons.append("digest_mismatch")
    key = bytes.fromhex(receipt["key"])
    if not key_is_strict(key):
        reasons.append("bad_key")
    elif not verify_strict(key, bytes.fromhex(receipt["signature"]), stated):
        reasons.append("bad_signature")
    return ReceiptFound(reasons, form, time)


def says_more_than_sealed(n: int) -> bool:
    """An integer literal no double holds exactly, and that is not the canonical text of its double."""
    if -EXACT_LIMIT <= n <= EXACT_LIMIT:
        return False
    x = float(n)
    return int(x) != n and str(n) != es6_number(x)


def has_inexact_number(doc: Document | None, values: tuple[Any, ...], form: Form | None) -> bool:
    """``inexact_number`` in what a receipt seals: a whole number written as one, sealed as a double,
    that no double holds and that is not its double's canonical text. A first-form receipt seals a
    whole number written as one from -2^63 to 2^64 - 1 by its digits; a receipt of no form is read as
    a canonical one's."""
    if doc is not None and not doc.big_ints:
        return False
    first = form is Form.FIRST
    stack = list(values)
    while stack:
        v = stack.pop()
        t = type(v)
        if t is int:
            if first and INT_MIN <= v <= INT_MAX:
                continue
            if says_more_than_sealed(v):
                return True
        elif t is dict:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
    return False
