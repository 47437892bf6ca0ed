"""A deployed maintenance pass is served by the maintenance runner beside ``qsolve worker`` (issue 39,
item 3; docs/deploy.md), on the session's Prefect server:

- a run of the ``maintenance`` deployment (its own work queue, ``maintenance``), on the session's pool and
  ``qsolve worker`` (``shared_worker``, tests/conftest.py), is taken when due and
  completes with its one-line summary as the state's message and in its log; it files what waits and
  publishes its report; a pass with nothing to do publishes no artifact; Prefect's worker takes none;
- a pass that fails is Failed;
- of two runners that see the same due run, one runs it;
- a pass cancelled while it runs stops at its next step and ends Cancelled, saying which steps ran.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.flows.test_maintenance import ended_runs

pytestmark = pytest.mark.xdist_group("prefect-process-worker")

WAIT_S = 300  # a loaded 2-core machine starts a worker's processes in 10 to 60 s


def _until(what, timeout: float = WAIT_S, every: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := what():
            return got
        time.sleep(every)
    return what()


@pytest.fixture
def deployment(prefect) -> Iterator[tuple[str, object]]:
    """A pool of the test's own and the maintenance deployment on its ``maintenance`` queue."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from qsolve_pipeline.flows.maintenance import maintenance_flow
    from qsolve_pipeline.flows.maintenance_runner import ENTRYPOINT
    from qsolve_pipeline.flows.queues import MAINTENANCE_QUEUE, ensure_queues

    pool = f"qsolve-{uuid.uuid4().hex[:8]}"
    ensure_queues(pool, ["default", MAINTENANCE_QUEUE])
    with get_client(sync_client=True) as client:
        made = client.create_deployment(
            flow_id=client.create_flow(maintenance_flow),
            name=f"maintenance-{pool}",
            entrypoint=ENTRYPOINT,
            work_pool_name=pool,
            work_queue_name=MAINTENANCE_QUEUE,
            pull_steps=[],
            parameters={},
            enforce_parameter_schema=False,
        )
    try:
        yield pool, made
    finally:
        with get_client(sync_client=True) as client:
            with contextlib.suppress(ObjectNotFound):
                client.delete_deployment(made)
            with contextlib.suppress(ObjectNotFound):
                client.delete_work_pool(pool)


def _run(deployment_id, in_s: float = 0.0, **parameters):
    from prefect.client.orchestration import get_client
    from prefect.states import Scheduled

    when = datetime.now(UTC) + timedelta(seconds=in_s)
    with get_client(sync_client=True) as client:
        return client.create_flow_run_from_deployment(
            deployment_id, parameters=parameters, state=Scheduled(scheduled_time=when)
        ).id


def _state(run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id).state


def _final(run_id, timeout: float = WAIT_S):
    state = _until(lambda: (s := _state(run_id)) is not None and s.is_final() and s, timeout=timeout)
    assert state and state.is_final(), state
    return state


def _logs(run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))


def _artifacts(run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
        )


def test_a_deployed_pass_is_taken_by_the_worker_and_completes_with_its_summary(guest, shared_worker) -> None:
    """On the session's pool and ``qsolve worker`` (tests/conftest.py, ``shared_worker``), the deployment's
    runs with a home of the test's own (the deployment's job variables, laid over the runner's own)."""
    from qsolve_pipeline.flows.maintenance_runner import ENTRYPOINT
    from qsolve_pipeline.flows.queues import MAINTENANCE_QUEUE
    from qsolve_pipeline.storage.trackrecord.sql import run_sql

    platform, w = guest, shared_worker[1]
    home, tmp_path = platform.home, platform.root
    ids = ended_runs(home, 1)
    made = platform.deploy("maintenance", ENTRYPOINT, queue=MAINTENANCE_QUEUE)
    log = w.log
    first = _run(made, in_s=2)  # due in 2 s, as the schedule makes them: waited for, then taken
    state = _final(first)
    assert state.is_completed(), (state, log.read_text()[-3000:])
    idle = _run(made)
    again = _final(idle)
    (tmp_path / "a-file").write_text("not a home")
    bad = _run(made, home=str(tmp_path / "a-file"))
    failed = _final(bad)
    said = log.read_text()
    assert state.message.startswith("filed 1 runs (0 wait); ended 0 abandoned runs; released 0 holds")
    assert "\n" not in state.message
    assert run_sql("select run_id from rows", home).column("run_id").to_pylist() == ids
    messages = [entry.message for entry in _logs(first)]
    assert state.message in messages, messages
    assert not [m.message for m in _logs(first) if m.level >= 40]
    assert [a.key for a in _artifacts(first)] == ["maintenance-report"]
    assert "filed 1 run into the track record" in _artifacts(first)[0].data

    assert again.is_completed() and again.message.startswith("filed 0 runs"), again
    assert _artifacts(idle) == []  # nothing changed: no report published

    assert failed.is_failed(), failed
    for run in (first, idle, bad):
        assert f"submitting flow run '{run}'" not in said  # Prefect's worker took none of them
    assert "serving the work queue" in said


def test_of_two_runners_one_runs_a_due_pass(deployment, tmp_path: Path, monkeypatch) -> None:
    from prefect.client.orchestration import get_client

    from qsolve_pipeline.flows.maintenance_runner import Runner

    pool, made = deployment
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    run = _run(made)
    with get_client(sync_client=True) as client:
        (due,) = [r.flow_run for r in client.get_scheduled_flow_runs_for_work_pool(pool, ["maintenance"])]
    took: list[bool] = []
    barrier = threading.Barrier(2)

    def take() -> None:
        with get_client(sync_client=True) as client:
            barrier.wait()
            took.append(Runner(pool).take(client, due))

    threads = [threading.Thread(target=take) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
    assert sorted(took) == [False, True]
    assert _final(run).is_completed()
    with get_client(sync_client=True) as client:
        running = [s for s in client.read_flow_run_states(run) if s.is_running()]
    assert len(running) == 1


def test_a_pass_cancelled_while_it_runs_stops_and_is_cancelled(
    deployment, tmp_path: Path, monkeypatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelling

    from qsolve_pipeline.flows.maintenance_runner import Runner
    from qsolve_pipeline.storage import maintenance

    pool, made = deployment
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    run = _run(made)
    first_step = maintenance.end_abandoned_runs

    def cancelled_meanwhile(db, *args):
        with get_client(sync_client=True) as client:  # the operator cancels it from the UI
            client.set_flow_run_state(run, Cancelling(), force=True)
        return first_step(db, *args)

    monkeypatch.setattr(maintenance, "end_abandoned_runs", cancelled_meanwhile)
    with get_client(sync_client=True) as client:
        (due,) = [r.flow_run for r in client.get_scheduled_flow_runs_for_work_pool(pool, ["maintenance"])]
        assert Runner(pool).take(client, due)
    state = _final(run)
    assert state.is_cancelled(), state
    assert state.message.startswith("cancelled after abandoned runs: "), state.message
