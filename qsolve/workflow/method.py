"""What a workflow's method returns, and what it is given to run circuits (DESIGN.md §3)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MethodResult(BaseModel):
    """A method's answer: its objective (lower is better), and optionally the solution behind it.

    ``details["n_test"]`` carries the test-set size for the ``error_rate`` metric. A plain dict with
    these keys is accepted wherever a ``MethodResult`` is.
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
