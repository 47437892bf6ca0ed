"""Strict reading of a job's text (quantum-provider-protocol §8.2 "Reading").

The text is UTF-8 with no byte order mark and one JSON value (RFC 8259), whitespace allowed around it.
It is unreadable when an object names a member twice (after escapes are read), a string holds a lone
surrogate or an unescaped control character, a number's magnitude rounds to an infinite double
(2^1024 - 2^970 or more), or arrays and objects nest deeper than 127.

Values come back as Python values: an integer literal (no fraction, no exponent) as ``int`` (``-0`` as
``-0.0``, since it is a double), every other number as the nearest ``float``, objects as ``dict`` in the
job's order. A noncharacter is a character like any other.

Bytes are read first by orjson, for the common text (no ``\\u`` escape, no ``-0``, no whole number past
2^53 - 1, no whole or tiny double), checked as :func:`read_standard` would check it; any other text, and
any text orjson does not read, is read by :func:`read_standard`, the standard library's reading with hooks,
which decides every refusal and says why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

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
    if _QUICK and isinstance(data, bytes):
        doc = _read_quickly(data)
        if doc is not None:
            return doc
    return read_standard(data)


# What sends a text to the standard reading: a \u escape (a lone surrogate, a name written twice under
# its escapes, a character past U+FFFF), and -0 as a number (-0.0 to the hooks, 0 to orjson).
_ESCAPE_U = re.compile(rb"\\u")
_MINUS_ZERO_BYTES = re.compile(rb"-0(?![.eE0-9])")


def _shape_table() -> bytes:
    """The shape of orjson's text: "0" and the other digits apart, "e" and a sign, "," for every end of a
    value in a container, "[" for "{" too, ":" and "." as they are; every other byte a space."""
    table = bytearray(b" " * 256)
    for b in b"0.e:[,":
        table[b] = b
    for b in b"123456789":
        table[b] = ord("1")
    table[ord("E")] = ord("e")
    table[ord("+")] = table[ord("-")] = ord("+")
    table[ord("]")] = table[ord("}")] = ord(",")
    table[ord("{")] = ord("[")
    return bytes(table)


_SHAPE = _shape_table()
# orjson writes a whole double as its digits and ".0" below 10^16 (``1.0``, ``-0.0``) and with "e+" from
# there, a double below 10^-4 in magnitude as "0.0000..." down to 10^-5 and with "e-" below it: each is
# found in the shape, where a string can only add a false alarm (which costs the standard reading).
_WHOLE_OR_TINY = (b".0,", b".0000", b"0e+", b"1e+")
_ASTRAL_BYTES = re.compile(rb"[\xf0-\xf4]")


def _may_be_whole_or_tiny(shape: bytes) -> bool:
    return shape.endswith(b".0") or any(marks in shape for marks in _WHOLE_OR_TINY)


def _read_quickly(raw: bytes) -> Document | None:
    """The :class:`Document` :func:`read_standard` gives, read by orjson; ``None`` when the text is not
    the common one this reading knows to agree, or may break a rule: the standard reading then decides."""
    if _ESCAPE_U.search(raw) is not None or _MINUS_ZERO_BYTES.search(raw) is not None:
        return None
    try:
        value = orjson.loads(raw)  # refuses what is no JSON, not UTF-8, a byte order mark, infinities
        written = orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER)  # refuses |n| >= 2^53
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    shape = written.translate(_SHAPE)
    # A member written twice: orjson keeps one, and with no \u escape every ":" of the text is either one
    # member's or a character of a string, which orjson writes back as itself.
    if raw.count(b":") != shape.count(b":"):
        return None
    if shape.count(b"[") > MAX_DEPTH or _may_be_whole_or_tiny(shape):
        return None
    astral = not written.isascii() and _ASTRAL_BYTES.search(written) is not None
    return Document(value, False, not astral)


def read_standard(data: bytes | str) -> Document:
    """:func:`read` by the standard library alone, its hooks deciding each rule."""
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


def _orjson_agrees() -> bool:
    """orjson writes the doubles and whole numbers :func:`_read_quickly` must tell apart as it expects,
    and reads as the standard library does; else every text is read by :func:`read_standard`."""
    try:
        for x in (
            1.0,
            -0.0,
            0.0,
            100.0,
            2.0**53,
            -1e16,
            1e16,
            1e21,
            1e22,
            1.5e300,
            1e-5,
            5e-5,
            9.99e-5,
            1e-6,
            1e-7,
            -1e-300,
            5e-324,
        ):
            for text in (orjson.dumps(x), orjson.dumps([x]), orjson.dumps({"a": x})):
                if not _may_be_whole_or_tiny(text.translate(_SHAPE)):
                    return False
        for x in (0.1, 0.0178, -0.5, 1e-4, 0.00012, 123456.789, 4503599627370495.5):
            if orjson.dumps(x) != repr(x).encode():
                return False
        for n in (2**53, -(2**53)):
            try:
                orjson.dumps(n, option=orjson.OPT_STRICT_INTEGER)
                return False
            except orjson.JSONEncodeError:
                pass
        sample = b'{"a":[1,-2,0.5,"\\n\\"",true,null,{}],"b":9007199254740991}'
        return orjson.loads(sample) == read_standard(sample).value
    except Exception:  # another orjson: the standard reading is always there
        return False


_QUICK = _orjson_agrees()
