"""A set's receipt: its items and their Merkle tree (quantum-provider-protocol §8.6).

A set's result has ``"format": "wai.quantum.set/1"``; its *head* is its result less ``items`` and
``receipt``, and the set's receipt seals its request and head as a job's seals its request and result.
Beside the seal's reasons, a set gets ``set_items``, ``set_item`` and ``set_root``.

An item's leaf is the canonical form's digest (domain byte 0x02) of its request and its result less
``receipt``, or, for an item with an ``error``, of its request and ``{"error": the error}``. A leaf's
hash is BLAKE3 of ``moq-jwp:merkle-leaf``, 0x01 and the leaf; a node's, of ``moq-jwp:merkle-node``, 0x01,
the left hash and the right; a level of odd length pairs its last hash with itself; the root of one
leaf is its hash. A path lists the sibling at each level from the leaf up.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from blake3 import blake3

from qsolve.receipts.seal import (
    SET_FORMAT,
    Form,
    Signer,
    check_sealable_request,
    head_of,
    is_set,
    job_digest,
    seal,
    sealed_part,
)
from qsolve.receipts.signature import is_lower_hex
from qsolve.receipts.strict_json import Document
from qsolve.receipts.values import MISSING, member, same, whole

LEAF_DOMAIN = b"moq-jwp:merkle-leaf\x01"
NODE_DOMAIN = b"moq-jwp:merkle-node\x01"
_NOT_IN_ITEM_REQUEST = ("programs", "sweep", "dry_run")


__all__ = ["SET_FORMAT", "head_of", "is_set", "merkle_path", "merkle_root", "seal_set", "set_reasons"]


# --- the tree --------------------------------------------------------------------------------------


def leaf_hash(leaf: bytes) -> bytes:
    return blake3(LEAF_DOMAIN + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return blake3(NODE_DOMAIN + left + right).digest()


def path_length(n: int) -> int:
    """How many halvings, rounding up, take ``n`` to 1: the length of every path in a tree of ``n``."""
    return math.ceil(math.log2(n)) if n > 1 else 0


def _levels(leaves: list[bytes]) -> list[list[bytes]]:
    level = [leaf_hash(leaf) for leaf in leaves]
    levels = [level]
    while len(level) > 1:
        if len(level) % 2:
            level = [*level, level[-1]]
        level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
        levels.append(level)
    return levels


def merkle_root(leaves: list[bytes]) -> bytes:
    if not leaves:
        raise ValueError("a tree has at least one leaf")
    return _levels(leaves)[-1][0]


def merkle_path(leaves: list[bytes], index: int) -> list[bytes]:
    """The siblings from leaf ``index`` up to the root."""
    path = []
    for level in _levels(leaves)[:-1]:
        sibling = index + 1 if index % 2 == 0 else index - 1
        path.append(level[sibling] if sibling < len(level) else level[index])
        index //= 2
    return path


def root_from_path(leaf: bytes, index: int, path: list[bytes]) -> bytes:
    h = leaf_hash(leaf)
    for sibling in path:
        h = node_hash(h, sibling) if index % 2 == 0 else node_hash(sibling, h)
        index //= 2
    return h


def item_leaf(item: dict[str, Any], doc: Document | None = None) -> bytes:
    """An item's leaf: the canonical digest of its request and its result less receipt, or its error."""
    sealed = sealed_part(item["result"]) if "result" in item else {"error": item["error"]}
    return job_digest(item["request"], sealed, Form.CANONICAL, doc=doc)


# --- the rules -------------------------------------------------------------------------------------


def _items_well_formed(items: Any) -> bool:
    """The first sentence of ``set_items``: a non-empty array of items of their form, in order."""
    if type(items) is not list or not items:
        return False
    for i, item in enumerate(items):
        if type(item) is not dict:
            return False
        if whole(item.get("index", MISSING)) != i or type(item.get("request")) is not dict:
            return False
        has_result, has_error = "result" in item, "error" in item
        if has_result == has_error:
            return False
        if has_result and type(item["result"]) is not dict:
            return False
        if has_error and type(item["error"]) is not str:
            return False
        path = item.get("path", MISSING)
        if type(path) is not list or not all(is_lower_hex(h, 64) for h in path):
            return False
    return True


def _items_are_the_requests(request: dict[str, Any], items: list[dict[str, Any]]) -> bool:
    """The items are the ones the request gives: by ``programs``, or by ``sweep`` (§8.6)."""
    programs = request.get("programs")
    sweep = request.get("sweep")
    base = {k: v for k, v in request.items() if k not in _NOT_IN_ITEM_REQUEST}
    if programs is not None and sweep is None and type(programs) is list:
        if len(items) != len(programs):
            return False
        for program, item in zip(programs, items, strict=True):
            if type(program) is str:
                wanted = {**base, "qasm": program}
            elif type(program) is dict:
                wanted = {**base, **program}
            else:
                return False
            if not same(item["request"], wanted):
                return False
        return True
    if sweep is not None and programs is None and type(sweep) is dict:
        sizes = [len(v) for v in sweep.values() if type(v) is list and v]
        if len(sizes) != len(sweep) or len(items) != math.prod(sizes):
            return False
        rest = {k: v for k, v in base.items() if k != "qasm"}
        for item in items:
            asked = item["request"]
            if type(asked.get("qasm")) is not str:
                return False
            if not same({k: v for k, v in asked.items() if k != "qasm"}, rest):
                return False
        return True
    return False  # neither, or both: no items


@dataclass
class ItemFound:
    """What an item's own check found: its reasons, and the rules it could not run."""

    index: int
    reasons: list[str]
    error: bool = False
    unchecked: list[Any] = field(default_factory=list)
    why: str | None = None
    """Why the item fails ``set_item`` beside its reasons: it is a set, or names another key."""

    @property
    def fails(self) -> bool:
        return bool(self.reasons) or self.why is not None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "reasons": sorted(self.reasons)}
        if self.error:
            out["error"] = True
        if self.why:
            out["why"] = self.why
        if self.unchecked:
            out["unchecked"] = [u.as_json() for u in self.unchecked]
        return out


@dataclass
class SetFound:
    reasons: list[str]
    items: list[ItemFound]
    unchecked: list[Any]


ItemCheck = Callable[[dict[str, Any], dict[str, Any]], tuple[list[str], list[Any], str | None]]
"""Checks ``(request, result)`` as a job: its reasons, its unchecked rules, and its receipt's key."""
InexactCheck = Callable[[Any], bool]


def set_reasons(
    request: dict[str, Any],
    result: dict[str, Any],
    set_key: Any,
    check_item: ItemCheck,
    inexact: InexactCheck,
    doc: Document | None = None,
) -> SetFound:
    """``set_items``, ``set_item`` and ``set_root`` for a set; ``set_key`` is its receipt's ``key`` as it
    stands (``MISSING`` when it has none)."""
    items = result.get("items", MISSING)
    if not _items_well_formed(items):
        return SetFound(["set_items"], [], [])
    reasons: list[str] = []
    count = result.get("count", MISSING)
    if whole(count) != len(items) or not _items_are_the_requests(request, items):
        reasons.append("set_items")
    found: list[ItemFound] = []
    unchecked: list[Any] = []
    for index, item in enumerate(items):
        if "error" in item:
            bad = inexact(item["request"])
            found.append(ItemFound(index, ["inexact_number"] if bad else [], error=True))
        elif item["result"].get("format") == SET_FORMAT:
            found.append(ItemFound(index, [], why="its result is a set's: an item is one job"))
        else:
            item_reasons, item_unchecked, key = check_item(item["request"], item["result"])
            why = None
            if not item_reasons and key != set_key:
                why = "its receipt is valid and names another key than the set's receipt"
            found.append(ItemFound(index, item_reasons, unchecked=item_unchecked, why=why))
            unchecked.extend(item_unchecked)
    if any(item.fails for item in found):
        reasons.append("set_item")
    root = result.get("root", MISSING)
    leaves = [item_leaf(item, doc) for item in items]
    if not is_lower_hex(root, 64) or merkle_root(leaves).hex() != root:
        reasons.append("set_root")
    else:
        want = bytes.fromhex(root)
        length = path_length(len(items))
        for i, (item, leaf) in enumerate(zip(items, leaves, strict=True)):
            path = [bytes.fromhex(h) for h in item["path"]]
            if len(path) != length or root_from_path(leaf, i, path) != want:
                reasons.append("set_root")
                break
    return SetFound(reasons, found, unchecked)


def set_key_member(result: dict[str, Any]) -> Any:
    """The set's receipt's ``key`` member as it stands."""
    return member(result.get("receipt"), "key")


def seal_set(
    request: dict[str, Any],
    head: dict[str, Any],
    items: list[tuple[dict[str, Any], dict[str, Any] | str]],
    signer: Signer,
    *,
    issued_ms: int | None = None,
) -> dict[str, Any]:
    """A set sealed: each item ``(its request, its result or its error)``, each result sealed over its own
    request; ``count``, ``root`` and each item's ``path`` written; the head and request sealed (§8.6)."""
    if not items:
        raise ValueError("a set has at least one item")
    written: list[dict[str, Any]] = []
    for index, (item_request, outcome) in enumerate(items):
        if isinstance(outcome, str):
            written.append(
                {"index": index, "request": check_sealable_request(item_request), "error": outcome}
            )
        else:
            job = seal(item_request, outcome, signer)
            written.append({"index": index, "request": job["request"], "result": job["result"]})
    leaves = [item_leaf(item) for item in written]
    for item in written:
        item["path"] = [h.hex() for h in merkle_path(leaves, item["index"])]
    result = {**head, "format": SET_FORMAT, "count": len(written), "root": merkle_root(leaves).hex()}
    return seal(request, {**result, "items": written}, signer, issued_ms=issued_ms)
