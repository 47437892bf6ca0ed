"""Ed25519, strictly (§8.2): speccheck refused, Wycheproof as labelled, lengths and points checked."""

from __future__ import annotations

import json
from typing import Any

import nacl.bindings
import pytest

from qsolve.receipts.signature import SMALL_ORDER_ENCODINGS, L, key_is_strict, verify_strict
from tests.conftest import VECTORS
from tests.qsolve.receipts.builders import KEY

ED25519 = VECTORS / "ed25519"
SPECCHECK = json.loads((ED25519 / "speccheck-cases.json").read_text())
WYCHEPROOF = json.loads((ED25519 / "wycheproof-ed25519-test.json").read_text())


def _wycheproof_cases() -> list[tuple[str, dict[str, Any]]]:
    return [(g["publicKey"]["pk"], t) for g in WYCHEPROOF["testGroups"] for t in g["tests"]]


def test_the_vectors_are_all_there() -> None:
    assert len(SPECCHECK) == 12 and len(_wycheproof_cases()) == 151


@pytest.mark.parametrize("case", range(12))
def test_every_speccheck_case_is_refused(case: int) -> None:
    c = SPECCHECK[case]
    key, sig, msg = (bytes.fromhex(c[k]) for k in ("pub_key", "signature", "message"))
    assert verify_strict(key, sig, msg) is False


def test_libsodium_alone_takes_speccheck_case_3_which_the_subgroup_check_refuses() -> None:
    c = SPECCHECK[3]
    key, sig, msg = (bytes.fromhex(c[k]) for k in ("pub_key", "signature", "message"))
    nacl.bindings.crypto_sign_open(sig + msg, key)  # no exception: libsodium accepts it
    assert not nacl.bindings.crypto_core_ed25519_is_valid_point(key)
    assert not key_is_strict(key)


@pytest.mark.parametrize(
    ("pk", "case"), _wycheproof_cases(), ids=lambda v: str(v["tcId"]) if isinstance(v, dict) else ""
)
def test_every_wycheproof_case_is_answered_as_labelled(pk: str, case: dict[str, Any]) -> None:
    got = verify_strict(bytes.fromhex(pk), bytes.fromhex(case["sig"]), bytes.fromhex(case["msg"]))
    assert got is (case["result"] == "valid"), case["comment"]


def test_lengths_are_checked_before_libsodium() -> None:
    msg = bytes(32)
    sig = KEY.sign(msg)
    key = KEY.public_key
    assert verify_strict(key, sig, msg)
    for bad_key in (key[:31], key + b"\x00", b""):
        assert verify_strict(bad_key, sig, msg) is False
    for bad_sig in (sig[:63], sig + b"\x00", b""):
        assert verify_strict(key, bad_sig, msg) is False


def test_s_of_l_or_more_is_refused() -> None:
    msg = b"\x07" * 32
    sig = KEY.sign(msg)
    s = int.from_bytes(sig[32:], "little")
    malleated = sig[:32] + (s + L).to_bytes(32, "little")
    assert verify_strict(KEY.public_key, malleated, msg) is False


def test_the_identity_as_key_forges_nothing() -> None:
    identity = (1).to_bytes(32, "little")
    # With A the identity, R = [S]B holds for every message under a lax rule.
    s = (5).to_bytes(32, "little")
    r = nacl.bindings.crypto_scalarmult_ed25519_base_noclamp(s)
    assert verify_strict(identity, r + s, b"any content at all") is False
    assert not key_is_strict(identity)


# --- the small-order encodings, checked by independent arithmetic -----------------------------------

P = 2**255 - 19
D = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def _decode(encoding: bytes) -> tuple[int, int] | None:
    """RFC 8032 §5.1.3 decoding, lenient on y ≥ p (to place the non-canonical encodings)."""
    n = int.from_bytes(encoding, "little")
    y, sign = (n & ((1 << 255) - 1)) % P, n >> 255
    u, v = (y * y - 1) % P, (D * y * y + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    if v * x * x % P == (-u) % P:
        x = x * SQRT_M1 % P
    if v * x * x % P != u:
        return None
    if x == 0 and sign:
        return (0, y)
    if x & 1 != sign:
        x = P - x
    return (x, y)


def _add(p1: tuple[int, int], p2: tuple[int, int]) -> tuple[int, int]:
    (x1, y1), (x2, y2) = p1, p2
    t = D * x1 * x2 * y1 * y2 % P
    return ((x1 * y2 + x2 * y1) * pow(1 + t, -1, P) % P, (y1 * y2 + x1 * x2) * pow(1 - t, -1, P) % P)


def _times8(p: tuple[int, int]) -> tuple[int, int]:
    for _ in range(3):
        p = _add(p, p)
    return p


def test_every_listed_encoding_is_of_a_small_order_point_and_every_small_order_point_is_listed() -> None:
    assert len(SMALL_ORDER_ENCODINGS) == 14
    points = set()
    for encoding in SMALL_ORDER_ENCODINGS:
        point = _decode(encoding)
        assert point is not None and _times8(point) == (0, 1)
        points.add(point)
    assert len(points) == 8  # all eight points of small order
