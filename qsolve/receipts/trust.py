"""Whose key, and when: trust lists and times (quantum-provider-protocol §8.8).

A trust list is a key set of the form ``wai.quantum.receipt-keys/1``, read as a job's text is (§8.2). A
list that does not read, or is not of its form in any entry, is refused whole: nothing is judged by
it, and no verdict is given (the command exits 2). A list is never read in part.

Held to a list, to a time, or to both, a receipt of its form gets ``key_untrusted``, ``key_window``,
``key_revoked``, ``expired`` and ``issued_later`` where they apply. A receipt that seals no time
precedes no moment: it passes a window with no end and a key not revoked, and fails a window that
ends and any revocation; held to a time alone it gets no reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blake3 import blake3

from qsolve.errors import QsolveError
from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.signature import is_lower_hex, verify_strict
from qsolve.receipts.strict_json import Unreadable, read_value
from qsolve.receipts.values import MAX_WHOLE, MISSING, whole

FORMAT = "wai.quantum.receipt-keys/1"
TRANSITION_FORMAT = "wai.quantum.key-transition/1"
TRANSITION_DOMAIN = b"wai:quantum-key-transition\x01"
_TIMES = ("not_before_ms", "not_after_ms", "revoked_from_ms")


class TrustListRefused(QsolveError):
    """The list does not read, or is not of its form in some entry: refused whole (§8.8)."""


@dataclass(frozen=True)
class KeyEntry:
    """One entry of a trust list, its times as whole numbers of milliseconds or ``None``."""

    key: str
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    revoked_from_ms: int | None = None

    def statement(self) -> dict[str, Any]:
        """What a verdict states of the entry under ``trust`` (§8.8)."""
        return {
            "listed": True,
            "not_before_ms": self.not_before_ms,
            "not_after_ms": self.not_after_ms,
            "revoked_from_ms": self.revoked_from_ms,
        }


@dataclass(frozen=True)
class TrustList:
    """The keys a reader trusts, each with its window and revocation."""

    entries: dict[str, KeyEntry]

    @classmethod
    def read(cls, data: bytes | str) -> TrustList:
        """Read a list's text strictly; raise :class:`TrustListRefused` with why when it is refused."""
        try:
            value = read_value(data)
        except Unreadable as e:
            raise TrustListRefused(f"the trust list does not read: {e}") from None
        return cls.from_value(value)

    @classmethod
    def from_value(cls, value: Any) -> TrustList:
        if type(value) is not dict:
            raise TrustListRefused("the trust list is not an object")
        if value.get("format", MISSING) != FORMAT:
            raise TrustListRefused(f"the trust list's format is not {FORMAT}")
        if "algorithm" in value and value["algorithm"] != "ed25519":
            raise TrustListRefused("the trust list's algorithm is not ed25519")
        keys = value.get("keys", MISSING)
        if type(keys) is not list:
            raise TrustListRefused("the trust list's keys is not an array")
        entries: dict[str, KeyEntry] = {}
        for i, raw in enumerate(keys):
            entry = _entry(raw, f"keys[{i}]")
            if entry.key in entries:
                raise TrustListRefused(f"keys[{i}]: the key {entry.key} is listed twice")
            entries[entry.key] = entry
        return cls(entries)


def _time(value: Any, where: str) -> int | None:
    if value is None or value is MISSING:
        return None
    n = whole(value)
    if n is None or not 0 <= n <= MAX_WHOLE:
        raise TrustListRefused(f"{where}: not a whole number of milliseconds from 0 to 2^53 - 1")
    return n


def _entry(raw: Any, where: str) -> KeyEntry:
    if type(raw) is not dict:
        raise TrustListRefused(f"{where}: an entry is not an object")
    key = raw.get("key", MISSING)
    if not is_lower_hex(key, 64):
        raise TrustListRefused(f"{where}.key: not 64 lower-case hex digits")
    times = {name: _time(raw.get(name, MISSING), f"{where}.{name}") for name in _TIMES}
    transition = raw.get("transition")
    if transition is not None:
        _check_transition(transition, key, f"{where}.transition")
    return KeyEntry(key, **times)


def transition_digest(statement: Any) -> bytes:
    """BLAKE3 of ``wai:quantum-key-transition``, the byte 0x01, and the statement's canonical text."""
    return blake3(TRANSITION_DOMAIN + canonical_bytes(statement)).digest()


def _check_transition(transition: Any, key: str, where: str) -> None:
    if type(transition) is not dict:
        raise TrustListRefused(f"{where}: not an object")
    statement = transition.get("statement", MISSING)
    if type(statement) is not dict or statement.get("format") != TRANSITION_FORMAT:
        raise TrustListRefused(f"{where}.statement: not a {TRANSITION_FORMAT} statement")
    retiring, successor = statement.get("retiring"), statement.get("successor")
    if not is_lower_hex(retiring, 64) or not is_lower_hex(successor, 64):
        raise TrustListRefused(f"{where}.statement: its keys are not 64 lower-case hex digits")
    at = whole(statement.get("at_ms", MISSING))
    if at is None or not 0 <= at <= MAX_WHOLE:
        raise TrustListRefused(f"{where}.statement.at_ms: not a whole number of milliseconds")
    if retiring != key:
        raise TrustListRefused(f"{where}: the statement does not name this entry's key as the one retiring")
    message = transition_digest(statement)
    for signer, name in ((retiring, "retiring_signature"), (successor, "successor_signature")):
        signature = transition.get(name, MISSING)
        if not is_lower_hex(signature, 128):
            raise TrustListRefused(f"{where}.{name}: not 128 lower-case hex digits")
        if not verify_strict(bytes.fromhex(signer), bytes.fromhex(signature), message):
            raise TrustListRefused(f"{where}.{name}: does not hold, strictly, by the key it is named for")


@dataclass(frozen=True)
class HeldTo:
    """What a reader holds a receipt to: a trust list, a time (with its allowance), both or neither."""

    trust: TrustList | None = None
    at_ms: int | None = None
    skew_ms: int = 0

    def __post_init__(self) -> None:
        for name in ("at_ms", "skew_ms"):
            v = getattr(self, name)
            if v is not None and (type(v) is not int or not 0 <= v <= MAX_WHOLE):
                raise ValueError(f"{name} is a whole number of milliseconds from 0 to 2^53 - 1")


def held_reasons(
    key: str, time: dict[str, int] | None, held: HeldTo
) -> tuple[list[str], dict[str, Any] | None]:
    """The reasons of §8.8 for a receipt of its form, and what ``trust`` states (``None`` with no list).

    ``time`` is the receipt's sealed time (``issued_ms``, ``not_after_ms``) or ``None`` when it seals none.
    """
    reasons: list[str] = []
    issued = time["issued_ms"] if time else None
    statement = None
    if held.trust is not None:
        entry = held.trust.entries.get(key)
        if entry is None:
            reasons.append("key_untrusted")
            statement = {"listed": False}
        else:
            statement = entry.statement()
            before = entry.not_before_ms is not None and issued is not None and issued < entry.not_before_ms
            ended = entry.not_after_ms is not None and (issued is None or issued >= entry.not_after_ms)
            if before or ended:
                reasons.append("key_window")
            if entry.revoked_from_ms is not None and (issued is None or issued >= entry.revoked_from_ms):
                reasons.append("key_revoked")
    if held.at_ms is not None and time is not None:
        end = time.get("not_after_ms")
        if end is not None and held.at_ms >= end:
            reasons.append("expired")
        if issued is not None and issued - held.at_ms > held.skew_ms:
            reasons.append("issued_later")
    return reasons, statement
