"""Strict reading of a job's text (quantum-provider-protocol §8.2 "Reading").

The text is UTF-8 with no byte order mark and one JSON value (RFC 8259), whitespace allowed around it.
It is unreadable when an object names a member twice (after escapes are read), a string holds a lone
surrogate or an unescaped control character, a number's magnitude rounds to an infinite double
(2^1024 - 2^970 or more), or arrays and objects nest deeper than 127.

Values come back as Python values: an integer literal (no fraction, no exponent) as ``int`` (``-0`` as
``-0.0``, since it is a double), every other number as the nearest ``float``, objects as ``dict`` in the
job's order. A noncharacter is a character like any other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from qsolve.errors import QsolveError

MAX_DEPTH = 127
"""Arrays and objects nest at most this deep, the outermost counted as the first (§8.2)."""

INFINITE_AT = 2**1024 - 2**970
"""A number of this magnitude or more rounds to an infinite double (§8.2)."""

EXACT_LIMIT = 2**53
"""Every whole number of at most this magnitude is a double exactly."""

_BOM = b"\xef\xbb\xbf"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# 10^309 > 2^1024: an integer literal with more digits than this is past every double.
_MAX_INT_DIGITS = 309
# Where no run of 16 digits and no "-0" ending a number occurs, no integer literal is past 2^53 (16 digits
# at least) or is -0, and the standard library's int() reads every one as the hook would. (A regular
# expression for the run of digits costs more than the whole reading; a translation costs little.)
_DIGITS_AS_ZERO = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord(" ") for b in range(256))
_SIXTEEN_DIGITS = b"0" * 16
_MINUS_ZERO = re.compile(r"-0(?![.eE0-9])")


def _maybe_special_int(raw: bytes, text: str) -> bool:
    if _SIXTEEN_DIGITS in raw.translate(_DIGITS_AS_ZERO):
        return True
    return b"-0" in raw and _MINUS_ZERO.search(text) is not None


class Unreadable(QsolveError):
    """The text breaks a rule of reading (§8.2); ``message`` says which."""


@dataclass(frozen=True, slots=True)
class Document:
    """A value read strictly, with what the writers and the number rules need to know of its text.

    ``big_ints``: some integer literal is past 2^53 in magnitude (the only ones that can be inexact,
    and the only ones the canonical writer cannot write as their digits). ``plain``: every number
    and name is written by the canonical rules as the standard library writes it (no whole or tiny
    double, no integer past 2^53, no character past U+FFFF), so the fast writer may be used.
    """

    value: Any
    big_ints: bool
    plain: bool


class _Reader:
    """One reading's hooks and what they saw."""

    __slots__ = ("big_ints", "awkward")

    def __init__(self) -> None:
        self.big_ints = False
        self.awkward = False

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            raise Unreadable(f"an object names the member {_first_repeated(pairs)!r} twice")
        return obj

    def integer(self, literal: str) -> int | float:
        digits = len(literal) - (literal[0] == "-")
        if digits > _MAX_INT_DIGITS:
            raise Unreadable("a number rounds to an infinite double")
        if literal == "-0":
            self.awkward = True
            return -0.0
        n = int(literal)
        if not -EXACT_LIMIT <= n <= EXACT_LIMIT:
            if abs(n) >= INFINITE_AT:
                raise Unreadable("a number rounds to an infinite double")
            self.big_ints = True
        return n

    def real(self, literal: str) -> float:
        x = float(literal)
        if x in (_INF, -_INF):
            raise Unreadable("a number rounds to an infinite double")
        if not self.awkward and (x.is_integer() or abs(x) < 1e-4):
            # repr() and ECMAScript write these differently; elsewhere they agree.
            self.awkward = True
        return x


_INF = float("inf")


def _first_repeated(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            return name
        seen.add(name)
    return ""


def _refuse_constant(name: str) -> Any:
    raise Unreadable(f"{name} is not JSON")


def read(data: bytes | str) -> Document:
    """Read one JSON value strictly; raise :class:`Unreadable` with why when the text breaks a rule."""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        if raw.startswith(_BOM):
            raise Unreadable("the text begins with a byte order mark")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Unreadable(f"the text is not UTF-8 (byte {e.start})") from None
    else:
        text = data
        if text.startswith("\ufeff"):
            raise Unreadable("the text begins with a byte order mark")
        if _SURROGATE.search(text):
            raise Unreadable("the text holds a lone surrogate")
        raw = text.encode("utf-8")
    reader = _Reader()
    parse_int = reader.integer if _maybe_special_int(raw, text) else None
    try:
        value = json.loads(
            text,
            object_pairs_hook=reader.pairs,
            parse_int=parse_int,
            parse_float=reader.real,
            parse_constant=_refuse_constant,
        )
    except json.JSONDecodeError as e:
        raise Unreadable(f"not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise Unreadable(f"arrays and objects nest deeper than {MAX_DEPTH}") from None
    surrogate_escapes = _SURROGATE_ESCAPE.search(text) is not None
    if surrogate_escapes and _has_lone_surrogate(value):
        raise Unreadable("a string holds a lone surrogate")
    if text.count("[") + text.count("{") > MAX_DEPTH and depth(value) > MAX_DEPTH:
        raise Unreadable(f"arrays and objects nest deeper than {MAX_DEPTH}")
    astral = surrogate_escapes or (not text.isascii() and _ASTRAL.search(text) is not None)
    return Document(value, reader.big_ints, not (reader.big_ints or reader.awkward or astral))


def read_value(data: bytes | str) -> Any:
    """The value alone of :func:`read`."""
    return read(data).value


def depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value``, the outermost counted as the first."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > deepest:
            deepest = d
            if deepest > MAX_DEPTH:
                return deepest
        stack.extend((c, d + 1) for c in children)
    return deepest


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False
