"""Each task, healthy, on qubits of fake:fez: completed, a fit near the qubit's own T1, T2, π amplitude or
readout, true status SUCCESS; the same run gives the same counts and figure bytes."""

from __future__ import annotations

import pytest

from qsolve.calibration.calibrate import parse_qubits, parse_tasks, plan_runs, run_seed
from qsolve.calibration.experiments import TASKS, UnknownChip, experiment, open_qubit
from qsolve.calibration.faults import healthy_status
from tests.qsolve.calibration.calibration_runs import CHIP, calibrated

QUBITS = (1, 3)


@pytest.mark.parametrize("qubit", QUBITS)
@pytest.mark.parametrize(
    ("task", "output", "truth", "tolerance"),
    [
        ("CheckT1", "t1", lambda q: q.t1, 0.08),
        ("CheckT2Echo", "t2_echo", lambda q: q.t2, 0.12),
        ("CheckRamsey", "t2_star", lambda q: q.t2, 0.12),
        ("CheckRabi", "pi_amplitude", lambda q: q.pi_amplitude, 0.03),
    ],
)
def test_a_healthy_fit_finds_the_qubits_own_value(task, output, truth, tolerance, qubit) -> None:
    result = calibrated(task, qubit).result
    q = open_qubit(CHIP, qubit)
    assert result.status == "completed" and result.message == "Successfully finished"
    assert result.true_status == "SUCCESS" and result.fault is None
    fitted = result.outputs[output]
    assert fitted.value == pytest.approx(truth(q), rel=tolerance)
    assert fitted.error is not None and fitted.error < 0.1 * fitted.value
    assert result.fit.r2 > 0.97 and 0.3 < result.fit.reduced_chi2 < 3


def test_ramsey_finds_the_detuning_it_applied() -> None:
    result = calibrated("CheckRamsey", 1).result
    q = open_qubit(CHIP, 1)
    applied = experiment("CheckRamsey").plan(q).detuning
    assert result.outputs["detuning"].value == pytest.approx(applied, rel=0.03)


def test_a_healthy_readout_matches_the_devices_errors() -> None:
    result = calibrated("ReadoutClassification", 3).result
    p1_given_0, p0_given_1 = open_qubit(CHIP, 3).readout
    assert result.status == "completed" and result.true_status == "SUCCESS" and result.fit is None
    assert result.outputs["readout_fidelity_0"].value == pytest.approx(1 - p1_given_0, abs=0.01)
    assert result.outputs["readout_fidelity_1"].value == pytest.approx(1 - p0_given_1, abs=0.02)
    assert result.sweep is None and result.settings.shots == 2000


def test_healthy_sweeps_cover_several_decay_constants_in_real_units() -> None:
    q = open_qubit(CHIP, 3)
    t1 = experiment("CheckT1").plan(q).sweep
    assert (t1.parameter, t1.unit, t1.points) == ("delay", "us", 31)
    assert 5 * q.t1 <= t1.stop < 5.5 * q.t1
    echo, ramsey = experiment("CheckT2Echo").plan(q).sweep, experiment("CheckRamsey").plan(q).sweep
    assert 4 * q.t2 <= echo.stop and 3 * q.t2 <= ramsey.stop
    plan = experiment("CheckT1").plan(q)
    assert plan.interval >= t1.stop + 5 * q.t1  # the qubit is back in |0⟩ before each shot


def test_a_scaled_chip_divides_t1_and_multiplies_readout_errors() -> None:
    plain, scaled = open_qubit("fake:fez", 3), open_qubit("fake:fez@1.6", 3)
    assert scaled.t1 == pytest.approx(plain.t1 / 1.6) and scaled.t2 == pytest.approx(plain.t2 / 1.6)
    assert scaled.readout[1] == pytest.approx(plain.readout[1] * 1.6)
    result = calibrated("CheckT1", 3, chip="fake:fez@1.6").result
    assert result.chip == "fake:fez@1.6"
    assert result.outputs["t1"].value == pytest.approx(scaled.t1, rel=0.08)


def test_the_same_run_gives_the_same_figure_bytes_and_another_seed_does_not() -> None:
    from qsolve.calibration.calibrate import run_task

    first = calibrated("CheckT1", 1)
    again = run_task(CHIP, "CheckT1", 1, day="2026-12-02", seed=0)
    assert again.figures == first.figures
    assert again.result.outputs == first.result.outputs and again.result.id != first.result.id
    other = calibrated("CheckT1", 1, seed=7)
    assert other.figures != first.figures
    assert run_seed(0, CHIP, "CheckT1", 1, None) != run_seed(0, CHIP, "CheckT1", 1, "too_few_points")


def test_a_figure_is_a_png_named_for_its_task_and_qubit() -> None:
    done = calibrated("CheckRabi", 1)
    (ref,) = done.result.figures
    assert ref.name == "CheckRabi_Q01.png" and ref.media_type == "image/png"
    assert done.figures[ref.sha256].startswith(b"\x89PNG\r\n\x1a\n")


def test_unknown_chips_and_qubits_are_refused() -> None:
    with pytest.raises(UnknownChip, match="fake:"):
        open_qubit("sim-cpu", 0)
    with pytest.raises(UnknownChip, match="0 to 155"):
        open_qubit(CHIP, 156)
    with pytest.raises(UnknownChip, match="scale"):
        open_qubit("fake:fez@20", 0)


def test_a_qubit_that_reads_out_badly_has_no_known_healthy_answer() -> None:
    q = open_qubit("fake:fez@10", 7)  # readout errors about 0.14 and 0.28
    assert healthy_status("CheckT1", q) is None
    assert healthy_status("ReadoutClassification", q) == "POOR_READOUT"
    assert healthy_status("CheckT1", open_qubit(CHIP, 7)) == "SUCCESS"


def test_tasks_and_qubits_are_read_from_the_command_line_forms() -> None:
    assert parse_qubits("0-3,7,2") == [0, 1, 2, 3, 7]
    assert parse_tasks(None) == list(TASKS) and parse_tasks("CheckRabi,CheckT1") == ["CheckRabi", "CheckT1"]
    for bad in ("a-b", "3-1", "-2"):
        with pytest.raises(ValueError):
            parse_qubits(bad)
    with pytest.raises(ValueError, match="CheckT3"):
        parse_tasks("CheckT1,CheckT3")


def test_faults_rotate_over_the_qubits_after_each_healthy_run() -> None:
    runs = plan_runs(["CheckT1", "ReadoutClassification"], [0, 1, 2, 3, 4], faults=True)
    t1 = [(r.qubit, r.fault) for r in runs if r.task == "CheckT1"]
    assert t1 == [
        (0, None), (1, None), (1, "sweep_too_short"), (2, None), (2, "too_few_points"),
        (3, None), (4, None), (4, "sweep_too_short"),
    ]  # fmt: skip
    readout = [(r.qubit, r.fault) for r in runs if r.task == "ReadoutClassification"]
    assert readout[:4] == [(0, None), (1, None), (1, "readout_near_half"), (2, None)]
    assert all(r.fault is None for r in plan_runs(["CheckT1"], [0, 1, 2]))
