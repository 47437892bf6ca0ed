"""The track record's signed append-only log (issue 34, item 2; in the core since issue 40, so that a
replay checks it with no state database): what the state database keeps of every
file filed or compacted, as self-contained JSON anyone can check offline.

An **entry** is a document ``{"entry": {...}, "signature": "<128 hex>"}``; its entry, of the format
``qsolve.trackrecord-entry/1``, holds

    seq       1, 2, ...: its place in the log
    prev      the previous entry's hash (64 zeros for the first)
    kind      filed (a batch), compacted (a compaction's outputs), retired (files taken out of the track
              record: a rebuild's, or files set aside), adopted (the files a database recorded before the
              log existed, taken in whole by the first process that used the log)
    adds      the files it adds: {name, digest (BLAKE3 of the bytes), size, rows, run_ids_digest, run_ids}
              (``run_ids``, sorted, for a batch filed; null for a compaction's outputs and adopted files,
              whose name's digest, ``run_ids_digest``, commits to them)
    retires   the files it takes out: {name, digest}
    key, host, at_ms   the signing host's receipt key (64 hex), its name, the time in milliseconds

signed with Ed25519 (strictly, ``qsolve.receipts.signature``) over BLAKE3 of ``qsolve:trackrecord-entry``,
the byte 0x01 and the entry's RFC 8785 canonical text (``qsolve.receipts.canonical``), as the receipt
keys' statements are. An entry's **hash** is BLAKE3 (hex) of the whole document's canonical text, so the
chain commits to each signature too.

A **checkpoint** (``qsolve.trackrecord-checkpoint/1``, in the spirit of RFC 9162's signed tree heads) is
``{"checkpoint": {format, size, head, at_ms, key, host}, "signature"}``: the log's first ``size``
entries end in the entry whose hash is ``head``. A hash chain commits to its prefix as a Merkle tree's
root does: a later log extends a checkpoint exactly when its entry ``size`` has hash ``head``.

The **live set** (:func:`fold`) is the log folded in order: each entry's ``retires`` leave it, its
``adds`` join it (by name). It is the set of files every reader reads.

Everything here is pure: no database, no file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from blake3 import blake3

from qsolve.receipts.canonical import canonical_bytes as _canonical
from qsolve.receipts.keys import HostKey
from qsolve.receipts.signature import is_lower_hex, verify_strict

ENTRY_FORMAT = "qsolve.trackrecord-entry/1"
CHECKPOINT_FORMAT = "qsolve.trackrecord-checkpoint/1"
ENTRY_DOMAIN = b"qsolve:trackrecord-entry\x01"
CHECKPOINT_DOMAIN = b"qsolve:trackrecord-checkpoint\x01"
GENESIS = "0" * 64
FILED, COMPACTED, RETIRED, ADOPTED = "filed", "compacted", "retired", "adopted"
KINDS = (FILED, COMPACTED, RETIRED, ADOPTED)
_ENTRY_FIELDS = {"format", "seq", "prev", "kind", "adds", "retires", "key", "host", "at_ms"}
ADD_ORDER = ("name", "digest", "size", "rows", "run_ids_digest", "run_ids")
_ADD_FIELDS = set(ADD_ORDER)
_CHECKPOINT_FIELDS = {"format", "size", "head", "key", "host", "at_ms"}


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical text of an entry or checkpoint: the standard library's sorted, compact writer,
    which writes exactly it for what they hold (ASCII member names, strings, whole numbers below 2^53,
    null; no fraction), and is many times quicker on a batch's thousands of run ids."""
    return _canonical(value, plain=True)


class LogRefused(ValueError):
    """An entry or checkpoint not of its form, or whose signature does not hold."""


def added(
    name: str, digest: str, size: int, rows: int, run_ids_digest: str, run_ids: Iterable[str] | None = None
) -> dict[str, Any]:
    """One file an entry adds."""
    return {
        "name": name,
        "digest": digest,
        "size": int(size),
        "rows": int(rows),
        "run_ids_digest": run_ids_digest,
        "run_ids": None if run_ids is None else sorted(run_ids),
    }


def entry_document(
    seq: int,
    prev: str,
    kind: str,
    adds: list[dict[str, Any]],
    retires: list[dict[str, str]],
    key: HostKey,
    host: str,
    at_ms: int,
) -> dict[str, Any]:
    """An entry, signed by ``key``."""
    entry = {
        "format": ENTRY_FORMAT,
        "seq": seq,
        "prev": prev,
        "kind": kind,
        "adds": [{k: a[k] for k in ADD_ORDER} for a in adds],
        "retires": [{"name": r["name"], "digest": r["digest"]} for r in retires],
        "key": key.public_hex,
        "host": host[:200],
        "at_ms": at_ms,
    }
    signature = key.sign(blake3(ENTRY_DOMAIN + canonical_bytes(entry)).digest()).hex()
    return {"entry": entry, "signature": signature}


def document_hash(document: Mapping[str, Any]) -> str:
    """BLAKE3 (hex) of a document's canonical text: an entry's hash, what the next one names as ``prev``."""
    return blake3(canonical_bytes(document)).hexdigest()


def text(document: Mapping[str, Any]) -> str:
    """A document as the state database keeps it: its canonical text."""
    return canonical_bytes(document).decode()


def read(value: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """A document from its text (or already read)."""
    if isinstance(value, Mapping):
        return dict(value)
    try:
        found = json.loads(value)
    except ValueError as e:
        raise LogRefused(f"it does not read as JSON ({e})") from None
    if type(found) is not dict:
        raise LogRefused("it is not a JSON object")
    return found


def check_entry(document: Mapping[str, Any]) -> dict[str, Any]:
    """The entry of a document, where it is of its form and its signature holds by the key it names;
    else :class:`LogRefused` saying why."""
    if set(document) != {"entry", "signature"}:
        raise LogRefused("it is not {entry, signature}")
    entry, signature = document["entry"], document["signature"]
    if type(entry) is not dict or set(entry) != _ENTRY_FIELDS or entry["format"] != ENTRY_FORMAT:
        raise LogRefused(f"it is not a {ENTRY_FORMAT} entry of exactly its members")
    if type(entry["seq"]) is not int or entry["seq"] < 1 or not is_lower_hex(entry["prev"], 64):
        raise LogRefused("its seq or prev is not of its form")
    if entry["kind"] not in KINDS or type(entry["adds"]) is not list or type(entry["retires"]) is not list:
        raise LogRefused("its kind, adds or retires is not of its form")
    for a in entry["adds"]:
        if type(a) is not dict or set(a) != _ADD_FIELDS or not is_lower_hex(a["digest"], 64):
            raise LogRefused("a file it adds is not {name, digest, size, rows, run_ids_digest, run_ids}")
    for r in entry["retires"]:
        if type(r) is not dict or set(r) != {"name", "digest"}:
            raise LogRefused("a file it retires is not {name, digest}")
    _check_signature(entry, signature, ENTRY_DOMAIN)
    return entry


def _check_signature(statement: dict[str, Any], signature: Any, domain: bytes) -> None:
    if not is_lower_hex(statement.get("key"), 64) or not is_lower_hex(signature, 128):
        raise LogRefused("its key or signature is not of its form")
    try:
        message = blake3(domain + canonical_bytes(statement)).digest()
    except (TypeError, ValueError) as e:
        raise LogRefused(f"it has no canonical text ({e})") from None
    if not verify_strict(bytes.fromhex(statement["key"]), bytes.fromhex(signature), message):
        raise LogRefused("its signature does not hold, strictly, by the key it names")


def fold(entries: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The live set: each file added and not retired since, by name (entries, in order, not documents)."""
    live: dict[str, dict[str, Any]] = {}
    for entry in entries:
        apply(live, entry)
    return live


def apply(live: dict[str, dict[str, Any]], entry: Mapping[str, Any]) -> None:
    """One entry folded into ``live``: its retires leave (where the digest is the live one), its adds join."""
    for r in entry["retires"]:
        found = live.get(r["name"])
        if found is not None and found["digest"] == r["digest"]:
            del live[r["name"]]
    for a in entry["adds"]:
        live[a["name"]] = dict(a) | {"seq": entry["seq"]}


def checkpoint_document(size: int, head: str, key: HostKey, host: str, at_ms: int) -> dict[str, Any]:
    """The log's head, signed: its first ``size`` entries end in the entry whose hash is ``head``."""
    statement = {
        "format": CHECKPOINT_FORMAT,
        "size": size,
        "head": head,
        "key": key.public_hex,
        "host": host[:200],
        "at_ms": at_ms,
    }
    signature = key.sign(blake3(CHECKPOINT_DOMAIN + canonical_bytes(statement)).digest()).hex()
    return {"checkpoint": statement, "signature": signature}


def check_checkpoint(document: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's statement, where it is of its form and signed by the key it names."""
    if set(document) != {"checkpoint", "signature"}:
        raise LogRefused("it is not {checkpoint, signature}")
    statement = document["checkpoint"]
    if type(statement) is not dict or set(statement) != _CHECKPOINT_FIELDS:
        raise LogRefused(f"it is not a {CHECKPOINT_FORMAT} checkpoint of exactly its members")
    if statement["format"] != CHECKPOINT_FORMAT or type(statement["size"]) is not int:
        raise LogRefused(f"it is not a {CHECKPOINT_FORMAT} checkpoint")
    if statement["size"] < 0 or not is_lower_hex(statement["head"], 64):
        raise LogRefused("its size or head is not of its form")
    _check_signature(statement, document["signature"], CHECKPOINT_DOMAIN)
    return statement


def key_refused(window: Any, at_ms: Any) -> str | None:
    """Why a key of the trust list did not vouch for what it signed at ``at_ms``, or None. ``window``
    is the trust list's entry for the key (``not_before_ms``, ``not_after_ms``, ``revoked_from_ms``), or
    just the moment it is revoked from (an int), or None (endorsed for all time)."""
    if window is None:
        return None
    if isinstance(window, int):
        not_before, not_after, revoked = None, None, window
    else:
        not_before = getattr(window, "not_before_ms", None)
        not_after = getattr(window, "not_after_ms", None)
        revoked = getattr(window, "revoked_from_ms", None)
    if type(at_ms) is not int:
        return "at no time of its form"
    if revoked is not None and at_ms >= revoked:
        return "revoked from then"
    if not_before is not None and at_ms < not_before:
        return "not yet endorsed then (before its not_before_ms)"
    if not_after is not None and at_ms >= not_after:
        return "no longer endorsed then (its not_after_ms had passed)"
    return None


@dataclass
class Chain:
    """The log's entries checked in order: each one's form, signature, place and link to the one before.
    ``problems`` names each entry that fails; ``hashes[i]`` is the hash of entry ``i + 1``; ``sound``
    counts the entries before the first that fails (``entries[:sound]`` is the log as far as it checks)."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sound: int = 0

    @classmethod
    def of(cls, documents: Iterable[Mapping[str, Any]], trusted: Mapping[str, Any] | None) -> Chain:
        """``trusted``: key -> its window (``key_refused``); None to check no key."""
        chain = cls()
        prev = GENESIS
        for n, document in enumerate(documents, start=1):
            before = len(chain.problems)
            try:
                entry = check_entry(document)
            except LogRefused as e:
                chain.problems.append(f"entry {n}: {e}")
                entry = document.get("entry") if isinstance(document.get("entry"), dict) else None
            if entry is not None:
                if entry.get("seq") != n:
                    chain.problems.append(f"entry {n}: it says it is entry {entry.get('seq')}")
                if entry.get("prev") != prev:
                    chain.problems.append(
                        f"entry {n}: its prev is not the hash of entry {n - 1}: the log was rewritten "
                        "before it, or an entry removed"
                    )
                if trusted is not None:
                    key = entry.get("key")
                    if key not in trusted:
                        chain.problems.append(
                            f"entry {n}: signed by key {str(key)[:16]}, not in the trust list"
                        )
                    elif (why := key_refused(trusted[key], entry.get("at_ms", 0))) is not None:
                        chain.problems.append(f"entry {n}: signed by key {str(key)[:16]}, {why}")
                chain.entries.append(entry)
            try:
                prev = document_hash(document)
            except (TypeError, ValueError):
                chain.problems.append(f"entry {n}: it has no canonical text")
                prev = GENESIS
            chain.hashes.append(prev)
            if len(chain.problems) == before and chain.sound == n - 1:
                chain.sound = n
        return chain

    def extends(self, checkpoint: Mapping[str, Any]) -> str | None:
        """Why this log does not extend ``checkpoint``'s (a statement checked), or None."""
        size, head = checkpoint["size"], checkpoint["head"]
        if size == 0:
            return None
        if size > len(self.hashes):
            return (
                f"the checkpoint holds {size} entries, the log only {len(self.hashes)}: entries were removed"
            )
        if self.hashes[size - 1] != head:
            return (
                f"entry {size}'s hash is not the checkpoint's head: the log's first {size} entries were "
                "rewritten since the checkpoint was made"
            )
        return None
