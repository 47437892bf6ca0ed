"""Known faults a calibration run can inject, each with the true status it produces.

A fault is a change to a healthy run's plan (:class:`~qsolve.calibration.experiments.Plan`). Its true
status is one of the failure codes of the task's knowledge (``task-knowledge/<Task>/task.md``, "Common
failures": ``Sweep too short`` gives ``SWEEP_TOO_SHORT``); a test keeps the two lists equal. A healthy
run's true status is ``SUCCESS`` on a qubit that reads out well (:func:`healthy_status`). Each fault
also says the outcome (the conclusion question's classification) and the fit assessment a correct
judge gives (:func:`known_answer`), so that scores can weigh all three.

    sweep_too_short     CheckT1, CheckT2Echo, CheckRamsey   the sweep ends at 0.2 of the decay constant
    too_few_points      CheckT1, CheckT2Echo, CheckRabi     four points over the healthy range
    detuning_too_large  CheckRamsey                         0.68 fringes a step: under three points a fringe
    no_drive            CheckRabi                           the drive does not reach the qubit: flat, no curve
    readout_near_half   ReadoutClassification               readout errors 0.40 and 0.45: fidelity near 0.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from qsolve.calibration.experiments import Plan, Qubit

SUCCESS = "SUCCESS"


@dataclass(frozen=True)
class Fault:
    name: str
    tasks: tuple[str, ...]
    true_status: str
    outcome: str  # expected | suboptimal | anomalous | apparatus
    fit_assessment: str | None  # reliable | unreliable | no_fit; None where the task draws no fit
    description: str
    change: Callable[[str, Plan, Qubit], Plan]
    #: what its figure shows: a fitted curve drawn (False: the points alone, "No fit")
    curve: bool = True
    #: for a decay task: whether the decay happens inside the sweep (the sweep covers a decay constant)
    decay_in_sweep: bool | None = True

    def apply(self, task: str, plan: Plan, qubit: Qubit) -> Plan:
        return self.change(task, plan, qubit)


def _short(task: str, plan: Plan, qubit: Qubit) -> Plan:
    constant = qubit.t1 if task == "CheckT1" else qubit.t2
    return plan.with_sweep(stop=round(0.2 * constant, 1))


def _few(task: str, plan: Plan, qubit: Qubit) -> Plan:
    return plan.with_sweep(points=4)


def _detuned(task: str, plan: Plan, qubit: Qubit) -> Plan:
    return replace(plan, detuning=round(0.68 / plan.sweep.step, 6))


def _undriven(task: str, plan: Plan, qubit: Qubit) -> Plan:
    return replace(plan, drive=0.0)


def _heavy_readout(task: str, plan: Plan, qubit: Qubit) -> Plan:
    return replace(plan, readout=(0.40, 0.45))


FAULTS: tuple[Fault, ...] = (
    Fault(
        "sweep_too_short",
        ("CheckT1", "CheckT2Echo", "CheckRamsey"),
        "SWEEP_TOO_SHORT",
        "suboptimal",
        "unreliable",
        "the sweep ends at a fifth of the decay constant",
        _short,
        decay_in_sweep=False,
    ),
    Fault(
        "too_few_points",
        ("CheckT1", "CheckT2Echo", "CheckRabi"),
        "TOO_FEW_POINTS",
        "suboptimal",
        "unreliable",
        "four points over the healthy range",
        _few,
    ),
    Fault(
        "detuning_too_large",
        ("CheckRamsey",),
        "DETUNING_TOO_LARGE",
        "suboptimal",
        "unreliable",
        "an artificial detuning of 0.68 fringes a step: the fringes alias",
        _detuned,
    ),
    Fault(
        "no_drive",
        ("CheckRabi",),
        "NO_DRIVE",
        "apparatus",
        "no_fit",
        "the drive does not reach the qubit: flat points, no curve drawn through them",
        _undriven,
        curve=False,
        decay_in_sweep=None,
    ),
    Fault(
        "readout_near_half",
        ("ReadoutClassification",),
        "POOR_READOUT",
        "apparatus",
        None,
        "readout errors of 0.40 and 0.45: the states read out alike",
        _heavy_readout,
        curve=False,
        decay_in_sweep=None,
    ),
)


#: a qubit whose readout errors are at most this is good enough for every task's criteria to apply
GOOD_READOUT = 0.1
#: ReadoutClassification: a readout error from this up reads as POOR_READOUT (a diagonal cell < 0.8)
POOR_READOUT = 0.2


def healthy_status(task: str, qubit: Qubit) -> str | None:
    """The true status of a run with no fault injected: SUCCESS on a qubit that reads out well; on one
    that does not, POOR_READOUT for ReadoutClassification when its own readout is that poor, and unknown
    (None) otherwise (its plots lose contrast in a way no criterion of the task speaks to)."""
    worst = max(qubit.readout)
    if worst <= GOOD_READOUT:
        return SUCCESS
    if task == "ReadoutClassification" and worst >= POOR_READOUT:
        return "POOR_READOUT"
    return None


def faults_of(task: str) -> list[Fault]:
    """The faults that apply to ``task``, in the order above."""
    return [f for f in FAULTS if task in f.tasks]


def fault(name: str, task: str) -> Fault:
    for f in faults_of(task):
        if f.name == name:
            return f
    known = ", ".join(f.name for f in faults_of(task)) or "none"
    raise KeyError(f"no fault {name!r} for {task} (its faults: {known})")


def failure_codes(task: str) -> list[str]:
    """The true statuses of ``task``'s faults: exactly the failure codes of its knowledge."""
    return list(dict.fromkeys(f.true_status for f in faults_of(task)))


#: the tasks whose figure is a decay over a delay sweep
DECAY_TASKS = frozenset({"CheckT1", "CheckT2Echo", "CheckRamsey"})


def known_answer(task: str, true_status: str | None) -> dict[str, Any] | None:
    """What a correct judge answers for a result of ``task`` with this true status: its status, outcome
    and fit assessment (``None`` where the task draws no fit), and what its figure shows: ``curve``
    (a fitted curve drawn) and ``decay_in_sweep`` (for a decay task, whether the sweep covers a decay
    constant; None otherwise); ``None`` when the status is unknown."""
    from qsolve.calibration.experiments import EXPERIMENTS

    if true_status is None:
        return None
    drawn = task not in EXPERIMENTS or EXPERIMENTS[task].fitted
    decay = task in DECAY_TASKS
    if true_status == SUCCESS:
        return {
            "status": SUCCESS,
            "outcome": "expected",
            "fit_assessment": "reliable" if drawn else None,
            "curve": drawn,
            "decay_in_sweep": True if decay else None,
        }
    for f in faults_of(task):
        if f.true_status == true_status:
            return {
                "status": f.true_status,
                "outcome": f.outcome,
                "fit_assessment": f.fit_assessment,
                "curve": f.curve and drawn,
                "decay_in_sweep": f.decay_in_sweep if decay else None,
            }
    unknown = dict.fromkeys(("outcome", "fit_assessment", "curve", "decay_in_sweep"))
    return {"status": true_status, **unknown}
