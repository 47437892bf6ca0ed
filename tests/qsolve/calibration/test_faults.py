"""Each injected fault gives its true status, and the plot it makes is the one its criterion describes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qsolve.calibration.experiments import TASKS, experiment, open_qubit
from qsolve.calibration.faults import FAULTS, fault, faults_of, known_answer
from qsolve.calibration.held_apart import cases as held_apart_cases
from tests.qsolve.calibration.calibration_runs import CHIP, calibrated

QUBIT = 2
CASES = [(task, f.name) for f in FAULTS for task in f.tasks]


@pytest.mark.parametrize(("task", "name"), CASES)
def test_each_fault_records_its_true_status(task: str, name: str) -> None:
    result = calibrated(task, QUBIT, name).result
    assert result.fault == name
    assert result.true_status == fault(name, task).true_status
    assert result.figures, "a faulty run still draws its figure"


def test_a_short_sweep_ends_at_a_fifth_of_the_decay_constant() -> None:
    q = open_qubit(CHIP, QUBIT)
    for task, constant in (("CheckT1", q.t1), ("CheckT2Echo", q.t2), ("CheckRamsey", q.t2)):
        sweep = calibrated(task, QUBIT, "sweep_too_short").result.sweep
        assert sweep.stop == pytest.approx(0.2 * constant, abs=0.1)
        assert sweep.points == experiment(task).plan(q).sweep.points
    t1 = calibrated("CheckT1", QUBIT, "sweep_too_short").result
    assert t1.outputs["t1"].error > 0.3 * t1.outputs["t1"].value  # the fit cannot pin it


def test_too_few_points_keeps_the_healthy_range() -> None:
    q = open_qubit(CHIP, QUBIT)
    for task in ("CheckT1", "CheckT2Echo", "CheckRabi"):
        sweep = calibrated(task, QUBIT, "too_few_points").result.sweep
        healthy = experiment(task).plan(q).sweep
        assert sweep.points == 4 and (sweep.start, sweep.stop) == (healthy.start, healthy.stop)


def test_a_detuning_too_large_aliases_the_fringes() -> None:
    result = calibrated("CheckRamsey", QUBIT, "detuning_too_large").result
    healthy = calibrated("CheckRamsey", QUBIT).result
    step = result.sweep.step
    # fewer than four points a fringe: the fitted frequency is not the detuning applied
    assert 0.5 < 0.68 < 1 and result.outputs["detuning"].value * step < 0.5
    assert healthy.outputs["detuning"].value * step == pytest.approx(1 / 8, rel=0.05)


def test_no_drive_leaves_the_qubit_in_its_ground_state() -> None:
    done = calibrated("CheckRabi", QUBIT, "no_drive")
    exp = experiment("CheckRabi")
    q = open_qubit(CHIP, QUBIT)
    from qsolve.calibration.experiments import run

    plan = fault("no_drive", "CheckRabi").apply("CheckRabi", exp.plan(q), q)
    p1 = run(exp.circuits(plan, q), q, plan, 5)
    assert np.max(p1) < 0.05
    assert done.result.fit is None or done.result.fit.r2 is None or done.result.fit.r2 < 0.5


def test_readout_near_half() -> None:
    outputs = calibrated("ReadoutClassification", QUBIT, "readout_near_half").result.outputs
    assert 0.5 <= outputs["average_readout_fidelity"].value < 0.65
    assert outputs["readout_fidelity_0"].value < 0.8 and outputs["readout_fidelity_1"].value < 0.8


def test_every_task_has_faults_and_names_are_unique_per_task() -> None:
    for task in TASKS:
        names = [f.name for f in faults_of(task)]
        assert names and len(set(names)) == len(names)
    with pytest.raises(KeyError, match="its faults"):
        fault("no_drive", "CheckT1")


def test_known_answers_give_status_outcome_and_fit_assessment() -> None:
    assert known_answer("CheckT1", "SUCCESS") == {
        "status": "SUCCESS", "outcome": "expected", "fit_assessment": "reliable",
        "curve": True, "decay_in_sweep": True,
    }  # fmt: skip
    assert known_answer("CheckRabi", "NO_DRIVE") == {  # its figure draws no curve: "No fit"
        "status": "NO_DRIVE", "outcome": "apparatus", "fit_assessment": "no_fit",
        "curve": False, "decay_in_sweep": None,
    }  # fmt: skip
    assert known_answer("CheckT1", "SWEEP_TOO_SHORT")["decay_in_sweep"] is False
    assert known_answer("ReadoutClassification", "SUCCESS")["fit_assessment"] is None
    assert known_answer("CheckT1", None) is None


# --- every fault's figure against its key (issue 25, item 4) -------------------------------------------

#: the fitted curve's colour (matplotlib's C3), and how many of its pixels make a drawn curve
FIT_RGB = (0xD6, 0x27, 0x28)
CURVE_PIXELS = 200


def fit_pixels(png: bytes) -> int:
    """Pixels of the PNG in the fitted curve's colour (the legend's short stroke is under 100)."""
    import io

    from matplotlib.image import imread

    rgb = (imread(io.BytesIO(png))[:, :, :3] * 255).round()
    return int(np.sum(np.all(np.abs(rgb - np.array(FIT_RGB)) <= 12, axis=-1)))


FIGURE_CASES = [(task, None) for task in TASKS] + CASES


@pytest.mark.parametrize(("task", "name"), FIGURE_CASES)
@pytest.mark.parametrize("qubit", [QUBIT, 7])
def test_every_faults_figure_shows_what_its_key_says(task: str, name: str | None, qubit: int) -> None:
    """A curve drawn or not, as the key's ``curve`` says (a "No fit" key draws none); for a decay,
    the decay inside the sweep or not, as ``decay_in_sweep`` says; and the fit assessment agrees."""
    done = calibrated(task, qubit, name)
    result = done.result
    key = known_answer(task, result.true_status)
    if key is None:  # a qubit whose readout is too poor for the healthy status to be known
        pytest.skip(f"{task} on qubit {qubit}: no known answer")
    (png,) = done.figures.values()
    drawn = fit_pixels(png) >= CURVE_PIXELS
    assert drawn == key["curve"], f"{task} {name}: curve drawn {drawn}, key says {key['curve']}"
    if key["fit_assessment"] == "no_fit":
        assert not drawn  # the fit template's "No fit": no fitted curve drawn
    if key["fit_assessment"] in ("reliable", "unreliable"):
        assert drawn
    q = open_qubit(CHIP, qubit)
    if key["decay_in_sweep"] is not None:
        constant = q.t1 if task == "CheckT1" else q.t2
        covered = (result.sweep.stop - result.sweep.start) / constant
        said = f"{task} {name}: the sweep covers {covered:.2f} constants"
        assert (covered >= math.log(2)) == key["decay_in_sweep"], said  # the criterion's half swing
    else:
        assert task not in ("CheckT1", "CheckT2Echo", "CheckRamsey")


def test_a_degenerate_fit_is_not_printed_as_a_measurement() -> None:
    from qsolve.calibration.experiments import Plan, fit_legend
    from qsolve.calibration.task_result import Output, Sweep

    plan = Plan(Sweep.linear("delay", "us", 0.0, 8.5, 41), 1000, 100.0)
    degenerate = Output(value=7.12e7, unit="us", error=6.4e-16)
    assert fit_legend("T2*", degenerate, "µs", plan) == "fit: T2* not determined by this sweep"
    beyond = Output(value=5000.0, unit="us", error=100.0)  # 600 sweep spans
    assert fit_legend("T2*", beyond, "µs", plan) == "fit: T2* not determined by this sweep"
    plain = Output(value=42.3, unit="us", error=1.1)
    assert fit_legend("T2*", plain, "µs", plan) == "fit: T2* = 42.3 ± 1.1 µs"
    wide = Output(value=51.0, unit="us", error=56.0)  # honest: the error bar is as large as it is
    assert fit_legend("T1", wide, "µs", plan) == "fit: T1 = 51 ± 56 µs"


#: the held-apart cases whose figure a key speaks to: the sweep's coverage of the decay, and the drive
HELD_FIGURES = [
    c
    for c in held_apart_cases([0, 3, 7], 6)
    if c.kind in ("sweep_coverage", "drive") and c.task in ("CheckT1", "CheckT2Echo", "CheckRabi")
]


@pytest.mark.parametrize("case", HELD_FIGURES, ids=lambda c: f"{c.task}-{c.name}")
def test_every_held_apart_figure_shows_what_its_key_says(case) -> None:
    """The held-apart set's borderline figures against their keys (found by the independent test of
    issue 25: only the standard set's figures were checked, and against "one decay constant" where
    the key follows the criterion's half swing, ln 2; sweeps of 0.79 and 0.94 constants disagreed)."""
    from qsolve.calibration.calibrate import run_task

    done = run_task(CHIP, case.task, case.qubit, case=case, day="2026-12-01")
    result = done.result
    key = known_answer(case.task, result.true_status)
    if key is None:  # a weak but visible drive: no known answer
        pytest.skip(f"{case.name}: no known answer")
    (png,) = done.figures.values()
    drawn = fit_pixels(png) >= CURVE_PIXELS
    assert drawn == key["curve"], f"{case.name}: curve drawn {drawn}, key says {key['curve']}"
    if key["decay_in_sweep"] is not None:
        q = open_qubit(CHIP, case.qubit)
        constant = q.t1 if case.task == "CheckT1" else q.t2
        covered = (result.sweep.stop - result.sweep.start) / constant
        assert (covered >= math.log(2)) == key["decay_in_sweep"], f"{case.name}: covers {covered:.2f}"
