"""Workers anywhere (issue 26, items 3 and 5), on the session's Prefect server: prefect.yaml's ``hardware``
deployment made with ``prefect deploy`` from a folder that is not the repository, on a process work pool
whose job variables carry the state database (``deployments/pool.py``); two homes (separate folders) on
one PostgreSQL schema, each command and each worker a process of its own, started in a folder of its own.

B holds the provider ``ref``; A does not. A confirms B's quote: the run is sent to the work queue
``provider-ref``, Scheduled with a message naming the provider it waits for. A's worker (``qsolve
worker --run-once``: the default queue only) leaves it there; B's worker takes it and runs it, sealed by
B's registered key.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import QuoteStatus, RunStatus, connect
from qsolve_pipeline.tasks.hardware import request_quotes
from tests.conftest import REPO
from tests.flows.hardware_setup import REFERENCE, publish
from tests.s3server import serving
from tests.storage.state.conftest import postgres_schema


@pytest.fixture
def database(prefect, monkeypatch, tmp_path) -> Iterator[str]:
    """One PostgreSQL schema and one bucket (QSOLVE_STORAGE_URL and the AWS settings in this process's
    environment, which every command inherits): homes on one database share its storage."""
    with contextlib.contextmanager(serving)(tmp_path / "moto.log") as s3:
        for variable, value in s3.environment(s3.new_bucket()).items():
            monkeypatch.setenv(variable, value)
        with postgres_schema("qsolve_route") as url:
            monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
            yield url


@pytest.fixture
def pool(prefect) -> Iterator[str]:
    """A work pool's name; the pool and the hardware deployment made on it removed afterwards, so that the
    session's other tests find no hardware deployment to send runs to."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    name = f"qsolve-{uuid.uuid4().hex[:8]}"
    yield name
    with get_client(sync_client=True) as client:
        with contextlib.suppress(ObjectNotFound):
            client.delete_deployment(client.read_deployment_by_name("hardware/hardware").id)
        with contextlib.suppress(ObjectNotFound):
            client.delete_work_pool(name)


def _env(home: Path | None, host: str, database: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("QSOLVE_") or k == "QSOLVE_STORAGE_URL"}
    env |= {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "QSOLVE_DATABASE_URL": database,
        "QSOLVE_HOST_NAME": host,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
    }
    env.pop("PYTHONPATH", None)  # what runs, runs from the installed package
    if home is not None:
        env["QSOLVE_HOME"] = str(home)
    return env


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    return done


def test_a_hardware_run_for_a_provider_only_b_holds_goes_to_b(database, pool, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    elsewhere = tmp_path / "elsewhere"  # no repository here: what runs, runs from the installed package
    elsewhere.mkdir()
    a, b = tmp_path / "home-a", tmp_path / "home-b"
    said = _run(
        [sys.executable, "-m", "qsolve_pipeline.deployments.pool", "--pool", pool],
        _env(None, "operator", database),
        elsewhere,
    ).stdout
    assert said.startswith(f"work pool {pool} created: its flow runs get QSOLVE_DATABASE_URL=postgresql")
    with get_client(sync_client=True) as client:
        env = client.read_work_pool(pool).base_job_template["variables"]["properties"]["env"]["default"]
    storage = os.environ["QSOLVE_STORAGE_URL"]
    assert env == {"QSOLVE_DATABASE_URL": database, "QSOLVE_STORAGE_URL": storage}  # no home: each worker's
    deploy = [
        sys.executable,
        "-m",
        "prefect",
        "deploy",
        "--no-prompt",
        "--prefect-file",
        str(REPO / "prefect.yaml"),
    ]
    _run([*deploy, "--name", "hardware", "--pool", pool], _env(None, "operator", database), elsewhere)
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("hardware/hardware")
    assert (
        deployment.entrypoint == "qsolve_pipeline.flows.hardware:hardware_flow"
        and deployment.pull_steps in ([], None)
    )
    assert deployment.work_pool_name == pool and str(REPO) not in json.dumps(
        deployment.model_dump(mode="json")
    )

    monkeypatch.setenv("QSOLVE_HOME", str(b))
    assert main(["providers", "add", "ref", "--process", "--", *REFERENCE]) == 0  # only B holds it
    publish(b, tmp_path)
    with connect(home=b) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:ref", home=b)

    env_a, env_b = _env(a, "host-a", database), _env(b, "host-b", database)
    confirm = [sys.executable, "-m", "qsolve.cli", "confirm", quote.id, "--yes", "--account", "dev"]
    err = _run(confirm, env_a, elsewhere).stderr
    assert f"in work queue provider-ref of pool {pool}: it waits for a worker that holds provider ref" in err
    assert "no host has registered provider ref yet" in err

    worker = [sys.executable, "-m", "qsolve.cli", "worker", "--pool", pool, "--run-once"]
    said = _run(worker, env_a, elsewhere).stderr
    assert "host-a holds no provider: registered in the state database" in said
    with get_client(sync_client=True) as client:
        run = _flow_run_of(client, quote.id)
    assert run.work_queue_name == "provider-ref" and run.state.is_scheduled()  # A's worker left it
    waits = "waits for a worker that holds provider ref (work queue provider-ref)"
    assert run.state.message == f"quote {quote.id} on provider:ref: {waits}"
    with connect(home=a) as db:
        assert db.get_run(quote.run_id).status is RunStatus.CREATED and db.list_provider_jobs() == []

    said = _run(worker, env_b, elsewhere).stderr
    assert "host-b holds provider ref: registered in the state database" in said
    with get_client(sync_client=True) as client:
        run = _flow_run_of(client, quote.id)
    assert run.state.is_completed(), run.state
    with connect(home=a) as db:
        assert db.get_quote(quote.id).status is QuoteStatus.CONFIRMED
        ran = db.get_run(quote.run_id)
        assert ran.status is RunStatus.FINISHED and db.holders("provider-ref")[0][0] == "host-b"
        (signer,) = {r.host for r in db.host_keys()}
    assert signer == "host-b" and not (a / "keys").exists()  # sealed on B, by B's key


def _flow_run_of(client, quote_id: str):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    (run,) = client.read_flow_runs(
        flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[f"quote-{quote_id[:12]}-provider-ref"]))
    )
    return run


def test_a_worker_renews_its_registration_while_it_runs_and_passes_a_stop_on(
    database, pool, tmp_path, monkeypatch
):
    """A holder is counted while its worker lives (docs/deploy.md): ``qsolve worker`` runs Prefect's worker
    as its child and registers again every ``QSOLVE_WORKER_RENEW_S``; a SIGTERM is passed on, the worker
    stops, and the registration ages from then on (after 10 minutes the host is not counted)."""
    import signal
    import time

    from qsolve_pipeline.deployments.pool import main as make_pool

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the pool made as the other test makes it, from this process (its command's run is that test's)
    monkeypatch.delenv("QSOLVE_HOME", raising=False)
    assert make_pool(["--pool", pool]) == 0
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home-c"))
    assert main(["providers", "add", "ref", "--process", "--", *REFERENCE]) == 0  # host-c holds ref
    env = _env(tmp_path / "home-c", "host-c", database) | {"QSOLVE_WORKER_RENEW_S": "0.5"}
    command = [sys.executable, "-m", "qsolve.cli", "worker", "--pool", pool]
    worker = subprocess.Popen(command, env=env, cwd=elsewhere, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def seen() -> list:
        with connect(database) as db:
            return [when for host, when in db.holders("provider-ref") if host == "host-c"]

    try:
        seen_at = []
        deadline = time.monotonic() + 120
        while len(set(seen_at)) < 3 and time.monotonic() < deadline and worker.poll() is None:
            seen_at += seen()[:1]
            time.sleep(0.3)
        assert len(set(seen_at)) >= 3, (seen_at, worker.poll())  # registered, then renewed, and again
        with connect(database) as db:
            assert [host for host, _ in db.live_holders("provider-ref")[0]] == ["host-c"]
        children = _children(worker.pid)
        assert any("prefect" in " ".join(c) and pool in c for c in children.values()), children
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert code == 128 + signal.SIGTERM, (code, worker.stderr.read()[-1500:])  # as a shell says it
    # the Prefect worker stopped with it: nothing left serving its queues (the janitor that ends what the
    # worker started may finish a moment after the worker's own exit)
    left = list(children)
    deadline = time.monotonic() + 60
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if _alive(pid)]
        time.sleep(0.2)
    assert left == [], {pid: children[pid] for pid in left}
    last = seen()[0]
    time.sleep(1.5)
    assert seen()[0] == last  # no one renews it now


def _children(pid: int) -> dict[int, list[str]]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    out[int(entry.name)] = (entry / "cmdline").read_bytes().decode().split("\0")
            except (OSError, IndexError, ValueError):
                continue
    return out


def _alive(pid: int) -> bool:
    """``pid`` runs (neither gone nor a zombie awaiting its parent)."""
    try:
        return _state(pid) != "Z"
    except OSError:
        return False


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
