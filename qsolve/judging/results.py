"""A case's result: every method's outcome, the comparison with the baseline, the quality numbers.

The result hash is BLAKE3 of the result's canonical JSON (sorted keys, no spaces, UTF-8) with the
wall-clock times and the hash itself left out, so the same run gives the same hash in any process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from blake3 import blake3
from pydantic import BaseModel, ConfigDict, Field

WALL_CLOCK = {"seconds", "scoring_seconds"}
WORKFLOWS_OWN = {"solution", "details"}  # what a method returned, within which no key is the platform's


class CircuitRecord(BaseModel):
    """One circuit as sent: its size on the target, its shots, and its fidelity when it could be scored."""

    model_config = ConfigDict(frozen=True)

    qubits: int
    two_qubit_gates: int
    shots: int
    fidelity: float | None = None
    unscored: str | None = None  # why it could not be scored


class Quality(BaseModel):
    """A run's quality numbers: shot-weighted fidelity, share of shots scored, post-selection share."""

    model_config = ConfigDict(frozen=True)

    fidelity: float | None
    coverage: float | None
    postselection: float | None


def quality(records: Sequence[CircuitRecord], postselection: tuple[int, int] | None) -> Quality:
    total = sum(r.shots for r in records)
    scored = [r for r in records if r.fidelity is not None]
    scored_shots = sum(r.shots for r in scored)
    return Quality(
        fidelity=sum(r.fidelity * r.shots for r in scored) / scored_shots if scored_shots else None,
        coverage=scored_shots / total if total else None,
        postselection=postselection[0] / postselection[1] if postselection else None,
    )


class MethodOutcome(BaseModel):
    """One method's run: its objective (recomputed by ``evaluate`` where it returned a solution)."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: str
    objective: float | None = None
    #: what the method said its solution gives: a number, or the name of one that is not finite (JSON
    #: holds no NaN), which its solution never gives
    claimed: float | Literal["nan", "inf", "-inf"] | None = None
    stderr: float | None = None
    solution: Any = None
    details: dict[str, Any] = Field(default_factory=dict)
    unavailable: str | None = None
    seconds: float = 0.0
    scoring_seconds: float = 0.0  # the platform's scoring of the circuits sent, after the method
    circuits: list[CircuitRecord] = Field(default_factory=list)
    dispatches: int = 0
    postselection: tuple[int, int] | None = None  # shots kept, of shots checked

    @property
    def usable(self) -> bool:
        return self.unavailable is None and self.objective is not None and math.isfinite(self.objective)


class CaseResult(BaseModel):
    """What ``qsolve test --json`` prints per case (DESIGN.md §5), plus every method's outcome."""

    model_config = ConfigDict(frozen=True)

    name: str
    target: str
    seed: int
    params: dict[str, Any]
    passed: bool
    message: str | None
    quantum: float | None = None
    baseline: float | None = None
    gap: float | None = None
    abs_error: float | None = None
    accuracy: float | None = None
    accuracy_pm: float | None = None
    verdict: str | None = None
    fidelity: float | None = None
    coverage: float | None = None
    postselection: float | None = None
    max_two_qubit_gates: int | None = None
    circuits: int = 0
    shots: int = 0
    bound: str | None = None  # the bound its numbers broke, for people: "gap 0.0189 > max_gap 0"
    #: why the quantum method or the reference gave nothing to compare, when the message is the seed's
    #: "no headline metric": "method vqe failed: ZeroDivisionError: field is zero (workflow.py:41)"
    cause: str | None = None
    #: the ``expect`` the case was judged by, every key written out (null for a case that raised first)
    expect: dict[str, Any] | None = None
    #: what the numbers say may be wrong with the workflow, never changing the verdict: a baseline of 0
    #: (no relative accuracy), the quantum method beating the reference beyond its tolerance
    warnings: list[str] = Field(default_factory=list)
    methods: list[MethodOutcome] = Field(default_factory=list)
    ran: bool = True  # False when the case raised before it had a result
    result_hash: str = ""

    @classmethod
    def failed(cls, case: Any, target: str, message: str) -> CaseResult:
        """The result of a case that raised (or died) before it had one: ``FAIL <Type>: <message>``."""
        return cls(
            name=case.name,
            target=target,
            seed=case.seed,
            params=case.params,
            passed=False,
            message=f"FAIL {message}",
            expect=case.expect.model_dump(mode="json"),
            ran=False,
        ).with_hash()

    @property
    def to_a_result(self) -> bool:
        """Whether the case ran to a result (the seed's words for the run gates): it ran, none of its
        methods crashed (``failed: ...``: raised, or gave what the platform refused; a crash is the case
        raising), and its quantum methods ran: one unavailable (``MethodUnavailable``) sent what it
        would have sent of none, so there is nothing to re-run nor to hold ``estimate()`` to. A classical
        method merely unavailable is a result."""
        return self.ran and not any(
            m.unavailable is not None and (m.unavailable.startswith("failed:") or m.kind == "quantum")
            for m in self.methods
        )

    def with_hash(self) -> CaseResult:
        return self.model_copy(update={"result_hash": result_hash(self)})

    def why(self) -> str:
        """``pass``, or ``FAIL`` and why: its message, or the bound it broke."""
        if self.passed:
            return "pass"
        why = (self.cause or self.message or self.bound or "").removeprefix("FAIL ")
        return f"FAIL {why}".rstrip()

    def summary(self) -> dict[str, Any]:
        """The fields of DESIGN.md §5's ``cases`` entries."""
        return self.model_dump(mode="json", exclude={"methods", "seed", "params", "ran"})


def without_wall_clock(value: Any) -> Any:
    """The result as JSON less what differs between two identical runs: the platform's times and the
    hash itself. A workflow's own ``solution`` and ``details`` are kept whole: a key of theirs named
    ``seconds`` is the workflow's word, not a time the platform measured."""
    if isinstance(value, dict):
        return {
            k: v if k in WORKFLOWS_OWN else without_wall_clock(v)
            for k, v in value.items()
            if k not in WALL_CLOCK and k != "result_hash"
        }
    if isinstance(value, list):
        return [without_wall_clock(v) for v in value]
    return value


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


#: what the platform says of a result, not the result: a run before these were kept hashes the same
JUDGED_BY = frozenset({"expect", "warnings"})


def result_hash(result: CaseResult) -> str:
    value = result.model_dump(mode="json", exclude=set(JUDGED_BY))
    return blake3(canonical_json(without_wall_clock(value))).hexdigest()


def numbers_close(a: Any, b: Any, rel: float = 1e-8, abs_: float = 1e-12) -> bool:
    """Equal structure, and every number equal up to ``rel`` (relative) or ``abs_`` (absolute)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(numbers_close(a[k], b[k], rel, abs_) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(numbers_close(x, y, rel, abs_) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return a == b


def to_json_value(value: Any) -> Any:
    """A method's solution or details as plain JSON: numpy values turned into Python ones, and a
    number JSON cannot hold (NaN, infinity) into its name."""
    return _finite(json.loads(json.dumps(value, default=_json_default, allow_nan=True)))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)
