"""Reading answers as the benchmark's public scripts do: JSON, labels, fit labels, statuses."""

from __future__ import annotations

import pytest

from qsolve.evaluation.answers import (
    Diagnosis,
    classification,
    fit_assessment,
    is_complete,
    label,
    missing_keys,
    notes,
    parse_json,
    qcaleval_status_of,
    read_answers,
    reason,
    status_of,
    success_of,
    suggested_range,
)
from qsolve.evaluation.questions import QUESTION_KEYS

CRITERIA = {"SUCCESS": "a", "SHORT_T1": "b", "SHORT_T1_WINDOW": "c", "NO_SIGNAL": "d"}

# --- JSON -------------------------------------------------------------------------------------------


def test_json_the_whole_text():
    assert parse_json(' {"plot_type": "scatter"} ') == {"plot_type": "scatter"}
    assert parse_json("[1, 2]") == [1, 2]


def test_json_the_first_fenced_block():
    text = 'Here it is:\n```json\n{"t1": 45.2}\n```\nand another\n```\n{"t1": 1}\n```'
    assert parse_json(text) == {"t1": 45.2}
    assert parse_json('```\n{"a": [1]}\n```') == {"a": [1]}


def test_json_the_first_object_in_prose():
    assert parse_json('The values are {"t1": 45.2, "ok": true} as read. Also {"x": 1}.') == {
        "t1": 45.2,
        "ok": True,
    }
    assert parse_json('I think {"t1": 4} is right') == {"t1": 4}


def test_json_the_first_array_when_there_is_no_object():
    assert parse_json('Features: ["decay", "noise"] seen') == ["decay", "noise"]


def test_json_a_fence_that_is_not_json_falls_through_to_the_first_object():
    assert parse_json('```text\nnot json\n```\nbut then {"a": 1}') == {"a": 1}
    # only the first "{" is tried (from it to its own end, else to the last "}")
    assert parse_json('```json\n{broken\n```\nbut then {"a": 1}') is None
    assert parse_json('{"a": {"b": 1}} trailing }') == {"a": {"b": 1}}


def test_json_scalars_and_prose_are_not_json():
    assert parse_json("42") is None
    assert parse_json('"text"') is None
    assert parse_json("no json here {nope}") is None
    assert parse_json("") is None and parse_json(None) is None


# --- labels -----------------------------------------------------------------------------------------


def test_labels_bold_markers_and_a_trailing_period_are_stripped():
    assert label("Classification: Expected behavior.", "Classification") == "Expected behavior"
    assert label("**Classification:** **Anomalous behavior**.", "Classification") == "Anomalous behavior"
    assert label("**Assessment**: Reliable", "Assessment") == "Reliable"
    assert label("Intro text\nstatus:   SUCCESS..", "Status") == "SUCCESS"
    assert label("Classification:\n\nApparatus issue", "Classification") == "Apparatus issue"
    assert label("nothing", "Status") is None


def test_classification_values():
    assert classification("Classification: Expected behavior\nReason: fine") == "expected"
    assert classification("Classification: **Suboptimal parameters**.") == "suboptimal"
    assert classification("classification: sub-optimal") == "suboptimal"
    assert classification("Classification: Anomalous behavior (not the expected decay)") == "anomalous"
    assert classification("Classification: Apparatus issue") == "apparatus"
    assert classification("Classification: Unexpected") is None
    assert classification("Expected behavior\nThe decay is clean.") == "expected"
    assert classification("The plot looks like the expected behaviour of a qubit in general terms.") is None


def test_fit_unreliable_is_tested_before_reliable_and_no_fit_too():
    assert fit_assessment("Assessment: Unreliable") == "unreliable"
    assert fit_assessment("Assessment: **Reliable**.") == "reliable"
    assert fit_assessment("Assessment: No fit") == "no_fit"
    assert fit_assessment("Assessment: no_fit") == "no_fit"
    assert fit_assessment("Assessment: No fit, so not reliable either") == "unreliable"
    assert fit_assessment("Assessment: No fit (nothing reliable drawn)") == "no_fit"
    assert fit_assessment("Assessment: not reliable") == "unreliable"
    assert fit_assessment("Reliable.\nThe curve follows the data.") == "reliable"
    assert fit_assessment("Assessment: maybe") is None


def test_reasons():
    assert reason("Classification: Expected\nReason: **clean** decay.", "Classification") == "clean decay."
    assert reason("Assessment: Reliable\nThe fit follows.", "Assessment") == "The fit follows."
    assert reason("Just prose.", "Assessment") is None


# --- statuses ---------------------------------------------------------------------------------------


def test_status_from_the_status_label_bold_and_period_stripped():
    assert status_of("Status: **SHORT_T1**.\nNotes: early", CRITERIA) == "SHORT_T1"
    assert status_of("status: short_t1", CRITERIA) == "SHORT_T1"
    assert status_of("Status: No signal", CRITERIA) == "NO_SIGNAL"


def test_status_falls_back_to_classification_then_first_line_then_the_text():
    assert status_of("Classification: NO_SIGNAL\nflat", CRITERIA) == "NO_SIGNAL"
    assert status_of("**SHORT_T1**\nThe decay is gone early.", CRITERIA) == "SHORT_T1"
    assert status_of("I would call it NO_SIGNAL given the flat line.", CRITERIA) == "NO_SIGNAL"


def test_status_label_wins_over_codes_elsewhere():
    assert status_of("NO_SIGNAL is ruled out.\nStatus: SHORT_T1", CRITERIA) == "SHORT_T1"


def test_longer_codes_are_found_first():
    assert status_of("It looks like SHORT_T1_WINDOW to me", CRITERIA) == "SHORT_T1_WINDOW"
    # two codes named: ours reads none, QCalEval's the longer one
    assert status_of("Between SHORT_T1 and SHORT_T1_WINDOW, the latter", CRITERIA) is None
    assert (
        qcaleval_status_of("Between SHORT_T1 and SHORT_T1_WINDOW, the latter", CRITERIA) == "SHORT_T1_WINDOW"
    )


def test_only_allowed_codes_count():
    assert status_of("Status: BEATING\nalthough not a SUCCESS", CRITERIA) is None  # denied
    assert qcaleval_status_of("Status: BEATING\nalthough not a SUCCESS", CRITERIA) == "SUCCESS"
    assert status_of("Status: BEATING\nit is a SUCCESS", CRITERIA) == "SUCCESS"
    assert status_of("Status: BEATING", CRITERIA) is None
    assert status_of("Status: DAMPED", ["SUCCESS", "DAMPED"]) == "DAMPED"
    # without criteria the defaults: SUCCESS, SUBOPTIMAL, NO_SIGNAL, ANOMALOUS
    assert status_of("Status: SHORT_T1") is None
    assert status_of("Status: SUBOPTIMAL") == "SUBOPTIMAL"
    assert status_of("Status: ANOMALOUS", {}) == "ANOMALOUS"


def test_a_code_inside_a_longer_word_does_not_count():
    assert status_of("UNSUCCESSFUL attempt", CRITERIA) is None


def test_suggested_range_and_notes():
    text = "Status: SHORT_T1\nSuggested range: **(0, 40) [us]**.\nNotes: The decay ends\nbefore 20 us."
    assert suggested_range(text) == "(0, 40) [us]"
    assert notes(text) == "The decay ends\nbefore 20 us."
    assert suggested_range("Status: SUCCESS\nSuggested range: none") is None
    assert suggested_range("Status: SUCCESS\nSuggested_range: N/A") is None
    assert notes("Status: SUCCESS\nSuggested range: none\nClean decay.") == "Clean decay."


# --- the reading ------------------------------------------------------------------------------------

ANSWERS = {
    "technical_description": '```json\n{"plot_type": "scatter", "x_axis": {}, "y_axis": {}, '
    '"main_features": []}\n```',
    "experimental_conclusion": "Classification: Suboptimal parameters\nReason: the window is short.",
    "experimental_significance": "  T1 cannot be trusted yet; widen the sweep.  ",
    "fit_reliability": "Assessment: Unreliable\nReason: the fit rests on three points.",
    "parameter_extraction": 'Here: {"t1": 12.5}',
    "calibration_diagnosis": "Status: SHORT_T1\nSuggested range: (0, 40) [us]\nNotes: ends early.",
}


def test_read_answers_keeps_every_raw_answer_beside_the_reading():
    reading = read_answers(ANSWERS, criteria=CRITERIA)
    assert reading.answers == ANSWERS
    assert reading.questions == list(QUESTION_KEYS)
    d = reading.diagnosis
    assert d.description["plot_type"] == "scatter"
    assert d.outcome == d.classification == "suboptimal" and d.outcome_reason == "the window is short."
    assert d.significance == "T1 cannot be trusted yet; widen the sweep."
    assert d.fit_assessment == "unreliable" and d.fit_reason == "the fit rests on three points."
    assert d.parameters == {"t1": 12.5}
    assert (d.status, d.suggested_range, d.notes) == ("SHORT_T1", "(0, 40) [us]", "ends early.")
    assert d.success is False
    assert reading.complete and reading.missing_keys == []
    assert reading.allowed_statuses == list(CRITERIA)


def test_json_answers_that_are_not_json_are_kept_as_text():
    reading = read_answers(
        {"technical_description": "A scatter plot of a decay.", "parameter_extraction": "t1 is about 12 us"}
    )
    assert reading.diagnosis.description == "A scatter plot of a decay."
    assert reading.diagnosis.parameters == "t1 is about 12 us"
    assert reading.complete


def test_success_is_the_status_or_when_not_asked_the_outcome():
    asked_status = read_answers({"calibration_diagnosis": "Status: SUCCESS"}, criteria=CRITERIA)
    assert asked_status.diagnosis.success is True
    both = read_answers(
        {
            "calibration_diagnosis": "Status: SHORT_T1",
            "experimental_conclusion": "Classification: Expected behavior",
        },
        criteria=CRITERIA,
    )
    assert both.diagnosis.success is False
    outcome_only = read_answers({"experimental_conclusion": "Classification: Expected behavior"})
    assert outcome_only.diagnosis.success is True
    assert (
        read_answers({"experimental_conclusion": "Classification: Apparatus issue"}).diagnosis.success
        is False
    )
    assert read_answers({"fit_reliability": "Assessment: Reliable"}).diagnosis.success is None


def test_complete_and_missing_keys_over_the_questions_asked():
    reading = read_answers(
        {
            "fit_reliability": "Assessment: perhaps",
            "calibration_diagnosis": None,
            "experimental_significance": "ok",
        },
        questions=[
            "fit_reliability",
            "calibration_diagnosis",
            "experimental_significance",
            "parameter_extraction",
        ],
        criteria=CRITERIA,
    )
    assert reading.questions == [
        "experimental_significance",
        "fit_reliability",
        "parameter_extraction",
        "calibration_diagnosis",
    ]
    assert (
        reading.answers["calibration_diagnosis"] is None and reading.answers["parameter_extraction"] is None
    )
    assert not reading.complete
    assert reading.missing_keys == ["fit_reliability", "parameter_extraction", "calibration_diagnosis"]


def test_missing_keys_are_derived_from_a_stored_diagnosis():
    stored = Diagnosis.model_validate({"status": "SUCCESS", "outcome": "expected"})
    assert missing_keys(stored, ["calibration_diagnosis", "experimental_conclusion"]) == []
    assert is_complete(stored, ["calibration_diagnosis"])
    assert missing_keys(stored, QUESTION_KEYS) == [
        "technical_description",
        "experimental_significance",
        "fit_reliability",
        "parameter_extraction",
    ]
    assert success_of(stored, ["experimental_conclusion"]) is True


# --- refusals and negations (issue 25, item 1) ---------------------------------------------------------

#: answers that state no status, in each form a status is read from: the label, Classification:, the
#: first line, free text, a JSON object (fenced and bare)
UNSTATED = [
    "I cannot tell whether this is a SUCCESS from this figure.",
    "This is not SWEEP_TOO_SHORT.",
    "Status: I cannot tell whether this is a SUCCESS",
    "Status: not SUCCESS",
    "Status: **SUCCESS?**",
    "Status: SUCCESS is not what this shows",
    "Status: maybe SHORT_T1\nNotes: hard to say",
    "Classification: not SHORT_T1",
    "NOT SUCCESS\nThe decay is cut short.",
    "It could be SHORT_T1, or perhaps not.",
    "Hard to say; possibly NO_SIGNAL.",
    "The plot is unclear. It is not NO_SIGNAL.",
    "It is either SUCCESS or SHORT_T1.",
    '```json\n{"status": "I cannot tell", "suggested_range": null, "notes": "blurred"}\n```',
    '{"status": "not SUCCESS", "notes": "no decay"}',
    '{"status": "SUCCESS?", "notes": "unclear"}',
]


@pytest.mark.parametrize("text", UNSTATED)
def test_a_refusal_or_a_negation_reads_as_no_status_and_no_success(text: str) -> None:
    criteria = CRITERIA | {"SWEEP_TOO_SHORT": "e"}
    assert status_of(text, criteria) is None
    reading = read_answers({"calibration_diagnosis": text}, criteria=criteria)
    assert reading.diagnosis.status is None and reading.diagnosis.success is None
    assert not reading.complete and reading.missing_keys == ["calibration_diagnosis"]
    assert reading.answers["calibration_diagnosis"] == text  # kept as returned


def test_qcaleval_reading_is_kept_beside_ours() -> None:
    criteria = CRITERIA | {"SWEEP_TOO_SHORT": "e"}
    refusal = read_answers(
        {"calibration_diagnosis": "I cannot tell whether this is a SUCCESS from this figure."},
        criteria=criteria,
    ).diagnosis
    assert refusal.status is None and refusal.qcaleval_status == "SUCCESS"  # the benchmark's script's way
    negation = read_answers({"calibration_diagnosis": "This is not SWEEP_TOO_SHORT."}, criteria=criteria)
    assert negation.diagnosis.qcaleval_status == "SWEEP_TOO_SHORT" and negation.diagnosis.success is None
    plain = read_answers({"calibration_diagnosis": "Status: SHORT_T1"}, criteria=CRITERIA).diagnosis
    assert plain.status == plain.qcaleval_status == "SHORT_T1" and plain.success is False


STATED = [
    ("Status: SHORT_T1", "SHORT_T1"),
    ("Status: **SUCCESS**.\nNotes: nothing is wrong, no change needed", "SUCCESS"),
    ("Classification: NO_SIGNAL", "NO_SIGNAL"),
    ("SHORT_T1\nThe decay ends early.", "SHORT_T1"),
    ("The decay ends well inside the window, so this is SHORT_T1.", "SHORT_T1"),
    ("SHORT_T1. It is not a SUCCESS.", None),  # two codes named
    ('```json\n{"status": "SHORT_T1", "suggested_range": "(0, 40) [us]", "notes": "early"}\n```', "SHORT_T1"),
]


@pytest.mark.parametrize(("text", "status"), STATED)
def test_a_status_stated_plainly_is_read_in_each_form(text: str, status: str | None) -> None:
    assert status_of(text, CRITERIA) == status


def test_outcome_and_fit_refusals_read_as_nothing() -> None:
    assert classification("Classification: Not expected") is None
    assert classification("Classification: I cannot tell whether it is expected") is None
    assert classification("I cannot tell.") is None
    assert fit_assessment("Assessment: I cannot say whether it is reliable") is None
    assert fit_assessment("Assessment: unclear, maybe reliable") is None
    assert fit_assessment("Assessment: not reliable") == "unreliable"
    d = read_answers({"experimental_conclusion": "Classification: Not expected"}).diagnosis
    assert d.outcome is None and d.success is None


def test_a_fenced_json_status_keeps_its_range_and_notes() -> None:
    text = '```json\n{"status": "SHORT_T1", "suggested_range": "(0, 40) [us]", "notes": "ends early"}\n```'
    d = read_answers({"calibration_diagnosis": text}, criteria=CRITERIA).diagnosis
    assert (d.status, d.suggested_range, d.notes) == ("SHORT_T1", "(0, 40) [us]", "ends early")
    listed = '{"Status": "SUCCESS", "Suggested range": [0, 400], "notes": null}'
    d = read_answers({"calibration_diagnosis": listed}, criteria=CRITERIA).diagnosis
    assert (d.status, d.suggested_range, d.notes) == ("SUCCESS", "(0, 400)", None)
    bounded = '{"status": "SHORT_T1", "suggested_range": {"min": 0, "max": 40, "unit": "us"}}'
    assert read_answers({"calibration_diagnosis": bounded}, criteria=CRITERIA).diagnosis.suggested_range == (
        "(0, 40) [us]"
    )


# --- found by the independent test of issue 25: doubts after the code, two codes, a refusal beside one --

#: answers the first reading still read as a verdict they do not state
UNSTATED_FOUND = [
    "Status: SUCCESS is unlikely",  # a doubt after the code
    "Status: SUCCESS — I am not sure",
    "success, I guess",
    "It's hardly a SUCCESS.",
    "Hard to say. SUCCESS",  # the doubt in the sentence before
    "SUCCESS. Not really though.",  # a denial in the sentence after
    "the answer is SUCCESS\nbut I'm not sure",
    "I'm sorry, I can't help with that. SUCCESS",  # a refusal beside a code
    "<think>The answer is SUCCESS.</think> I cannot decide.",
    "Status: I refuse to answer.\nSUCCESS",
    "Status: N/A\nSUCCESS",  # the label states none
    '{"status": ["SUCCESS", "SWEEP_TOO_SHORT"]}',  # two codes
    '{"status": "SUCCESS|SWEEP_TOO_SHORT"}',
    "Status: SUCCESS / SHORT_T1",
    "Status: SUCCESS\nStatus: SWEEP_TOO_SHORT",  # two labelled lines disagree
]


@pytest.mark.parametrize("text", UNSTATED_FOUND)
def test_a_doubt_anywhere_two_codes_or_a_refusal_read_as_no_status(text: str) -> None:
    criteria = CRITERIA | {"SWEEP_TOO_SHORT": "e"}
    assert status_of(text, criteria) is None
    d = read_answers({"calibration_diagnosis": text}, criteria=criteria).diagnosis
    assert d.status is None and d.success is None
    assert d.qcaleval_status is not None  # the benchmark's way still reads a code: kept beside ours


# --- found by the audit of issue 25: a doubt after the code in words the first lists missed -------------

#: answers read as SUCCESS that offer it without stating it
UNSTATED_AUDIT = [
    "Status: SUCCESS cannot be ruled out",
    "Status: SUCCESS cannot be excluded",
    "Status: SUCCESS can not be excluded",
    "Status: SUCCESS, I think",
    "Status: SUCCESS seems plausible",
    "Status: SUCCESS (can't be sure)",
    "Status: SUCCESS (can’t be sure)",
    "Status: SUCCESS, I believe",
    "Status: presumably SUCCESS",
    "I think this is SUCCESS.",
    '{"status": "SUCCESS, I suppose"}',
]


@pytest.mark.parametrize("text", UNSTATED_AUDIT)
def test_a_status_offered_in_doubt_after_the_code_reads_as_no_status(text: str) -> None:
    criteria = CRITERIA | {"SWEEP_TOO_SHORT": "e"}
    assert status_of(text, criteria) is None
    d = read_answers({"calibration_diagnosis": text}, criteria=criteria).diagnosis
    assert d.status is None and d.success is None
    assert d.qcaleval_status == "SUCCESS"  # the benchmark's way reads it: kept beside ours


def test_a_doubt_on_the_status_line_unreads_it_and_one_in_the_notes_does_not() -> None:
    """The rule the doubt words keep: a word of doubt anywhere in the ``Status:`` value unreads it,
    whatever it is about ("The fit may be good" did before this audit, so "The fit seems good" does
    too); on a line of its own (``Notes:``) it is about something else, and the status stands. A
    reasoning model's ``<think>`` tags are not the word "think"."""
    assert status_of("Status: SUCCESS. The fit may be good", CRITERIA) is None
    assert status_of("Status: SUCCESS. The fit seems good", CRITERIA) is None
    assert status_of("Status: SUCCESS\nNotes: the fit seems good, I think", CRITERIA) == "SUCCESS"
    assert status_of("Status: SUCCESS\nSuggested range: none\nNotes: plausible T1", CRITERIA) == "SUCCESS"
    assert status_of("<think>The decay is complete.</think>\nSUCCESS", CRITERIA) == "SUCCESS"
    assert status_of("<think>I think it is complete.</think>\nSUCCESS", CRITERIA) is None
    assert status_of("Status: SHORT_T1\nNotes: cannot be longer than 20 us", CRITERIA) == "SHORT_T1"


#: fit assessments that name a verdict only to deny it (issue 25's audit: the first three read as the
#: verdict they negate)
FIT_UNSTATED = [
    "Assessment: Not unreliable",
    "Assessment: Unreliable is too strong",
    "Assessment: not a no fit",
    "Assessment: Unreliable isn't fair",
    "Assessment: Reliable is not right",
    "Assessment: The fit isn't reliable",  # read as reliable before
    "Assessment: No reliable fit",  # read as reliable before
    "Not unreliable\nThe curve follows the points.",  # a bare first line, alike
]


@pytest.mark.parametrize("text", FIT_UNSTATED)
def test_a_fit_verdict_negated_before_or_denied_after_reads_as_no_assessment(text: str) -> None:
    assert fit_assessment(text) is None
    reading = read_answers({"fit_reliability": text})
    assert reading.diagnosis.fit_assessment is None and reading.missing_keys == ["fit_reliability"]


def test_a_plain_fit_verdict_beside_a_negation_about_something_else_still_reads() -> None:
    assert fit_assessment("Assessment: not reliable") == "unreliable"  # the benchmark's own form
    assert fit_assessment("Assessment: The fit is not reliable") == "unreliable"
    assert fit_assessment("Assessment: No fit, so not reliable either") == "unreliable"
    assert fit_assessment("Assessment: Unreliable, not enough points") == "unreliable"
    assert fit_assessment("Assessment: Unreliable: the residuals are not flat") == "unreliable"
    assert fit_assessment("Assessment: Reliable, no outliers") == "reliable"
    assert fit_assessment("Assessment: There is no fit") == "no_fit"
    assert fit_assessment("Assessment: No fit (nothing reliable drawn)") == "no_fit"


def test_a_plain_status_still_reads_beside_notes_that_name_other_codes() -> None:
    criteria = CRITERIA | {"SWEEP_TOO_SHORT": "e"}
    text = "Status: SWEEP_TOO_SHORT\nSuggested range: (0, 300) [us]\nNotes: not a SUCCESS; maybe more points"
    assert status_of(text, criteria) == "SWEEP_TOO_SHORT"
    assert status_of("Status: SHORT_T1\nStatus: SHORT_T1", criteria) == "SHORT_T1"
    assert status_of("status: sweep_too_short", criteria) == "SWEEP_TOO_SHORT"
    assert status_of('{"status": "SUCCESS", "confidence": 0.9, "extra": [1]}', criteria) == "SUCCESS"


def test_an_echoed_prompt_reads_as_nothing() -> None:
    """A model that echoes its prompt repeats each template's reply form, ``Classification: <Expected
    behavior | ...>`` and ``Assessment: <Reliable | Unreliable | No fit>``: it picked nothing (found by
    the independent test of issue 25: it read as expected and unreliable, success true without the
    status question)."""
    conclusion = (
        "Classify the outcome of this experiment. Pick exactly one:\n- Expected behavior: ...\n"
        "Reply in this form:\n"
        "Classification: <Expected behavior | Suboptimal parameters | Anomalous behavior | Apparatus issue>\n"
        "Reason: <one or two sentences>"
    )
    fit = "Reply in this form:\nAssessment: <Reliable | Unreliable | No fit>\nReason: <one or two sentences>"
    status = "Reply in this form:\nStatus: <SUCCESS | SHORT_T1>\nSuggested range: <the range, or none>"
    assert classification(conclusion) is None
    assert fit_assessment(fit) is None
    assert status_of(status, CRITERIA) is None
    d = read_answers({"experimental_conclusion": conclusion, "fit_reliability": fit}).diagnosis
    assert (d.outcome, d.fit_assessment, d.success) == (None, None, None)
    assert classification("Classification: Expected behavior | Anomalous behavior") is None


@pytest.mark.parametrize(
    "task", ["CheckT1", "CheckRabi", "CheckRamsey", "CheckT2Echo", "ReadoutClassification"]
)
def test_each_tasks_own_prompts_echoed_back_read_as_no_verdict(task: str) -> None:
    from pathlib import Path

    from qsolve.evaluation.prompts import preview_task

    folder = Path(__file__).resolve().parents[3] / "task-knowledge" / task
    built = preview_task(folder)
    reading = read_answers(built.preview.prompts, criteria=built.reference.criteria)
    d = reading.diagnosis
    assert (d.status, d.outcome, d.fit_assessment, d.success) == (None, None, None, None)
    assert {"calibration_diagnosis", "experimental_conclusion", "fit_reliability"} <= set(
        reading.missing_keys
    )


def test_an_answer_nested_past_the_stack_is_kept_as_text_not_a_crash() -> None:
    """``[[[[...]]]]`` 5000 deep made json raise RecursionError out of read_answers, so an answer that
    arrived failed its record (found by the independent test of issue 25)."""
    deep = "[" * 5000 + "]" * 5000
    d = read_answers({"technical_description": deep, "parameter_extraction": "{" * 5000}).diagnosis
    assert d.description == deep and d.parameters == "{" * 5000
    assert parse_json("Here: " + deep) is None


def test_two_statuses_read_as_none_even_when_the_task_allows_only_one() -> None:
    """CheckRabi allows SUCCESS and NO_DRIVE, not SWEEP_TOO_SHORT: an answer naming both SUCCESS and
    SWEEP_TOO_SHORT states two statuses (it read as SUCCESS on a Rabi result, None on a T1 one)."""
    rabi = {"SUCCESS": "a", "NO_DRIVE": "b"}
    assert status_of('{"status": ["SUCCESS", "SWEEP_TOO_SHORT"]}', rabi) is None
    assert status_of("Status: SUCCESS / SWEEP_TOO_SHORT", rabi) is None
    assert status_of("Status: NO_DRIVE", rabi) == "NO_DRIVE"
    assert status_of("Status: SUCCESS\nNotes: no NO_DRIVE and no SWEEP_TOO_SHORT", rabi) == "SUCCESS"


def test_an_echoed_range_placeholder_is_no_suggested_range() -> None:
    text = (
        "Status: <SUCCESS | SHORT_T1>\nSuggested range: <the range, or none>\nNotes: <one or two sentences>"
    )
    d = read_answers({"calibration_diagnosis": text}, criteria=CRITERIA).diagnosis
    assert d.status is None and d.suggested_range is None


def test_two_labelled_lines_that_disagree_state_no_outcome_and_no_assessment() -> None:
    assert classification("Classification: Expected behavior\nClassification: Anomalous behavior") is None
    assert fit_assessment("Assessment: Reliable\nReason: ...\nAssessment: Unreliable") is None
    assert classification("Classification: Expected behavior\nClassification: Expected") == "expected"
    assert fit_assessment("Assessment: No fit\nAssessment: no_fit") == "no_fit"


# --- parameters and their units -------------------------------------------------------------------------


def _schema():
    from qsolve.evaluation.knowledge import ParameterSpec

    return {
        "t1": ParameterSpec(type="float", description="T1 in microseconds, the decay constant"),
        "decay_complete": ParameterSpec(type="true | false", description="whether the decay levels off"),
        "points": ParameterSpec(type="int", description="the number of delays, an integer"),
    }


@pytest.mark.parametrize(
    ("text", "t1"),
    [
        ('{"t1": 49.1}', 49.1),  # a bare number: in the description's unit
        ('{"t1": "49.1 µs"}', 49.1),
        ('{"t1": "0.0491 ms"}', 49.1),
        ('```json\n{"t1": {"value": 49100, "unit": "ns"}}\n```', 49.1),
        ('{"t1_ns": 49100}', 49.1),
        ('{"t1 (ms)": 0.0491}', 49.1),
        ('{"t1": 49.1, "t1_ns": 1}', 49.1),  # the name alone wins
        ('{"t1": "49.1 ± 2.0 μs"}', 49.1),
        ('{"t1": "5 MHz"}', None),  # a frequency is no time
        ('{"t1": "49.1 furlongs"}', None),
        ('{"t1": "about fifty microseconds"}', None),
        ('{"t1": null}', None),
        ("{}", None),
    ],
)
def test_a_parameter_is_read_in_the_unit_its_description_names(text, t1):
    values = read_answers({"parameter_extraction": text}, parameters=_schema()).diagnosis.values
    assert values["t1"].model_dump() == {"value": t1, "unit": "us"}


def test_a_true_false_or_whole_parameter_reads_only_as_one():
    read = read_answers(
        {"parameter_extraction": '{"t1": 49.1, "decay_complete": "yes", "points": 30.5}'},
        parameters=_schema(),
    ).diagnosis
    assert {k: v.value for k, v in read.values.items()} == {
        "t1": 49.1,
        "decay_complete": None,
        "points": None,
    }
    read = read_answers(
        {"parameter_extraction": '{"decay_complete": true, "points": 31}'}, parameters=_schema()
    ).diagnosis
    assert (read.values["decay_complete"].value, read.values["points"].value) == (True, 31)
    assert read.parameters == {"decay_complete": True, "points": 31}  # the JSON as given, beside


def test_without_a_schema_each_key_in_the_unit_it_names():
    read = read_answers({"parameter_extraction": '{"t1_us": 49.1, "f (GHz)": 5.1, "ok": true, "n": 3}'})
    assert {k: v.model_dump() for k, v in read.diagnosis.values.items()} == {
        "t1": {"value": 49.1, "unit": "us"},
        "f": {"value": 5.1, "unit": "GHz"},
        "ok": {"value": True, "unit": None},
        "n": {"value": 3.0, "unit": None},
    }


def test_no_values_without_a_json_object():
    assert read_answers({"parameter_extraction": "t1 is about 12 us"}).diagnosis.values is None
    assert read_answers({"calibration_diagnosis": "Status: SUCCESS"}).diagnosis.values is None
