"""A row's numbers against the same case run again: the result hash, else every number within the
``reproducible`` gate's tolerances (relative 1e-8, absolute 1e-12), else the first number that differs."""

from __future__ import annotations

from typing import Any

from qsolve.judging.deciding import NOT_COMPARED, settled_accuracy
from qsolve.judging.results import CaseResult, numbers_close

from .rows import Row

#: the numbers compared, in the order a difference is named
NUMBERS = (
    "passed",
    "quantum",
    "baseline",
    "gap",
    "abs_error",
    "accuracy",
    "accuracy_pm",
    "verdict",
    "fidelity",
    "coverage",
    "postselection",
    "max_two_qubit_gates",
    "circuits",
    "shots",
)


def numbers_of_result(result: CaseResult) -> dict[str, Any]:
    """A result's numbers as its row records them."""
    accuracy, pm, _ = settled_accuracy(result.quantum, result.baseline, result.accuracy, result.accuracy_pm)
    out = {k: getattr(result, k) for k in NUMBERS}
    out |= {"accuracy": accuracy, "accuracy_pm": pm, "verdict": result.verdict or NOT_COMPARED}
    out["methods"] = {m.name: m.objective if m.usable else None for m in result.methods}
    return out


def numbers_of_row(row: Row) -> dict[str, Any]:
    out = {k: getattr(row, k) for k in NUMBERS}
    out["verdict"] = row.verdict or NOT_COMPARED
    out["methods"] = {m.name: m.objective for m in row.methods}
    return out


def compare(row: Row, result: CaseResult) -> tuple[str, str | None]:
    """``exact`` (the same result hash), ``close`` (every number within the tolerances), or ``different``
    with the first number that differs: ``gap: recorded 0.0, now 0.1``."""
    if result.result_hash == row.result_hash:
        return "exact", None
    recorded, now = numbers_of_row(row), numbers_of_result(result)
    for key in (*NUMBERS, "methods"):
        a, b = recorded[key], now[key]
        if key == "methods":
            for name in sorted(set(a) | set(b)):
                if not numbers_close(a.get(name), b.get(name)):
                    return (
                        "different",
                        f"method {name}'s objective: recorded {a.get(name)!r}, now {b.get(name)!r}",
                    )
            continue
        if not numbers_close(a, b):
            return "different", f"{key}: recorded {a!r}, now {b!r}"
    return "close", None
