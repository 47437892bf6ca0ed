"""The canonical text of a value: RFC 8785, as quantum-provider-protocol §8.2 writes it.

Strings between ``"`` with ``"``, ``\\`` and the characters below U+0020 escaped (``\\b \\t \\n \\f \\r``,
the rest as ``\\u00`` and two lower-case hex digits), every other character as its UTF-8 bytes; numbers
as ECMAScript's Number::toString writes the double they read as; object members ordered by their names'
UTF-16 code units; no whitespace outside strings.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

import orjson

from qsolve.receipts.strict_json import EXACT_LIMIT, Document


def _fast_writer() -> Callable[[Any], str]:
    """The standard library's writer, sorted, compact, not escaping past ASCII: the canonical text of a
    plain document. Its C encoder is called directly where there is one (``JSONEncoder.encode`` adds a
    third to its cost); the slower route is kept for an interpreter without it."""
    slow = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False, check_circular=False
    ).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return slow
    try:
        encoder = make(None, None, encode_basestring, None, ":", ",", True, False, False)

        def fast(value: Any) -> str:
            return "".join(encoder(value, 0))

        if fast({"b": [1, 0.5, None, True], "a": "é\n"}) != slow({"b": [1, 0.5, None, True], "a": "é\n"}):
            return slow
    except TypeError:  # another interpreter's signature
        return slow
    return fast


_dumps = _fast_writer()


def _sorted_orjson(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _read_writer() -> Callable[[Any], bytes]:
    """The writer of a plain document's values, which hold JSON types and finite numbers only (what
    :func:`qsolve.receipts.strict_json.read` gives): orjson, sorted, where it writes what the standard
    library's writer writes (escapes, numbers as ``repr``, names in code point order), about ten times
    quicker; else the standard library's."""
    sample = {"b": [1, -2, 0.5, 0.0178, None, True, False, 9007199254740991], "a": 'é\n\x1f\x7f\u2028"\\/'}
    sample["\uffff"] = sample["é"] = sample["~"] = {"z": [], "y": {}}
    try:
        if _sorted_orjson(sample) == _dumps(sample).encode("utf-8"):
            return _sorted_orjson
    except TypeError:  # pragma: no cover - another orjson
        pass
    return lambda value: _dumps(value).encode("utf-8")  # pragma: no cover


_write_read = _read_writer()


def decimal_parts(x: float) -> tuple[str, int]:
    """``(s, n)`` of a finite nonzero double: ``s`` its fewest digits that read back as it (the nearest
    of those), ``n`` such that ``|x|`` is 0.``s`` × 10^n (§8.2)."""
    r = repr(x)
    if r[0] == "-":
        r = r[1:]
    mantissa, _, exponent = r.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    n = (int(exponent) if exponent else 0) + len(whole) - (len(digits) - len(significant))
    return significant.rstrip("0"), n


def es6_number(x: float) -> str:
    """ECMAScript's Number::toString of a finite double (ECMA-262 6.1.6.1.20), as §8.2 restates it."""
    if x != x or x in (_INF, -_INF):
        raise ValueError("a non-finite number has no canonical text")
    if x == 0:
        return "0"
    if x.is_integer() and -EXACT_LIMIT <= x <= EXACT_LIMIT:
        return str(int(x))
    return decimal_text(x, whole_up_to=21, fraction_above=-6)


def decimal_text(x: float, *, whole_up_to: int, fraction_above: int, whole_suffix: str = "") -> str:
    """A finite nonzero double in its fewest digits (:func:`decimal_parts`): whole numbers written out
    while ``n <= whole_up_to`` (then ``whole_suffix``), fixed notation while ``fraction_above < n``,
    else ``d.ddde±x``. ECMAScript's text and the first form's differ only in these three."""
    s, n = decimal_parts(x)
    k = len(s)
    sign = "-" if x < 0 else ""
    if k <= n <= whole_up_to:
        return sign + s + "0" * (n - k) + whole_suffix
    if 0 < n <= whole_up_to:
        return sign + s[:n] + "." + s[n:]
    if fraction_above < n <= 0:
        return sign + "0." + "0" * -n + s
    e = n - 1
    mantissa = s[0] + ("." + s[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


_INF = float("inf")


def utf16_key(name: str) -> bytes:
    """The order of member names: their UTF-16 code units, compared unsigned."""
    if type(name) is not str:
        raise TypeError(f"a member name {name!r} is not a string")
    return name.encode("utf-16-be")


def number_text(v: int | float) -> str:
    """The canonical text of a number read as ``int`` (an integer literal) or ``float``."""
    if type(v) is int:
        return str(v) if -EXACT_LIMIT <= v <= EXACT_LIMIT else es6_number(float(v))
    return es6_number(v)


def canonical_names(members: dict) -> list[str]:
    """Member names in the canonical order."""
    return sorted(members, key=utf16_key)


def write_json(
    v: Any,
    out: list[str],
    names: Callable[[dict], Any] = canonical_names,
    number: Callable[[int | float], str] = number_text,
) -> None:
    """Compact JSON text of ``v`` into ``out``: strings escaped as §8.2 says, members in the order
    ``names`` gives, numbers as ``number`` writes them. The canonical text and the first form (its
    writer, :mod:`qsolve.receipts.first_form`) differ only in those two."""
    t = type(v)
    if t is str:
        out.append(encode_basestring(v))
    elif t is dict:
        out.append("{")
        for i, name in enumerate(names(v)):
            if i:
                out.append(",")
            out.append(encode_basestring(name))
            out.append(":")
            write_json(v[name], out, names, number)
        out.append("}")
    elif t is list:
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            write_json(item, out, names, number)
        out.append("]")
    elif v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif t is int or t is float:
        out.append(number(v))
    else:
        raise TypeError(f"{t.__name__} is not a JSON value")


def canonical_text(value: Any) -> str:
    """The canonical text of a JSON value (str, int, float, bool, None, list, dict with str keys)."""
    out: list[str] = []
    write_json(value, out)
    return "".join(out)


def canonical_bytes(value: Any, *, plain: bool = False) -> bytes:
    """The canonical text's UTF-8 bytes. ``plain`` (from :class:`Document`) allows the fast writer."""
    if plain:
        return _write_read(value)
    return canonical_text(value).encode("utf-8")


def canonical_of(doc: Document, value: Any) -> bytes:
    """The canonical bytes of a value inside a strictly read document."""
    return canonical_bytes(value, plain=doc.plain)
