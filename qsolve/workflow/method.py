"""What a workflow's method returns, and what it is given to run circuits (DESIGN.md §3)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def not_a_number(value: Any) -> str | None:
    """Why ``value`` is not a number a workflow may give as an objective or a ``stderr`` (a bool, a
    string, bytes, a numpy bool: each ``float()`` would take, and each a mistake), or ``None`` when it
    is one (an int, a float, a numpy number). Names the type and the value: ``bool (True)``."""
    kind = getattr(getattr(value, "dtype", None), "kind", "")  # a numpy value's: bool, text, object
    if isinstance(value, bool | str | bytes | bytearray) or kind in ("b", "U", "S", "O"):
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{type(value).__name__} ({shown})"
    return None


class MethodResult(BaseModel):
    """A method's answer: its objective (lower is better), and optionally the solution behind it.

    ``details["n_test"]`` carries the test-set size for the ``error_rate`` metric. A plain dict with
    these keys is accepted wherever a ``MethodResult`` is. ``objective`` and ``stderr`` are numbers: a
    bool or a string (``True``, ``"2.5"``) is refused, not read as one; ``stderr`` is at least 0.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    objective: float
    solution: Any = None
    stderr: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, objective: float | None = None, /, **data: Any) -> None:
        if objective is not None:
            data["objective"] = objective
        super().__init__(**data)

    @field_validator("objective", "stderr", mode="before")
    @classmethod
    def _a_number(cls, v: Any) -> Any:
        why = None if v is None else not_a_number(v)
        if why is not None:
            raise ValueError(f"must be a number, not {why}")
        return v

    @field_validator("stderr")
    @classmethod
    def _not_negative(cls, v: float | None) -> float | None:
        if v is not None and v < 0:  # NaN is not below 0: it is kept, and read as no stderr
            raise ValueError(f"must be at least 0 (a standard error), not {v:g}")
        return v
