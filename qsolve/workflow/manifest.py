"""The workflow's ``manifest.yaml`` as a pydantic model (DESIGN.md §3).

Per-field rules raise errors whose type is their lint code (``E021``), so lint and the
``manifest`` gate report the same rule the same way; see ``docs/lint-codes.md``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
METRIC_KINDS = ("relative_gap", "relative_error", "error_rate")
QPU_FAMILIES = ("ibm", "provider")
NOTE_MAX = 600
TIMEOUT_RANGE = (1, 7200)
MEMORY_RANGE = (64, 8192)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Method(_Strict):
    name: str
    kind: Literal["quantum", "classical"]
    function: str | None = None

    @property
    def function_name(self) -> str:
        return self.function or self.name


class Metric(_Strict):
    #: ``tolerance`` and ``tolerance_abs`` are finite numbers (``.nan`` would compare as nothing)
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    kind: str = "relative_gap"
    tolerance: float = 0.0
    tolerance_abs: float | None = None
    note: str | None = None

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in METRIC_KINDS:
            raise PydanticCustomError(
                "E020",
                "unknown metric kind '{kind}'; use one of {kinds}",
                {"kind": v, "kinds": ", ".join(METRIC_KINDS)},
            )
        return v

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise PydanticCustomError("E021", "tolerance {v} is outside 0 to 1", {"v": f"{v:g}"})
        return v

    @field_validator("tolerance_abs")
    @classmethod
    def _tolerance_abs(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise PydanticCustomError("E022", "tolerance_abs {v} is negative", {"v": f"{v:g}"})
        return v

    @field_validator("note")
    @classmethod
    def _note(cls, v: str | None) -> str | None:
        if v is not None and len(v) > NOTE_MAX:
            raise PydanticCustomError(
                "E023", "note has {n} characters, at most {m} are shown", {"n": len(v), "m": NOTE_MAX}
            )
        return v


class Targets(_Strict):
    qpu: list[str] = Field(default_factory=list)

    @field_validator("qpu")
    @classmethod
    def _families(cls, v: list[str]) -> list[str]:
        unknown = [f for f in v if f not in QPU_FAMILIES]
        if unknown:
            raise PydanticCustomError(
                "E015",
                "unknown device family '{f}'; known: {known}",
                {"f": unknown[0], "known": ", ".join(QPU_FAMILIES)},
            )
        return v


class Resources(_Strict):
    timeout_s: int = 600
    memory_mb: int = 2048

    @field_validator("timeout_s")
    @classmethod
    def _timeout(cls, v: int) -> int:
        lo, hi = TIMEOUT_RANGE
        if not lo <= v <= hi:
            raise PydanticCustomError(
                "E030", "timeout_s {v} is outside {lo} to {hi} seconds", {"v": v, "lo": lo, "hi": hi}
            )
        return v

    @field_validator("memory_mb")
    @classmethod
    def _memory(cls, v: int) -> int:
        lo, hi = MEMORY_RANGE
        if not lo <= v <= hi:
            raise PydanticCustomError(
                "E031", "memory_mb {v} is outside {lo} to {hi} MB", {"v": v, "lo": lo, "hi": hi}
            )
        return v


def _relative_path(v: str) -> str:
    parts = v.replace("\\", "/").split("/")
    if v.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", v) or ".." in parts:
        raise PydanticCustomError(
            "E007", "path '{p}' must stay inside the workflow folder (relative, without '..')", {"p": v}
        )
    return v


class Manifest(_Strict):
    """``manifest.yaml``. Unknown keys are refused; every rule names its lint code."""

    name: str
    version: str
    title: str | None = None
    module: str = "workflow.py"
    input_schema: str
    output_schema: str
    params: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    methods: list[Method]
    quantum_method: str | None = None
    metric: Metric = Field(default_factory=Metric)
    targets: Targets = Field(default_factory=Targets)
    resources: Resources = Field(default_factory=Resources)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise PydanticCustomError("E006", "name '{v}' must match [a-z0-9][a-z0-9-]*", {"v": v})
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not VERSION_RE.fullmatch(v):
            raise PydanticCustomError(
                "E006",
                "version '{v}' must be letters, digits and . + _ -, "
                'starting with a letter or digit (quote it: "1.0")',
                {"v": v},
            )
        return v

    @field_validator("module", "input_schema", "output_schema")
    @classmethod
    def _inside(cls, v: str) -> str:
        return _relative_path(v)

    @field_validator("methods")
    @classmethod
    def _methods(cls, v: list[Method]) -> list[Method]:
        if len(v) < 2:
            raise PydanticCustomError(
                "E010",
                "{n} method(s) declared; at least two are needed, one of them `reference`",
                {"n": len(v)},
            )
        names = [m.name for m in v]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise PydanticCustomError("E014", "two methods are named '{n}'", {"n": dup})
        if "reference" not in names:
            raise PydanticCustomError("E011", "no method is named `reference` (the baseline)", {})
        if not any(m.kind == "quantum" for m in v):
            raise PydanticCustomError("E013", "no method has `kind: quantum`", {})
        return v

    @field_validator("quantum_method")
    @classmethod
    def _quantum_method(cls, v: str | None, info: ValidationInfo) -> str | None:
        methods = info.data.get("methods")
        if v is not None and methods is not None:
            quantum = [m.name for m in methods if m.kind == "quantum"]
            if v not in quantum:
                raise PydanticCustomError(
                    "E012",
                    "quantum_method '{q}' names no quantum method (quantum: {names})",
                    {"q": v, "names": ", ".join(quantum) or "none"},
                )
        return v

    @property
    def headline_method(self) -> Method:
        """The quantum method the verdict is about: ``quantum_method``, else the first quantum one."""
        name = self.quantum_method
        return next(m for m in self.methods if m.kind == "quantum" and (name is None or m.name == name))
