"""Ed25519, strictly (quantum-provider-protocol §8.2 "The signature, strictly").

A verifier here refuses ``A`` not canonical, not on the curve, of small order or outside the
prime-order subgroup; refuses ``R`` of small order and ``S`` of ℓ or more; and accepts exactly when
[S]B = R + [k]A, compared as canonical encodings with no cofactor. Lengths are checked before any
call into libsodium, which does not check them itself.

libsodium's verify refuses a non-canonical or small-order ``A``, a small-order ``R`` and ``S`` ≥ ℓ, and
compares ``R`` by its encoding; it does not check that ``A`` is in the prime-order subgroup, which
``crypto_core_ed25519_is_valid_point`` does (speccheck case 3). The checks on ``R`` and ``S`` are made
here too, so that the rule does not rest on a library's default.
"""

from __future__ import annotations

import re
from functools import lru_cache

import nacl.bindings
import nacl.exceptions

KEY_BYTES = 32
SIGNATURE_BYTES = 64
L = 2**252 + 27742317777372353535851937790883648493
"""ℓ, the order of the prime-order subgroup."""

_P = 2**255 - 19
# The y coordinates of the eight points of small order (the identity, the point of order 2, the two of
# order 4 at y = 0, and the four of order 8), with the non-canonical encodings y + p that are still
# below 2^255; each with either sign bit. An encoding of any other y is of no small-order point.
_SMALL_ORDER_Y = (
    0,
    1,
    _P - 1,
    int.from_bytes(
        bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"), "little"
    ),
    int.from_bytes(
        bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"), "little"
    ),
    _P,
    _P + 1,
)
SMALL_ORDER_ENCODINGS = frozenset(
    (y | sign << 255).to_bytes(32, "little") for y in _SMALL_ORDER_Y for sign in (0, 1)
)


def _self_test() -> None:
    # pynacl 1.6.1 and older took this point as valid (CVE-2025-69277); the rule needs a sound check.
    if nacl.bindings.crypto_core_ed25519_is_valid_point(bytes.fromhex("95" + "99" * 31)):
        raise ImportError("this libsodium's subgroup check is broken: pynacl 1.6.2 or later is needed")


_self_test()


@lru_cache(maxsize=4096)
def key_is_strict(key: bytes) -> bool:
    """``A`` is 32 bytes, canonical, on the curve, not of small order and in the prime-order subgroup."""
    return len(key) == KEY_BYTES and nacl.bindings.crypto_core_ed25519_is_valid_point(key)


def verify_strict(key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` (``R ‖ S``) by ``key`` holds over ``message``, by the strict rule."""
    if len(key) != KEY_BYTES or len(signature) != SIGNATURE_BYTES:
        return False
    if not key_is_strict(key):
        return False
    r, s = signature[:32], signature[32:]
    if r in SMALL_ORDER_ENCODINGS or int.from_bytes(s, "little") >= L:
        return False
    try:
        nacl.bindings.crypto_sign_open(signature + message, key)
    except nacl.exceptions.BadSignatureError:
        return False
    return True


_LOWER_HEX = re.compile("[0-9a-f]*")


def is_lower_hex(value: object, length: int) -> bool:
    """``value`` is a string of exactly ``length`` lower-case hex digits (``0``-``9``, ``a``-``f``)."""
    return type(value) is str and len(value) == length and _LOWER_HEX.fullmatch(value) is not None
