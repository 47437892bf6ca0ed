"""Issue 38, items 1 and 2, each finding of the audits as a test against the scripted model server
(tests/qsolve/evaluation/model_server.py): at most four images a request, one figure by default
(``max_figures``), the examples left out said in the record and warned of in the preview; a record's
``chosen_by`` and ``fallback`` as the run decided them; ``complete``, ``missing_keys`` and ``success``
derived on every load, never read from storage; compare's rows with each side's verdicts; the chip's
entities with no result skipped; the evaluator's checkout commit; bad ``EVALUATION_*`` values refused
before a run is stored and read past without a traceback."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from qsolve.cli import main
from qsolve.evaluation.compare import compare
from qsolve.evaluation.evaluate import checkout_commit, evaluate, evaluator, loaded_output
from qsolve.evaluation.examples import examples_of
from qsolve.evaluation.knowledge import read_task
from qsolve.evaluation.prompts import MAX_IMAGES, preview_task
from qsolve.evaluation.runs import SETTINGS, RunRequest, execute_run, request_run
from qsolve_pipeline.storage.calibration import open_store
from qsolve_pipeline.storage.state._tables import evaluation_records
from tests.qsolve.calibration.calibration_runs import made
from tests.qsolve.evaluation.model_server import ModelServer, answer

REPO = Path(__file__).resolve().parents[3]
GOOD = {
    "technical_description": answer('{"plot_type": "scatter", "x_axis": "delay", "y_axis": "P1"}'),
    "experimental_conclusion": answer("Classification: Expected behavior\nReason: a clean decay."),
    "experimental_significance": answer("The qubit is usable."),
    "fit_reliability": answer("Assessment: **Reliable**.\nReason: the fit follows the points."),
    "parameter_extraction": answer('```json\n{"t1": 215.0}\n```'),
    "calibration_diagnosis": answer("Status: SUCCESS\nSuggested range: (0, 1000) [us]\nNotes: fine"),
}
EXTRA = ("04-drift", "05-noise", "06-jump")


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    """CheckT1's knowledge with six examples, each of its own status (the audit's seven images)."""
    folder = tmp_path / "knowledge" / "CheckT1"
    shutil.copytree(REPO / "task-knowledge" / "CheckT1", folder)
    source = (folder / "examples" / "02-sweep-too-short.md").read_text(encoding="utf-8")
    for slug in EXTRA:
        text = source.replace("status: SWEEP_TOO_SHORT", f"status: {slug[3:].upper()}")
        text = text.replace("figure: 02-sweep-too-short.png", f"figure: {slug}.png")
        (folder / "examples" / f"{slug}.md").write_text(text, encoding="utf-8")
        shutil.copy(folder / "examples" / "02-sweep-too-short.png", folder / "examples" / f"{slug}.png")
    return folder


def images(body: dict) -> int:
    return sum(
        1
        for message in body["messages"]
        for part in (message["content"] if isinstance(message["content"], list) else [])
        if part.get("type") == "image_url"
    )


def three_figures():
    result, figures = made("Q00")
    (data,) = figures.values()
    return result.evidence(), [data + b"1", data + b"2", data]


@pytest.mark.parametrize(("max_figures", "room"), [(1, 3), (2, 2), (4, 1)])
def test_no_request_carries_more_than_four_images_and_the_record_says_what_gave_way(
    task_dir, max_figures, room
):
    evidence, figures = three_figures()
    examples = examples_of(task_dir)
    assert len(examples) == 6
    with ModelServer(GOOD) as server:
        got = evaluate(
            read_task(task_dir).reference, evidence, figures, model=server.spec(), with_examples=True,
            examples=examples, max_figures=max_figures,
        )  # fmt: skip
        counts = {r.question: images(r.body) for r in server.received}
    shown = min(max_figures, 3)
    assert max(counts.values()) <= MAX_IMAGES
    assert counts["experimental_significance"] == counts["calibration_diagnosis"] == shown + room
    assert counts["technical_description"] == shown
    assert len(got.input.figures) == shown and got.input.figures[-1].role == "judged"
    assert got.input.max_figures == max_figures and got.input.figures_given == 3
    # the later examples in the repository's order give way, and the record says which and why
    left = {(lo.id, lo.question) for lo in got.input.examples_left_out}
    later = [e.id for e in examples][room:]
    assert {i for i, _ in left} == set(later)
    assert all("at most 4 images (MAX_IMAGES)" in lo.why for lo in got.input.examples_left_out)
    assert {e.id for e in got.input.examples} == {e.id for e in examples[:room]}


def test_one_figure_is_shown_by_default(task_dir):
    evidence, figures = three_figures()
    with ModelServer(GOOD) as server:
        got = evaluate(read_task(task_dir).reference, evidence, figures, model=server.spec())
        assert {images(r.body) for r in server.received} == {1}
    assert [f.role for f in got.input.figures] == ["judged"]
    assert got.input.figures[0].sha256 == hashlib.sha256(figures[-1]).hexdigest()


def test_the_preview_warns_of_each_example_left_out(task_dir, capsys):
    shown = preview_task(task_dir, with_examples=True)
    assert all(text.count("[figure]") <= MAX_IMAGES for text in shown.preview.prompts.values())
    for slug in EXTRA:
        assert any(w.startswith(f"example {slug} is left out of experimental_significance, "
                                "calibration_diagnosis: a request carries at most 4 images")
                   for w in shown.warnings), shown.warnings  # fmt: skip
    assert main(["knowledge", "preview", str(task_dir), "--with-examples", "--max-figures", "4"]) == 0
    err = capsys.readouterr().err
    assert "example 01-success is left out of" in err
    assert main(["knowledge", "preview", str(task_dir), "--max-figures", "5"]) == 2
    said = "qsolve: --max-figures 5: 1 to 4 figures of a result are shown"
    assert capsys.readouterr().err.strip() == said


# ---- the runs ---------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    for name in ("QCALEVAL_MODEL", "EVALUATION_CONCURRENCY", "EVALUATION_STALE_AFTER_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    (tmp_path / "evaluation.yaml").write_text("version: 1\nmodels: []\n")
    with open_store(tmp_path) as store:
        store.record_all([made(f"Q0{i}", true_status="SUCCESS") for i in range(2)])
    return tmp_path


def declare(home: Path, *specs) -> None:
    models = [s.model_dump(mode="json", exclude_none=True, exclude={"kind"}) for s in specs]
    doc = {"version": 1, "models": models}
    (home / "evaluation.yaml").write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize(
    ("ids", "environment", "chosen_by", "fallback"),
    [
        (("plain-vlm",), None, "fallback", True),
        (("plain-vlm", "Ising-Calibration-test"), None, "calibration-model", False),
        (("plain-vlm", "Ising-Calibration-test"), "plain-vlm", "environment", False),
    ],
)
def test_each_record_says_how_the_run_chose_its_model(
    home, monkeypatch, ids, environment, chosen_by, fallback
):
    if environment:
        monkeypatch.setenv("QCALEVAL_MODEL", environment)
    with ModelServer(GOOD) as server:
        declare(home, *(server.spec(id=i) for i in ids))
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
            execute_run(store.db, store, run.id)
            (record,) = store.db.evaluation_records(run.id)
    assert (run.settings["chosen_by"], run.settings["fallback"]) == (chosen_by, fallback)
    assert (record.output["chosen_by"], record.output["fallback"]) == (chosen_by, fallback)


def test_complete_missing_keys_and_success_are_derived_on_every_load_never_read(home, capsys):
    unread = {**GOOD, "calibration_diagnosis": answer("I cannot tell from this plot.")}
    with ModelServer(unread) as server:
        declare(home, server.spec())
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
            execute_run(store.db, store, run.id)
            (record,) = store.db.evaluation_records(run.id)
            assert record.output["complete"] is False
            forged = record.output | {"complete": True, "missing_keys": [], "success": True}
            with store.db._write() as connection:  # a database writer states it complete
                mine = evaluation_records.c.id == record.id
                connection.execute(sa.update(evaluation_records).where(mine).values(output=forged))
            (stored,) = store.db.evaluation_records(run.id)
            assert stored.output["complete"] is True  # what storage holds
            c = compare(store.db, run.id, run.id)
    derived = loaded_output(stored.output)
    assert derived["complete"] is False and derived["missing_keys"] == ["calibration_diagnosis"]
    assert derived["success"] is None
    assert c["totals"]["a"]["complete"] == 0
    assert main(["evaluations", "show", run.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["records"][0]["output"]
    assert shown["complete"] is False and shown["missing_keys"] == ["calibration_diagnosis"]


def test_compare_rows_carry_each_sides_verdicts(home):
    with open_store(home) as store:
        a = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
        b = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
        for run in (a, b):
            execute_run(store.db, store, run.id)
        (ra,) = store.db.evaluation_records(a.id)
        store.db.add_verdict(ra.id, "ann", "disagree", area="status")
        store.db.add_verdict(ra.id, "bob", "agree")
        (row,) = compare(store.db, a.id, b.id)["rows"]
    assert row["a"]["verdicts"] == {
        "ann": {"verdict": "disagree", "area": "status"},
        "bob": {"verdict": "agree", "area": None},
    }
    assert row["b"]["verdicts"] == {}
    assert {"fit_assessment", "success"} <= set(row["a"])


def test_the_chips_qubits_with_no_result_are_skipped_as_no_result(home):
    with open_store(home) as store:
        store.record_all([made("Q02", figure=None)])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
    by_qid = {s["qid"]: s["why"] for s in run.skipped}
    assert by_qid["Q02"].startswith("no evaluable result")
    assert by_qid["Q03"] == by_qid["Q155"] == "no result"
    assert "Q00" not in by_qid and "Q01" not in by_qid and len(by_qid) == 156 - 2


def test_the_evaluator_names_its_checkout_commit(tmp_path):
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    got = evaluator()
    assert got.source == "checkout" and got.commit.removesuffix("-dirty") == head.stdout.strip()
    assert checkout_commit(tmp_path) is None  # not a checkout: an installed package names none


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("EVALUATION_CONCURRENCY", "0", "a whole number of at least 1"),
        ("EVALUATION_CONCURRENCY", "1.5", "a whole number of at least 1"),
        ("EVALUATION_STALE_AFTER_SECONDS", "soon", "a number of seconds above 0"),
        ("EVALUATION_HEARTBEAT_SECONDS", "nan", "a number of seconds above 0"),
    ],
)
def test_a_bad_setting_is_refused_before_a_run_is_stored(home, monkeypatch, capsys, name, value, rule):
    monkeypatch.setenv(name, value)
    assert main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qsolve: {name}={value!r} is not {rule}") and "\n" not in err
    with open_store(home) as store:
        assert store.db.list_evaluation_runs() == []
        with pytest.raises(Exception, match=name):
            request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        assert store.db.list_evaluation_runs() == []


@pytest.mark.parametrize(
    ("name", "value", "most"),
    [
        ("EVALUATION_CONCURRENCY", "65", "64"),
        ("EVALUATION_HEARTBEAT_SECONDS", "1e10", "3600 seconds"),  # past a wait: the heartbeat would die
        ("EVALUATION_STALE_AFTER_SECONDS", "1e300", "604800 seconds"),  # past a timedelta, or a date
    ],
)
def test_a_setting_past_its_most_is_refused_before_a_run_is_stored(
    home, monkeypatch, capsys, name, value, most
):
    monkeypatch.setenv(name, value)
    assert main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez"]) == 2
    said = f"{name}={value!r} is past the most it may be, {most} (default {SETTINGS[name][0]})"
    assert capsys.readouterr().err == f"qsolve: {said}\n"
    with open_store(home) as store:
        assert store.db.list_evaluation_runs() == []


def test_a_stored_run_reads_back_under_a_bad_setting_without_a_traceback(home, monkeypatch, capsys):
    with open_store(home) as store:
        run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
        execute_run(store.db, store, run.id)
    monkeypatch.setenv("EVALUATION_STALE_AFTER_SECONDS", "soon")
    for argv in (["evaluations", "show", run.id], ["evaluations", "list"]):
        capsys.readouterr()
        assert main(argv) == 0
        captured = capsys.readouterr()
        assert run.id in captured.out
        assert captured.err.strip() == (
            "qsolve: EVALUATION_STALE_AFTER_SECONDS='soon' is not a number of seconds above 0 "
            "(default 1800); runs are read with the default"
        )


def test_max_figures_is_one_to_four(home, capsys):
    with pytest.raises(ValueError, match="1 to 4 figures"):
        RunRequest(task="CheckT1", chip="fake:fez", max_figures=0)
    assert main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez", "--max-figures", "5"]) == 2
    said = "qsolve: --max-figures 5: 1 to 4 figures of a result are shown"
    assert capsys.readouterr().err.strip() == said
