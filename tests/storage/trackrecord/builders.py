"""Rows and results for the track record's tests, and the hand-built scenario the views are checked on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from qsolve.judging.results import CaseResult, MethodOutcome
from qsolve_pipeline.storage.trackrecord import TrackRecordRow
from qsolve_pipeline.storage.trackrecord.row import MethodObjective

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MATCHES = "Matches the best classical answer"
BELOW = "Below the best classical answer"


def at(minute: float) -> datetime:
    return T0 + timedelta(minutes=minute)


def row(
    run_id: str,
    *,
    workflow: str = "max-cut",
    version: str = "1.0.0",
    case: str = "ring-6",
    target: str = "sim-cpu",
    minute: float = 0,
    passed: bool = True,
    accuracy: float | None = 1.0,
    status: str | None = None,
    **fields: Any,
) -> TrackRecordRow:
    hardware = not (target.startswith("sim-") or target.startswith("fake:"))
    values: dict[str, Any] = dict(
        workflow=workflow,
        version=version,
        case_name=case,
        target=target,
        device=target.split(":")[-1].split("@")[0],
        source="hardware" if hardware else "history",
        run_id=run_id,
        recorded_at=at(minute),
        status=status or ("passed" if passed else "failed"),
        passed=passed,
        message=None if passed else "fidelity 0.91 < 0.97",
        quantum=-9.0,
        baseline=-9.0 if accuracy == 1.0 else -10.0,
        gap=0.0,
        abs_error=0.0 if accuracy == 1.0 else 1.0,
        accuracy=accuracy,
        verdict=None if accuracy is None else (MATCHES if accuracy >= 1.0 else BELOW),
        circuits=3,
        shots=12000,
        run_seconds=1.5,
        credits=0.42,
        seed=1,
        params='{"layers":1,"shots":4000}',
        result_hash=f"hash-{run_id}",
        measured=hardware and target != "provider:reference",  # the reference provider: a simulator
    )
    values.update(fields)
    if "methods" not in fields:  # the quantum method, the reference, and a greedy one that is worse
        values["methods"] = [
            MethodObjective(name="qaoa", kind="quantum", objective=values["quantum"]),
            MethodObjective(name="reference", kind="classical", objective=values["baseline"]),
            MethodObjective(name="greedy", kind="classical", objective=(values["baseline"] or 0) + 2.0),
        ]
    return TrackRecordRow(**values)


def result(**fields: Any) -> CaseResult:
    values: dict[str, Any] = dict(
        name="ring-6",
        target="fake:fez@1.6",
        seed=1,
        params={"shots": 4000, "layers": 1},
        passed=True,
        message=None,
        quantum=-9.0,
        baseline=-9.0,
        gap=0.0,
        abs_error=0.0,
        accuracy=1.0,
        accuracy_pm=None,
        verdict=MATCHES,
        fidelity=0.98,
        coverage=1.0,
        postselection=None,
        max_two_qubit_gates=18,
        circuits=2,
        shots=8000,
        methods=[
            MethodOutcome(name="qaoa", kind="quantum", objective=-9.0, seconds=1.25),
            MethodOutcome(name="reference", kind="classical", objective=-9.0, seconds=0.25),
        ],
    )
    values.update(fields)
    return CaseResult(**values).with_hash()


def scenario() -> list[TrackRecordRow]:
    """Two workflows. max-cut 1.0.0 was published first (first row at minute 0), 1.1.0 later (minute 20);
    a hardware run of 1.0.0 finishing at minute 40 does not make 1.0.0 current again."""
    v1, v2 = "1.0.0", "1.1.0"
    return [
        row("r01", version=v1, case="ring-6", minute=0, accuracy=0.9),
        row("r02", version=v1, case="ring-6", minute=5),
        row("r03", version=v1, case="k5", minute=1, passed=False, accuracy=0.8),
        row("r04", version=v1, case="noise-ring-6", target="fake:fez@1.6", minute=2, fidelity=0.97),
        row("r05", version=v1, case="hw-a", target="ibm:ibm_fez", minute=3),
        row("r06", version=v1, case="hw-b", target="ibm:ibm_torino", minute=4),
        row("r07", version=v2, case="ring-6", minute=20),
        row("r08", version=v2, case="k5", minute=21, passed=False, accuracy=0.5),
        row("r09", version=v2, case="k5", minute=25, accuracy=0.7),
        row("r10", version=v2, case="noise-ring-6", target="fake:fez@1.6", minute=22, fidelity=0.96),
        row("r11", version=v2, case="hw-a", target="ibm:ibm_fez", minute=30),
        row("r12", version=v2, case="tiny", target="sim-gpu", minute=23, passed=False, accuracy=0.95),
        row("r13", version=v1, case="hw-b", target="ibm:ibm_torino", minute=40, accuracy=0.6),
        row("r20", workflow="qubo", version="2", case="a", minute=50, accuracy=0.99),
        row("r21", workflow="qubo", version="2", case="a", target="provider:lab", minute=51),
        row("r22", workflow="qubo", version="2", case="b", minute=52, accuracy=0.97),
        row(
            "r23",
            workflow="qubo",
            version="2",
            case="c",
            minute=53,
            passed=False,
            accuracy=None,
            status="crash",
        ),
        # the reference provider's device is a simulator: its counts were simulated, not measured
        row("r24", workflow="qubo", version="2", case="a", target="provider:reference", minute=54),
    ]


# What the views hold for scenario(): run ids.
EXPECTED = {
    "rows": {f"r{i:02d}" for i in [*range(1, 14), 20, 21, 22, 23, 24]},
    "current": {
        "r02",
        "r03",
        "r04",
        "r05",
        "r07",
        "r09",
        "r10",
        "r11",
        "r12",
        "r13",
        "r20",
        "r21",
        "r22",
        "r23",
        "r24",
    },
    "history": {"r01", "r06", "r08"},
    "track_record": {"r07", "r09", "r12", "r20", "r22", "r23"},
    "noise_model_estimate": {"r10"},
    "on_hardware": {"r11", "r13", "r21"},  # measured counts only
    "on_simulators": {"r24"},  # a device target whose counts were simulated
    "earlier_results": {"r08", "r05", "r06"},
}
EXPECTED_CARDS = {
    # workflow: (current version, passed, total, headline accuracy)
    "max-cut": ("1.1.0", 2, 3, 0.95),  # median of 1.0, 0.7, 0.95; the fake: and ibm: rows do not count
    "qubo": ("2", 2, 3, 0.98),  # median of 0.99 and 0.97; the crash has no accuracy; provider: not counted
}
