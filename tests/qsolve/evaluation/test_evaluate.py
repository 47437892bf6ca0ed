"""One evaluation's record: input, output and evaluator, complete; by a model on the local server and by
the classical judge; the key nowhere in it."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from qsolve.evaluation.classical_judge import FitEvidence
from qsolve.evaluation.evaluate import (
    EVALUATOR_MODULES,
    EvaluationOutput,
    evaluate,
    source_files,
    source_sha256,
)
from qsolve.evaluation.examples import examples_of
from qsolve.evaluation.knowledge import derive_reference
from qsolve.evaluation.models import choose_model, parse_config
from qsolve.evaluation.questions import DEFAULT_STATUSES, EXAMPLE_QUESTIONS, QUESTION_KEYS
from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, answer, fail

TASK = """---
name: CheckT1
---
# CheckT1

A π pulse, a delay, a measurement: P(1) decays as exp(−t/T1).

## Expected plot

P(1) against the delay. A good result shows points that level off to a flat floor.

## Common failures

- Sweep too short — the points are still falling at the right edge of the plot
- Too few points — the plot shows fewer than eight data points

## Parameters to extract

- t1: T1 in microseconds
"""
EXAMPLE = """---
type: qdash.calibration-example
profile: qdash-calibration/v1
title: {title}
outcome: {outcome}
status: {status}
suggested_range: (0, 850) [us]
parameters: {{t1: 167.0}}
figure: {slug}.png
---
The decay levels off; {status}.
"""
EVIDENCE = {
    "task": "CheckT1",
    "target": "Q03",
    "chip": "fake:fez",
    "status": "completed",
    "message": "Successfully finished",
    "sweeps": [{"parameter": "delay", "unit": "us", "start": 0, "stop": 1100, "points": 31, "step": 36.67}],
    "shots": 1024,
    "interval": {"value": 2200, "unit": "us"},
    "t1": 222.7,  # a fitted output a caller passes by mistake: never said
}
FIT = FitEvidence(
    task="CheckT1",
    sweep=EVIDENCE["sweeps"][0],
    outputs={"t1": {"value": 222.7, "unit": "us", "error": 3.1}},
    fit_model="A·exp(−t/τ) + B",
    r_squared=0.998,
    reduced_chi2=1.7,
)


def png(n: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + f"figure {n}".encode()


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    root = tmp_path / "CheckT1"
    (root / "examples").mkdir(parents=True)
    (root / "task.md").write_text(TASK, encoding="utf-8")
    for i, (slug, outcome, status) in enumerate(
        [("01-success", "expected", "SUCCESS"), ("02-short", "suboptimal", "SWEEP_TOO_SHORT")]
    ):
        (root / "examples" / f"{slug}.md").write_text(
            EXAMPLE.format(title=slug, outcome=outcome, status=status, slug=slug), encoding="utf-8"
        )
        (root / "examples" / f"{slug}.png").write_bytes(png(100 + i))
    return root


def test_a_model_evaluation_records_input_output_and_evaluator(task_dir):
    reference = derive_reference(task_dir)
    examples = examples_of(task_dir)
    with ModelServer() as server:
        record = evaluate(
            reference,
            EVIDENCE,
            [png(1)],
            model=server.spec(),
            with_examples=True,
            examples=examples,
            question="Is T1 stable?",
        )
    i, o, e = record.input, record.output, record.evaluator
    # the input
    assert i.reads == "prompts" and i.system_prompt is None
    assert i.context.startswith("Experiment context: task CheckT1; target Q03; status completed; sweep delay")
    assert set(i.prompts) == set(QUESTION_KEYS)
    assert all("[figure]" in p and "<image>" not in p for p in i.prompts.values())
    assert all("222.7" not in p for p in i.prompts.values())  # no fitted output reaches a prompt
    assert "Is T1 stable?" in i.prompts["experimental_significance"]
    assert (i.reference_requested, i.reference_used, i.examples_requested, i.examples_used) == (True,) * 4
    assert (i.knowledge_chars, i.knowledge_sha256) == (reference.knowledge_chars, reference.knowledge_sha256)
    assert [(f.sha256, f.role, f.bytes) for f in i.figures] == [
        (hashlib.sha256(png(1)).hexdigest(), "judged", len(png(1)))
    ]
    assert {x.id: x.figure_sha256 for x in i.examples} == {x.id: x.figure_sha256 for x in examples}
    assert all(set(x.questions) <= set(EXAMPLE_QUESTIONS) for x in i.examples)
    # the output
    assert (o.model, o.kind, o.fallback, o.chosen_by) == (
        "Ising-Calibration-test",
        "openai",
        False,
        "explicit",
    )
    assert o.questions == list(QUESTION_KEYS)
    assert {k: a.answer for k, a in o.answers.items()} == HEALTHY
    assert o.answers["calibration_diagnosis"].reading == "SUCCESS"
    assert o.answers["fit_reliability"].reading == "reliable"
    assert o.answers["parameter_extraction"].reading == {"t1": 49.1}
    assert o.diagnosis.values["t1"].model_dump() == {"value": 49.1, "unit": "us"}  # "t1: T1 in microseconds"
    assert o.diagnosis.status == "SUCCESS" and o.diagnosis.outcome == "expected"
    assert (o.success, o.complete, o.missing_keys) == (True, True, [])
    assert o.attempts == dict.fromkeys(QUESTION_KEYS, 1)
    assert o.stop_reasons == dict.fromkeys(QUESTION_KEYS, "stop")
    assert len(o.calls) == 6 and all(c.duration_seconds >= 0 for c in o.calls)
    assert (o.input_tokens, o.output_tokens) == (6 * 120, 6 * 30)
    assert o.context_window == 16384 and o.peak.total_tokens == 150 and not o.context_warning
    assert o.model_seconds > 0 and o.duration_seconds > 0
    # the evaluator
    assert e.package == "qsolve" and e.version
    assert e.source_sha256 == source_sha256() and len(e.source_sha256) == 64
    # the examples went to the model as their figures' bytes
    diagnosis = next(r for r in server.received if r.question == "calibration_diagnosis")
    urls = [
        p["image_url"]["url"] for p in diagnosis.body["messages"][0]["content"] if p["type"] == "image_url"
    ]
    assert [base64.b64decode(u.split(",", 1)[1]) for u in urls] == [png(100), png(101), png(1)]


def test_the_record_round_trips_and_derives_complete_and_missing_keys_on_load(task_dir):
    reference = derive_reference(task_dir)
    with ModelServer({"calibration_diagnosis": answer("Status: MAYBE")}) as server:
        record = evaluate(reference, EVIDENCE, [png(1)], model=server.spec())
    assert record.output.missing_keys == ["calibration_diagnosis"] and not record.output.complete
    assert (  # an unread status is no verdict: success is unknown, not False
        record.output.success is None
        and record.output.answers["calibration_diagnosis"].answer == "Status: MAYBE"
        and record.output.unread_keys == ["calibration_diagnosis"]
    )
    stored = json.loads(record.model_dump_json())
    assert EvaluationOutput.model_validate(stored) == record
    # a record stored with stale or missing derived fields is judged again on load
    stored["output"]["complete"] = True
    stored["output"]["missing_keys"] = []
    del stored["output"]["success"]
    loaded = EvaluationOutput.model_validate(stored)
    assert (loaded.output.complete, loaded.output.missing_keys, loaded.output.success) == (
        False,
        ["calibration_diagnosis"],
        None,
    )


def test_a_failure_is_sent_once_more_and_recorded(task_dir):
    reference = derive_reference(task_dir)
    script = {
        "fit_reliability": [fail(500), answer("Assessment: Unreliable")],
        "parameter_extraction": fail(502),
    }
    with ModelServer(script) as server:
        record = evaluate(reference, EVIDENCE, [png(1)], model=server.spec())
    o = record.output
    assert o.attempts["fit_reliability"] == 2 and o.diagnosis.fit_assessment == "unreliable"
    assert o.attempts["parameter_extraction"] == 2 and o.answers["parameter_extraction"].answer is None
    assert "502" in o.errors["parameter_extraction"]
    assert o.missing_keys == ["parameter_extraction"]
    assert server.asked("calibration_diagnosis") == 1


def test_at_most_four_figures_the_last_judged(task_dir):
    figures = [png(n) for n in range(6)]
    with ModelServer() as server:  # four asked (max_figures; one by default: test_seed_differences.py)
        record = evaluate(derive_reference(task_dir), EVIDENCE, figures, model=server.spec(), max_figures=4)
    shown = record.input.figures
    assert record.input.figures_given == 6
    assert [f.sha256 for f in shown] == [hashlib.sha256(f).hexdigest() for f in figures[-4:]]
    assert [f.role for f in shown] == ["reference", "reference", "reference", "judged"]
    assert all(p.count("[figure]") == 4 for p in record.input.prompts.values())


def test_the_context_window_warning_is_recorded(task_dir):
    script = {"calibration_diagnosis": answer("Status: SUCCESS", prompt_tokens=7300, completion_tokens=100)}
    with ModelServer(script) as server:
        record = evaluate(derive_reference(task_dir), EVIDENCE, [png(1)], model=server.spec(num_ctx=8192))
    o = record.output
    assert o.context_window == 8192
    assert o.peak.question == "calibration_diagnosis" and o.peak.total_tokens == 7400
    assert o.context_warning and o.peak.near_limit


def test_the_classical_judge_as_the_fallback_reads_the_fit_evidence(task_dir):
    reference = derive_reference(task_dir)
    choice = choose_model(config=parse_config({"models": []}), environ={})
    record = evaluate(reference, EVIDENCE, [png(1)], model=choice, fit_evidence=FIT, with_examples=True)
    i, o = record.input, record.output
    assert (o.model, o.kind, o.fallback, o.endpoint_model) == ("classical-judge", "classical", True, None)
    assert i.reads == "fit_evidence" and i.prompts == {} and i.fit_evidence == FIT
    assert i.examples_requested and not i.examples_used
    assert o.diagnosis.status == "SUCCESS" and o.success is True
    assert o.missing_keys == ["technical_description", "experimental_significance"]
    declined = o.answers["technical_description"]
    assert (
        declined.declined and declined.reading is None and declined.answer.startswith("The classical judge")
    )
    assert o.calls == [] and o.input_tokens is None and o.context_window is None and o.peak is None
    assert EvaluationOutput.model_validate_json(record.model_dump_json()) == record


def test_without_a_reference_the_generic_statuses_and_no_knowledge_hash():
    with ModelServer({"calibration_diagnosis": answer("Status: NO_SIGNAL")}) as server:
        record = evaluate(None, EVIDENCE, [png(1)], model=server.spec())
    assert not record.input.reference_requested and not record.input.reference_used
    assert record.input.knowledge_sha256 is None and record.input.knowledge_chars is None
    assert record.output.allowed_statuses == list(DEFAULT_STATUSES)
    assert record.output.diagnosis.status == "NO_SIGNAL"


def test_the_api_key_is_never_in_a_stored_record(task_dir, monkeypatch):
    secret = "sk-planted-9a8b7c6d5e4f3a2b1c0d"
    monkeypatch.setenv("QSOLVE_TEST_EVALUATION_KEY", secret)
    script = {key: [fail(500, echo_auth=True), answer(text)] for key, text in HEALTHY.items()}
    script["fit_reliability"] = [fail(401, echo_auth=True), fail(500, echo_auth=True)]
    with ModelServer(script) as server:
        spec = server.spec(api_key_env="QSOLVE_TEST_EVALUATION_KEY")
        record = evaluate(derive_reference(task_dir), EVIDENCE, [png(1)], model=spec)
    assert {r.authorization for r in server.received} == {f"Bearer {secret}"}
    stored = record.model_dump_json()
    assert secret not in stored and secret not in repr(record)
    assert "[redacted]" in record.output.errors["fit_reliability"]
    assert "QSOLVE_TEST_EVALUATION_KEY" not in stored  # not even the variable's name


def test_the_source_hash_is_over_the_sorted_evaluator_modules():
    files = source_files()
    assert [path for path, _ in files] == sorted(f"qsolve/evaluation/{m}.py" for m in EVALUATOR_MODULES)
    h = hashlib.sha256()
    for path, data in files:
        h.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    assert source_sha256() == h.hexdigest()
    changed = [(p, d + b"\n# a change\n" if p.endswith("answers.py") else d) for p, d in files]
    assert source_sha256(changed) != source_sha256()


@pytest.mark.parametrize(
    "said",
    [
        '{"t1": "0.0491 ms"}',
        '{"t1_ns": 49100}',
        'T1 read off the legend: {"t1": {"value": 49.1, "unit": "µs"}}',
    ],
)
def test_a_model_that_answers_in_another_unit_is_read_in_the_parameters_unit(task_dir, said):
    """t1 in the unit its description names, whichever the model chose; the answer kept as it came."""
    reference = derive_reference(task_dir)
    with ModelServer({"parameter_extraction": answer(said)}) as server:
        record = evaluate(reference, EVIDENCE, [png(1)], model=server.spec())
    o = record.output
    assert o.answers["parameter_extraction"].answer == said
    assert o.diagnosis.values["t1"].model_dump() == {"value": 49.1, "unit": "us"}
    assert o.complete and o.missing_keys == []
    again = EvaluationOutput.model_validate_json(record.model_dump_json())  # as a stored record reads
    assert again.output.diagnosis.values == o.diagnosis.values


def test_a_model_answering_a_frequency_for_a_time_gives_no_t1(task_dir):
    reference = derive_reference(task_dir)
    with ModelServer({"parameter_extraction": answer('{"t1": "4.9 MHz"}')}) as server:
        record = evaluate(reference, EVIDENCE, [png(1)], model=server.spec())
    assert record.output.diagnosis.values["t1"].model_dump() == {"value": None, "unit": "us"}


def test_the_classical_judge_states_t1_in_the_unit_its_description_names(task_dir):
    """The fit's t1 is in us; a task whose description names nanoseconds is answered in ns."""
    (task_dir / "task.md").write_text(
        TASK.replace("T1 in microseconds", "T1 in nanoseconds"), encoding="utf-8"
    )
    reference = derive_reference(task_dir)
    choice = choose_model(config=parse_config({"models": []}), environ={})
    o = evaluate(reference, EVIDENCE, [png(1)], model=choice, fit_evidence=FIT).output
    assert json.loads(o.answers["parameter_extraction"].answer) == {"t1": 222700.0}
    assert o.diagnosis.values["t1"].model_dump() == {"value": 222700.0, "unit": "ns"}
    no_schema = TASK.split("## Parameters to extract")[0]
    (task_dir / "task.md").write_text(no_schema, encoding="utf-8")
    o = evaluate(derive_reference(task_dir), EVIDENCE, [png(1)], model=choice, fit_evidence=FIT).output
    assert json.loads(o.answers["parameter_extraction"].answer) == {"t1_us": 222.7}  # keyed with its unit
    assert o.diagnosis.values["t1"].model_dump() == {"value": 222.7, "unit": "us"}
