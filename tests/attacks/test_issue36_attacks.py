# ruff: noqa: F811 - the fixtures of tests/flows, imported here, are the tests' arguments
"""Issue 36 attacked (an operator's Prefect tells the truth), with the maintenance runner of issue 39 that
``qsolve worker`` now starts beside Prefect's worker.

Each test is a finding, asserting the right behaviour (a strict xfail until it was mended). What held has no
test here (see the attack's report). The tests that use a Prefect server share the process-worker group
of tests/flows/test_operator_worker.py and reuse its fixtures: the session's server (``prefect``), its pool
and worker (``shared_worker``, tests/conftest.py) with a home of the test's own (``guest``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.test_maintenance import ended_runs
from tests.flows.test_maintenance_runner import _final, _run, deployment  # noqa: F401
from tests.flows.test_operator_worker import _fresh_evaluation_limit, _until

pytestmark = pytest.mark.xdist_group("prefect-process-worker")


def _run_with_env(deployment_id, env: dict[str, str]):
    """A run of ``deployment_id`` due now, with ``env`` as its job variables' environment
    (``prefect deployment run maintenance/maintenance --job-variable env=...``)."""
    from datetime import UTC, datetime

    from prefect.client.orchestration import get_client
    from prefect.states import Scheduled

    with get_client(sync_client=True) as client:
        return client.create_flow_run_from_deployment(
            deployment_id,
            parameters={},
            state=Scheduled(scheduled_time=datetime.now(UTC)),
            job_variables={"env": env},
        ).id


def test_a_passs_environment_ends_with_it_in_the_maintenance_runner(
    deployment,
    tmp_path: Path,
    monkeypatch,
) -> None:
    """A process worker gives each flow run its own environment; the runner, one process for every pass,
    must do the same: a pass started with ``env={QSOLVE_HOME: other}`` leaves the next pass, started
    with none, on the runner's own home (where an ended run waits to be filed)."""
    from prefect.client.orchestration import get_client

    from qsolve_pipeline.flows.maintenance_runner import Runner

    pool, made = deployment
    home = tmp_path / "home"
    ended_runs(home, 1)
    monkeypatch.setenv("QSOLVE_HOME", str(home))  # the runner's own home (restored after the test)
    runner = Runner(pool, every=1.0)
    elsewhere = _run_with_env(made, {"QSOLVE_HOME": str(tmp_path / "other")})
    with get_client(sync_client=True) as client:
        assert runner.poll(client) == 1
    assert _final(elsewhere).is_completed()
    mine = _run(made)
    with get_client(sync_client=True) as client:
        assert runner.poll(client) == 1
    state = _final(mine)
    assert state.is_completed(), state
    assert state.message.startswith("filed 1 runs"), state.message


def test_the_evaluation_deployment_refuses_a_model_without_its_key_as_the_command_does(
    prefect,
    tmp_path: Path,
    monkeypatch,
) -> None:
    """``--param task=CheckT1 --param chip=fake:fez`` with a declared model whose ``api_key_env`` is not
    set: ``qsolve evaluate`` says so in one line and stores nothing; the flow run must be refused the
    same way (Failed, ``refused: ...`` naming the variable), and ``qsolve evaluations list`` shows no run."""
    import yaml

    from qsolve.cli import main
    from qsolve_pipeline.flows.evaluation import evaluation_flow
    from qsolve_pipeline.storage.calibration import open_store
    from tests.qsolve.calibration.calibration_runs import made
    from tests.qsolve.evaluation.model_server import ModelServer

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    monkeypatch.delenv("QCALEVAL_MODEL", raising=False)
    monkeypatch.delenv("ATK36_UNSET_KEY", raising=False)
    with open_store(tmp_path) as store:
        store.record_all([made("Q00")])
    with ModelServer() as server:
        spec = server.spec(api_key_env="ATK36_UNSET_KEY")
        doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
        (tmp_path / "evaluation.yaml").write_text(yaml.safe_dump(doc))
        assert main(["evaluate", "--task", "CheckT1", "--chip", "fake:fez"]) == 2  # the command refuses
        with open_store(tmp_path) as store:
            assert store.db.list_evaluation_runs() == []
        state = evaluation_flow(task="CheckT1", chip="fake:fez", return_state=True)
    assert state.is_failed(), state
    assert state.message.startswith("refused: ") and "ATK36_UNSET_KEY" in state.message, state.message
    with open_store(tmp_path) as store:
        assert store.db.list_evaluation_runs() == []


def test_cancelling_a_flow_run_that_never_ran_its_run_id_leaves_that_run_alone(guest, shared_worker) -> None:
    """``prefect deployment run evaluation/evaluation --param run_id=R`` for a run R another flow run is
    executing (a mistaken retry), waiting for a slot of the ``evaluation`` limit; the operator cancels it
    (``prefect flow-run cancel``). The flow run never started R (it would be refused: only a pending run
    is executed), so R goes on: the hook cancels only a run the flow run started."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.states import Cancelling

    from qsolve.evaluation.runs import RunRequest, request_run
    from qsolve_pipeline.storage.calibration import open_store
    from tests.qsolve.calibration.calibration_runs import made

    platform, w = guest, shared_worker[1]  # a home of its own, on the session's pool and worker
    with open_store(platform.home) as store:
        store.record_all([made("Q00")])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"), home=platform.home)
        assert store.db.start_evaluation_run(run.id, "another-flow-run")  # executing elsewhere
    _fresh_evaluation_limit()
    with get_client(sync_client=True) as client:  # both slots taken by the runs executing now
        client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name="evaluation", limit=1, active_slots=1)
        )
    platform.deploy("evaluation", "qsolve_pipeline.flows.evaluation:evaluation_flow")
    (platform.home / "evaluation.yaml").write_text("version: 1\nmodels: []\n")
    try:
        mistaken = platform.run("evaluation", run_id=run.id)

        def waiting() -> bool:
            with get_client(sync_client=True) as client:
                state = client.read_flow_run(mistaken).state
            return state is not None and "waits for a slot" in (state.message or "")

        assert _until(waiting), w.log.read_text()[-3000:]
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(mistaken, Cancelling(message="a mistaken retry"), force=True)

        def ended():
            with get_client(sync_client=True) as client:
                state = client.read_flow_run(mistaken).state
            return state is not None and state.is_final() and state

        assert _until(ended), w.log.read_text()[-3000:]
        assert ended().is_cancelled()

        def status() -> str:
            with open_store(platform.home) as store:
                return store.db.get_evaluation_run(run.id).status.value

        with get_client(sync_client=True) as client:
            name = client.read_flow_run(mistaken).name

        def hook_ended() -> bool:
            """Prefect's runner in the worker said the cancellation done, which it says once the flow's
            cancellation hooks have returned (prefect.runner's cancellation manager: kill, hooks, then
            the Cancelled state and this line)."""
            return f"Cancelled flow run '{name}'" in w.log.read_text()

        # a minute for the hook to act, were it to; no longer than until the worker says it has run
        _until(lambda: status() != "running" or hook_ended(), timeout=60)
        assert status() == "running", "the run another flow run executes was cancelled by this one"
    finally:
        _fresh_evaluation_limit()
