"""The evaluation flow under the shared Prefect harness: requested from a selection, executed, its
summary the flow's result and an artifact; cancelling the flow run cancels the evaluation run."""

from __future__ import annotations

from pathlib import Path

from qsolve.evaluation.runs import RunRequest, request_run
from qsolve_pipeline.storage.calibration import open_store
from tests.qsolve.calibration.calibration_runs import made


def test_the_flow_requests_and_executes_a_run(prefect, tmp_path: Path, monkeypatch) -> None:
    from qsolve_pipeline.flows.evaluation import evaluation_flow

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    (tmp_path / "evaluation.yaml").write_text("version: 1\nmodels: []\n")
    with open_store(tmp_path) as store:
        store.record_all([made("Q00"), made("Q01", figure=None)])
    state = evaluation_flow(task="CheckT1", chip="fake:fez", return_state=True)
    done = state.result(_sync=True)
    assert state.is_completed() and done["status"] == "completed"
    assert done["counts"] == {"completed": 1} and done["model"] == "classical-judge"
    assert done["skipped"][0] == {"qid": "Q01", "why": "no evaluable result (no figure, or the task failed)"}
    assert {s["why"] for s in done["skipped"][1:]} == {"no result"}  # the chip's other qubits (issue 38)


def test_the_cancellation_hook_cancels_the_evaluation_run(prefect, tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from qsolve_pipeline.flows.evaluation import _cancel

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    with open_store(tmp_path) as store:
        store.record_all([made("Q00")])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
    _cancel(None, SimpleNamespace(parameters={"run_id": run.id}), None)
    with open_store(tmp_path) as store:
        assert store.db.get_evaluation_run(run.id).status == "cancelled"


def _declare(home: Path, server) -> None:
    import yaml

    spec = server.spec()
    doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
    (home / "evaluation.yaml").write_text(yaml.safe_dump(doc))


def test_the_optional_question_reaches_the_record_from_qsolve_evaluate(
    prefect, tmp_path: Path, monkeypatch, capsys
) -> None:
    import json

    from qsolve.cli import main
    from tests.qsolve.evaluation.model_server import ModelServer

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    monkeypatch.delenv("QCALEVAL_MODEL", raising=False)
    with open_store(tmp_path) as store:
        store.record_all([made("Q00")])
    asked = "Is this qubit good enough for a two-qubit gate?"
    with ModelServer() as server:
        _declare(tmp_path, server)
        capsys.readouterr()
        code = main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez", "--question", asked, "--json"])
        done = json.loads(capsys.readouterr().out)
        significance = [r for r in server.received if r.question == "experimental_significance"]
    assert code == 0 and done["settings"]["question"] == asked
    with open_store(tmp_path) as store:
        (record,) = store.db.evaluation_records(done["id"])
    assert record.input["question"] == asked
    assert asked in record.input["prompts"]["experimental_significance"]
    assert len(significance) == 1 and asked in json.dumps(significance[0].body)


def test_a_run_cancelled_while_the_flow_executes_it_ends_the_flow_run_cancelled(
    prefect, tmp_path: Path, monkeypatch
) -> None:
    import threading
    import time

    from qsolve_pipeline.flows.evaluation import evaluation_flow
    from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, slow

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    monkeypatch.setenv("EVALUATION_CONCURRENCY", "1")
    monkeypatch.delenv("QCALEVAL_MODEL", raising=False)
    with open_store(tmp_path) as store:
        store.record_all([made(f"Q0{i}") for i in range(3)])
    stop = threading.Event()
    run = None

    def cancel_after_the_first_record() -> None:
        with open_store(tmp_path) as store:
            while not stop.is_set():
                if any(r.status == "completed" for r in store.db.evaluation_records(run.id)):
                    store.db.cancel_evaluation_run(run.id)
                    return
                time.sleep(0.05)

    with ModelServer({k: slow(v, 0.5) for k, v in HEALTHY.items()}) as server:
        _declare(tmp_path, server)
        with open_store(tmp_path) as store:
            run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        canceller = threading.Thread(target=cancel_after_the_first_record)
        canceller.start()
        try:
            state = evaluation_flow(run_id=run.id, return_state=True)
        finally:
            stop.set()
            canceller.join()
    ended = state.result(raise_on_failure=False, _sync=True)
    done = ended.data  # the summary, kept with the ending (flows/endings.py)
    assert state.is_cancelled() and done["status"] == "cancelled"
    assert done["counts"].get("cancelled", 0) >= 1
    assert state.message == str(ended) and "\n" not in state.message
    assert state.message.startswith(f"{run.id}  cancelled ")  # the run's line, as evaluations list says it
