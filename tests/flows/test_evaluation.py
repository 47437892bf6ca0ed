"""The evaluation flow under the shared Prefect harness: requested from a selection, executed, its
summary the flow's result and an artifact; cancelling the flow run cancels the evaluation run."""

from __future__ import annotations

from pathlib import Path

from qsolve.calibration.runs import RunRequest, request_run
from qsolve.calibration.store import open_store
from tests.qsolve.calibration.calibration_runs import made


def test_the_flow_requests_and_executes_a_run(prefect, tmp_path: Path, monkeypatch) -> None:
    from flows.evaluation import evaluation_flow

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    (tmp_path / "evaluation.yaml").write_text("version: 1\nmodels: []\n")
    with open_store(tmp_path) as store:
        store.record_all([made("Q00"), made("Q01", figure=None)])
    state = evaluation_flow(task="CheckT1", chip="fake:fez", return_state=True)
    done = state.result()
    assert state.is_completed() and done["status"] == "completed"
    assert done["counts"] == {"completed": 1} and done["model"] == "classical-judge"
    assert done["skipped"] == [{"qid": "Q01", "why": "no evaluable result (no figure, or the task failed)"}]


def test_the_cancellation_hook_cancels_the_evaluation_run(prefect, tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from flows.evaluation import _cancel

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    with open_store(tmp_path) as store:
        store.record_all([made("Q00")])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
    _cancel(None, SimpleNamespace(parameters={"run_id": run.id}), None)
    with open_store(tmp_path) as store:
        assert store.db.get_evaluation_run(run.id).status == "cancelled"
