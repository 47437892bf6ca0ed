"""One calibration task result, as QDash keeps it (calibration-evaluation seed, "What the model is told").

A task result is one run of one calibration task (``CheckT1``) on one qubit (``Q03``) or coupling
(``Q03-Q04``) of a chip (``fake:fez``, ``fake:fez@1.6``) on a day: its own status and message, its
figures, the sweep it was taken over, the run settings, and what its fit gave. A result with a known
answer also carries its true status (``SUCCESS``, or the failure code of the task's knowledge that the
injected fault produces) and the fault's name.

:meth:`TaskResult.evidence` is what an evaluation may tell the model besides the plot: the task, the
target, the status, the sweep with its units, the shots, the interval and the message; never the fitted
outputs, the fit's quality or the known answer.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

QID = re.compile(r"Q\d{2,}(?:-Q\d{2,})?")
CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
SHA256 = re.compile(r"[0-9a-f]{64}")

STATUSES = ("completed", "failed")


def qid_of(qubit: int, other: int | None = None) -> str:
    """``3`` -> ``Q03``; ``(3, 4)`` -> ``Q03-Q04`` (a coupling)."""
    return f"Q{qubit:02d}" if other is None else f"Q{qubit:02d}-Q{other:02d}"


def _matching(pattern: re.Pattern, what: str):
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


def check_day(value: str) -> str:
    if not DAY.fullmatch(value):
        raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)")
    try:
        datetime.strptime(value, "%Y-%m-%d")  # a real day: 2026-02-30 is refused
    except ValueError:
        raise ValueError(f"{value!r} is not a day of the calendar") from None
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("created_at needs a time zone")
    return value.astimezone(UTC)


Qid = Annotated[str, _matching(QID, "a qubit (Q03) or a coupling (Q03-Q04)")]
Code = Annotated[str, _matching(CODE, "a status code in upper snake case (SUCCESS, SHORT_T1)")]
Day = Annotated[str, AfterValidator(check_day)]
Sha256 = Annotated[str, _matching(SHA256, "a SHA-256 in lower-case hex")]
Name = Annotated[str, Field(min_length=1, max_length=100)]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Sweep(_Value):
    """The swept parameter and its grid: ``points`` values from ``start`` to ``stop``, ``step`` apart."""

    parameter: Name
    unit: Annotated[str, Field(max_length=20)]
    start: float
    stop: float
    points: Annotated[int, Field(ge=1)]
    step: float

    @classmethod
    def linear(cls, parameter: str, unit: str, start: float, stop: float, points: int) -> Sweep:
        step = (stop - start) / (points - 1) if points > 1 else 0.0
        return cls(parameter=parameter, unit=unit, start=start, stop=stop, points=points, step=step)

    def values(self) -> list[float]:
        if self.points == 1:
            return [self.start]
        return [self.start + (self.stop - self.start) * i / (self.points - 1) for i in range(self.points)]


class Interval(_Value):
    """The wait between shots (the repetition interval), in ``unit`` (``us``)."""

    value: Annotated[float, Field(ge=0)]
    unit: Annotated[str, Field(min_length=1, max_length=20)]


class Settings(_Value):
    shots: Annotated[int, Field(ge=1)]
    interval: Interval | None = None


class Output(_Value):
    """A fitted output: its value, unit and standard error (``None`` when the fit cannot say)."""

    value: float
    unit: Annotated[str, Field(max_length=20)] = ""
    error: Annotated[float, Field(ge=0)] | None = None


class Fit(_Value):
    """How well the fit went: the model, R², reduced χ² and the degrees of freedom left."""

    model: str
    r2: float | None = None
    reduced_chi2: float | None = None
    dof: int = 0


class FigureRef(_Value):
    """A figure by its SHA-256 (the identity evaluations use) and, once stored, its blob's digest."""

    name: Name
    sha256: Sha256
    media_type: Literal["image/png", "image/jpeg", "image/webp"] = "image/png"
    blob: str | None = None  # storage.blobs' digest (BLAKE3) of the same bytes


def figure_ref(name: str, data: bytes, media_type: str = "image/png") -> FigureRef:
    return FigureRef(name=name, sha256=hashlib.sha256(data).hexdigest(), media_type=media_type)


class TaskResult(BaseModel):
    """One run of one task. ``status`` and ``message`` are the run's own (QDash's); ``true_status`` the
    known answer (``SUCCESS`` or a failure code of the task's knowledge; ``None``: unknown); ``fault``
    the injected fault; ``seed`` the calibration's seed (the simulator's is derived from it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: Annotated[str, _matching(re.compile(r"[0-9a-f]{32}"), "32 lower-case hex digits")] = Field(
        default_factory=lambda: uuid.uuid4().hex
    )
    task: Annotated[str, _matching(re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}"), "a task name")]
    chip: Annotated[str, Field(min_length=1, max_length=100)]
    qid: Qid
    day: Day
    status: Literal["completed", "failed"]
    message: Annotated[str, Field(max_length=2000)] = ""
    figures: list[FigureRef] = Field(default_factory=list)
    sweep: Sweep | None = None
    settings: Settings
    outputs: dict[Name, Output] = Field(default_factory=dict)
    fit: Fit | None = None
    true_status: Code | None = None
    fault: Name | None = None
    seed: int | None = None
    created_at: Annotated[datetime, AfterValidator(_aware)] = Field(default_factory=lambda: datetime.now(UTC))

    @model_validator(mode="after")
    def _figures_named_once(self) -> TaskResult:
        names = [f.name for f in self.figures]
        if len(set(names)) != len(names):
            raise ValueError(f"two figures share a name: {names}")
        return self

    @property
    def evaluable(self) -> bool:
        """What a bulk evaluation may select: completed, with a figure to judge."""
        return self.status == "completed" and bool(self.figures)

    def evidence(self) -> dict[str, Any]:
        """What the model is told besides the plot (the seed's evidenceContext): never the outputs."""
        interval = self.settings.interval
        return {
            "task": self.task,
            "target": self.qid,
            "chip": self.chip,
            "status": self.status,
            "message": self.message,
            "sweeps": [] if self.sweep is None else [self.sweep.model_dump()],
            "shots": self.settings.shots,
            "interval": None if interval is None else {"value": interval.value, "unit": interval.unit},
            "figures": [f.sha256 for f in self.figures],
        }

    def key_output(self) -> tuple[str, Output] | None:
        """The first fitted output (the task's headline number), for one-line summaries."""
        return next(iter(self.outputs.items()), None)

    def line(self) -> str:
        """``CheckT1  Q03  completed  true SUCCESS  t1 = 215.3 ± 6.1 us``"""
        key = self.key_output()
        value = "-"
        if key is not None:
            name, out = key
            error = f" ± {out.error:.3g}" if out.error is not None else ""
            value = f"{name} = {out.value:.4g}{error} {out.unit}".rstrip()
        truth = self.true_status or "unknown"
        fault = f" ({self.fault})" if self.fault else ""
        return f"{self.task:<22} {self.qid:<8} {self.status:<9} true {truth + fault:<38} {value}"
