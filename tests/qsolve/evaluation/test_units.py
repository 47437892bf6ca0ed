"""The units of the numbers an answer states (qsolve/evaluation/units.py)."""

from __future__ import annotations

import pytest

from qsolve.evaluation.units import convert, keyed, measure, named_unit, quantity, unit


@pytest.mark.parametrize(
    ("description", "symbol"),
    [
        ("T1 in microseconds, the decay constant of the fitted exponential", "us"),
        ("T1 from the fit, in μs", "us"),  # Greek mu
        ("T2 echo, in µs", "us"),  # the micro sign
        ("the qubit frequency (GHz)", "GHz"),
        ("the pi pulse's length [ns]", "ns"),
        ("whether the decay reaches the baseline", None),
        ("the amplitude in arbitrary units", None),
        ("a time in seconds", "s"),
        ("counts in sets of ten", None),  # "in s..." is no unit unless the word ends there
    ],
)
def test_a_description_names_its_unit(description, symbol):
    assert named_unit(description) == symbol


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (49.1, (49.1, None)),
        (49, (49.0, None)),
        ("49.1", (49.1, None)),
        ("49.1 µs", (49.1, "us")),
        ("49.1us", (49.1, "us")),
        ("4.91e1 microseconds.", (49.1, "us")),
        ("49.1 ± 2.0 μs", (49.1, "us")),
        ({"value": 49100, "unit": "ns"}, (49100.0, "ns")),
        ({"value": 49.1}, (49.1, None)),
        ("5 MHz", (5.0, "MHz")),
        ("49.1 furlongs", None),
        ({"value": 1, "unit": "parsec"}, None),
        ("about fifty", None),
        ("49.1 or 51", None),
        (True, None),
        (None, None),
        (float("nan"), None),
        ([49.1], None),
    ],
)
def test_a_stated_number_and_its_unit(value, read):
    assert quantity(value) == read


def test_keys_that_name_their_unit():
    assert keyed("t1_us") == ("t1", "us")
    assert keyed("t1 (µs)") == ("t1", "us")
    assert keyed("t2_echo_ns") == ("t2_echo", "ns")
    assert keyed("freq [GHz]") == ("freq", "GHz")
    assert keyed("t1") is None and keyed("t2_echo") is None and keyed("status") is None


def test_conversion_within_a_kind_only():
    assert convert(0.0491, "ms", "us") == 49.1
    assert convert(49100, "ns", "us") == 49.1
    assert convert(5.1, "GHz", "MHz") == 5100.0
    assert convert(5.0, "MHz", "us") is None
    assert unit("Microseconds") == "us" and unit("mhz") == "MHz" and unit("fortnight") is None
    assert measure("µs") == ("time", 1e-6) and measure("kHz") == ("frequency", 1e3)
