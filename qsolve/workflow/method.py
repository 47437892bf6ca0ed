"""What a workflow's method returns, and what it is given to run circuits (DESIGN.md §3)."""

from __future__ import annotations

import numbers
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def not_a_number(value: Any) -> str | None:
    """Why ``value`` is not a number a workflow may give as an objective or a ``stderr`` (a bool, a
    string, bytes, a numpy bool: each ``float()`` would take, and each a mistake; a complex number,
    numpy's too, whose imaginary part ``float()`` would drop), or ``None`` when it is one (an int, a
    float, a real numpy number). Names the type and the value: ``bool (True)``,
    ``complex128 (np.complex128(1+4j))``."""
    kind = getattr(getattr(value, "dtype", None), "kind", "")  # a numpy value's: bool, text, complex, object
    not_real = isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real)
    if isinstance(value, bool | str | bytes | bytearray) or not_real or kind in ("b", "U", "S", "O", "c"):
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{type(value).__name__} ({shown})"
    return None


class MethodResult(BaseModel):
    """A method's answer: its objective (lower is better), and optionally the solution behind it.

    ``details["n_test"]`` carries the test-set size for the ``error_rate`` metric. A plain dict with
    these keys is accepted wherever a ``MethodResult`` is. ``objective`` and ``stderr`` are real numbers:
    a bool, a string or a complex number (``True``, ``"2.5"``, ``1+4j``) is refused, not read as one;
    ``stderr`` is at least 0 (``-0.0`` is kept as ``0.0``).
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
        return None if v is None else v + 0.0  # -0.0 is 0.0: never a negative sign shown or stored
