"""``benchmarks/cases.yaml``: cases, hardware cases and their expectations (seed: benchmarks-and-gates.md,
"The file", "Case keys", "Expectations", "Hardware cases").

Unknown top-level keys are ignored; unknown keys inside a case or inside ``expect`` are refused.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator
from pydantic_core import PydanticCustomError

from qsolve.errors import shown
from qsolve.workflow.reading import excerpt

IBM_TARGET_RE = re.compile(r"ibm:[A-Za-z0-9_.-]{1,60}")
MAX_HARDWARE_CASES = 3
#: the most of a case's name a message shows
NAME_SHOWN = 80


class Expect(BaseModel):
    """What a case's result must satisfy; every key optional. A bound is a finite number: ``.nan``
    would never fail a case (``fidelity < nan`` is false) or always would, and ``.inf`` bounds nothing."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    max_gap: float = 0.0
    max_abs_error: float | None = None
    min_fidelity: float | None = None
    min_postselection: float | None = None
    max_two_qubit_gates: int | None = None


class Case(BaseModel):
    """One known-answer input with the result expected of it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str
    input_file: str | None = None
    input: dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    target: str | None = None
    expect: Expect = Field(default_factory=Expect)


class HardwareCase(Case):
    """A case for a real device: the same keys, and ``target`` (``ibm:<device>``) required."""

    target: str

    @field_validator("target")
    @classmethod
    def _ibm(cls, v: str) -> str:
        if not IBM_TARGET_RE.fullmatch(v):
            raise PydanticCustomError(
                "E052",
                "target '{v}' is not ibm:<device> (letters, digits, _ . -, 1 to 60 characters)",
                {"v": v},
            )
        return v


class CasesFile(BaseModel):
    """The whole file. A missing ``cases`` key means zero cases."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    cases: list[Case] = Field(default_factory=list)
    hardware_cases: list[HardwareCase] = Field(default_factory=list)

    @field_validator("cases", "hardware_cases", mode="before")
    @classmethod
    def _null_is_empty(cls, v: Any) -> Any:
        return [] if v is None else v


HARDWARE_CASES = TypeAdapter(list[HardwareCase])


def case_label(section: str, index: int, case: Case | dict | Any) -> str:
    """``cases[2] (ring-6-with-chord)``: how a case is named in every message."""
    name = case.name if isinstance(case, Case) else case.get("name") if isinstance(case, dict) else None
    shown_name = shown(excerpt(name, NAME_SHOWN)) if isinstance(name, str) else ""  # not 60 MiB a message
    return f"{section}[{index}]" + (f" ({shown_name})" if shown_name else "")
