"""Issue 36's cheap parts, without a server where none is needed: the queues a pool gets, the evaluation
deployment's parameters as one selection, a hook that imports and runs from Prefect's own hook script
(whose folder holds a ``storage.py`` of its own), and an expected ending logged as one line."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO


def test_a_pool_has_every_queue_a_worker_may_poll() -> None:
    from qsolve_pipeline.flows.queues import pool_queues

    assert pool_queues() == ["default", "ibm"]
    assert pool_queues(["lab", "ref"], ["provider-old", "ibm", "default"]) == [
        "default",
        "ibm",
        "provider-lab",
        "provider-old",
        "provider-ref",
    ]


@pytest.mark.parametrize(
    ("given", "refused"),
    [
        ({"day": "2026-12-06"}, None),  # the whole day
        ({"day": "2026-12-06", "chip": "fake:fez"}, None),  # a chip narrows it, as qsolve evaluate does
        ({"task": "CheckT1", "chip": "fake:fez"}, None),
        ({"task_ids": ["a", "b"]}, None),
        ({"run_id": "r1"}, None),
        ({"task": "CheckT1", "chip": "fake:fez", "day": "2026-12-06"}, "task and day given: select one"),
        ({"day": "2026-12-06", "task_ids": ["a"]}, "day and task_ids given: select one"),
        ({"run_id": "r1", "task": "CheckT1", "chip": "fake:fez"}, "run_id and task given: select one"),
        ({"task": "CheckT1"}, "task needs chip"),
        ({}, "select a task and a chip, a day, or task-result ids"),
        ({"chip": "fake:fez"}, "chip given alone: select a task and a chip"),
    ],
)
def test_the_evaluation_parameters_are_one_selection(given: dict, refused: str | None) -> None:
    from qsolve.evaluation.runs import selection_problem

    problem = selection_problem(**given)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(refused) and "\n" not in problem


def test_the_evaluation_deployment_has_no_default_selection() -> None:
    """A default task and chip would narrow a ``day`` given alone (Prefect lays parameters over them)."""
    (evaluation,) = [
        d
        for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
        if d["name"] == "evaluation"
    ]
    assert not evaluation.get("parameters")


def test_the_cancellation_hook_imports_and_runs_from_prefects_hook_script(tmp_path: Path) -> None:
    """Prefect 3.9's process worker runs on_cancellation hooks as ``python .../prefect/runner/
    _workspace_runtime_bootstrap.py hook ...``: that folder, first on sys.path, has Prefect's own
    storage.py. The hook still imports qsolve's storage and cancels the evaluation run."""
    import prefect.runner
    from prefect.client.schemas.objects import FlowRun
    from prefect.states import Cancelling

    from qsolve.evaluation.runs import RunRequest, request_run
    from qsolve_pipeline.storage.calibration import open_store
    from tests.qsolve.calibration.calibration_runs import made

    home = tmp_path / "home"
    with open_store(home) as store:
        store.record_all([made("Q00")])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
    runner = Path(prefect.runner.__file__).parent
    assert (runner / "storage.py").is_file()  # what shadows a top-level ``storage`` there
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "runtime_entrypoint": "qsolve_pipeline.flows.evaluation:evaluation_flow",
                "working_directory": str(tmp_path),
            }
        )
    )
    flow_run = tmp_path / "flow-run.json"
    flow_run.write_text(
        FlowRun(
            id=uuid.uuid4(), flow_id=uuid.uuid4(), name="x", parameters={"run_id": run.id}
        ).model_dump_json()
    )
    state = tmp_path / "state.json"
    state.write_text(Cancelling().model_dump_json())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "PREFECT_API"))}
    env |= {"QSOLVE_HOME": str(home), "PREFECT_LOGGING_TO_API_ENABLED": "false"}
    done = subprocess.run(
        [sys.executable, str(runner / "_workspace_runtime_bootstrap.py"), "hook", "cancellation"]
        + [str(manifest), str(flow_run), str(state)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "error was encountered while running hook" not in done.stderr, done.stderr[-3000:]
    with open_store(home) as store:
        assert store.db.get_evaluation_run(run.id).status == "cancelled"


def test_an_expected_ending_is_logged_as_one_info_line() -> None:
    """Prefect logs a Failed or Cancelled state's exception as an engine error with its traceback; an
    expected ending (a rejection, a refusal, a cancel) is the state's one line at the INFO level."""
    from qsolve.validation.submission import SubmissionRejected, SubmissionReport
    from qsolve_pipeline.flows.endings import Ended, OneLine, cancelled

    state = cancelled("run r1  cancelled\n3 records")
    assert state.is_cancelled() and state.message == "run r1  cancelled 3 records"
    line = OneLine()
    for exc, said in [
        (state.data, "flow run ended Cancelled: run r1  cancelled 3 records"),
        (Ended("refused: no such run"), "flow run ended Failed: refused: no such run"),
    ]:
        record = logging.LogRecord(
            "prefect.flow_runs", logging.ERROR, __file__, 1, "Engine execution", (), None
        )
        record.exc_info = (type(exc), exc, None)
        assert line.filter(record)
        assert (record.levelno, record.getMessage(), record.exc_info) == (logging.INFO, said, None)
    report = SubmissionReport(folder="/nowhere").fail("lint", ["/nowhere: no such folder"])
    rejected = SubmissionRejected(report)
    record = logging.LogRecord("prefect.engine", logging.ERROR, __file__, 1, "Engine execution", (), None)
    record.exc_info = (type(rejected), rejected, None)
    line.filter(record)
    assert record.levelno == logging.INFO and record.getMessage().startswith("flow run ended Failed: ")
    other = logging.LogRecord("prefect.engine", logging.ERROR, __file__, 1, "Engine execution", (), None)
    other.exc_info = (ValueError, ValueError("a bug"), None)
    line.filter(other)
    assert other.levelno == logging.ERROR and other.exc_info is not None  # an unexpected one stays an error
