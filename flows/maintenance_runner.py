"""The scheduled maintenance passes of a work pool, run in one long-lived process (issue 39, item 3):
``python -m qsolve_pipeline.flows.maintenance_runner --pool qsolve``, started by ``qsolve worker`` beside
Prefect's worker.

Prefect's process worker starts a new interpreter for every flow run: Prefect's and the storage's
imports and the engine's set-up, seconds of CPU, for a pass whose own work on an idle platform is a
few hundredths of a second, every minute, on every machine. Prefect's ``serve`` does no better (its
runner spawns a process per run too). So the ``maintenance`` deployment's runs go to a work queue of
their own, ``maintenance``, which Prefect's worker does not poll; this process polls it and runs each
pass in itself, through Prefect's own flow engine (``prefect.flow_engine.run_flow`` with the scheduled
flow run), so the run's states, logs and result are Prefect's as for any run:

- a run due within the next poll is waited for, then claimed by proposing Pending, as Prefect's worker
  claims one: the server accepts one claim, so of several machines' runners exactly one runs a pass;
- the run's environment is the pool's ``env`` with the deployment's and the run's laid over it (the
  process worker's order), applied to this process for the pass only (``QSOLVE_HOME``,
  ``QSOLVE_DATABASE_URL``, ``QSOLVE_STORAGE_URL``, ...: the runner's own are restored after it, whatever
  its end); Prefect's own settings (``PREFECT_*``) are this
  process's, heartbeats included (every 30 s unless set);
- a pass that raises ends Failed; one cancelled while it runs stops at its next step and ends Cancelled
  (:mod:`flows.maintenance`); SIGTERM during a pass ends it Crashed (Prefect's engine) and this process;
- a run of another entrypoint in the queue is left alone, said once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from datetime import UTC, datetime, timedelta

from qsolve_pipeline.flows.queues import MAINTENANCE_QUEUE

ENTRYPOINT = "qsolve_pipeline.flows.maintenance:maintenance_flow"
QUERY_S = 10.0

log = logging.getLogger("qsolve.maintenance_runner")


def run_environment(pool, deployment, flow_run) -> dict[str, str | None]:
    """The environment a process worker would give ``flow_run``: the pool template's ``env`` default,
    the deployment's job variables' ``env``, the run's, each laid over the one before."""
    template = (pool.base_job_template or {}).get("variables", {}).get("properties", {})
    env: dict[str, str | None] = dict(template.get("env", {}).get("default") or {})
    for variables in (deployment.job_variables, flow_run.job_variables):
        env.update((variables or {}).get("env") or {})
    return env


def apply_environment(env: dict[str, str | None]) -> dict[str, str | None]:
    """Set ``env``'s variables in this process (None: removed), but not Prefect's own settings, which
    this process read at its start; what they were before, for :func:`apply_environment` to restore."""
    before: dict[str, str | None] = {}
    for name, value in env.items():
        if name.startswith("PREFECT_"):
            continue
        before.setdefault(name, os.environ.get(name))
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)
    return before


class Runner:
    """Polls ``pool``'s ``maintenance`` queue and runs its due passes here, one at a time."""

    def __init__(self, pool: str, every: float = QUERY_S) -> None:
        self.pool = pool
        self.every = every
        self.stop = threading.Event()
        self._entrypoints: dict = {}
        self._refused: set = set()

    def poll(self, client) -> int:
        """Run every pass due before the next poll; how many ran here."""
        now = datetime.now(UTC)
        due = client.get_scheduled_flow_runs_for_work_pool(
            self.pool,
            work_queue_names=[MAINTENANCE_QUEUE],
            scheduled_before=now + timedelta(seconds=self.every),
        )
        ran = 0
        for response in sorted(due, key=lambda r: r.flow_run.next_scheduled_start_time or now):
            if self.stop.is_set():
                break
            if self.take(client, response.flow_run):
                ran += 1
        return ran

    def take(self, client, flow_run) -> bool:
        from prefect.exceptions import Abort, TerminationSignal
        from prefect.flow_engine import run_flow
        from prefect.states import Pending
        from prefect.utilities.engine import propose_state_sync

        from qsolve_pipeline.flows.maintenance import maintenance_flow  # imported once, at the runner's start

        deployment = self._deployment(client, flow_run.deployment_id)
        if deployment is None or deployment.entrypoint != ENTRYPOINT:
            if flow_run.deployment_id not in self._refused:
                self._refused.add(flow_run.deployment_id)
                log.warning(
                    "flow run %s in work queue %s/%s is not a maintenance pass (%s): left for a process "
                    "worker that polls that queue",
                    flow_run.id,
                    self.pool,
                    MAINTENANCE_QUEUE,
                    getattr(deployment, "entrypoint", "no deployment"),
                )
            return False
        start = flow_run.next_scheduled_start_time
        if start is not None:
            self.stop.wait(max(0.0, (start - datetime.now(UTC)).total_seconds()))
            if self.stop.is_set():
                return False
        try:
            state = propose_state_sync(client, Pending(), flow_run_id=flow_run.id)
        except Abort:  # another machine's runner took it, or it was cancelled meanwhile
            return False
        if not state.is_pending():
            return False
        # the run's environment for this pass only, as a process worker's child has it: the runner's own
        # is back before the next pass, whatever this one's end
        before = apply_environment(run_environment(client.read_work_pool(self.pool), deployment, flow_run))
        try:
            flow_run = client.read_flow_run(flow_run.id)
            run_flow(maintenance_flow, flow_run=flow_run, return_type="state")
        except TerminationSignal:  # SIGTERM during the pass: Prefect's engine ended it Crashed
            self.stop.set()
        except Exception as e:  # noqa: BLE001 - the engine's own failure (the pass's is its Failed state)
            log.warning("maintenance pass %s: %s: %s", flow_run.id, type(e).__name__, e)
        finally:
            apply_environment(before)
        return True

    def _deployment(self, client, deployment_id):
        from prefect.exceptions import ObjectNotFound

        if deployment_id is None:
            return None
        if deployment_id not in self._entrypoints:
            try:
                self._entrypoints[deployment_id] = client.read_deployment(deployment_id)
            except ObjectNotFound:
                return None
        return self._entrypoints[deployment_id]

    def serve(self, once: bool = False) -> None:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            while not self.stop.is_set():
                try:
                    self.poll(client)
                except Exception as e:  # noqa: BLE001 - a server that does not answer now: the next poll
                    log.warning("maintenance runner on pool %s: %s: %s", self.pool, type(e).__name__, e)
                if once:
                    return
                self.stop.wait(self.every)


def query_seconds() -> float:
    try:
        return max(0.5, float(os.environ.get("PREFECT_WORKER_QUERY_SECONDS", "") or QUERY_S))
    except ValueError:
        return QUERY_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qsolve_pipeline.flows.maintenance_runner", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--pool", required=True, help="the work pool whose maintenance queue to serve")
    parser.add_argument("--run-once", action="store_true", help="poll once, run what is due, then stop")
    args = parser.parse_args(argv)

    from qsolve_pipeline.flows.heartbeats import heartbeats

    heartbeats()  # before Prefect reads its settings: a pass whose process dies is Crashed, not Running
    import prefect  # noqa: F401 - Prefect's logging, to the API too
    import prefect.flow_engine  # noqa: F401

    import qsolve_pipeline.flows.maintenance  # noqa: F401 - the pass's imports (storage, DuckDB, Arrow) paid once, here

    runner = Runner(args.pool, query_seconds())

    def stop(signum: int, _frame: object) -> None:
        runner.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    handler = logging.StreamHandler()  # this module's lines only (the root logger would print every request)
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    print(
        f"maintenance runner: serving the work queue {args.pool}/{MAINTENANCE_QUEUE} in this process",
        file=sys.stderr,
        flush=True,
    )
    runner.serve(once=args.run_once)
    return 0


if __name__ == "__main__":
    sys.exit(main())
