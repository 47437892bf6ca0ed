"""Strict reading (quantum-provider-protocol §8.2 "Reading"): JSONTestSuite, then the rules one by one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qsolve.receipts import strict_json
from qsolve.receipts.strict_json import INFINITE_AT, MAX_DEPTH, Unreadable, read, read_standard, read_value
from tests.conftest import VECTORS

PARSING = VECTORS / "json-parsing" / "test_parsing"
DUPLICATES = {"y_object_duplicated_key.json", "y_object_duplicated_key_and_value.json"}


def _files(prefix: str) -> list[Path]:
    return sorted(p for p in PARSING.iterdir() if p.name.startswith(prefix))


def test_the_suite_is_there() -> None:
    assert len(_files("y_")) == 95 and len(_files("n_")) == 188


@pytest.mark.parametrize("path", _files("n_"), ids=lambda p: p.name)
def test_every_n_file_is_refused(path: Path) -> None:
    with pytest.raises(Unreadable):
        read(path.read_bytes())


@pytest.mark.parametrize("path", _files("y_"), ids=lambda p: p.name)
def test_every_y_file_reads_but_those_naming_a_member_twice(path: Path) -> None:
    if path.name in DUPLICATES:
        with pytest.raises(Unreadable, match="twice"):
            read(path.read_bytes())
    else:
        read(path.read_bytes())


@pytest.mark.parametrize(
    ("name", "readable"),
    [
        ("i_number_huge_exp.json", False),  # rounds to infinity
        ("i_number_real_pos_overflow.json", False),
        ("i_number_real_neg_overflow.json", False),
        ("i_number_real_underflow.json", True),  # too small for a double: reads as zero
        ("i_number_double_huge_neg_exp.json", True),
        ("i_number_too_big_pos_int.json", True),  # read; inexact_number is the verifier's to say
        ("i_number_very_big_negative_int.json", True),
        ("i_string_1st_surrogate_but_2nd_missing.json", False),
        ("i_string_lone_second_surrogate.json", False),
        ("i_string_inverted_surrogates_U+1D11E.json", False),
        ("i_object_key_lone_2nd_surrogate.json", False),
        ("i_string_UTF8_surrogate_U+D800.json", False),  # not UTF-8
        ("i_string_iso_latin_1.json", False),
        ("i_string_UTF-16LE_with_BOM.json", False),
        ("i_string_utf16BE_no_BOM.json", False),
        ("i_structure_UTF-8_BOM_empty_object.json", False),  # a byte order mark
        ("i_structure_500_nested_arrays.json", False),  # deeper than 127
    ],
)
def test_the_implementation_defined_files_answer_as_the_rules_say(name: str, readable: bool) -> None:
    data = (PARSING / name).read_bytes()
    if readable:
        read(data)
    else:
        with pytest.raises(Unreadable):
            read(data)


def test_a_member_named_twice_is_compared_after_its_escapes_are_read() -> None:
    with pytest.raises(Unreadable, match="'a' twice"):
        read(b'{"a": 1, "\\u0061": 2}')
    with pytest.raises(Unreadable):
        read(b'{"x": {"\\ud83d\\ude02": 1, "\xf0\x9f\x98\x82": 2}}')
    assert read_value(b'{"a": {"a": 1}, "b": {"a": 2}}') == {"a": {"a": 1}, "b": {"a": 2}}


@pytest.mark.parametrize(
    "text",
    [
        b'"\\ud800"',  # a high surrogate alone
        b'"\\udc00"',  # a low surrogate alone
        b'"\\ud800x"',
        b'"\\ud800\\u0041"',  # not followed at once by a low surrogate
        b'"\\udc00\\ud800"',  # the wrong way round
        b'{"\\udfff": 1}',
        b'["ok", ["\\uDBFF"]]',
    ],
)
def test_a_lone_surrogate_is_unreadable(text: bytes) -> None:
    with pytest.raises(Unreadable, match="surrogate"):
        read(text)


def test_a_surrogate_pair_reads_as_its_character() -> None:
    assert read_value(b'"\\ud83d\\ude02"') == "\U0001f602"
    assert read_value(b'"\\\\ud800"') == "\\ud800"  # an escaped backslash, then letters


@pytest.mark.parametrize("code", [0, 1, 0x0A, 0x1F])
def test_an_unescaped_control_character_is_unreadable(code: int) -> None:
    with pytest.raises(Unreadable):
        read(b'"a' + bytes([code]) + b'b"')
    assert read_value(b'"a\\u%04xb"' % code) == f"a{chr(code)}b"


def test_noncharacters_are_characters_like_any_other() -> None:
    for ch in ("\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"):
        assert read_value(json.dumps(ch, ensure_ascii=False).encode()) == ch
        assert read_value(json.dumps(ch).encode()) == ch


def test_delete_and_slash_are_plain_characters() -> None:
    assert read_value(b'"\x7f/\\/"') == "\x7f//"


@pytest.mark.parametrize(
    ("text", "readable"),
    [
        (str(INFINITE_AT - 1), True),
        (str(INFINITE_AT), False),
        ("-" + str(INFINITE_AT), False),
        ("1.7976931348623157e308", True),  # the largest double
        (str(INFINITE_AT - 1) + ".9999", True),  # just under 2^1024 - 2^970, with a fraction
        (str(INFINITE_AT) + ".0", False),  # 2^1024 - 2^970 exactly: the tie rounds to even, to infinity
        (str(INFINITE_AT)[:20] + "e" + str(len(str(INFINITE_AT)) - 20), True),  # its first digits: under
        ("1e309", False),
        ("-1e309", False),
        ("1" + "0" * 400, False),  # past every double, and past Python's digit limit
        ("1e-400", True),
    ],
)
def test_a_number_that_rounds_to_infinity_is_unreadable(text: str, readable: bool) -> None:
    if readable:
        assert math.isfinite(float(read_value(text)))
    else:
        with pytest.raises(Unreadable, match="infinite"):
            read(text)


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_is_read_to_127_and_no_deeper() -> None:
    read(_nest(MAX_DEPTH))
    read('{"a":' * (MAX_DEPTH - 1) + "[]" + "}" * (MAX_DEPTH - 1))
    with pytest.raises(Unreadable, match="127"):
        read(_nest(MAX_DEPTH + 1))
    with pytest.raises(Unreadable, match="127"):
        read('{"a":' * MAX_DEPTH + "[]" + "}" * MAX_DEPTH)
    with pytest.raises(Unreadable):
        read(_nest(100_000))
    # brackets inside strings do not count
    read(json.dumps({"a": "[" * 500}))


def test_utf8_without_byte_order_mark_and_whitespace_around() -> None:
    assert read_value(b" \t\r\n{}\n ") == {}
    with pytest.raises(Unreadable, match="byte order mark"):
        read(b"\xef\xbb\xbf{}")
    with pytest.raises(Unreadable, match="byte order mark"):
        read("\ufeff{}")
    with pytest.raises(Unreadable, match="UTF-8"):
        read(b'"\xed\xa0\x80"')  # a surrogate encoded in UTF-8 is not UTF-8
    with pytest.raises(Unreadable):
        read(b"{} {}")
    with pytest.raises(Unreadable):
        read(b"\x0c{}")  # form feed is no JSON whitespace


def test_numbers_read_as_the_nearest_double_ties_to_even() -> None:
    assert read_value("9007199254740993") == 2**53 + 1  # an integer literal keeps its digits
    assert read_value("9007199254740993.0") == float(2**53)  # a tie, to the even one
    assert read_value("9007199254740995.0") == float(2**53 + 4)
    assert read_value("0.1") == 0.1
    assert read_value("1e-400") == 0.0
    assert math.copysign(1, read_value("-1e-400")) == -1.0
    minus_zero = read_value("-0")
    assert type(minus_zero) is float and math.copysign(1, minus_zero) == -1.0
    assert type(read_value("1.0")) is float and type(read_value("1")) is int


def test_constants_that_are_not_json_are_unreadable() -> None:
    for text in ("NaN", "Infinity", "-Infinity", "[1, NaN]"):
        with pytest.raises(Unreadable):
            read(text)


def test_documents_know_their_whole_numbers_past_2_53_and_their_plainness() -> None:
    assert read("[1, 2.5, 9007199254740992]").big_ints is False
    assert read("[9007199254740993]").big_ints is True
    assert read('["12345678901234567890"]').big_ints is False  # digits in a string are no number
    assert read("[0.5]").plain and not read("[1.0]").plain and not read("[1e-7]").plain
    assert not read('{"\\ud83d\\ude02": 1}').plain  # a name past U+FFFF orders otherwise
    assert not read("[-0]").plain


# --- properties ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b


@given(json_values, st.booleans(), st.sampled_from([None, 1, 2]))
def test_what_a_json_writer_writes_reads_back_the_same(
    value: object, ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert _same(read_value(text.encode("utf-8")), value)


@given(st.dictionaries(st.text(max_size=4), st.integers(), min_size=1, max_size=5), st.data())
def test_any_member_written_twice_is_unreadable(obj: dict[str, int], data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(obj)))
    escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in name)
    text = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in obj.items()) + f',"{escaped}":0}}'
    with pytest.raises(Unreadable, match="twice"):
        read(text.encode("utf-8"))


@given(st.integers(min_value=0xD800, max_value=0xDFFF), st.text(max_size=5))
def test_any_lone_surrogate_escape_is_unreadable(code: int, tail: str) -> None:
    # text holds no lone surrogate, so its escapes never begin with a low surrogate's
    follow = "" if code >= 0xDC00 else json.dumps(tail)[1:-1]
    with pytest.raises(Unreadable, match="surrogate"):
        read(f'["\\u{code:04x}{follow}"]'.encode())


@given(st.integers(min_value=1, max_value=160))
def test_depth_is_readable_exactly_up_to_127(depth: int) -> None:
    if depth <= MAX_DEPTH:
        read(_nest(depth))
    else:
        with pytest.raises(Unreadable):
            read(_nest(depth))


# --- the quick reading (orjson) against the standard one --------------------------------------------


def _outcome(read_with: object, data: bytes) -> object:
    try:
        doc = read_with(data)  # type: ignore[operator]
    except Unreadable as e:
        return ("unreadable", str(e))
    return doc


def _agree(data: bytes) -> None:
    """``read`` answers as ``read_standard``: the same refusal, or the same value (members in the same
    order, -0.0 apart from 0), the same ``big_ints`` and ``plain``."""
    got, want = _outcome(read, data), _outcome(read_standard, data)
    if isinstance(want, tuple):
        assert got == want
        return
    assert not isinstance(got, tuple), got
    assert _same(got.value, want.value) and _same(list(_keys(got.value)), list(_keys(want.value)))
    assert (got.big_ints, got.plain) == (want.big_ints, want.plain)


def _keys(value: object) -> list[object]:
    out: list[object] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def test_orjson_is_the_one_the_quick_reading_was_checked_against() -> None:
    assert strict_json._QUICK  # else every text is read by the standard reading alone, more slowly


@pytest.mark.parametrize(
    "text",
    [
        b'{"request": {"shots": 1000}, "result": {"counts": {"00": 500}, "p": 0.0178, "q": "a:b", "r": []}}',
        b'[0.5, -2, 9007199254740991, -9007199254740991, "1.0", "3e5", "-01", "\\n\\"", true, null]',
        '{"é": ["\u00e9 \ue000 ok"]}'.encode(),
        b"  \t\r\n[[[[]]]]  ",
    ],
)
def test_the_common_text_is_read_quickly_and_as_the_standard_reading_reads_it(text: bytes) -> None:
    assert strict_json._read_quickly(text) is not None
    _agree(text)


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1, "b": {"c": ":"}, "a": 2}',  # a member twice, colons in strings around it
        b'["1.0,", "3e+5", "-0 "]',  # strings that look like a whole double, an exponent, -0
        b'{"a": {"x": 1, "x": 1}}',
        b'{"a:": 1, "a:": 1}',
        b'{"a": 1, "\\u0061": 2}',
        b'{"\\u003a": 1, "a": 1, "a": 2}',  # an escaped colon beside a member twice
        b"[-0]",
        b"[-0.0]",
        b"[1.0]",
        b"[100.0]",
        b"[1e2]",
        b"[1e16]",
        b"[1e-7]",
        b"[0.00005]",
        b"[9007199254740992]",
        b"[-9007199254740992]",
        b"[18446744073709551616]",
        b"[123456789012345678901234567890]",
        b"[1e400]",
        b'["\\ud800"]',
        b'["\\ud83d\\ude02"]',
        '["\U0001f602"]'.encode(),
        b'"\xed\xa0\x80"',
        b"\xef\xbb\xbf{}",
        b"[NaN]",
        b"{} {}",
        b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
        b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
    ],
)
def test_every_other_text_is_left_to_the_standard_reading_or_read_as_it_reads_it(text: bytes) -> None:
    _agree(text)


def test_the_quick_reading_leaves_each_rule_to_the_standard_one() -> None:
    for text in (b'{"a": 1, "b": {"c": ":"}, "a": 2}', b"[-0]", b"[1.0]", b"[1e-7]", b"[9007199254740992]"):
        assert strict_json._read_quickly(text) is None
    assert not read(b'["\\ud83d\\ude02"]').plain and not read('["\U0001f602"]'.encode()).plain


@pytest.mark.parametrize("path", _files(""), ids=lambda p: p.name)
def test_every_suite_file_reads_as_the_standard_reading_reads_it(path: Path) -> None:
    _agree(path.read_bytes())


@given(json_values, st.booleans(), st.sampled_from([None, 1, 2]))
def test_any_written_value_reads_as_the_standard_reading_reads_it(
    value: object, ascii_only: bool, indent: int | None
) -> None:
    _agree(json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode("utf-8"))


@given(
    st.dictionaries(st.text(alphabet="ab:é", max_size=3), json_values, min_size=1, max_size=4),
    st.data(),
    st.sampled_from([None, 2]),
)
def test_any_member_written_twice_as_itself_is_unreadable(
    obj: dict[str, object], data: st.DataObject, indent: int | None
) -> None:
    name = data.draw(st.sampled_from(sorted(obj)))
    again = json.dumps({name: data.draw(json_values)}, ensure_ascii=False)[1:-1]
    text = json.dumps(obj, ensure_ascii=False, indent=indent)[:-1].rstrip() + "," + again + "}"
    with pytest.raises(Unreadable, match="twice"):
        read(text.encode("utf-8"))
