"""Evaluation runs end to end (issue 14, items 6, 10, 11): requested, executed a few at a time under a
heartbeat, against the classical judge and against a local OpenAI-compatible server; cancelled;
interrupted by a killed process and completed on retry with no record judged twice; compared; scored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from qsolve.evaluation.compare import compare, score
from qsolve.evaluation.models import UnknownModel
from qsolve.evaluation.runs import RunRequest, execute_run, request_run, summary
from qsolve_pipeline.storage.calibration import open_store
from tests.qsolve.calibration.calibration_runs import made
from tests.qsolve.evaluation.model_server import ModelServer, answer, fail, slow

GOOD = {
    "technical_description": answer('{"plot_type": "scatter", "x_axis": "delay", "y_axis": "P1"}'),
    "experimental_conclusion": answer("Classification: Expected behavior\nReason: a clean decay."),
    "experimental_significance": answer("The qubit is usable."),
    "fit_reliability": answer("Assessment: **Reliable**.\nReason: the fit follows the points."),
    "parameter_extraction": answer('```json\n{"t1": 215.0}\n```'),
    "calibration_diagnosis": answer("Status: SUCCESS\nSuggested range: (0, 1000) [us]\nNotes: fine"),
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.delenv("QCALEVAL_MODEL", raising=False)
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    (tmp_path / "evaluation.yaml").write_text("version: 1\nmodels: []\n")
    with open_store(tmp_path) as store:
        store.record_all([made(f"Q0{i}", true_status="SUCCESS") for i in range(4)])
    return tmp_path


def declare(home: Path, server: ModelServer) -> None:
    spec = server.spec()
    doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
    (home / "evaluation.yaml").write_text(yaml.safe_dump(doc))


def test_a_bulk_run_with_the_classical_judge_needs_no_endpoint(home: Path) -> None:
    with open_store(home) as store:
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        assert run.model == "classical-judge" and run.settings["fallback"] is True
        done = execute_run(store.db, store, run.id)
        assert done.status == "completed"
        records = store.db.evaluation_records(run.id)
        assert [r.qid for r in records] == ["Q00", "Q01", "Q02", "Q03"]
        output = records[0].output
        assert set(output["answers"]) == set(GOOD)  # six answers, two of them declined
        assert output["diagnosis"]["status"] == "SUCCESS"
        assert "technical_description" in output["missing_keys"]
        assert records[0].evaluator["package"] == "qsolve"
        s = summary(store.db, run.id)
        assert s["counts"] == {"completed": 4} and s["wall_seconds"] is not None


def test_only_a_declared_model_is_accepted(home: Path) -> None:
    with open_store(home) as store, pytest.raises(UnknownModel, match="classical-judge"):
        request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez", model="gpt-nothing"))


def test_a_run_against_a_model_asks_six_questions_per_record_a_few_records_at_a_time(home: Path) -> None:
    with ModelServer(GOOD) as server:
        declare(home, server)
        with open_store(home) as store:
            unknown = request_run(store.db, store, RunRequest(task_ids=["x"]))
            assert unknown.skipped == [{"task_result_id": "x", "why": "no such task result"}]
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
            assert run.model == "Ising-Calibration-test" and run.settings["fallback"] is False
            done = execute_run(store.db, store, run.id, workers=2)
            records = store.db.evaluation_records(run.id)
        assert done.status == "completed"
        assert len(server.received) == 6 * 4  # six per record, none asked twice
        assert server.max_in_flight <= 2 * 6  # two records at a time, six questions each
        for r in records:
            assert r.output["diagnosis"]["status"] == "SUCCESS" and r.output["complete"]
            assert r.input["prompts"]["calibration_diagnosis"].count("[figure]") == 1
            assert r.input["figures"][0]["sha256"]


def test_a_request_that_fails_is_sent_once_more_and_a_record_that_still_fails_is_failed(home: Path) -> None:
    retried = "Assessment: Reliable\nReason: asked again, answered."
    script = dict(GOOD) | {"fit_reliability": [fail(500), fail(500), answer(retried)]}
    with ModelServer(script) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
            assert run.trigger == "single"
            done = execute_run(store.db, store, run.id)
            (record,) = store.db.evaluation_records(run.id)
            s = summary(store.db, run.id)
            assert server.asked("fit_reliability") == 2  # once, then once more; never a third time
            # a question that got no answer after its resend is failed, and so is its record and run
            assert record.status == "failed" and done.status == "failed"
            fit = record.output["answers"]["fit_reliability"]
            assert fit["state"] == "failed" and "500" in fit["error"] and fit["answer"] is None
            assert record.output["failed_keys"] == ["fit_reliability"]
            assert record.output["attempts"]["fit_reliability"] == 2
            assert record.error.startswith("1 of 6 questions got no answer: fit_reliability:")
            assert all(
                a["state"] == "arrived" for k, a in record.output["answers"].items() if k != "fit_reliability"
            )
            assert s["failed_records"] == 1 and s["failed_questions"] == 1 and s["counts"] == {"failed": 1}
            first_wall = s["wall_seconds"]
            # retry asks exactly the failed question again; what arrived is kept byte for byte
            _, reset = store.db.retry_evaluation_run(run.id)
            assert reset == 1
            before = len(server.received)
            done = execute_run(store.db, store, run.id)
            (again,) = store.db.evaluation_records(run.id)
            s = summary(store.db, run.id)
    assert [r.question for r in server.received[before:]] == ["fit_reliability"]
    assert done.status == "completed" and again.status == "completed" and again.error is None
    answers = again.output["answers"]
    assert (
        answers["fit_reliability"]["answer"] == retried and answers["fit_reliability"]["state"] == "arrived"
    )
    for key in GOOD:
        if key != "fit_reliability":
            assert answers[key] == record.output["answers"][key]
    assert again.output["complete"] and again.output["failed_keys"] == []
    assert len(again.output["calls"]) == 6 + 2  # both exchanges' calls, the two failures among them
    assert len(again.output["exchanges"]) == 2
    # the first execution still counts after the retry: both exchanges lie inside the wall time
    assert s["wall_seconds"] >= sum(e["duration_seconds"] for e in again.output["exchanges"]) > 0
    assert first_wall > 0


def test_an_endpoint_that_always_fails_gives_failed_records_never_a_completed_run(home: Path) -> None:
    with ModelServer({}, default=fail(500)) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
            done = execute_run(store.db, store, run.id, workers=2)
            records = store.db.evaluation_records(run.id)
            s = summary(store.db, run.id)
            scored = score(store.db, store, run.id)
            _, reset = store.db.retry_evaluation_run(run.id)
    assert len(server.received) == 4 * 6 * 2  # every question sent twice, never a third time
    assert done.status == "failed" and {r.status for r in records} == {"failed"}
    assert all(r.output["failed_keys"] == list(GOOD) and r.output["success"] is None for r in records)
    assert s["failed_records"] == 4 and s["failed_questions"] == 24
    assert scored["total"]["judged"] == 0  # a failed record is never scored as a wrong status
    assert reset == 4  # retry takes the failed records


def test_a_refusal_is_a_completed_record_with_no_status_and_is_scored_unread(home: Path) -> None:
    refusal = "I cannot tell whether this is a SUCCESS from this figure."
    with ModelServer(dict(GOOD) | {"calibration_diagnosis": answer(refusal)}) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
            execute_run(store.db, store, run.id)
            records = store.db.evaluation_records(run.id)
            scored = score(store.db, store, run.id)["total"]
    for r in records:
        d = r.output["diagnosis"]
        assert r.status == "completed" and d["status"] is None and r.output["success"] is None
        assert d["qcaleval_status"] == "SUCCESS" and r.output["unread_keys"] == ["calibration_diagnosis"]
        assert r.output["answers"]["calibration_diagnosis"]["answer"] == refusal
    assert scored["known"] == 4 and scored["status"] == 0 and scored["status_unread"] == 4
    assert scored["qcaleval_status"] == 4  # the benchmark's reading credits the refusal; ours does not


def test_cancel_stops_the_run_between_records(home: Path) -> None:
    slowly = {k: slow(v.text, 1.0) for k, v in GOOD.items()}
    with ModelServer(slowly) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))

            def cancel_after_first(record) -> None:
                store.db.cancel_evaluation_run(run.id)

            done = execute_run(store.db, store, run.id, workers=1, on_record=cancel_after_first)
            statuses = [r.status for r in store.db.evaluation_records(run.id)]
    assert done.status == "cancelled"
    assert statuses.count("cancelled") == 3 and len(server.received) == 6  # one record judged, then none


RUNNER = """
import sys
from qsolve.evaluation.runs import execute_run
from qsolve_pipeline.storage.calibration import open_store
with open_store() as store:
    execute_run(store.db, store, sys.argv[1], workers=1, beat_s=0.2)
"""


def test_a_killed_run_goes_stale_is_read_as_interrupted_and_completes_on_retry(home: Path) -> None:
    slowly = {k: slow(v.text, 0.6) for k, v in GOOD.items()}
    with ModelServer(slowly) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        worker = subprocess.Popen([sys.executable, "-c", RUNNER, run.id], env=dict(os.environ))
        deadline = time.monotonic() + 60
        with open_store(home) as store:
            while time.monotonic() < deadline:
                if any(r.status == "completed" for r in store.db.evaluation_records(run.id)):
                    break
                time.sleep(0.1)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        judged_before = {r.id for r in _completed(home, run.id)}
        assert judged_before, "the worker was killed before it judged a record"
        os.environ["EVALUATION_STALE_AFTER_SECONDS"] = "0.5"
        try:
            time.sleep(1.0)
            with open_store(home) as store:
                assert store.db.get_evaluation_run(run.id, stale_after=None).status == "running"
                from qsolve.evaluation.runs import stale_after

                assert store.db.get_evaluation_run(run.id, stale_after=stale_after()).status == "interrupted"
                _, reset = store.db.retry_evaluation_run(run.id)
                assert reset == 4 - len(judged_before)
                asked_before = len(server.received)
                done = execute_run(store.db, store, run.id, workers=2)
        finally:
            del os.environ["EVALUATION_STALE_AFTER_SECONDS"]
    assert done.status == "completed"
    assert {r.id for r in _completed(home, run.id)} >= judged_before
    assert len(server.received) - asked_before == 6 * reset  # only the others were judged again


def _completed(home: Path, run_id: str):
    with open_store(home) as store:
        return [r for r in store.db.evaluation_records(run_id) if r.status == "completed"]


def test_two_runs_compare_and_score_against_known_answers(home: Path) -> None:
    wrong = dict(GOOD) | {"calibration_diagnosis": answer("Status: SHORT_T1\nSuggested range: none")}
    with open_store(home) as store:
        store.record_all([made("Q04", true_status="SHORT_T1", minutes=5)])
        judge = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, judge.id)
    with ModelServer(wrong) as server:
        declare(home, server)
        with open_store(home) as store:
            model = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
            execute_run(store.db, store, model.id)
            c = compare(store.db, judge.id, model.id)
            s = score(store.db, store, model.id)
            record = store.db.evaluation_records(model.id)[0]
            store.db.add_verdict(record.id, "ana", "disagree", area="status")
            assert score(store.db, store, model.id)["total"]["disagreed"] == 1
    model_setting = next(x for x in c["settings"] if x["setting"] == "model")
    assert model_setting["differs"] and model_setting["a"] == "classical-judge"
    q00 = next(r for r in c["rows"] if r["qid"] == "Q00")
    assert q00["same_result"] and "status" in q00["decision_differences"]
    assert s["total"]["known"] == 5 and s["total"]["status"] == 0  # SHORT_T1 is not a code of this task
    assert json.dumps(c)  # a JSON document, as --json prints it


def test_a_failed_record_shows_as_failed_beside_its_diagnosis_status_in_a_comparison(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qsolve.cli import main

    with open_store(home) as store:
        judged = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, judged.id)
        broken = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        assert store.db.start_evaluation_run(broken.id, "test-owner")
        for r in store.db.evaluation_records(broken.id):  # each record ends as the executor fails one
            assert store.db.claim_evaluation_record(r.id)
            store.db.finish_evaluation_record(r.id, "failed", error="FigureMissing: the figure is gone")
        c = compare(store.db, judged.id, broken.id)
        same = compare(store.db, broken.id, broken.id)
    q00 = next(r for r in c["rows"] if r["qid"] == "Q00")
    assert q00["a"]["record_status"] == "completed" and q00["a"]["status"] == "SUCCESS"
    assert q00["b"]["record_status"] == "failed" and q00["b"]["status"] is None  # no diagnosis: no status
    assert q00["decision_differences"] == ["record_status"] and q00["content_differences"] == []
    assert all(r["decision_differences"] == [] for r in same["rows"])  # both failed: nothing differs
    assert c["totals"]["b"]["completed"] == 0
    capsys.readouterr()
    assert main(["evaluations", "compare", judged.id, broken.id]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if " Q00 " in x]
    assert "SUCCESS/True/fit no_fit vs record failed" in line and "[decision: record_status]" in line


def test_scoring_an_unknown_run_is_refused_naming_it(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qsolve.cli import main
    from qsolve_pipeline.storage.state import NotFound

    with open_store(home) as store, pytest.raises(NotFound, match="no evaluation run feedface") as refused:
        score(store.db, store, "feedface")
    assert refused.value.key == "feedface"
    capsys.readouterr()
    assert main(["evaluations", "score", "feedface"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no evaluation run feedface" in err
    assert main(["evaluations", "show", "feedface"]) == 2  # as the other commands exit for an unknown run


def test_compare_of_two_day_runs_with_two_results_per_qubit_gives_one_row_per_record(home: Path) -> None:
    """A day run holding the healthy and the faulted result of each qubit: every record is a row."""
    with open_store(home) as store:
        store.record_all([made(f"Q0{i}", true_status="SHORT_T1", minutes=5 + i) for i in range(4)])
        a = request_run(store.db, store, RunRequest(day="2026-12-01"))
        execute_run(store.db, store, a.id)
        b = request_run(store.db, store, RunRequest(day="2026-12-01", with_examples=True))
        execute_run(store.db, store, b.id)
        latest = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, latest.id)
        c = compare(store.db, a.id, b.id)
        d = compare(store.db, a.id, latest.id)
    assert c["totals"]["a"]["records"] == c["totals"]["b"]["records"] == 8
    assert len(c["rows"]) == 8  # two per qubit, never collapsed into one
    assert all(r["same_result"] and not r["results_differ"] for r in c["rows"])
    assert len({r["a"]["task_result_id"] for r in c["rows"]}) == 8
    assert sum(r["a"] is not None for r in c["rows"]) == c["totals"]["a"]["records"]
    # the latest-result run judged one result per qubit: joined by result where it can, the other
    # result of each qubit is a row of its own, only in a
    assert sum(r["a"] is not None for r in d["rows"]) == 8 and sum(r["b"] is not None for r in d["rows"]) == 4
    assert sum(r["same_result"] for r in d["rows"]) == 4 and sum(r["b"] is None for r in d["rows"]) == 4
    names = {s["setting"]: s for s in c["settings"]}
    assert names["knowledge_sha256"]["a"] and not names["knowledge_sha256"]["differs"]
    assert len(names["evaluator_sha256"]["a"]) == 64 and names["with_examples"]["differs"]


def test_compare_by_entity_flags_rows_whose_results_differ(home: Path) -> None:
    with open_store(home) as store:
        first = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, first.id)
        store.record_all([made(f"Q0{i}", minutes=30) for i in range(4)])  # a newer result of each
        second = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, second.id)
        c = compare(store.db, first.id, second.id)
    assert len(c["rows"]) == 4 and all(r["results_differ"] and not r["same_result"] for r in c["rows"])
    assert all(r["a"]["task_result_id"] != r["b"]["task_result_id"] for r in c["rows"])


def _json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0):
    from qsolve.cli import main

    capsys.readouterr()
    assert main([*argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_every_evaluations_subcommand_answers_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_store(home) as store:
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, run.id)
    shown = _json(capsys, "evaluations", "show", run.id)
    assert shown["id"] == run.id and shown["status"] == "completed" and len(shown["records"]) == 4
    for r in shown["records"]:
        assert r["state"] == "completed" and r["status"] == "SUCCESS" and r["success"] is True
        assert r["answers"]["calibration_diagnosis"]["answer"].startswith("Status: SUCCESS")
        assert r["answers"]["calibration_diagnosis"]["state"] == "arrived"
    assert [s["id"] for s in _json(capsys, "evaluations", "list")] == [run.id]
    assert _json(capsys, "evaluations", "compare", run.id, run.id)["rows"]
    assert _json(capsys, "evaluations", "score", run.id)["total"]["judged"] == 4
    record = shown["records"][0]["id"]
    verdict = _json(capsys, "evaluations", "verdict", record, "--reviewer", "ana", "--verdict", "agree")
    assert verdict["record_id"] == record and verdict["verdict"] == "agree"
    assert _json(capsys, "evaluations", "retry", run.id, code=1) == {
        "id": run.id,
        "status": "completed",
        "reset": 0,
    }
    assert _json(capsys, "evaluations", "cancel", run.id) == {"id": run.id, "status": "completed"}


def test_every_knowledge_subcommand_answers_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qsolve.evaluation.runs import REPO_KNOWLEDGE

    task = str(REPO_KNOWLEDGE / "CheckT1")
    assert _json(capsys, "knowledge", "reference", task)["criteria"]
    assert _json(capsys, "knowledge", "preview", task)["prompts"]
    out = home / "CheckT1.zip"
    written = _json(capsys, "knowledge", "archive", task, "--output", str(out))
    assert written["output"] == str(out) and written["bytes"] == out.stat().st_size
    stored = _json(capsys, "knowledge", "draft", str(out))
    assert stored["task"] == "CheckT1"
    assert [d["id"] for d in _json(capsys, "knowledge", "draft", "--list")] == [stored["id"]]


SHOW = """
import sys
from qsolve.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", ["show", "compare"])
def test_output_into_a_reader_that_stops_early_ends_quietly(home: Path, command: str) -> None:
    with open_store(home) as store:
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        execute_run(store.db, store, run.id)
    argv = ["evaluations", command, run.id] + ([run.id] if command == "compare" else [])
    reader = subprocess.Popen(
        [sys.executable, "-c", SHOW, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    reader.stdout.close()  # as `| head` does once it has read its lines: every write meets a closed pipe
    err = reader.stderr.read().decode()
    reader.stderr.close()
    assert reader.wait() == 0
    assert "BrokenPipeError" not in err and "Traceback" not in err


def test_a_retry_adds_its_time_to_the_wall_time_and_loses_none_of_the_first(home: Path) -> None:
    script = dict(GOOD) | {"fit_reliability": [fail(500), fail(500), answer("Assessment: Reliable")]}
    with ModelServer(script) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
            execute_run(store.db, store, run.id)
            first = summary(store.db, run.id)["wall_seconds"]
            store.db.retry_evaluation_run(run.id)
            execute_run(store.db, store, run.id)
            (again,) = store.db.evaluation_records(run.id)
            after = summary(store.db, run.id)["wall_seconds"]
    retry_span = (again.finished_at - again.started_at).total_seconds()
    assert after >= first + retry_span  # the two executions are disjoint in time: their spans add up


def test_evaluate_with_a_key_variable_unset_is_refused_before_anything_is_stored(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the independent test of issue 25: the run was stored and its flow started (40 s on a
    busy machine), then every record failed on the missing key. Now a one-line error, exit 2."""
    from qsolve.cli import main

    monkeypatch.delenv("QSOLVE_TEST_UNSET_KEY", raising=False)
    with ModelServer(GOOD) as server:
        spec = server.spec(api_key_env="QSOLVE_TEST_UNSET_KEY")
        doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
        (home / "evaluation.yaml").write_text(yaml.safe_dump(doc))
        capsys.readouterr()
        assert main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez", "--model", spec.id]) == 2
        assert server.received == []
    err = capsys.readouterr().err
    assert "QSOLVE_TEST_UNSET_KEY" in err and "not set" in err and len(err.strip().splitlines()) == 1
    with open_store(home) as store:
        assert store.db.list_evaluation_runs() == []


def test_a_record_cancelled_while_its_calls_are_in_flight_keeps_what_arrived_and_retry_asks_nothing_twice(
    home: Path,
) -> None:
    """Found by the independent test of issue 25: cancelling a run while a record's six calls were in
    flight threw away the answers that then arrived (the record was kept cancelled with no output), so
    retry asked all six again: an answer that arrived was asked twice (and billed twice)."""
    import threading

    slowly = {k: slow(v.text, 1.5) for k, v in GOOD.items()}
    with ModelServer(slowly) as server:
        declare(home, server)
        with open_store(home) as store:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
            worker = threading.Thread(target=execute_run, args=(store.db, store, run.id), daemon=True)
            worker.start()
            deadline = time.monotonic() + 60
            while len(server.received) < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.received) == 6  # all six in flight
            store.db.cancel_evaluation_run(run.id)
            worker.join(120)
            (cancelled,) = store.db.evaluation_records(run.id)
            assert cancelled.status == "cancelled"
            assert cancelled.output is not None  # the six answers that arrived are kept
            assert {a["state"] for a in cancelled.output["answers"].values()} == {"arrived"}
            store.db.retry_evaluation_run(run.id)
            execute_run(store.db, store, run.id)
            (again,) = store.db.evaluation_records(run.id)
    assert len(server.received) == 6  # nothing asked twice
    assert again.status == "completed" and again.output["answers"] == cancelled.output["answers"]
