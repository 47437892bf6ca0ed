"""A held-apart known-answer set (issue 25, item 4): faults drawn from wide, continuous ranges.

The standard faults (:mod:`.faults`) are injected at fixed strengths (a sweep ending at 0.2 of the decay
constant, four points, readout errors 0.40 and 0.45), far from any threshold, so a judge tuned on them
can score perfectly without judging. This set draws each fault's strength from a continuous range that
spans its criterion's threshold on both sides, borderline cases included, with a fixed seed so that the
set is the same on every machine. A case's true status comes from the task knowledge's own criterion
applied to what was taken (the plan and the qubit), never from a judge:

=================== ====================================== ===========================================
kind                drawn                                  true status (task.md, "Common failures")
=================== ====================================== ===========================================
sweep_coverage      stop = c × decay constant,             T1, T2 echo: SWEEP_TOO_SHORT when the last
                    c in [0.15, 3]                         point is above half of the first (c < ln 2)
                                                           Ramsey: when fewer than two fringes fit
                                                           in the sweep
points              n points over the healthy range,       TOO_FEW_POINTS when n < 8
                    n in 3..12
fringe_sampling     points per fringe p in [1.3, 10]       DETUNING_TOO_LARGE when p < 4
drive               the share of the drive reaching the    NO_DRIVE when the largest excitation it can
                    qubit, d in [0, 0.08]                  make is under 0.05 (flat near 0); unknown
                                                           (not scored) when it is more, as no
                                                           criterion speaks to a weak drive
readout             readout errors e0, e1 in [0.02, 0.4]   POOR_READOUT when a diagonal cell is below
                                                           0.8 (max(e0, e1) > 0.2)
=================== ====================================== ===========================================

Anything that is not a failure by its criterion is SUCCESS (on a qubit that reads out well: a poor
readout's other plots have no known answer). A result of this set names its case in ``fault``
(``held-apart:sweep_coverage=0.63``), which is how ``score`` tells the two sets apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from qsolve.calibration.experiments import Plan, Qubit
from qsolve.calibration.faults import GOOD_READOUT, SUCCESS

PREFIX = "held-apart:"
#: the draws' seed: the set is the same everywhere
SEED = 20251
#: (kind, the tasks it applies to, the range its strength is drawn from)
KINDS: tuple[tuple[str, tuple[str, ...], tuple[float, float]], ...] = (
    ("sweep_coverage", ("CheckT1", "CheckT2Echo", "CheckRamsey"), (0.15, 3.0)),
    ("points", ("CheckT1", "CheckT2Echo", "CheckRabi"), (3, 12)),
    ("fringe_sampling", ("CheckRamsey",), (1.3, 10.0)),
    ("drive", ("CheckRabi",), (0.0, 0.08)),
    ("readout", ("ReadoutClassification",), (0.02, 0.4)),
)
#: CheckRamsey: a sweep shorter than this many fringes is too short
MIN_FRINGES = 2
#: CheckRabi: the largest excitation under which the points lie flat near 0
FLAT_EXCITATION = 0.05


@dataclass(frozen=True)
class Case:
    """One held-apart case: a task on a qubit with a fault of ``kind`` at strength ``value`` (and, for
    readout, ``value2``)."""

    task: str
    qubit: int
    kind: str
    value: float
    value2: float | None = None

    @property
    def name(self) -> str:
        second = f",{self.value2:.3g}" if self.value2 is not None else ""
        return f"{PREFIX}{self.kind}={self.value:.3g}{second}"

    def apply(self, task: str, plan: Plan, qubit: Qubit) -> Plan:
        """The plan taken for this case."""
        if self.kind == "sweep_coverage":
            constant = qubit.t1 if task == "CheckT1" else qubit.t2
            return plan.with_sweep(stop=round(self.value * constant, 2))
        if self.kind == "points":
            return plan.with_sweep(points=int(self.value))
        if self.kind == "fringe_sampling":
            return replace(plan, detuning=round(1 / (self.value * plan.sweep.step), 6))
        if self.kind == "drive":
            return replace(plan, drive=self.value)
        return replace(plan, readout=(self.value, float(self.value2 or 0.0)))

    def true_status(self, task: str, plan: Plan, qubit: Qubit) -> str | None:
        """The task knowledge's criterion applied to what was taken."""
        if self.kind == "readout":
            return "POOR_READOUT" if max(plan.readout or (0, 0)) > 0.2 else SUCCESS
        if max(qubit.readout) > GOOD_READOUT:
            return None  # its plots lose contrast in a way no criterion speaks to
        if self.kind == "sweep_coverage":
            if task == "CheckRamsey":
                fringes = plan.detuning * (plan.sweep.stop - plan.sweep.start)
                return "SWEEP_TOO_SHORT" if fringes < MIN_FRINGES else SUCCESS
            constant = qubit.t1 if task == "CheckT1" else qubit.t2
            return (
                "SWEEP_TOO_SHORT"
                if (plan.sweep.stop - plan.sweep.start) / constant < math.log(2)
                else SUCCESS
            )
        if self.kind == "points":
            return "TOO_FEW_POINTS" if plan.sweep.points < 8 else SUCCESS
        if self.kind == "fringe_sampling":
            return "DETUNING_TOO_LARGE" if self.value < 4 else SUCCESS
        top = math.pi * plan.drive * plan.sweep.stop / qubit.pi_amplitude  # the largest rotation
        excitation = (1 - math.cos(min(top, math.pi))) / 2
        return "NO_DRIVE" if excitation < FLAT_EXCITATION else None


def cases(qubits: Sequence[int], per_kind: int = 6, *, seed: int = SEED) -> list[Case]:
    """``per_kind`` cases of each kind and task, on the qubits in rotation, strengths drawn uniformly
    from the kind's range (points: whole numbers) with ``seed``."""
    rng = np.random.default_rng(seed)
    out: list[Case] = []
    i = 0
    for kind, tasks, (low, high) in KINDS:
        for task in tasks:
            for _ in range(per_kind):
                qubit = qubits[i % len(qubits)]
                i += 1
                if kind == "points":
                    out.append(Case(task, qubit, kind, float(rng.integers(int(low), int(high) + 1))))
                elif kind == "readout":
                    e0, e1 = rng.uniform(low, high, 2)
                    out.append(Case(task, qubit, kind, round(float(e0), 3), round(float(e1), 3)))
                else:
                    out.append(Case(task, qubit, kind, round(float(rng.uniform(low, high)), 3)))
    return out


def is_held_apart(fault: str | None) -> bool:
    return bool(fault) and fault.startswith(PREFIX)
