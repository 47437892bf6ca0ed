"""How the rules read a value (quantum-provider-protocol §8.4, after the table).

A number's value is its nearest double, however it is written, on every form of receipt: ``1``,
``1.0`` and ``1e0`` are the same whole number, ``-0`` is 0. A boolean is no number. Values are
compared as JSON values: members in any order, numbers by value, a boolean only to a boolean.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from qsolve.receipts.strict_json import EXACT_LIMIT


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""An absent member, told apart from ``null``."""

MAX_WHOLE = 2**53 - 1


_EMPTY: Final = MappingProxyType({})


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one: read its members with ``.get``."""
    return value if type(value) is dict else _EMPTY


def member(obj: Any, name: str) -> Any:
    """``obj[name]``, or :data:`MISSING` when ``obj`` is no object or has no such member."""
    if type(obj) is dict:
        return obj.get(name, MISSING)
    return MISSING


def number_value(v: Any) -> float | None:
    """A number's value (its nearest double), or ``None`` for anything that is no number."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    return None


def whole(v: Any) -> int | None:
    """The value of a whole number, exactly, however it is written and however large; else ``None``."""
    t = type(v)
    if t is int:
        return v if -EXACT_LIMIT <= v <= EXACT_LIMIT else int(float(v))
    if t is float and v.is_integer():
        return int(v)
    return None


def whole_at_least(v: Any, least: int) -> bool:
    if type(v) is int and -EXACT_LIMIT <= v <= EXACT_LIMIT:  # its own value: the common case, at once
        return v >= least
    n = whole(v)
    return n is not None and n >= least


def whole_in(v: Any, least: int, most: int) -> bool:
    n = whole(v)
    return n is not None and least <= n <= most


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value, members in any order, a boolean only to a boolean."""
    ta, tb = type(a), type(b)
    if ta in _NUMBER and tb in _NUMBER:
        return float(a) == float(b)
    if ta is not tb:
        return False
    if ta is dict:
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


_NUMBER = (int, float)
