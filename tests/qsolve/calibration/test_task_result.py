"""A task result: its fields checked, and the evidence an evaluation may tell the model (never the fit)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from qsolve.calibration.task_result import Settings, Sweep, TaskResult, qid_of
from tests.qsolve.calibration.calibration_runs import made

EVIDENCE_KEYS = ["task", "target", "chip", "status", "message", "sweeps", "shots", "interval", "figures"]


def test_the_evidence_has_exactly_the_agreed_shape_and_no_fitted_outputs() -> None:
    result, _ = made("Q03")
    evidence = result.evidence()
    assert list(evidence) == EVIDENCE_KEYS
    assert evidence["target"] == "Q03"
    assert evidence["sweeps"] == [
        {"parameter": "delay", "unit": "us", "start": 0.0, "stop": 1000.0, "points": 31, "step": 1000.0 / 30}
    ]
    assert evidence["shots"] == 1000 and evidence["interval"] == {"value": 2000.0, "unit": "us"}
    assert evidence["figures"] == [result.figures[0].sha256]
    text = repr(evidence)
    assert "215" not in text and "t1" not in text and "SUCCESS" not in text


def test_a_result_without_a_sweep_or_an_interval_says_so() -> None:
    result, _ = made()
    bare = result.model_copy(update={"sweep": None, "settings": Settings(shots=2000)})
    assert bare.evidence()["sweeps"] == [] and bare.evidence()["interval"] is None


@pytest.mark.parametrize(
    "change",
    [
        {"qid": "q3"},
        {"qid": "Q3"},
        {"day": "2026-02-30"},
        {"day": "1 Dec 2026"},
        {"status": "done"},
        {"true_status": "short t1"},
        {"id": "not-hex"},
    ],
)
def test_fields_are_checked(change: dict) -> None:
    result, _ = made()
    with pytest.raises(ValidationError):
        TaskResult.model_validate(result.model_dump() | change)


def test_qids_of_qubits_and_couplings() -> None:
    assert qid_of(3) == "Q03" and qid_of(3, 4) == "Q03-Q04" and qid_of(112) == "Q112"
    result, _ = made("Q03-Q04")
    assert result.qid == "Q03-Q04"


def test_a_linear_sweep_knows_its_step_and_values() -> None:
    sweep = Sweep.linear("delay", "us", 0.0, 90.0, 4)
    assert sweep.step == 30.0 and sweep.values() == [0.0, 30.0, 60.0, 90.0]
    assert Sweep.linear("amplitude", "a.u.", 0.1, 0.1, 1).values() == [0.1]


def test_evaluable_means_completed_with_a_figure() -> None:
    assert made()[0].evaluable
    assert not made(status="failed")[0].evaluable
    assert not made(figure=None)[0].evaluable
