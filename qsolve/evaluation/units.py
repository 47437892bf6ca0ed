"""The units of the numbers an evaluation states (docs/calibration.md, "Units").

A task's parameter names its unit in its description (``t1: T1 in microseconds``), as the seed's
extraction schema has it, and the prompt asks for each number in that unit. A model may answer in
another all the same (``"0.0491 ms"``, ``{"value": 49100, "unit": "ns"}``, a key ``t1_ns``); such a
number is read into the unit the description names, and one of another kind of unit (a frequency for a
time) or with a unit not known here is not read at all: a reading is what the answer says.

    named_unit("T1 in microseconds, the decay constant")   # "us"
    quantity("49.1 µs")                                     # (49.1, "us")
    convert(0.0491, "ms", "us")                             # 49.1
"""

from __future__ import annotations

import math
import re
from typing import Any

#: each unit's symbol: its kind, and its size in that kind's base unit (s, Hz)
UNITS: dict[str, tuple[str, float]] = {
    "ns": ("time", 1e-9),
    "us": ("time", 1e-6),
    "ms": ("time", 1e-3),
    "s": ("time", 1.0),
    "Hz": ("frequency", 1.0),
    "kHz": ("frequency", 1e3),
    "MHz": ("frequency", 1e6),
    "GHz": ("frequency", 1e9),
}

#: the ways a unit is written (lower-cased), each to its symbol: µ (micro sign) and μ (Greek mu) alike
WRITTEN: dict[str, str] = {
    **{w: "ns" for w in ("ns", "nsec", "nanosecond", "nanoseconds")},
    **{w: "us" for w in ("us", "µs", "μs", "usec", "µsec", "μsec", "microsecond", "microseconds")},
    **{w: "ms" for w in ("ms", "msec", "millisecond", "milliseconds")},
    **{w: "s" for w in ("s", "sec", "secs", "second", "seconds")},
    **{w: "Hz" for w in ("hz", "hertz")},
    **{w: "kHz" for w in ("khz", "kilohertz")},
    **{w: "MHz" for w in ("mhz", "megahertz")},
    **{w: "GHz" for w in ("ghz", "gigahertz")},
}

_WORD = "|".join(sorted((re.escape(w) for w in WRITTEN), key=len, reverse=True))
#: a description's unit: "in microseconds", "in μs", "(us)", "[ns]"
_NAMED = re.compile(rf"(?:\bin\s+({_WORD})|[(\[]\s*({_WORD})\s*[)\]])(?![\w])", re.IGNORECASE)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: a number and its unit in text: "49.1 µs", "49.1us", "49.1 ± 2.0 µs" (the value before ±)
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*(?:(?:±|\+/-|\+-)\s*{_NUMBER}\s*)?([^\W\d][\w]*)?\.?\s*$")
#: a key naming its unit: t1_us, "t1 (us)", "t1 [µs]"
_KEYED = re.compile(rf"^(.+?)(?:_|\s*[(\[]\s*|\s+)({_WORD})\s*[)\]]?$", re.IGNORECASE)


def unit(written: str | None) -> str | None:
    """The symbol of a unit as written (``µs``, ``microseconds``, ``MHz``), or None for one not known."""
    if not isinstance(written, str):
        return None
    return WRITTEN.get(written.strip().rstrip(".").lower())


def measure(written: str | None) -> tuple[str, float] | None:
    """(kind, size in the kind's base unit) of a unit as written: ``("time", 1e-6)`` for ``µs``."""
    symbol = unit(written)
    return None if symbol is None else UNITS[symbol]


def named_unit(description: str) -> str | None:
    """The unit a parameter's description names (its first ``in <unit>`` or ``(<unit>)``), or None."""
    found = _NAMED.search(description or "")
    return None if found is None else unit(found.group(1) or found.group(2))


def keyed(key: str) -> tuple[str, str] | None:
    """(name, unit) of a key that names its unit (``t1_us``, ``t1 (µs)``), or None."""
    found = _KEYED.match(key)
    if found is None or unit(found.group(2)) is None:
        return None
    return found.group(1).strip(), unit(found.group(2))


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def quantity(value: Any) -> tuple[float, str | None] | None:
    """A stated number and its unit (None: no unit given): a number; text such as ``"49.1 µs"``; an
    object ``{"value", "unit"}``. None for anything else, a unit not known here included."""
    if isinstance(value, dict) and set(value) <= {"value", "unit", "error", "uncertainty"}:
        number, given = _finite(value.get("value")), value.get("unit")
        if number is None or (given is not None and unit(given) is None):
            return None
        return number, unit(given)
    if isinstance(value, str):
        found = _QUANTITY.match(value)
        if found is None:
            return None
        number, given = float(found.group(1)), found.group(2)
        if not math.isfinite(number) or (given is not None and unit(given) is None):
            return None
        return number, unit(given)
    number = _finite(value)
    return None if number is None else (number, None)


def convert(number: float, given: str, wanted: str) -> float | None:
    """``number`` in ``given`` units written in ``wanted`` units; None when they measure different
    things. Rounded to 12 significant figures, so 0.0491 ms is 49.1 µs, not 49.099999999999994."""
    (kind, size), (kind_wanted, size_wanted) = UNITS[given], UNITS[wanted]
    if kind != kind_wanted:
        return None
    value = number * size / size_wanted
    return float(f"{value:.12g}")
