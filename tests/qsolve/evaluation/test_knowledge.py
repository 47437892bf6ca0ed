"""The reference derived from task.md: every rule of docs/calibration.md, each on its own fixture."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from qsolve.evaluation.knowledge import (
    OLD_FORMAT_LIMIT,
    KnowledgeError,
    derive_reference,
    read_task,
    reference_bytes,
    sentences,
    status_code,
)


def ref(body: str, task: str = "CheckT1"):
    return derive_reference(body, task=task)


# --- the background ---------------------------------------------------------------------------------


def test_background_joins_intro_and_expected_plot_without_doubling_the_period():
    r = ref("# CheckT1\n\nMeasures T1.\n\n## Expected plot\n\nAn exponential decay.\n")
    assert r.background == "This is a CheckT1 experiment: Measures T1. An exponential decay."


def test_a_period_is_added_after_an_intro_that_has_none():
    r = ref("Measures T1\n\n## Expected plot\n\nAn exponential decay\n")
    assert r.background == "This is a CheckT1 experiment: Measures T1. An exponential decay"


def test_only_the_first_paragraph_of_intro_and_expected_plot_and_lines_are_joined():
    r = ref(
        "# Title\n\nFirst line of the intro\ncontinues here.\n\nSecond intro paragraph.\n\n"
        "## Expected plot\n\n![decay](decay.png)\n\nA decay\nover the sweep.\n\nNot this one.\n"
    )
    assert r.background == (
        "This is a CheckT1 experiment: First line of the intro continues here. A decay over the sweep."
    )
    assert "Second" not in r.background and "Not this" not in r.background


def test_intro_only_and_expected_only():
    assert ref("Measures T1.\n").background == "This is a CheckT1 experiment: Measures T1."
    assert ref("## Expected plot\n\nA decay.\n").background == "This is a CheckT1 experiment: A decay."


def test_a_section_that_opens_with_a_bullet_list_contributes_nothing():
    r = ref("- a bullet intro\n- another\n\nA later paragraph.\n\n## Expected plot\n\nA decay.\n")
    assert r.background == "This is a CheckT1 experiment: A decay."
    r = ref("Measures T1.\n\n## Expected plot\n\n- a decay\n\nA paragraph after the list.\n")
    assert r.background == "This is a CheckT1 experiment: Measures T1."


def test_a_table_or_code_fence_opening_a_section_contributes_nothing():
    r = ref("| a | b |\n|---|---|\n\n## Expected plot\n\n```\ncode\n```\n\nA decay.\n\n## Common failures\n")
    assert r.old_format  # neither section gives a paragraph


def test_frontmatter_and_recovery_never_reach_the_reference():
    r = ref(
        "---\nname: CheckT1\nnext_actions: [{status: SHORT_T1, do: FRONTMATTER_SECRET}]\n---\n"
        "Measures T1.\n\n## Expected plot\n\nA decay.\n\n## Recovery\n\nRECOVERY_SECRET rerun.\n\n"
        "## Common failures\n\n- Short T1: the decay ends early\n"
    )
    dumped = json.dumps(r.public())
    assert "SECRET" not in dumped
    assert list(r.criteria) == ["SUCCESS", "SHORT_T1"]


def test_a_heading_inside_a_code_fence_is_not_a_section():
    r = ref("Measures T1.\n\n```\n## Common failures\n- Fake: no\n```\n\n## Expected plot\n\nA decay.\n")
    assert list(r.criteria) == ["SUCCESS"]


# --- the SUCCESS criterion --------------------------------------------------------------------------


def test_success_is_the_sentence_beginning_a_good_result_with_the_prefix_dropped():
    r = ref(
        "Measures T1.\n\n## Expected plot\n\nAn exponential decay, e.g. from 1 to 0. "
        "A good result shows the decay reaching the baseline. The fit follows it.\n"
    )
    assert r.criteria["SUCCESS"] == "shows the decay reaching the baseline."


def test_success_is_the_first_sentence_when_no_sentence_begins_a_good_result():
    r = ref(
        "Measures T1.\n\n## Expected plot\n\nAn exponential decay to 0.5 over 200 μs. The fit follows it.\n"
    )
    assert r.criteria["SUCCESS"] == "An exponential decay to 0.5 over 200 μs."


def test_a_good_result_only_counts_in_the_first_paragraph():
    r = ref("M.\n\n## Expected plot\n\nA decay. It flattens.\n\nA good result is elsewhere.\n")
    assert r.criteria["SUCCESS"] == "A decay."


def test_sentences_keep_abbreviations_and_decimals():
    assert sentences("A decay, e.g. at 3 T1. Then 0.5 μs. Done") == [
        "A decay, e.g. at 3 T1.",
        "Then 0.5 μs.",
        "Done",
    ]


# --- failures ---------------------------------------------------------------------------------------


def test_status_code_drops_parentheses_and_upper_snake_cases():
    assert status_code("Short T1 (<20 μs)") == "SHORT_T1"
    assert status_code("**Window too short**") == "WINDOW_TOO_SHORT"
    assert status_code("T2* shorter (than (nested) T1)") == "T2_SHORTER"
    assert status_code("Détuning  too-large") == "DETUNING_TOO_LARGE"


def failures(*lines: str) -> dict[str, str]:
    body = "Measures T1.\n\n## Expected plot\n\nA decay.\n\n## Common failures\n\n" + "\n".join(lines) + "\n"
    criteria = dict(ref(body).criteria)
    criteria.pop("SUCCESS")
    return criteria


def test_each_separator_splits_title_and_criterion_up_to_the_first_semicolon():
    assert failures(
        "- Short T1 (<20 μs) — the decay ends before 20 μs; rerun shorter",
        "- Window too short – the curve has not flattened; widen",
        "- No signal: a flat line; check readout",
    ) == {
        "SHORT_T1": "the decay ends before 20 μs",
        "WINDOW_TOO_SHORT": "the curve has not flattened",
        "NO_SIGNAL": "a flat line",
    }


def test_the_first_separator_wins_and_one_inside_parentheses_does_not_count():
    assert failures("- Beating – two frequencies: visible") == {"BEATING": "two frequencies: visible"}
    assert failures("- Low SNR (ratio: < 2) — noise hides the decay") == {"LOW_SNR": "noise hides the decay"}


def test_a_bullet_without_separator_takes_four_words_as_title_and_its_whole_text():
    assert failures("- No oscillation is visible anywhere; really none") == {
        "NO_OSCILLATION_IS_VISIBLE": "No oscillation is visible anywhere; really none"
    }


def test_a_code_seen_twice_keeps_its_first_criterion():
    r = ref(
        "M.\n\n## Expected plot\n\nA decay.\n\n## Common failures\n\n"
        "- Short T1: first\n- Short T1 (again): second\n- Success: not the expected plot's\n"
    )
    assert r.criteria == {"SUCCESS": "A decay.", "SHORT_T1": "first"}
    assert any("SHORT_T1 seen twice" in w for w in r.warnings)


def test_criteria_keep_bullet_order_with_success_first_and_bold_titles_read():
    r = ref(
        "M.\n\n## Common failures\n\n- **Zeta:** last letter\n- Alpha — first letter\n\n## Expected plot\n\n"
        "A decay.\n"
    )
    assert list(r.criteria) == ["SUCCESS", "ZETA", "ALPHA"]
    assert r.criteria["ZETA"] == "last letter"


def test_continuation_lines_join_and_nested_bullets_and_prose_are_left_out():
    assert failures(
        "Some prose before the list.",
        "- Short T1: the decay",
        "  ends early",
        "  - a nested note: ignored",
        "- Flat: nothing moves",
    ) == {"SHORT_T1": "the decay ends early", "FLAT": "nothing moves"}


def test_a_task_without_common_failures_can_only_be_judged_success():
    r = ref("Measures T1.\n\n## Expected plot\n\nA decay.\n")
    assert r.criteria == {"SUCCESS": "A decay."}


def test_without_an_expected_plot_success_gets_a_generic_rule():
    r = ref("Measures T1.\n\n## Common failures\n\n- Flat: nothing\n")
    assert list(r.criteria) == ["SUCCESS", "FLAT"] and r.criteria["SUCCESS"]


# --- parameters -------------------------------------------------------------------------------------


def test_parameters_schema_types_and_identifier_names():
    r = ref(
        "M.\n\n## Parameters to extract\n\n"
        "- t1: T1 from the fit, in μs\n"
        "- n_peaks: the integer count of peaks\n"
        "- `count2`: an int\n"
        "- decay_complete: true or false, whether it flattens\n"
        "- **is_ok**: boolean\n"
        "- visible: `true`/`false`\n"
        "- 2bad: not an identifier\n"
        "- t1 rate: has a space\n"
        "- no separator here\n"
        "- t1: a second t1\n"
    )
    assert {name: spec.type for name, spec in r.parameters.items()} == {
        "t1": "float",
        "n_peaks": "int",
        "count2": "int",
        "decay_complete": "true | false",
        "is_ok": "true | false",
        "visible": "true | false",
    }
    assert r.parameters["t1"].description == "T1 from the fit, in μs"
    assert len([w for w in r.warnings if "Parameters to extract" in w]) == 4


def test_interpret_and_integral_are_not_int():
    r = ref("M.\n\n## Parameters to extract\n\n- area: the integral under the peak, interpreted\n")
    assert r.parameters["area"].type == "float"


# --- old format -------------------------------------------------------------------------------------


def test_an_old_format_entry_gets_its_rendered_text_cut_at_6000_and_no_criteria():
    body = (
        "---\nname: X\n---\n- only bullets here\n\n## Notes\n\n- more bullets " + "x" * 7000 + "\n\n"
        "## Common failures\n\n- Flat: nothing\n\n## Recovery\n\nRECOVERY\n"
    )
    r = ref(body)
    assert r.old_format
    assert r.criteria == {}
    assert len(r.background) == OLD_FORMAT_LIMIT
    assert r.background.startswith("- only bullets here\n\n## Notes")
    assert "name: X" not in r.background


def test_the_old_format_rendering_leaves_recovery_out():
    r = ref("- a\n\n## Recovery\n\nRECOVERY\n\n## Other\n\n- b\n")
    assert "RECOVERY" not in r.background and "## Other" in r.background


def test_no_knowledge_gives_an_empty_reference():
    r = ref("---\nname: X\n---\n\n")
    assert r.background == "" and r.criteria == {} and not r.old_format and r.knowledge_chars == 0


# --- size and hash ----------------------------------------------------------------------------------


def test_knowledge_sha256_is_over_the_documented_bytes():
    r = ref("Measures T1.\n\n## Expected plot\n\nA décay.\n\n## Common failures\n\n- Flat: nothing\n")
    expected = json.dumps(
        {"background": r.background, "criteria": {"SUCCESS": "A décay.", "FLAT": "nothing"}},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    assert reference_bytes(r.background, r.criteria) == expected
    assert expected.startswith(b'{"background":"This is a CheckT1 experiment: Measures T1. A d\xc3\xa9cay."')
    assert r.knowledge_sha256 == hashlib.sha256(expected).hexdigest()
    assert r.knowledge_chars == len(r.background) + len("SUCCESS") + len("A décay.") + len("FLAT") + len(
        "nothing"
    )


def test_the_hash_tells_criteria_order_and_content_apart_and_ignores_parameters_and_recovery():
    base = "M.\n\n## Expected plot\n\nA.\n\n## Common failures\n\n- B: b\n- C: c\n"
    a = ref(base)
    assert ref(base.replace("- B: b\n- C: c", "- C: c\n- B: b")).knowledge_sha256 != a.knowledge_sha256
    assert ref(base.replace("- C: c", "- C: cc")).knowledge_sha256 != a.knowledge_sha256
    same = ref(base + "\n## Parameters to extract\n\n- t1: x\n\n## Recovery\n\nrerun\n")
    assert same.knowledge_sha256 == a.knowledge_sha256


# --- reading a directory, and the command ------------------------------------------------------------


TASK_MD = """---
name: SomethingElse
---
# CheckRabi

Drives the qubit with a pulse of varying amplitude.

## Expected plot

A cosine oscillation. A good result shows at least two full periods.

## Common failures

- Too few oscillations (<1) — less than one period is visible
- Damped: the amplitude falls within the sweep

## Parameters to extract

- pi_amplitude: the amplitude of a pi pulse
- n_periods: integer number of periods
"""


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    d = tmp_path / "CheckRabi"
    d.mkdir()
    (d / "task.md").write_text(TASK_MD, encoding="utf-8")
    return d


def test_a_directory_is_named_by_its_folder_and_text_by_its_frontmatter(task_dir: Path):
    assert derive_reference(task_dir).background.startswith("This is a CheckRabi experiment: Drives")
    assert derive_reference(task_dir / "task.md").task == "CheckRabi"
    assert derive_reference(TASK_MD).task == "SomethingElse"
    assert derive_reference("# Heading Name\n\nText.\n").task == "Heading Name"
    assert read_task(task_dir).frontmatter == {"name": "SomethingElse"}


def test_a_folder_without_task_md_is_refused(tmp_path: Path):
    with pytest.raises(KnowledgeError, match="no task.md"):
        read_task(tmp_path)
    with pytest.raises(KnowledgeError, match="no such folder"):
        read_task(tmp_path / "missing")


def run_cli(*argv: str) -> int:
    import argparse

    from qsolve.cli.knowledge import add_commands

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return args.func(args)


def test_knowledge_reference_json(task_dir: Path, capsys):
    assert run_cli("knowledge", "reference", str(task_dir), "--json") == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert list(data) == ["background", "criteria", "parameters", "knowledge_chars", "knowledge_sha256"]
    assert list(data["criteria"]) == ["SUCCESS", "TOO_FEW_OSCILLATIONS", "DAMPED"]
    assert data["criteria"]["SUCCESS"] == "shows at least two full periods."
    assert data["parameters"] == {
        "pi_amplitude": {"type": "float", "description": "the amplitude of a pi pulse"},
        "n_periods": {"type": "int", "description": "integer number of periods"},
    }
    assert data["knowledge_sha256"] == derive_reference(task_dir).knowledge_sha256
    assert out.index('"SUCCESS"') < out.index('"TOO_FEW_OSCILLATIONS"') < out.index('"DAMPED"')


def test_knowledge_reference_text_and_a_bad_folder(task_dir: Path, tmp_path: Path, capsys):
    assert run_cli("knowledge", "reference", str(task_dir)) == 0
    assert "DAMPED: the amplitude falls within the sweep" in capsys.readouterr().out
    assert run_cli("knowledge", "reference", str(tmp_path / "nope")) == 2
    assert "no such folder" in capsys.readouterr().err
