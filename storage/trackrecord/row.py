"""One row of the track record: one recorded run of one case on one target (benchmarks-and-gates.md,
"How results enter the track record"), and the fixed Arrow schema every Parquet file is written with.

A run that failed for platform reasons (``platform_error``, ``backend_unavailable``, ``run_too_large``,
``insufficient_credits``, ``unsupported_target``, ``cancelled``) says nothing about the workflow and is
never a row; a run that failed because of the workflow is a row with ``passed`` false and the status
``failed``, ``crash`` or ``timeout`` ("How they run", step 5). A case whose quantum method or reference
crashed (its seed message ``method x failed: ...``, nothing compared) is a ``crash`` too.

Schema 3 (issue 37) adds what a failure needs to be understood from the row alone: ``expect`` (the
bounds the case was judged by, as JSON text), ``reason`` (why it failed: the seed's message, or the
comparison it broke, ``gap 0.3 > max_gap 0``; never null when it failed) and ``warnings`` (what the
numbers say may be wrong, never changing the verdict); and a row with nothing compared has the verdict
``NOT_COMPARED``, never null.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from qsolve.judging.deciding import NOT_COMPARED, ZERO_BASELINE, settled_accuracy, zero_baseline_warning

from .errors import NotRecorded

if TYPE_CHECKING:  # a reader of rows loads no result models (issue 39): they load where a row is made
    from qsolve.judging.results import CaseResult, MethodOutcome
    from qsolve_pipeline.storage.state import Run

Status = Literal["passed", "failed", "crash", "timeout"]
Source = Literal["history", "hardware"]

STATUSES: tuple[str, ...] = ("passed", "failed", "crash", "timeout")
SOURCES: tuple[str, ...] = ("history", "hardware")
PLATFORM_FAILURES: tuple[str, ...] = (
    "platform_error",
    "backend_unavailable",
    "run_too_large",
    "insufficient_credits",
    "unsupported_target",
    "cancelled",
)
#: 2: every method's objective (``methods``) and ``measured`` (issue 23); 3: ``expect``, ``reason``,
#: ``warnings``, and a verdict never null (issue 37)
SCHEMA_VERSION = "3"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: one entry of ``methods``: a method's name, kind (``quantum`` or ``classical``), its objective (lower is
#: better, as ``evaluate`` scores it), whether it had one, and why not
METHODS_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("name", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("objective", pa.float64()),
            pa.field("available", pa.bool_(), nullable=False),
            pa.field("reason", pa.string()),
        ]
    )
)
SIMULATED_PREFIXES = ("sim-", "fake:")

# The columns in file order, with their Arrow types. Every file has exactly these (``SCHEMA``).
COLUMNS: tuple[tuple[str, pa.DataType, bool], ...] = (
    # name, type, nullable
    ("workflow", pa.string(), False),
    ("version", pa.string(), False),
    ("case_name", pa.string(), False),
    ("target", pa.string(), False),
    ("device", pa.string(), False),
    ("source", pa.string(), False),
    ("run_id", pa.string(), False),
    ("recorded_at", pa.timestamp("us", tz="UTC"), False),
    ("status", pa.string(), False),
    ("passed", pa.bool_(), False),
    ("message", pa.string(), True),
    ("quantum", pa.float64(), True),
    ("baseline", pa.float64(), True),
    ("gap", pa.float64(), True),
    ("abs_error", pa.float64(), True),
    ("accuracy", pa.float64(), True),
    ("accuracy_pm", pa.float64(), True),
    ("verdict", pa.string(), True),
    ("fidelity", pa.float64(), True),
    ("coverage", pa.float64(), True),
    ("postselection", pa.float64(), True),
    ("max_two_qubit_gates", pa.int64(), True),
    ("circuits", pa.int64(), False),
    ("shots", pa.int64(), False),
    ("run_seconds", pa.float64(), False),
    ("credits", pa.float64(), False),
    ("seed", pa.int64(), False),
    ("params", pa.string(), False),
    ("result_hash", pa.string(), False),
    ("receipt_digest", pa.string(), False),
    ("methods", METHODS_TYPE, False),
    ("measured", pa.bool_(), False),
    ("expect", pa.string(), True),
    ("reason", pa.string(), True),
    ("warnings", pa.list_(pa.string()), False),
)

SCHEMA = pa.schema(
    [pa.field(name, typ, nullable=nullable) for name, typ, nullable in COLUMNS],
    metadata={b"qsolve.trackrecord.schema": SCHEMA_VERSION.encode()},
)


class MethodObjective(BaseModel):
    """One method's objective in a row (``methods``): ``available`` false, with ``reason``, where it had
    none (it was unavailable, or its objective was not a finite number)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str
    objective: float | None = None
    available: bool = True
    reason: str | None = None

    @classmethod
    def of(cls, m: MethodOutcome) -> MethodObjective:
        if m.usable:
            return cls(name=m.name, kind=m.kind, objective=m.objective)
        reason = m.unavailable or ("no objective" if m.objective is None else f"objective {m.objective}")
        return cls(name=m.name, kind=m.kind, objective=None, available=False, reason=reason)


def measured_of(target: str, classes: Sequence[str | None] | None = None) -> bool:
    """Whether a device measured a run's counts: never on ``sim-`` and ``fake:`` targets; on a device
    target, when its receipts (``classes``: each sealed receipt's ``accuracy.class``) all say
    ``measured`` (a provider's device that is a simulator, such as the reference provider, seals
    ``simulated``). With no receipt read, an ``ibm:`` device is a processor and a ``provider:``
    device's word is only in its receipts: not measured."""
    if target.startswith(SIMULATED_PREFIXES):
        return False
    if classes:
        return all(c == "measured" for c in classes)
    return target.startswith("ibm:")


class TrackRecordRow(BaseModel):
    """One recorded run. ``params`` is the run's parameters as canonical JSON text (sorted keys)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow: str = Field(min_length=1)
    version: str = Field(min_length=1)
    case_name: str = Field(min_length=1)
    target: str = Field(min_length=1)
    device: str
    source: Source
    run_id: str = Field(min_length=1)
    recorded_at: AwareDatetime
    status: Status
    passed: bool
    message: str | None = None
    quantum: float | None = None
    baseline: float | None = None
    gap: float | None = None
    abs_error: float | None = None
    accuracy: float | None = None
    accuracy_pm: float | None = None
    verdict: str = NOT_COMPARED  # never null: NOT_COMPARED where nothing was compared
    fidelity: float | None = None
    coverage: float | None = None
    postselection: float | None = None
    max_two_qubit_gates: int | None = None
    circuits: int = Field(default=0, ge=0)
    shots: int = Field(default=0, ge=0)
    run_seconds: float = Field(default=0.0, ge=0)
    credits: float = Field(default=0.0, ge=0)
    seed: int = 0
    params: str = "{}"
    result_hash: str = ""
    receipt_digest: str = ""  # empty until device receipts exist
    methods: list[MethodObjective] = []  # every method's objective, in the order the case ran them
    measured: bool = False  # a device measured the counts (not sim-, fake: or a simulator's)
    expect: str | None = None  # the case's expect as canonical JSON text, every key written out
    reason: str | None = None  # why it failed ("gap 0.3 > max_gap 0"); null when it passed
    warnings: list[str] = []  # what the numbers say may be wrong; the verdict stays as judged

    @field_validator("recorded_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return v.astimezone(UTC)

    @model_validator(mode="before")
    @classmethod
    def _never_null(cls, data: Any) -> Any:
        """A verdict and, for a failed row, a reason, whoever builds the row: what SQL reads never
        mistakes a row with nothing compared for a match, nor a failure for one without a reason."""
        if isinstance(data, dict) and (data.get("verdict") is None or data.get("reason") is None):
            data = dict(data)
            if data.get("verdict") is None:
                data["verdict"] = NOT_COMPARED
            if data.get("reason") is None and data.get("passed") is False:
                data["reason"] = data.get("message") or data.get("status")
        return data

    @model_validator(mode="after")
    def _status_agrees(self) -> TrackRecordRow:
        if self.passed != (self.status == "passed"):
            raise ValueError(f"status {self.status!r} disagrees with passed={self.passed}")
        return self

    @classmethod
    def from_run(
        cls, run: Run, receipts: Iterable[str] = (), classes: Sequence[str | None] | None = None
    ) -> TrackRecordRow:
        """The row of an ended run the track record keeps, from what the state database stored of it,
        naming its device jobs' receipts (blob digests, comma-separated), ``measured`` by the classes
        those receipts seal (:func:`measured_of`); a run failed for a platform reason raises
        :class:`NotRecorded`."""
        from qsolve.judging.results import CaseResult
        from qsolve.targets import device_of

        if run.result is None:
            raise NotRecorded(run.id, run.reason.value if run.reason else run.status.value)
        reason = run.reason.value if run.reason is not None else None
        seconds = (
            (run.finished_at - run.started_at).total_seconds() if run.started_at and run.finished_at else None
        )
        return cls.from_result(
            CaseResult.model_validate(run.result),
            workflow=run.workflow,
            version=run.version,
            source=run.source.value,
            run_id=run.id,
            device=device_of(run.target),
            credits=run.actual_credits or 0,
            run_seconds=seconds,
            recorded_at=run.finished_at,
            status=reason,
        ).model_copy(
            update={"receipt_digest": ",".join(receipts), "measured": measured_of(run.target, classes)}
        )

    @classmethod
    def from_result(
        cls,
        result: CaseResult,
        *,
        workflow: str,
        version: str,
        source: Source,
        run_id: str,
        device: str,
        credits: float | Decimal | int,
        run_seconds: float | None = None,
        recorded_at: datetime | None = None,
        status: str | None = None,
    ) -> TrackRecordRow:
        """The row of a finished run. ``status`` defaults to ``passed`` or ``failed`` from the result;
        ``crash`` and ``timeout`` are the workflow's own failures and are recorded as failed. A platform
        failure raises :class:`NotRecorded`. ``run_seconds`` defaults to the methods' seconds summed,
        ``recorded_at`` to now (pass the run's finish time so that filing it again is the same row)."""
        if status is not None:
            status = str(getattr(status, "value", status))  # a str enum of the state database, or text
        if status in PLATFORM_FAILURES:
            raise NotRecorded(run_id, status)
        if status is None:
            status = "passed" if result.passed else "crash" if crashed(result) else "failed"
        if status not in STATUSES:
            raise ValueError(f"run {run_id}: unknown status {status!r} (one of {', '.join(STATUSES)})")
        if status != "passed" and result.passed:
            raise ValueError(f"run {run_id}: status {status!r} for a result that passed")
        if run_seconds is None:
            run_seconds = sum(m.seconds for m in result.methods)
        from qsolve.judging.results import canonical_json
        from qsolve.workflow.manifest import Metric

        # never the stored accuracy: a run stored before issue 37 kept the seed's number unclamped
        accuracy, accuracy_pm, zero = settled_accuracy(
            result.quantum, result.baseline, result.accuracy, result.accuracy_pm
        )
        warned = list(result.warnings)
        if zero and not any(w.startswith(ZERO_BASELINE) for w in warned):
            warned.insert(0, zero_baseline_warning(Metric(), result.quantum, result.baseline))
        return cls(
            workflow=workflow,
            version=version,
            case_name=result.name,
            target=result.target,
            device=device,
            source=source,
            run_id=run_id,
            recorded_at=recorded_at or datetime.now(UTC),
            status=status,
            passed=status == "passed",
            message=result.cause or result.message,  # the page names why no number came
            quantum=result.quantum,
            baseline=result.baseline,
            gap=result.gap,
            abs_error=result.abs_error,
            accuracy=accuracy,
            accuracy_pm=accuracy_pm,
            verdict=result.verdict,
            fidelity=result.fidelity,
            coverage=result.coverage,
            postselection=result.postselection,
            max_two_qubit_gates=result.max_two_qubit_gates,
            circuits=result.circuits,
            shots=result.shots,
            run_seconds=run_seconds,
            credits=float(credits),
            seed=result.seed,
            params=params_text(result.params),
            result_hash=result.result_hash,
            methods=[MethodObjective.of(m) for m in result.methods],
            measured=measured_of(result.target),
            expect=canonical_json(result.expect).decode() if result.expect is not None else None,
            reason=None if status == "passed" else failure_reason(result, status),
            warnings=warned,
        )


def crashed(result: CaseResult) -> bool:
    """Whether nothing was compared because the quantum method or the reference crashed (its
    unavailable reason is the seed's ``failed: ...``)."""
    headline = [m for m in result.methods if m.kind == "quantum" or m.name == "reference"]
    failed = any(m.unavailable is not None and m.unavailable.startswith("failed:") for m in headline)
    return result.verdict is None and failed


def failure_reason(result: CaseResult, status: str) -> str:
    """Why a row failed, never empty: the seed's message (or what it stands for, ``cause``), else the
    bound its numbers broke (``gap 0.3 > max_gap 0``), else its status."""
    why = (result.cause or result.message or result.bound or "").removeprefix("FAIL ").strip()
    return why or status


def params_text(params: dict[str, Any]) -> str:
    """Parameters as canonical JSON text: sorted keys, no spaces, non-finite numbers by name."""
    from qsolve.judging.results import canonical_json, to_json_value

    return canonical_json(to_json_value(params)).decode()


def to_table(rows: Iterable[TrackRecordRow]) -> pa.Table:
    """Rows as an Arrow table of ``SCHEMA``."""
    rows = list(rows)
    columns = {name: [getattr(r, name) for r in rows] for name, _, _ in COLUMNS}
    # Times as microseconds since 1970: Arrow converts aware datetimes through pandas, a slow import.
    columns["recorded_at"] = [_micros(t) for t in columns["recorded_at"]]
    columns["methods"] = [[m.model_dump() for m in ms] for ms in columns["methods"]]
    columns["warnings"] = [list(w) for w in columns["warnings"]]
    arrays = [pa.array(columns[name], typ) for name, typ, _ in COLUMNS]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _micros(t: datetime) -> int:
    delta = t - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_table(table: pa.Table) -> list[TrackRecordRow]:
    """Rows back from an Arrow table holding the columns of ``SCHEMA`` (others are ignored)."""
    names = [name for name, _, _ in COLUMNS]
    return [TrackRecordRow(**d) for d in table.select(names).to_pylist()]


def conform(table: pa.Table) -> pa.Table:
    """``table`` as ``SCHEMA``: the same columns in order, cast to their types; nulls only where allowed."""
    if not table.schema.equals(SCHEMA):  # a table of SCHEMA already (``to_table``'s) is taken as it is
        present = set(table.column_names)  # once: ``column_names`` builds its list on every call
        missing = [name for name, _, _ in COLUMNS if name not in present]
        if missing:
            raise ValueError(f"track record table lacks columns: {', '.join(missing)}")
        table = table.select([name for name, _, _ in COLUMNS]).cast(SCHEMA)
    for name, _, nullable in COLUMNS:
        if not nullable and table.column(name).null_count:
            raise ValueError(f"track record column {name} holds nulls")
    return table


def rows_per_run(rows: Sequence[TrackRecordRow]) -> list[TrackRecordRow]:
    """One row per run id, the first given; a batch never holds a run twice."""
    seen: set[str] = set()
    out = []
    for r in rows:
        if r.run_id not in seen:
            seen.add(r.run_id)
            out.append(r)
    return out


__all__ = [
    "COLUMNS",
    "METHODS_TYPE",
    "MethodObjective",
    "PLATFORM_FAILURES",
    "SCHEMA",
    "SOURCES",
    "STATUSES",
    "TrackRecordRow",
    "conform",
    "crashed",
    "failure_reason",
    "from_table",
    "measured_of",
    "params_text",
    "to_table",
]
