"""An operator's Prefect tells the truth (issue 36), on the session's Prefect server with ``qsolve worker``
(Prefect's process worker as its child), each command a process of its own, as an operator runs them:

- a fresh pool whose worker holds a provider takes a run at once:
  ``python -m qsolve_pipeline.deployments.pool`` makes ``default`` and ``ibm``, the worker makes its
  provider's queue, and a queue deleted under it is said and made again;
- ``prefect flow-run cancel`` of an evaluation flow run started by task and chip cancels its evaluation
  run (the hook, run from Prefect's own hook script, finds the run by the flow run's label);
- a failed evaluation is a Failed flow run, with the run's one line and no ERROR in its log; a rejected
  submission's log has no ERROR either;
- a third evaluation run waits, saying so, while two run (the ``evaluation`` concurrency limit);
- SIGKILL of ``qsolve worker``'s process group leaves no Prefect worker and no flow run behind.

The flows' code runs from the worker's environment (PYTHONPATH, else the installed package). A test whose
flow runs need only a pool and a worker runs them on the session's one pool and worker (``shared_worker``,
tests/conftest.py: a worker's start costs 10 to 60 s on a busy machine), with deployments and a home of
its own (``guest``: the home in the deployments' job variables), or the shared home's own deployments (the
rejected submission, the crashed history run). A test keeps a pool and worker of its own where it asks
something of them: the fresh pool made by ``deployments.pool`` and the worker holding a provider, and the
worker whose process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve_pipeline.storage.calibration import open_store
from tests.qsolve.calibration.calibration_runs import made

pytestmark = pytest.mark.xdist_group("prefect-process-worker")

WAIT_S = 300  # a loaded 2-core machine starts a flow run's process in 10 to 60 s


def _env(home: Path, host: str, **more: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "QISKIT_IBM"))}
    env |= {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "QSOLVE_HOME": str(home),
        "QSOLVE_HOST_NAME": host,
        "QSOLVE_EVALUATION_CONFIG": str(home / "evaluation.yaml"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "EVALUATION_CONCURRENCY": "1",
    }
    env.pop("QCALEVAL_MODEL", None)
    return env | more


class Platform:
    """A pool, its deployments, and the homes and logs of the processes started on it; a guest
    (:meth:`guest`) has deployments and a home of its own on another's pool and worker."""

    def __init__(self, root: Path, pool: str | None = None, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.tag = uuid.uuid4().hex[:8]
        self.owner = pool is None
        self.pool = pool or f"qsolve-{self.tag}"
        self.env = env or {}  # its flow runs' environment, over the worker's (the deployments' job variables)
        self.deployments: dict[str, object] = {}
        self.home = root / "home"
        self.home.mkdir()

    def guest(self, root: Path, host: str) -> Platform:
        """A platform on this one's pool (and so its worker) whose flow runs have a home of their own: the
        environment ``_env`` gives a worker of its own, laid over the shared worker's by the deployments'
        job variables (``env``), as Prefect's process worker lays them over its own for each run."""
        home = root / "home"
        return Platform(
            root,
            pool=self.pool,
            env={
                "QSOLVE_HOME": str(home),
                "QSOLVE_HOST_NAME": host,
                "QSOLVE_EVALUATION_CONFIG": str(home / "evaluation.yaml"),
            },
        )

    def deploy(
        self, flow_name: str, entrypoint: str, queue: str = "default", env: dict[str, str] | None = None
    ) -> object:
        from prefect.client.orchestration import get_client
        from prefect.utilities.importtools import import_object

        from qsolve_pipeline.flows.queues import ensure_queues

        ensure_queues(self.pool, [queue])  # the pool, where no one made it yet
        name = f"{flow_name}-{self.tag}"
        variables: dict[str, object] = {"working_dir": str(self.root)}
        if self.env or env:
            variables["env"] = self.env | (env or {})
        with get_client(sync_client=True) as client:
            flow_id = client.create_flow(import_object(entrypoint))
            self.deployments[flow_name] = client.create_deployment(
                flow_id=flow_id,
                name=name,
                entrypoint=entrypoint,
                work_pool_name=self.pool,
                work_queue_name=queue,
                pull_steps=[],
                parameters={},
                enforce_parameter_schema=False,
                job_variables=variables,
            )
        return self.deployments[flow_name]

    def run(self, flow_name: str, **parameters) -> object:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            return client.create_flow_run_from_deployment(
                self.deployments[flow_name], parameters=parameters
            ).id

    def remove(self) -> None:
        """Its deployments removed, and its pool if it made it."""
        from prefect.client.orchestration import get_client
        from prefect.exceptions import ObjectNotFound

        with get_client(sync_client=True) as client:
            for deployment in self.deployments.values():
                with contextlib.suppress(ObjectNotFound):
                    client.delete_deployment(deployment)
            if self.owner:
                with contextlib.suppress(ObjectNotFound):
                    client.delete_work_pool(self.pool)


@pytest.fixture
def platform(prefect, tmp_path: Path) -> Iterator[Platform]:
    made_here = Platform(tmp_path)
    try:
        yield made_here
    finally:
        made_here.remove()


@contextlib.contextmanager
def shared_platform(root: Path) -> Iterator[tuple[Platform, subprocess.Popen]]:
    """One pool and one worker (host-s) for the session's tests whose flow runs ask nothing of their own of
    the worker (its start costs 10 to 60 s on a busy machine): the submission and history deployments on
    its own home, with hw-max-cut published, the history's runs with the failpoint that SIGKILLs a history
    flow run once it holds the stage (a submission rejected at its folder never reaches it); and the
    guests' deployments (:meth:`Platform.guest`). A test waits for its flow run's process to end."""
    from tests.flows.hardware_setup import publish

    made_here = Platform(root)
    try:
        publish(made_here.home, made_here.root)
        made_here.deploy("submission", "qsolve_pipeline.flows.submission:submission_flow")
        failing = {"QSOLVE_FAILPOINT": "history.claimed"}
        made_here.deploy("history", "qsolve_pipeline.flows.history:history_flow", env=failing)
        with worker(made_here, _env(made_here.home, "host-s")) as w:
            yield made_here, w
    finally:
        made_here.remove()


@contextlib.contextmanager
def worker(platform: Platform, env: dict[str, str], name: str = "worker") -> Iterator[subprocess.Popen]:
    """``qsolve worker --pool P`` as an operator starts it (the console script's path: its janitor too), in
    a session of its own; stopped with SIGTERM at the end, its group killed if it lingers."""
    log = platform.root / f"{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "qsolve.cli", "worker", "--pool", platform.pool],
            env=env,
            cwd=platform.root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    process.log = log  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _state(run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id).state


def _until(what, timeout: float = WAIT_S, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(every)
    return what()


def _final(run_id):
    state = _until(lambda: (s := _state(run_id)) is not None and s.is_final() and s)
    assert state and state.is_final(), state
    return state


def _logs(run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))


def _queues(pool: str) -> set[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {q.name for q in client.read_work_queues(work_pool_name=pool)}


def _declare(home: Path, server, **changes) -> None:
    import yaml

    spec = server.spec(**changes)
    doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
    (home / "evaluation.yaml").write_text(yaml.safe_dump(doc))


def _fresh_evaluation_limit() -> None:
    """The ``evaluation`` limit removed, so the flow creates it anew with EVALUATION_RUNS (2) slots and
    none taken (a run killed by a test keeps its slot until its lease ends)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client, contextlib.suppress(ObjectNotFound):
        client.delete_global_concurrency_limit_by_name("evaluation")


def test_a_fresh_pool_whose_worker_holds_a_provider_takes_its_runs(platform: Platform) -> None:
    from tests.flows.hardware_setup import REFERENCE

    operator = platform.root / "operator"
    done = subprocess.run(
        [sys.executable, "-m", "qsolve_pipeline.deployments.pool", "--pool", platform.pool],
        env=_env(operator, "operator"),
        cwd=platform.root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _queues(platform.pool) == {"default", "ibm"}  # every queue a worker may poll, before any polls
    env = _env(platform.home, "host-p", QSOLVE_WORKER_RENEW_S="1", QISKIT_IBM_TOKEN="a-key-held-here")
    added = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "providers", "add", "ref", "--process", "--", *REFERENCE],
        env=env,
        cwd=platform.root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert added.returncode == 0, added.stderr[-2000:]
    platform.deploy("maintenance", "qsolve_pipeline.flows.maintenance:maintenance_flow")
    run = platform.run("maintenance")
    with worker(platform, env) as w:
        assert _until(lambda: "provider-ref" in _queues(platform.pool), timeout=120), w.log.read_text()
        state = _final(run)
        assert state.is_completed(), (state, w.log.read_text()[-3000:])
        said = w.log.read_text()
        assert "host-p holds an IBM Quantum key, provider ref" in said
        assert "created the work queue provider-ref of pool" in said

        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            client.delete_work_queue_by_id(
                client.read_work_queue_by_name("ibm", work_pool_name=platform.pool).id
            )
        assert _until(lambda: "ibm" in _queues(platform.pool), timeout=120)
        said = _until(lambda: "created the work queue ibm" in (t := w.log.read_text()) and t, timeout=60)
    assert f"the work pool {platform.pool} lacks the queues ibm" in said  # said at the default level


def test_cancelling_an_evaluation_flow_run_cancels_its_run_and_a_failed_one_is_failed(
    guest: Platform, shared_worker: tuple[Platform, subprocess.Popen]
) -> None:
    platform = guest  # its home and deployment, on the session's pool and worker
    from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, fail, slow

    with open_store(platform.home) as store:
        store.record_all([made(f"Q0{i}") for i in range(3)])
    _fresh_evaluation_limit()
    platform.deploy("evaluation", "qsolve_pipeline.flows.evaluation:evaluation_flow")
    env = _env(platform.home, "host-e")
    w = shared_worker[1]  # one worker takes both runs, the session's
    with ModelServer({k: slow(v, 600) for k, v in HEALTHY.items()}) as server:
        # its questions wait for the cancel (at load 30 the cancel command took longer than the default
        # 5 s a question, and the run had failed before it came)
        _declare(platform.home, server, timeout_seconds=3 * WAIT_S)
        # no run_id among its parameters
        run = platform.run("evaluation", task="CheckT1", chip="fake:fez")

        def started():
            with open_store(platform.home) as store:
                return [r for r in store.db.list_evaluation_runs() if r.status == "running"]

        (evaluation,) = _until(started) or [None]
        assert evaluation is not None, w.log.read_text()[-3000:]
        cancel = subprocess.run(
            [sys.executable, "-m", "prefect", "flow-run", "cancel", str(run)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert cancel.returncode == 0, cancel.stderr[-2000:]
        state = _final(run)

        def ended():
            with open_store(platform.home) as store:
                return store.db.get_evaluation_run(evaluation.id).status == "cancelled"

        assert _until(ended, timeout=120), w.log.read_text()[-3000:]

    with open_store(platform.home) as store:
        first = store.list(task="CheckT1", chip="fake:fez")[0].id
    with ModelServer({k: fail(500) for k in HEALTHY}) as server:
        _declare(platform.home, server)
        failing = platform.run("evaluation", task_ids=[first])
        failed = _final(failing)
    assert state.is_cancelled(), state
    logs = _logs(run)
    said = [log.message for log in logs]
    assert not any("error was encountered while running hook" in m for m in said), said
    assert not [log.message for log in logs if log.level >= 40], said  # a cancel is no error

    assert failed.is_failed(), (failed, w.log.read_text()[-3000:])
    with open_store(platform.home) as store:
        (latest, *_) = sorted(store.db.list_evaluation_runs(), key=lambda r: r.created_at, reverse=True)
    assert latest.status == "failed" and failed.message.startswith(f"{latest.id}  failed ")
    assert "\n" not in failed.message
    logs = _logs(failing)
    assert not [log.message for log in logs if log.level >= 40], [
        log.message for log in logs if log.level >= 40
    ]


def test_a_third_evaluation_run_waits_while_two_run(
    guest: Platform, shared_worker: tuple[Platform, subprocess.Popen]
) -> None:
    platform, w = guest, shared_worker[1]  # its home and deployment, on the session's pool and worker
    from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, slow

    with open_store(platform.home) as store:
        store.record_all([made(f"Q0{i}") for i in range(3)])
    _fresh_evaluation_limit()
    platform.deploy("evaluation", "qsolve_pipeline.flows.evaluation:evaluation_flow")
    from prefect.client.orchestration import get_client

    def messages() -> list[list[str]]:
        with get_client(sync_client=True) as client:
            return [[s.message or "" for s in client.read_flow_run_states(run)] for run in runs]

    def waited() -> list[list[str]]:
        said = "waits for a slot of the concurrency limit evaluation"
        return [m for m in messages() if any(said in x for x in m)]

    # every answer held until a run is seen waiting (the two holding the slots cannot finish first, however
    # slowly a loaded machine starts the third), then all released at once (the server's stop event)
    held = {k: slow(v, 2 * WAIT_S) for k, v in HEALTHY.items()}
    with ModelServer(held) as server:
        _declare(platform.home, server, timeout_seconds=3 * WAIT_S)
        with open_store(platform.home) as store:
            ids = [r.id for r in store.list(task="CheckT1", chip="fake:fez")]
        runs = [platform.run("evaluation", task_ids=[i]) for i in ids]
        seen = _until(waited)
        server.state.stopping.set()
        states = [_final(run) for run in runs]
        most = server.max_in_flight
    assert seen, (messages(), w.log.read_text()[-3000:])  # one of the three said in its state that it waited
    assert all(s.is_completed() for s in states), (states, w.log.read_text()[-3000:])
    assert most <= 2 * 6, most  # two runs x one record at a time x six questions


def test_a_rejected_submission_logs_no_error(shared_worker: tuple[Platform, subprocess.Popen]) -> None:
    platform, w = shared_worker
    run = platform.run("submission", folder=str(platform.root / "no-such-folder"))
    state = _final(run)
    assert _until(lambda: not _flow_run_processes(w.pid), timeout=120), _flow_run_processes(w.pid)
    assert state.is_failed() and "no such folder" in state.message, (state, w.log.read_text()[-3000:])
    logs = _logs(run)
    assert not [log.message for log in logs if log.level >= 40], [
        log.message for log in logs if log.level >= 40
    ]
    assert not any("Traceback" in log.message for log in logs)


def test_a_quote_flow_run_goes_to_the_queue_of_the_target_it_prices(platform: Platform, monkeypatch) -> None:
    """Taken by a worker that holds no IBM key, the quote flow run of an ``ibm:`` case makes one with the
    same parameters in the work queue ``ibm`` and ends saying so: only a worker that can price it does."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterDeploymentId
    from prefect.flow_engine import run_flow

    from qsolve_pipeline.flows.hardware import quote_flow
    from tests.flows.hardware_setup import publish

    monkeypatch.setenv("QSOLVE_HOME", str(platform.home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.delenv("QISKIT_IBM_TOKEN", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    publish(platform.home, platform.root)  # its one hardware case on ibm:ibm_fez
    deployment = platform.deploy("quote", "qsolve_pipeline.flows.hardware:quote_flow")
    taken = platform.run("quote", workflow="hw-max-cut", account="dev")  # in the default queue
    with get_client(sync_client=True) as client:
        said = run_flow(quote_flow, flow_run=client.read_flow_run(taken), parameters=None)
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(deployment_id=FlowRunFilterDeploymentId(any_=[deployment]))
        )
    (sent,) = [r for r in runs if r.id != taken]
    assert sent.work_queue_name == "ibm" and sent.state.is_scheduled()
    assert sent.parameters == {"workflow": "hw-max-cut", "account": "dev", "target": None}
    waits = "waits for a worker that holds an IBM Quantum key (work queue ibm)"
    assert sent.state.message == f"quote of hw-max-cut for dev on ibm:ibm_fez: {waits}"
    assert (
        said.startswith("this machine cannot price ibm:ibm_fez: sent to the quote flow run") and waits in said
    )
    with open_store(platform.home) as store:
        assert store.db.list_quotes() == []  # nothing priced here


def test_a_crashed_history_run_says_what_is_left_and_the_command_that_finishes_it(
    shared_worker: tuple[Platform, subprocess.Popen],
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    platform, w = shared_worker  # its worker's failpoint SIGKILLs the flow run once it holds the stage
    run = platform.run("history", workflow="hw-max-cut", version="1.0.0")
    state = _until(
        lambda: (s := _state(run)).is_crashed() and "qsolve history" in (s.message or "") and s,
        timeout=WAIT_S,
    )
    assert state, (_state(run), w.log.read_text()[-3000:])
    assert _until(lambda: not _flow_run_processes(w.pid), timeout=120), _flow_run_processes(w.pid)
    assert "left to finish: the history stage of hw-max-cut 1.0.0" in state.message
    assert "(qsolve history hw-max-cut --version 1.0.0 runs the cases with no recorded run)" in state.message
    with get_client(sync_client=True) as client:
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run])))
    assert not [t.name for t in tasks if t.state and t.state.type.value in ("RUNNING", "PENDING")]


def test_killing_the_workers_group_leaves_no_prefect_worker_and_no_flow_run(platform: Platform) -> None:
    from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, slow

    with open_store(platform.home) as store:
        store.record_all([made("Q00")])
    _fresh_evaluation_limit()
    platform.deploy("evaluation", "qsolve_pipeline.flows.evaluation:evaluation_flow")
    env = _env(platform.home, "host-k")
    try:
        with ModelServer({k: slow(v, 600) for k, v in HEALTHY.items()}) as server:
            _declare(platform.home, server)
            with worker(platform, env) as w:
                run = platform.run("evaluation", task="CheckT1", chip="fake:fez")
                assert _until(lambda: server.received), w.log.read_text()[-3000:]  # its flow run is judging
                below = _descendants(w.pid)
                engines = [p for p, cmd in below.items() if "prefect.engine" in cmd or "bootstrap" in cmd]
                prefect_worker = [p for p, cmd in below.items() if "worker" in cmd and "prefect" in cmd]
                assert engines and prefect_worker, below
                os.killpg(w.pid, signal.SIGKILL)  # the operator's `kill -KILL -PGID`
                w.wait()
                left = _until(lambda: not any(_alive(p) for p in [*engines, *prefect_worker]), timeout=60)
                assert left, {p: below[p] for p in [*engines, *prefect_worker] if _alive(p)}
        assert not _state(run).is_completed()
    finally:
        _fresh_evaluation_limit()  # the killed run's slot


def _flow_run_processes(pid: int) -> dict[int, str]:
    """The flow run processes under the worker ``pid`` (Prefect's engine), with their command lines."""
    return {p: cmd for p, cmd in _descendants(pid).items() if "prefect.engine" in cmd or "bootstrap" in cmd}


def _descendants(pid: int) -> dict[int, str]:
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == parent and int(entry.name) not in found:
                    found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    todo.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
