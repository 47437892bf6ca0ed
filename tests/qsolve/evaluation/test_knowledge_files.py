"""The task knowledge in task-knowledge/ and the runs agree: a folder for every task, its failure codes
exactly its faults' true statuses, its parameters the task's outputs, and its examples' figures and
labels those their sources make today, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from qsolve.calibration.calibrate import read_frontmatter, write_examples
from qsolve.calibration.experiments import EXPERIMENTS, INTEGER_OUTPUTS, TASKS
from qsolve.calibration.faults import failure_codes
from qsolve.cli.calibration import TASK_NAMES
from qsolve.evaluation.knowledge import derive_reference

KNOWLEDGE = Path(__file__).resolve().parents[3] / "task-knowledge"


def test_every_task_has_its_knowledge_and_nothing_else_does() -> None:
    assert sorted(p.name for p in KNOWLEDGE.iterdir() if p.is_dir()) == sorted(TASKS)
    assert TASK_NAMES == TASKS


@pytest.mark.parametrize("task", TASKS)
def test_the_failure_codes_are_exactly_the_faults_true_statuses(task: str) -> None:
    reference = derive_reference(KNOWLEDGE / task)
    assert not reference.warnings
    codes = list(reference.criteria)
    assert codes[0] == "SUCCESS"
    assert sorted(codes[1:]) == sorted(failure_codes(task))


@pytest.mark.parametrize("task", TASKS)
def test_the_parameters_to_extract_are_the_tasks_outputs(task: str) -> None:
    parameters = derive_reference(KNOWLEDGE / task).parameters
    assert list(parameters) == [name for name, _unit in EXPERIMENTS[task].outputs]
    for name, spec in parameters.items():
        assert spec.type == ("int" if name in INTEGER_OUTPUTS else "float")


@pytest.mark.parametrize("task", TASKS)
def test_the_frontmatter_names_the_task_and_its_next_actions(task: str) -> None:
    front, body = read_frontmatter((KNOWLEDGE / task / "task.md").read_text(encoding="utf-8"))
    assert front["name"] == task and front["type"] == "qdash.calibration-task"
    actions = {row["status"] for row in front["next_actions"]}
    assert actions == {"SUCCESS", *failure_codes(task)}
    reference = derive_reference(KNOWLEDGE / task)
    for text in (reference.background, *reference.criteria.values()):
        assert "next_actions" not in text and "Recovery" not in text


@pytest.mark.parametrize("task", TASKS)
def test_one_example_per_status_the_success_case_first(task: str) -> None:
    statuses = []
    for md in sorted((KNOWLEDGE / task / "examples").glob("*.md")):
        front, _ = read_frontmatter(md.read_text(encoding="utf-8"))
        assert (md.parent / front["figure"]).is_file()
        statuses.append(front["status"])
    assert statuses[0] == "SUCCESS" and sorted(statuses) == sorted(["SUCCESS", *failure_codes(task)])


def test_the_examples_figures_and_labels_are_what_their_sources_make() -> None:
    assert write_examples(KNOWLEDGE, check=True) == []
