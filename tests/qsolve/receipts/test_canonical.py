"""Canonical text (RFC 8785, §8.2) against the JCS vectors and the ES6 numbers; the first form's writer."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qsolve.receipts.canonical import canonical_bytes, canonical_of, canonical_text, es6_number
from qsolve.receipts.first_form import first_form_bytes, first_form_number
from qsolve.receipts.strict_json import read, read_value
from tests.conftest import VECTORS

JCS = VECTORS / "jcs"


@pytest.mark.parametrize("path", sorted((JCS / "input").iterdir()), ids=lambda p: p.name)
def test_every_jcs_input_gives_its_output_byte_for_byte(path: Path) -> None:
    expected = (JCS / "output" / path.name).read_bytes()
    doc = read(path.read_bytes())
    assert canonical_bytes(doc.value) == expected
    assert canonical_bytes(doc.value, plain=doc.plain) == expected


def test_every_es6_number_line() -> None:
    lines = (JCS / "es6-numbers-first100k.txt").read_text().splitlines()
    assert len(lines) == 100_000
    wrong = []
    for line in lines:
        bits, text = line.split(",")
        x = struct.unpack(">d", bytes.fromhex(bits.zfill(16)))[0]
        if es6_number(x) != text:
            wrong.append((bits, text, es6_number(x)))
    assert wrong == []


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (2.0**60, "1152921504606847000"),  # shortest digits padded with zeros
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (123e-20, "1.23e-18"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (333333333.33333329, "333333333.3333333"),
    ],
)
def test_es6_numbers_as_section_8_2_writes_them(x: float, text: str) -> None:
    assert es6_number(x) == text


def test_a_non_finite_number_has_no_canonical_text() -> None:
    for x in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValueError):
            es6_number(x)


def test_strings_escape_what_rfc_8785_escapes_and_nothing_else() -> None:
    value = '"\\\b\t\n\f\r\x00\x1f\x7f/é€😂\ufdd0'
    assert canonical_text(value) == '"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001f\x7f/é€😂\ufdd0"'
    assert canonical_text("A\u030a") == '"A\u030a"'  # not normalised


def test_members_are_ordered_by_utf16_code_units() -> None:
    # U+E000 sorts after U+1F602 by code point, before it by UTF-16 code units (0xD83D < 0xE000).
    value = {"\ue000": 1, "\U0001f602": 2, "a": 3, "": 4, "aa": 5, "B": 6}
    assert canonical_text(value) == '{"":4,"B":6,"a":3,"aa":5,"😂":2,"\ue000":1}'
    doc = read(json.dumps(value).encode())
    assert canonical_bytes(doc.value, plain=doc.plain) == canonical_text(value).encode()


def test_integer_literals_are_written_as_their_double() -> None:
    assert canonical_text([2**53, 2**53 + 1, -(2**60), 10**21, 7]) == (
        "[9007199254740992,9007199254740992,-1152921504606847000,1e+21,7]"
    )
    assert canonical_text(read_value("[1.0, -0, 1E2, 0.000001]")) == "[1,0,100,0.000001]"


def test_a_value_that_is_no_json_has_no_canonical_text() -> None:
    for bad in ({1: 2}, (1, 2), {"a": {1}}, b"x"):
        with pytest.raises(TypeError):
            canonical_text(bad)


# --- the first form --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (1.5, "1.5"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1.5e16, "1.5e+16"),
        (0.0001, "0.0001"),
        (0.00001, "0.00001"),
        (1e-6, "1e-6"),
        (1e-7, "1e-7"),
        (-123.456, "-123.456"),
        (2.0**64, "1.8446744073709552e+19"),
    ],
)
def test_first_form_numbers_from_their_double(x: float, text: str) -> None:
    assert first_form_number(x) == text


def test_first_form_keeps_member_order_and_writes_whole_numbers_in_range_by_their_digits() -> None:
    value = read_value(
        '{"b": 1, "a": [18446744073709551615, -9223372036854775808, 18446744073709551616, -0, 1.0, 2e0]}'
    )
    assert first_form_bytes(value) == (
        b'{"b":1,"a":[18446744073709551615,-9223372036854775808,1.8446744073709552e+19,-0.0,1.0,2.0]}'
    )
    assert first_form_bytes(read_value('{"s": "\\u00e9\\n/"}')) == '{"s":"é\\n/"}'.encode()


# --- properties ------------------------------------------------------------------------------------

numbers = (
    st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, 1e-7, 1e21, 2.0**53, 5e-324])
)
names = st.text(alphabet=st.sampled_from('ab\ue000\U0001f602é\x00"'), max_size=4)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(names, children, max_size=4),
    max_leaves=20,
)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_text_reads_back_as_its_double_and_is_no_longer_than_repr(x: float) -> None:
    text = es6_number(x)
    assert float(text) == x
    digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
    assert len(digits) <= len(repr(abs(x)).split("e")[0].replace(".", "").strip("0")) or x == 0


@given(json_values)
def test_canonical_text_is_a_fixed_point_of_reading(value: object) -> None:
    text = canonical_bytes(value)
    again = read_value(text)
    assert canonical_bytes(again) == text
    assert b"\n" not in text.replace(b"\\n", b"")


@given(json_values, st.sampled_from([None, 2]))
def test_the_fast_writer_and_the_full_writer_agree_on_what_is_read(value: object, indent: int | None) -> None:
    doc = read(json.dumps(value, indent=indent).encode())
    assert canonical_bytes(doc.value, plain=doc.plain) == canonical_text(doc.value).encode()


@given(json_values, st.sampled_from([None, 2]), st.booleans())
def test_a_read_documents_writer_and_the_full_writer_agree(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    doc = read(json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode())
    assert canonical_of(doc, doc.value) == canonical_text(doc.value).encode()


@given(st.dictionaries(names, st.integers(), max_size=6))
def test_members_come_out_in_utf16_order(obj: dict[str, int]) -> None:
    out = read_value(canonical_bytes(obj))
    keys = list(out)
    assert keys == sorted(obj, key=lambda k: k.encode("utf-16-be"))


@given(json_values)
def test_first_form_text_reads_back_to_the_same_value(value: object) -> None:
    doc = read(json.dumps(value).encode())
    assert canonical_bytes(read_value(first_form_bytes(doc.value))) == canonical_bytes(doc.value)
