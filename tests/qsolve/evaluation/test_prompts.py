"""The six requests and the preview: background, context line, figure position, examples, ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qsolve.evaluation.examples import examples_of
from qsolve.evaluation.knowledge import derive_reference
from qsolve.evaluation.prompts import (
    MAX_FIGURES,
    ImagePart,
    TextPart,
    context_line,
    evaluation_requests,
    preview,
    range_format,
)
from qsolve.evaluation.questions import DEFAULT_STATUSES, QUESTION_KEYS

TASK = """---
name: CheckT1
---
# CheckT1

Measures the energy relaxation time T1.

## Expected plot

An exponential decay. A good result shows the decay reaching the baseline.

## Common failures

- Short T1 (<20 μs) — the decay ends within 20 μs; rerun
- Window too short: the curve has not flattened

## Parameters to extract

- t1: T1 from the fit, in μs
- decay_complete: true or false

## Recovery

RECOVERY_TEXT
"""

EVIDENCE = {
    "task": "CheckT1",
    "target": "Q03",
    "chip": "fake:fez",
    "status": "completed",
    "message": "T1 measured\nwith 51 delays",
    "sweeps": [
        {"parameter": "time_range", "unit": "us", "start": 0.0, "stop": 200.0, "points": 51, "step": 4.0}
    ],
    "shots": 1024,
    "interval": {"value": 300.0, "unit": "us"},
    "figures": ["a" * 64],
    # what an evaluation must never tell the model, were a caller to pass it
    "outputs": {"t1": {"value": 215.3, "unit": "us"}},
    "true_status": "SHORT_T1",
}
FIG = "f" * 64


@pytest.fixture
def reference():
    return derive_reference(TASK, task="CheckT1")


def by_key(requests):
    return {r.question: r for r in requests}


def test_six_single_turn_requests_without_a_system_prompt(reference):
    requests = evaluation_requests(reference, EVIDENCE, [FIG])
    assert [r.question for r in requests] == list(QUESTION_KEYS)
    for r in requests:
        messages = r.openai_messages(lambda image: f"data:image/png;base64,{image.sha256}")
        assert [m["role"] for m in messages] == ["user"]
        kinds = [p["type"] for p in messages[0]["content"]]
        assert kinds.count("image_url") == 1 and "text" in kinds


def test_the_background_is_in_every_prompt_but_technical_description(reference):
    prompts = {r.question: r.prompt() for r in evaluation_requests(reference, EVIDENCE, [FIG])}
    assert reference.background.startswith("This is a CheckT1 experiment")
    assert reference.background not in prompts["technical_description"]
    assert "This is a CheckT1" not in prompts["technical_description"]
    for key in QUESTION_KEYS[1:]:
        assert prompts[key].startswith(reference.background)
    assert all("RECOVERY_TEXT" not in p for p in prompts.values())


def test_the_context_line_says_the_evidence_and_never_the_fitted_outputs():
    line = context_line(EVIDENCE)
    assert line == (
        "Experiment context: task CheckT1; target Q03; status completed; "
        "sweep time_range from 0 to 200 us, 51 points, step 4 us; 1024 shots; interval 300 us; "
        'message "T1 measured with 51 delays"'
    )
    assert "215.3" not in line and "SHORT_T1" not in line and "fake:fez" not in line


def test_the_context_line_leaves_out_what_the_evidence_lacks():
    line = context_line({"task": "CheckRabi", "target": "Q01-Q02", "sweeps": [], "interval": None})
    assert line == "Experiment context: task CheckRabi; target Q01-Q02"
    two = context_line(
        {
            "task": "T",
            "target": "Q00",
            "sweeps": [
                {"parameter": "amp", "unit": "", "start": 0, "stop": 0.5, "points": 11, "step": 0.05},
                {"parameter": "f", "unit": "GHz", "start": 4.9, "stop": 5.1, "points": 3, "step": 0.1},
            ],
        }
    )
    assert "sweep amp from 0 to 0.5, 11 points, step 0.05; sweep f from 4.9 to 5.1 GHz, 3 points" in two


def test_a_derived_step_is_written_to_four_significant_figures():
    line = context_line(
        {
            "task": "CheckT1",
            "target": "Q00",
            "sweeps": [
                {"parameter": "delay", "unit": "us", "start": 0, "stop": 250, "points": 31, "step": 250 / 30},
                {"parameter": "amp", "unit": "", "start": 0, "stop": 0.4, "points": 31, "step": 0.4 / 30},
            ],
        }
    )
    assert "sweep delay from 0 to 250 us, 31 points, step 8.333 us" in line
    assert "step 0.01333;" in line or line.endswith("step 0.01333")


def test_every_prompt_has_the_context_line_and_the_figure_after_it(reference):
    for r in evaluation_requests(reference, EVIDENCE, [FIG]):
        text = r.prompt()
        assert text.count("[figure]") == 1
        assert text.index(context_line(EVIDENCE)) < text.index("[figure]")
        parts = r.parts()
        image_at = next(i for i, p in enumerate(parts) if isinstance(p, ImagePart))
        assert isinstance(parts[image_at - 1], TextPart) and parts[image_at - 1].text.endswith(
            context_line(EVIDENCE)
        )
        assert parts[image_at] == ImagePart(sha256=FIG, role="judged")
        assert isinstance(parts[-1], TextPart)  # the question follows the figure
        assert "<image>" not in "".join(p.text for p in parts if isinstance(p, TextPart))


def test_the_evidence_figures_are_the_default_and_at_most_four_the_last_judged(reference):
    (r,) = evaluation_requests(reference, EVIDENCE, keys=["fit_reliability"])
    assert [i.sha256 for i in r.images] == ["a" * 64]
    figures = [str(i) * 64 for i in range(6)]
    (r,) = evaluation_requests(reference, EVIDENCE, figures, keys=["fit_reliability"])
    assert [i.sha256 for i in r.images] == figures[-1:]  # one by default (max_figures, issue 38)
    (r,) = evaluation_requests(reference, EVIDENCE, figures, keys=["fit_reliability"], max_figures=4)
    assert len(r.images) == MAX_FIGURES
    assert [i.sha256 for i in r.images] == figures[-4:]
    assert [i.role for i in r.images] == ["reference", "reference", "reference", "judged"]
    text = r.prompt()
    assert text.index("for reference") < text.index("The figure to judge:\n[figure]")
    with pytest.raises(ValueError, match="no figure"):
        evaluation_requests(reference, EVIDENCE, [])


def test_the_diagnosis_offers_the_criteria_success_first_and_the_range_from_the_sweep(reference):
    text = by_key(evaluation_requests(reference, EVIDENCE, [FIG]))["calibration_diagnosis"].prompt()
    rules = [line for line in text.splitlines() if line.startswith("- ")]
    assert rules == [
        "- SUCCESS: shows the decay reaching the baseline.",
        "- SHORT_T1: the decay ends within 20 μs",
        "- WINDOW_TOO_SHORT: the curve has not flattened",
    ]
    assert "written as (<min time_range>, <max time_range>) [us]." in text
    assert "Status: <SUCCESS | SHORT_T1 | WINDOW_TOO_SHORT>" in text


def test_range_format_the_knowledge_states_wins_and_without_a_sweep_is_generic(reference):
    assert range_format(reference, EVIDENCE) == "(<min time_range>, <max time_range>) [us]"
    stated = reference.model_copy(update={"range_format": "(<min amp>, <max amp>) [a.u.]"})
    assert range_format(stated, EVIDENCE) == "(<min amp>, <max amp>) [a.u.]"
    no_unit = dict(EVIDENCE, sweeps=[{**EVIDENCE["sweeps"][0], "unit": ""}])
    assert range_format(reference, no_unit) == "(<min time_range>, <max time_range>)"
    assert range_format(reference, dict(EVIDENCE, sweeps=[])) == "(<min PARAM>, <max PARAM>) [UNIT]"


def test_without_criteria_the_generic_statuses_and_parameters(reference):
    bare = derive_reference("- an old entry in bullets\n", task="Old")
    assert bare.old_format and bare.criteria == {}
    prompts = {r.question: r.prompt() for r in evaluation_requests(bare, EVIDENCE, [FIG])}
    diagnosis = prompts["calibration_diagnosis"]
    assert f"Status: <{' | '.join(DEFAULT_STATUSES)}>" in diagnosis
    assert list(DEFAULT_STATUSES) == ["SUCCESS", "SUBOPTIMAL", "NO_SIGNAL", "ANOMALOUS"]
    assert "states no statuses of its own" in diagnosis
    assert "the parameters it determines" in prompts["parameter_extraction"]
    assert prompts["experimental_conclusion"].startswith("- an old entry in bullets")


def test_the_extraction_question_lists_the_schema(reference):
    text = by_key(evaluation_requests(reference, EVIDENCE, [FIG]))["parameter_extraction"].prompt()
    assert '- "t1" (float): T1 from the fit, in μs' in text
    assert '- "decay_complete" (true | false): true or false' in text


def test_the_callers_question_is_one_more_point_of_the_significance_question(reference):
    requests = evaluation_requests(reference, EVIDENCE, [FIG], question="Is T1 stable\nover the day?")
    text = by_key(requests)["experimental_significance"].prompt()
    assert "- Is T1 stable over the day?\nReply in one short paragraph." in text
    assert all(
        "Is T1 stable" not in r.prompt() for r in requests if r.question != "experimental_significance"
    )


def test_an_image_tag_in_inserted_text_does_not_become_an_image():
    r = derive_reference("Measures <image> T1.\n\n## Expected plot\n\nA <IMAGE> decay.\n", task="T")
    evidence = dict(EVIDENCE, message="see <image>")
    for request in evaluation_requests(r, evidence, [FIG]):
        assert len(request.images) == 1 and request.text.count("<image>") == 1
        assert request.prompt().count("[figure]") == 1


# --- examples ---------------------------------------------------------------------------------------

HEAD = "---\ntype: qdash.calibration-example\nprofile: qdash-calibration/v1\n"


@pytest.fixture
def examples(tmp_path: Path):
    folder = tmp_path / "examples"
    folder.mkdir()
    files = {
        "a-clean": "title: Clean decay\noutcome: expected\nstatus: SUCCESS\n---\n"
        "The decay flattens by 150 us.\n",
        "b-labels-only": "title: Just an outcome\noutcome: anomalous\nverdict: agree\n---\n"
        "A jump mid-sweep.\n",
        "c-short": "title: Short\nstatus: SHORT_T1\nsuggested_range: '(0, 40) [us]'\nparameters: {t1: 12.5}\n"
        "---\nGone in 20 us.\n",
        "d-params": "parameters: {t1: 99}\n---\n",
    }
    for slug, text in files.items():
        (folder / f"{slug}.md").write_text(HEAD + text, encoding="utf-8")
        (folder / f"{slug}.png").write_bytes(slug.encode())
    return examples_of(tmp_path)


def test_examples_are_shown_only_with_examples_and_only_to_three_questions(reference, examples):
    without = evaluation_requests(reference, EVIDENCE, [FIG], examples=examples)
    assert all(len(r.images) == 1 for r in without)
    requests = by_key(evaluation_requests(reference, EVIDENCE, [FIG], with_examples=True, examples=examples))
    for key in ("technical_description", "experimental_conclusion", "fit_reliability"):
        assert len(requests[key].images) == 1
    assert requests["experimental_significance"].examples() == ["a-clean", "b-labels-only", "c-short"]
    assert requests["parameter_extraction"].examples() == ["c-short"]
    assert requests["calibration_diagnosis"].examples() == ["a-clean", "c-short"]
    for key in ("experimental_significance", "parameter_extraction", "calibration_diagnosis"):
        assert requests[key].images[-1].role == "judged"  # the examples come before the figure judged
        assert all(i.role == "example" for i in requests[key].images[:-1])


def test_the_examples_layout(reference, examples):
    requests = by_key(evaluation_requests(reference, EVIDENCE, [FIG], with_examples=True, examples=examples))
    significance = requests["experimental_significance"].prompt()
    assert 'Scenario "Clean decay":\n[figure]\nThe decay flattens by 150 us.' in significance
    assert 'Scenario "Just an outcome":\n[figure]\nA jump mid-sweep.' in significance
    extraction = requests["parameter_extraction"].prompt()
    assert "[figure]\nExtracted parameters: " + json.dumps({"t1": 12.5}) in extraction
    diagnosis = requests["calibration_diagnosis"].prompt()
    assert "[figure]\nStatus: SUCCESS\nSuggested range: none" in diagnosis
    assert "[figure]\nStatus: SHORT_T1\nSuggested range: (0, 40) [us]" in diagnosis
    assert diagnosis.index("Status: SHORT_T1") < diagnosis.index(context_line(EVIDENCE))
    image = requests["calibration_diagnosis"].images[0]
    assert image.path and image.path.endswith("a-clean.png") and image.media_type == "image/png"


# --- the preview ------------------------------------------------------------------------------------


def test_the_preview_shows_six_prompts_with_figure_placeholders_size_hash_and_examples(reference, examples):
    shown = preview(reference, with_examples=True, examples=examples, model="nvidia/Ising-Calibration")
    assert list(shown.prompts) == list(QUESTION_KEYS)
    assert all("[figure]" in p and "<image>" not in p for p in shown.prompts.values())
    assert shown.knowledge_chars == reference.knowledge_chars
    assert shown.knowledge_sha256 == reference.knowledge_sha256
    assert shown.model == "nvidia/Ising-Calibration"
    assert [(e.id, e.questions) for e in shown.examples] == [
        ("a-clean", ["experimental_significance", "calibration_diagnosis"]),
        ("b-labels-only", ["experimental_significance"]),
        ("c-short", ["experimental_significance", "parameter_extraction", "calibration_diagnosis"]),
    ]
    assert "Experiment context: task CheckT1; [" in shown.prompts["fit_reliability"]
    assert "(<min PARAM>, <max PARAM>) [UNIT]" in shown.prompts["calibration_diagnosis"]
    assert preview(reference).examples == []


def test_the_preview_is_the_evaluations_prompts(reference):
    shown = preview(reference, evidence=EVIDENCE, figures=2)
    requests = evaluation_requests(reference, EVIDENCE, ["1" * 64, "2" * 64], max_figures=2)
    assert shown.prompts == {r.question: r.prompt() for r in requests}


def test_knowledge_preview_command(tmp_path: Path, capsys):
    import argparse

    from qsolve.cli.knowledge import add_commands

    task = tmp_path / "CheckT1"
    (task / "examples").mkdir(parents=True)
    (task / "task.md").write_text(TASK, encoding="utf-8")
    (task / "examples" / "a.md").write_text(HEAD + "status: SUCCESS\n---\nFine.\n", encoding="utf-8")
    (task / "examples" / "a.png").write_bytes(b"png")
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["knowledge", "preview", str(task), "--with-examples", "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["prompts"]) == list(QUESTION_KEYS)
    assert [e["id"] for e in data["examples"]] == ["a"]
    assert data["knowledge_sha256"] == derive_reference(task).knowledge_sha256
    args = parser.parse_args(["knowledge", "preview", str(task)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "=== calibration_diagnosis ===" in out and "examples used: none" in out
