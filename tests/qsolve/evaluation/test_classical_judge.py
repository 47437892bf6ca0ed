"""The classical judge: what the fit and the sweep decide, in the answers' own forms; the rest declined."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from qsolve.evaluation.answers import read_answers
from qsolve.evaluation.classical_judge import CHECKS, ClassicalJudge, FitEvidence, judge_evidence, map_code
from qsolve.evaluation.knowledge import derive_reference
from qsolve.evaluation.questions import QUESTION_KEYS

REPO = Path(__file__).resolve().parents[3]

T1_TASK = """# CheckT1

A π pulse, a delay, a measurement: P(1) decays as exp(−t/T1).

## Expected plot

P(1) against the delay. A good result shows points that level off to a flat floor.

## Common failures

- Sweep too short — the points are still falling at the right edge of the plot and never level off:
  the last point is still above half of the first; the sweep ended before the decay did
- Too few points — the plot shows fewer than eight data points; the fitted T1 rests on almost no data

## Parameters to extract

- t1: T1 in microseconds, the decay constant of the fitted exponential
"""
T1 = derive_reference(T1_TASK, task="CheckT1")


def t1_evidence(**changes) -> FitEvidence:
    values = {
        "task": "CheckT1",
        "sweep": {
            "parameter": "delay",
            "unit": "us",
            "start": 0.0,
            "stop": 1100.0,
            "points": 31,
            "step": 36.67,
        },
        "shots": 1024,
        "outputs": {"t1": {"value": 222.7, "unit": "us", "error": 3.1}},
        "fit_model": "A·exp(−t/τ) + B",
        "r_squared": 0.998,
        "reduced_chi2": 1.73,
        "dof": 28,
    }
    values.update(changes)
    return FitEvidence.model_validate(values)


def judged(reference, evidence):
    got = ClassicalJudge().ask(reference, evidence)
    texts = {k: (None if a.declined else a.text) for k, a in got.answers.items()}
    return got, read_answers(texts, criteria=reference.criteria)


def test_a_healthy_fit_reads_success_expected_reliable_with_its_parameters():
    got, reading = judged(T1, t1_evidence())
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment, d.success) == ("SUCCESS", "expected", "reliable", True)
    assert d.parameters == {"t1": 222.7}
    assert d.suggested_range is None
    assert got.answers["fit_reliability"].text.startswith("Assessment: Reliable\nReason: ")
    assert got.answers["calibration_diagnosis"].text.startswith("Status: SUCCESS\n")
    assert got.model == "classical-judge" and got.calls == [] and got.input_tokens is None


def test_it_declines_what_it_cannot_answer_and_says_so():
    got, reading = judged(T1, t1_evidence())
    for key in ("technical_description", "experimental_significance"):
        answer = got.answers[key]
        assert answer.declined and answer.stop_reason == "declined"
        assert answer.text.startswith("The classical judge declines this question")
    assert reading.missing_keys == ["technical_description", "experimental_significance"]
    answered = [k for k, a in got.answers.items() if not a.declined]
    assert answered == [
        "experimental_conclusion",
        "fit_reliability",
        "parameter_extraction",
        "calibration_diagnosis",
    ]


def test_a_sweep_too_short_for_the_decay():
    ev = t1_evidence(
        sweep={"parameter": "delay", "unit": "us", "start": 0.0, "stop": 43.9, "points": 31, "step": 1.46},
        outputs={"t1": {"value": 461.6, "unit": "us", "error": 1104.0}},
        r_squared=0.977,
        reduced_chi2=0.77,
    )
    got, reading = judged(T1, ev)
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment, d.success) == (
        "SWEEP_TOO_SHORT",
        "suboptimal",
        "unreliable",
        False,
    )
    assert d.suggested_range == "(0, 440) [us]"  # T1 itself unconstrained: ten times the span
    assert "decay constants" in d.notes


@pytest.mark.parametrize(
    ("covered", "status"), [(0.6, "SWEEP_TOO_SHORT"), (0.8, "SUCCESS"), (1.2, "SUCCESS")]
)
def test_a_sweep_is_too_short_below_ln_2_decay_constants(covered: float, status: str) -> None:
    """The decay has fallen to half its swing at ln 2 ≈ 0.69 constants: the criterion's "the last point
    is still above half of the first" (a sweep of 0.8 constants was called too short until issue 25)."""
    stop = round(covered * 100.0, 1)
    ev = t1_evidence(
        sweep={
            "parameter": "delay",
            "unit": "us",
            "start": 0.0,
            "stop": stop,
            "points": 31,
            "step": stop / 30,
        },
        outputs={"t1": {"value": 100.0, "unit": "us", "error": 20.0}},
    )
    assert judged(T1, ev)[1].diagnosis.status == status


def test_a_short_sweep_with_a_trustworthy_constant_suggests_five_of_them():
    ev = t1_evidence(
        sweep={"parameter": "delay", "unit": "us", "start": 0.0, "stop": 150.0, "points": 31, "step": 5.0},
        outputs={"t1": {"value": 222.0, "unit": "us", "error": 20.0}},
    )
    _, reading = judged(T1, ev)
    assert reading.diagnosis.status == "SWEEP_TOO_SHORT"
    assert reading.diagnosis.suggested_range == "(0, 1100) [us]"


def test_too_few_points_keeps_the_range_and_asks_for_more_points():
    ev = t1_evidence(
        sweep={"parameter": "delay", "unit": "us", "start": 0.0, "stop": 1100.0, "points": 4, "step": 366.7},
        r_squared=1.0,
        reduced_chi2=0.0,
    )
    _, reading = judged(T1, ev)
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment) == ("TOO_FEW_POINTS", "suboptimal", "unreliable")
    assert d.suggested_range == "(0, 1100) [us]"
    assert "more points" in d.notes


def test_the_criterion_states_its_own_threshold():
    stricter = derive_reference(T1_TASK.replace("fewer than eight", "fewer than twelve"), task="CheckT1")
    ev = t1_evidence(
        sweep={"parameter": "delay", "unit": "us", "start": 0.0, "stop": 1100.0, "points": 10, "step": 122.2}
    )
    assert judged(T1, ev)[1].diagnosis.status == "SUCCESS"
    assert judged(stricter, ev)[1].diagnosis.status == "TOO_FEW_POINTS"


def test_flat_raw_data_is_no_signal_and_no_fit():
    rabi = derive_reference(
        """# CheckRabi

The drive amplitude is swept; P(1) oscillates.

## Expected plot

A cosine. A good result shows at least one full oscillation.

## Common failures

- No drive — the points lie flat near 0 across the whole amplitude sweep with no oscillation at all
- Too few points — the plot shows fewer than eight data points

## Parameters to extract

- pi_amplitude: the π-pulse amplitude
- oscillations: the number of full oscillations, an integer
""",
        task="CheckRabi",
    )
    sweep = {
        "parameter": "drive_amplitude",
        "unit": "a.u.",
        "start": 0.0,
        "stop": 0.4,
        "points": 31,
        "step": 0.0133,
    }
    outputs = {
        "pi_amplitude": {"value": 0.019, "unit": "a.u.", "error": 0.004},
        "oscillations": {"value": 8.0},
    }
    flat = FitEvidence(
        task="CheckRabi",
        sweep=sweep,
        outputs=outputs,
        fit_model="cos",
        r_squared=0.6,
        y=[0.01, 0.03] * 15 + [0.02],
    )
    got, reading = judged(rabi, flat)
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment) == ("NO_DRIVE", "apparatus", "no_fit")
    assert d.parameters == {"pi_amplitude": None, "oscillations": None}  # the figure determines none
    # without the raw points, a fit that explains almost nothing says the same
    no_points = FitEvidence(task="CheckRabi", sweep=sweep, outputs=outputs, fit_model="cos", r_squared=-0.02)
    assert judged(rabi, no_points)[1].diagnosis.status == "NO_DRIVE"
    healthy = FitEvidence(
        task="CheckRabi",
        sweep=sweep,
        outputs={
            "pi_amplitude": {"value": 0.125, "unit": "a.u.", "error": 0.0006},
            "oscillations": {"value": 1.0},
        },
        fit_model="cos",
        r_squared=0.999,
    )
    _, reading = judged(rabi, healthy)
    assert reading.diagnosis.status == "SUCCESS"
    assert reading.diagnosis.parameters == {"pi_amplitude": 0.125, "oscillations": 1}


def test_a_finding_no_criterion_names_declines_the_status_and_says_why():
    only_points = derive_reference(
        T1_TASK.replace(T1_TASK[T1_TASK.index("- Sweep too short") : T1_TASK.index("- Too few points")], ""),
        task="CheckT1",
    )
    assert list(only_points.criteria) == ["SUCCESS", "TOO_FEW_POINTS"]
    ev = t1_evidence(
        sweep={"parameter": "delay", "unit": "us", "start": 0.0, "stop": 43.9, "points": 31, "step": 1.46},
        outputs={"t1": {"value": 461.6, "unit": "us", "error": 1104.0}},
    )
    got, reading = judged(only_points, ev)
    diagnosis = got.answers["calibration_diagnosis"]
    assert diagnosis.declined and "none of the task's statuses names it" in diagnosis.text
    assert reading.diagnosis.status is None and "calibration_diagnosis" in reading.missing_keys
    # what it can say, it still says
    assert (reading.diagnosis.outcome, reading.diagnosis.fit_assessment) == ("suboptimal", "unreliable")


def test_without_criteria_the_generic_statuses():
    bare = T1.model_copy(update={"criteria": {}})  # an old-format entry, or no knowledge
    _, reading = judged(
        bare, t1_evidence(sweep={"parameter": "delay", "unit": "us", "start": 0, "stop": 1100, "points": 4})
    )
    assert reading.diagnosis.status == "SUBOPTIMAL"
    _, reading = judged(bare, t1_evidence(r_squared=0.7))
    assert (reading.diagnosis.status, reading.diagnosis.outcome) == ("ANOMALOUS", "anomalous")
    assert judged(bare, t1_evidence())[1].diagnosis.status == "SUCCESS"


def test_no_fit_evidence_declines_everything():
    got = ClassicalJudge().ask(T1, None)
    assert all(a.declined and "no fit evidence" in a.text for a in got.answers.values())
    assert list(got.answers) == list(QUESTION_KEYS)


def test_codes_are_found_by_keywords_in_the_criteria():
    check = {c.name: c for c in CHECKS}
    criteria = {
        "SUCCESS": "fine",
        "WINDOW_TOO_SHORT": "the curve has not flattened",
        "UNDERSAMPLED": "consecutive points alias",
        "DEAD_QUBIT": "nothing responds",
    }
    assert map_code(check["sweep_too_short"], criteria) == "WINDOW_TOO_SHORT"
    assert map_code(check["aliased"], criteria) == "UNDERSAMPLED"
    assert map_code(check["no_signal"], criteria) == "DEAD_QUBIT"
    assert map_code(check["too_few_points"], criteria) is None
    # a phrase inside a code another check claims does not count ("no flat stretch" of a short sweep)
    echo = {"SUCCESS": "fine", "SWEEP_TOO_SHORT": "the points stay above 0.5 and lie flat nowhere"}
    assert map_code(check["no_signal"], echo) is None


def test_from_a_task_result_read_by_attribute():
    output = SimpleNamespace(model_dump=lambda: {"value": 49.0, "unit": "us", "error": 0.7})
    sweep = SimpleNamespace(
        model_dump=lambda: {
            "parameter": "delay",
            "unit": "us",
            "start": 0.0,
            "stop": 250.0,
            "points": 31,
            "step": 8.3,
        }
    )
    result = SimpleNamespace(
        task="CheckT1",
        status="completed",
        message="Successfully finished",
        sweep=sweep,
        settings=SimpleNamespace(shots=1024),
        outputs={"t1": output},
        fit=SimpleNamespace(model="A·exp(−t/τ) + B", r2=0.998, reduced_chi2=1.35, dof=28),
    )
    ev = FitEvidence.from_result(result)
    assert (ev.n_points, ev.r_squared, ev.shots, ev.outputs["t1"].value) == (31, 0.998, 1024, 49.0)
    assert judge_evidence(T1, ev).status == "SUCCESS"


# --- the task knowledge of this repository, one case per known fault --------------------------------------

SWEEP = {"parameter": "delay", "unit": "us", "start": 0.0, "points": 31}
CASES = [
    ("CheckT1", None, {"stop": 850.0, "step": 28.3}, {"t1": (164.4, "us", 2.1)}, 0.999, "SUCCESS"),
    (
        "CheckT1",
        "short",
        {"stop": 33.7, "step": 1.12},
        {"t1": (254.0, "us", 312.0)},
        0.986,
        "SWEEP_TOO_SHORT",
    ),
    (
        "CheckT1",
        "few",
        {"stop": 850.0, "step": 283.3, "points": 4},
        {"t1": (172.0, "us", 6.5)},
        1.0,
        "TOO_FEW_POINTS",
    ),
    (
        "CheckT2Echo",
        "short",
        {"stop": 43.1, "step": 1.44},
        {"t2_echo": (996.0, "us", 9824.0)},
        0.858,
        "SWEEP_TOO_SHORT",
    ),
    (
        "CheckRamsey",
        None,
        {"stop": 130.0, "step": 3.25, "points": 41},
        {"t2_star": (42.3, "us", 1.1), "detuning": (0.0384, "MHz", 0.0002)},
        0.993,
        "SUCCESS",
    ),
    (
        "CheckRamsey",
        "detuned",
        {"stop": 130.0, "step": 3.25, "points": 41},
        {"t2_star": (42.3, "us", 1.1), "detuning": (0.0984, "MHz", 0.0001)},
        0.992,
        "DETUNING_TOO_LARGE",
    ),
    (
        "CheckRabi",
        "no drive",
        {"parameter": "drive_amplitude", "unit": "a.u.", "stop": 0.4, "step": 0.0133},
        {"pi_amplitude": (0.0095, "a.u.", 0.004), "oscillations": (10.0, "", None)},
        0.19,
        "NO_DRIVE",
    ),
]


@pytest.mark.parametrize(("task", "fault", "sweep", "outputs", "r2", "status"), CASES)
def test_the_repositorys_knowledge_maps_each_finding_to_its_code(task, fault, sweep, outputs, r2, status):
    directory = REPO / "task-knowledge" / task
    if not directory.is_dir():
        pytest.skip(f"no {directory}")
    reference = derive_reference(directory)
    ev = FitEvidence(
        task=task,
        sweep={**SWEEP, **sweep},
        outputs={n: {"value": v, "unit": u, "error": e} for n, (v, u, e) in outputs.items()},
        fit_model="model",
        r_squared=r2,
    )
    assert judged(reference, ev)[1].diagnosis.status == status


def test_the_repositorys_readout_knowledge_and_a_fidelity_near_a_half():
    directory = REPO / "task-knowledge" / "ReadoutClassification"
    if not directory.is_dir():
        pytest.skip(f"no {directory}")
    reference = derive_reference(directory)
    outputs = {"average_readout_fidelity": 0.573, "readout_fidelity_0": 0.598, "readout_fidelity_1": 0.549}
    ev = FitEvidence(
        task="ReadoutClassification", outputs={n: {"value": v, "error": 0.02} for n, v in outputs.items()}
    )
    got, reading = judged(reference, ev)
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment) == ("POOR_READOUT", "apparatus", "no_fit")
    assert json.loads(got.answers["parameter_extraction"].text) == outputs
    good = FitEvidence(
        task="ReadoutClassification",
        outputs={
            n: {"value": v} for n, v in {"readout_fidelity_0": 0.99, "readout_fidelity_1": 0.97}.items()
        },
    )
    assert judged(reference, good)[1].diagnosis.status == "SUCCESS"
