"""The first form's text: what the first receipts' writer wrote (quantum-provider-protocol §8.2).

Compact text (no whitespace outside strings), object members in the order the job gives them,
strings as in the canonical text. A whole number written as one, from 0 to 2^64 - 1 or from -2^63 to
-1, is written as its digits; every other number from its double: ``0.0``, ``-0.0``; fixed notation
with ``.0`` for whole values up to 16 digits of magnitude; ``0.`` and zeros down to n > -5; otherwise
``d.ddde±x`` (``1e+16``, ``1e-7``).
"""

from __future__ import annotations

from typing import Any

from qsolve.receipts.canonical import decimal_text, write_json

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1


def first_form_number(x: float) -> str:
    """A double as the first form's writer wrote it."""
    if x == 0:
        return "-0.0" if str(x)[0] == "-" else "0.0"
    return decimal_text(x, whole_up_to=16, fraction_above=-5, whole_suffix=".0")


def _names(members: dict) -> list[str]:
    """Member names in the order the job gives them (each checked to be a string)."""
    for name in members:
        if type(name) is not str:
            raise TypeError(f"a member name {name!r} is not a string")
    return list(members)


def _number(v: int | float) -> str:
    if type(v) is int:
        return str(v) if INT_MIN <= v <= INT_MAX else first_form_number(float(v))
    return first_form_number(v)


def first_form_bytes(value: Any) -> bytes:
    """The first form's text of a value read strictly, as UTF-8 bytes."""
    out: list[str] = []
    write_json(value, out, _names, _number)
    return "".join(out).encode("utf-8")
