"""A host's receipt key, trusted through the operator's root key (DESIGN.md §8; issue 33, item 4).

Two signed statements stand behind each key, each a document ``{"statement", "signature"}``: its
statement an object of the format named below, the signature (128 lower-case hex digits) Ed25519,
strictly (quantum-provider-protocol §8.2), over BLAKE3 of the statement's domain, the byte ``0x01`` and
its RFC 8785 canonical text, as a key transition is signed (§8.8, ``qsolve.receipts.trust``):

- **possession** (``qsolve.receipt-key-possession/1``, domain ``qsolve:receipt-key-possession``):
  ``{format, key, host, at_ms}``, signed by the key itself: its holder proves it has the private half.
- **endorsement** (``qsolve.receipt-key-endorsement/1``, domain ``qsolve:receipt-key-endorsement``):
  ``{format, key, host, possession, at_ms, retired_ms, revoked_from_ms, note}``, signed by the root:
  the root's whole word on the key, ``possession`` the hex BLAKE3 of the possession statement it checked.
  Retiring or revoking a key is a new endorsement with ``retired_ms`` or ``revoked_from_ms`` set
  (``null`` where not), which replaces the earlier one: whoever takes a revocation away takes the
  endorsement with it, and the key is not endorsed any more.

A trust list built from them (:func:`endorsed_list`) lists a key only where its endorsement holds by the
configured root and names it; anything else is not endorsed, with why. The root endorses a key only on
its proof of possession (:func:`endorse` checks it), and names that proof in what it signs.

The operator's list can be signed whole (:func:`sign_list`, ``qsolve.signed-receipt-keys/1``, domain
``qsolve:signed-receipt-keys``): ``{"format", "list", "root", "signature"}``, ``list`` a §8.8 list, checked
offline with the root's public key (:func:`read_signed_list`).

Everything here is pure: no database, no file. A statement is read as a job's text is (strictly, bounded).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from blake3 import blake3

from qsolve.errors import QsolveError
from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.keys import HostKey
from qsolve.receipts.signature import is_lower_hex, verify_strict
from qsolve.receipts.strict_json import Unreadable, read_value
from qsolve.receipts.values import MAX_WHOLE, MISSING, whole

POSSESSION, ENDORSEMENT = "possession", "endorsement"
LIST_FORMAT = "qsolve.signed-receipt-keys/1"
LIST_DOMAIN = b"qsolve:signed-receipt-keys\x01"
MAX_STATEMENT_BYTES = 4096  # a statement is a few hundred bytes; more is not read
_FIELDS = {
    POSSESSION: {"format", "key", "host", "at_ms"},
    ENDORSEMENT: {"format", "key", "host", "possession", "at_ms", "retired_ms", "revoked_from_ms", "note"},
}


class StatementRefused(QsolveError):
    """A statement that does not read, is not of its form, names another key, or is not signed by its
    signer: it vouches for nothing."""


def statement_format(kind: str) -> str:
    return f"qsolve.receipt-key-{kind}/1"


def statement_digest(kind: str, statement: Any) -> bytes:
    """BLAKE3 of ``qsolve:receipt-key-<kind>``, the byte 0x01, and the statement's canonical text."""
    return blake3(f"qsolve:receipt-key-{kind}".encode() + b"\x01" + canonical_bytes(statement)).digest()


def _document(kind: str, statement: dict[str, Any], signer: HostKey) -> str:
    signature = signer.sign(statement_digest(kind, statement)).hex()
    return json.dumps({"statement": statement, "signature": signature}, separators=(",", ":"))


def _moment(value: Any, name: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_WHOLE:
        raise ValueError(f"{name} is a whole number of milliseconds from 0 to 2^53 - 1")
    return value


def possession(key: HostKey, host: str, at_ms: int) -> str:
    """The host's proof that it holds ``key``: a statement naming the key and the host, signed by the key."""
    statement = {"format": statement_format(POSSESSION), "key": key.public_hex, "host": host[:200]}
    return _document(POSSESSION, statement | {"at_ms": _moment(at_ms, "at_ms")}, key)


def possession_digest(document: str) -> str:
    """The hex BLAKE3 an endorsement names the possession statement by (its signed digest)."""
    return statement_digest(POSSESSION, _read(document)[0]).hex()


def endorse(
    root: HostKey,
    key: str,
    possession_document: str | None,
    at_ms: int,
    *,
    earlier: Standing | None = None,
    retired_ms: int | None = None,
    revoked_from_ms: int | None = None,
    note: str | None = None,
) -> str:
    """The root's word on ``key``: endorsed on its proof of possession (checked here; refused with why),
    and, where given, retired or revoked from a moment. ``earlier`` is the key's standing as it is: a
    retirement or revocation it holds is kept (a revocation keeps the earlier of two moments)."""
    statement = check(POSSESSION, possession_document, key, key)
    if earlier is not None and earlier.endorsed:
        retired_ms = earlier.retired_ms if earlier.retired_ms is not None else retired_ms
        if earlier.revoked_from_ms is not None:
            ours = revoked_from_ms if revoked_from_ms is not None else earlier.revoked_from_ms
            revoked_from_ms = min(earlier.revoked_from_ms, ours)
        note = note or earlier.note
    if revoked_from_ms is not None and retired_ms is None:
        retired_ms = at_ms  # a revoked key is retired as well
    endorsement = {
        "format": statement_format(ENDORSEMENT),
        "key": key,
        "host": statement["host"],
        "possession": statement_digest(POSSESSION, statement).hex(),
        "at_ms": _moment(at_ms, "at_ms"),
        "retired_ms": None if retired_ms is None else _moment(retired_ms, "retired_ms"),
        "revoked_from_ms": None if revoked_from_ms is None else _moment(revoked_from_ms, "revoked_from_ms"),
        "note": None if not note else note[:500],
    }
    return _document(ENDORSEMENT, endorsement, root)


def _read(document: Any) -> tuple[dict[str, Any], str]:
    if type(document) is not str or len(document) > MAX_STATEMENT_BYTES:
        raise StatementRefused("it is not a statement's text of at most 4096 characters")
    try:
        value = read_value(document)
    except Unreadable as e:
        raise StatementRefused(f"it does not read: {e}") from None
    if type(value) is not dict or set(value) != {"statement", "signature"}:
        raise StatementRefused("it is not {statement, signature}")
    statement, signature = value["statement"], value["signature"]
    if type(statement) is not dict:
        raise StatementRefused("its statement is not an object")
    if not is_lower_hex(signature, 128):
        raise StatementRefused("its signature is not 128 lower-case hex digits")
    return statement, signature


def check(kind: str, document: Any, key: str, signer: str) -> dict[str, Any]:
    """The statement of ``kind`` in ``document``, where it is of its form, names ``key`` and holds,
    strictly, by ``signer`` (64 hex digits); else :class:`StatementRefused` saying why."""
    if document is None:
        raise StatementRefused(f"there is no {kind} statement")
    return _checked(kind, document, key, signer)


@lru_cache(maxsize=4096)
def _checked(kind: str, document: str, key: str, signer: str) -> dict[str, Any]:
    # a statement checked once in this process is not checked again (the pages check every key per view);
    # what raises is not cached, and the statement returned is never changed by its callers
    statement, signature = _read(document)
    if set(statement) != _FIELDS[kind] or statement["format"] != statement_format(kind):
        raise StatementRefused(f"it is not a {statement_format(kind)} statement of exactly its members")
    if statement["key"] != key:
        raise StatementRefused(f"it names another key ({str(statement['key'])[:16]}), not this one")
    if type(statement["host"]) is not str or not 0 < len(statement["host"]) <= 200:
        raise StatementRefused("its host is not a name of 1 to 200 characters")
    for name in ("at_ms", "retired_ms", "revoked_from_ms"):
        value = statement.get(name, MISSING)
        if value is MISSING or (value is None and name != "at_ms"):
            continue
        n = whole(value)
        if n is None or not 0 <= n <= MAX_WHOLE:
            raise StatementRefused(f"its {name} is not a whole number of milliseconds")
    if kind == ENDORSEMENT:
        if not is_lower_hex(statement["possession"], 64):
            raise StatementRefused("its possession is not 64 lower-case hex digits")
        if statement["note"] is not None and type(statement["note"]) is not str:
            raise StatementRefused("its note is not text")
    if not verify_strict(bytes.fromhex(signer), bytes.fromhex(signature), statement_digest(kind, statement)):
        who = "the key it names" if signer == key else "the root"
        raise StatementRefused(f"its signature does not hold, strictly, by {who}")
    return statement


@dataclass(frozen=True)
class Standing:
    """A key as the root's statements say: endorsed (and whose host, retired, revoked) or not, with why."""

    key: str
    endorsed: bool
    why: str | None = None  # why it is not endorsed
    host: str | None = None
    endorsed_ms: int | None = None
    retired_ms: int | None = None
    revoked_from_ms: int | None = None
    note: str | None = None
    endorsement: str | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        if not self.endorsed:
            return "not endorsed"
        if self.revoked_from_ms is not None:
            return f"revoked from {self.revoked_from_ms} ms"
        return "retired" if self.retired_ms is not None else "in use"

    def entry(self) -> dict[str, Any]:
        """The trust list's entry (§8.8): ``key`` and ``revoked_from_ms`` are what a verifier reads; the
        rest (``host``, ``key_id``, ``endorsed_ms``, ``retired_ms``, ``note``, and ``endorsement``, the
        root's statement a reader can check offline) it ignores."""
        entry: dict[str, Any] = {"key": self.key}
        if self.revoked_from_ms is not None:
            entry["revoked_from_ms"] = self.revoked_from_ms
        entry |= {"host": self.host, "key_id": self.key[:16], "endorsed_ms": self.endorsed_ms}
        if self.retired_ms is not None:
            entry["retired_ms"] = self.retired_ms
        if self.note:
            entry["note"] = self.note
        if self.endorsement is not None:
            entry["endorsement"] = json.loads(self.endorsement)
        return entry


def standing(key: str, endorsement: str | None, root: str) -> Standing:
    """``key``'s standing under ``root``: endorsed only where its endorsement holds by the root and names
    the key (the proof of possession it names was checked when the root signed it)."""
    try:
        said = check(ENDORSEMENT, endorsement, key, root)
    except StatementRefused as e:
        return Standing(key, False, f"its endorsement: {e}")
    return Standing(
        key,
        True,
        host=said["host"],
        endorsed_ms=said["at_ms"],
        retired_ms=said["retired_ms"],
        revoked_from_ms=said["revoked_from_ms"],
        note=said["note"],
        endorsement=endorsement,
    )


def endorsed_list(standings: list[Standing]) -> dict[str, Any]:
    """The endorsed keys as a trust list (``wai.quantum.receipt-keys/1``, §8.8); the rest are left out."""
    from qsolve.receipts.trust import FORMAT

    return {"format": FORMAT, "algorithm": "ed25519", "keys": [s.entry() for s in standings if s.endorsed]}


def sign_list(listing: dict[str, Any], root: HostKey) -> dict[str, Any]:
    """The operator's trust list, signed whole by the root: ``{"format", "list", "root", "signature"}``."""
    digest = blake3(LIST_DOMAIN + canonical_bytes(listing)).digest()
    return {
        "format": LIST_FORMAT,
        "list": listing,
        "root": root.public_hex,
        "signature": root.sign(digest).hex(),
    }


def is_signed_list(value: Any) -> bool:
    return type(value) is dict and value.get("format") == LIST_FORMAT


def read_signed_list(value: Any, root: str) -> dict[str, Any]:
    """The §8.8 list a signed list holds, where its signature holds by ``root``; else
    :class:`StatementRefused` saying why."""
    if type(value) is not dict or set(value) != {"format", "list", "root", "signature"}:
        raise StatementRefused(f"it is not a {LIST_FORMAT} document {{format, list, root, signature}}")
    if value["root"] != root:
        raise StatementRefused(f"it is signed by {str(value['root'])[:16]}, not by the configured root")
    if not is_lower_hex(value["signature"], 128) or type(value["list"]) is not dict:
        raise StatementRefused("its list is not an object or its signature not 128 lower-case hex digits")
    digest = blake3(LIST_DOMAIN + canonical_bytes(value["list"])).digest()
    if not verify_strict(bytes.fromhex(root), bytes.fromhex(value["signature"]), digest):
        raise StatementRefused("its signature does not hold, strictly, by the configured root")
    return value["list"]
