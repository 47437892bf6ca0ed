"""Evaluation runs as a Prefect flow (issue 14, item 6), deployed in ``prefect.yaml``: a run requested
(a task and a chip, a day, or task-result ids) or named by its id, executed a few records at a time
(``qsolve.evaluation.runs``), each record's end in the flow's log, the run's summary as its result
and a markdown artifact.

Prefect and qsolve tell one story (issue 36, item 2). The parameters are one selection, as ``qsolve
evaluate`` takes it (a ``day`` alone is the whole day; a combination the command refuses is refused in
one line). The flow run records the evaluation run it executes as its label ``qsolve.evaluation-run``:
cancelling the flow run in Prefect cancels that run, whatever parameters requested it (its unfinished
records are marked cancelled; the hook runs on a process worker too). A run that ends failed ends the
flow run Failed, one that ends cancelled or interrupted ends it Cancelled, each with the run's one line
as ``qsolve evaluations list`` shows it, and no engine error in the log (:mod:`flows.endings`).

At most ``EVALUATION_RUNS`` (2) runs execute at once on a Prefect server: each takes a slot of the
concurrency limit ``evaluation`` (created at ``prefect deploy`` where missing, and by the flow itself),
and one waiting for a slot says so in its state's message and its log.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import State

from qsolve.evaluation.runs import (
    RunRefused,
    RunRequest,
    check_request,
    execute_run,
    request_run,
    runs_at_once,
    selection_problem,
    summary,
    summary_line,
)
from qsolve_pipeline.flows.endings import cancelled, failed, install, record, recorded
from qsolve_pipeline.storage.calibration import open_store
from qsolve_pipeline.storage.state import qsolve_home

#: the Prefect concurrency limit every evaluation run takes a slot of
LIMIT = "evaluation"

install()


def _owner(flow_run_id) -> str:
    """The owner an evaluation run executed by flow run ``flow_run_id`` has, for its hook to know it."""
    return f"prefect-flow-run:{flow_run_id}"


def _cancel(flow, flow_run, state) -> None:
    """Prefect's cancellation of the flow run, carried to the evaluation run it named or requested (its
    parameters, else its label): cancelled while still pending, or while this flow run executes it;
    one another flow run (or command) executes is left alone."""
    run_id = (flow_run.parameters or {}).get("run_id") or recorded(flow_run, "evaluation-run")
    if run_id:
        with open_store(qsolve_home()) as store:
            run = store.db.get_evaluation_run(run_id)
            if run.status == "pending" or run.owner == _owner(getattr(flow_run, "id", None)):
                store.db.cancel_evaluation_run(run_id)


def ensure_limit(log=None) -> bool:
    """Create the ``evaluation`` concurrency limit, ``EVALUATION_RUNS`` slots, where it is missing (never
    resizing one that exists); whether it was created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(LIMIT)
            return False
        except ObjectNotFound:
            size = runs_at_once()
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=LIMIT, limit=size))
            except ObjectAlreadyExists:  # made meanwhile by another run
                return False
    if log is not None:
        log(f"created the concurrency limit {LIMIT} ({size} runs at a time): it was missing")
    return True


@contextlib.contextmanager
def _slot(run_id: str, logger) -> Iterator[None]:
    """A slot of the ``evaluation`` limit for the run's execution; a run that has to wait for one says so
    in its flow run's state message and its log. The slot is asked for once, at once: only a refusal
    (every slot held) is a wait, so two runs that ask at the same moment never wait without saying so."""
    import httpx
    from prefect.client.orchestration import get_client
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError
    from prefect.concurrency.sync import concurrency
    from prefect.context import FlowRunContext
    from prefect.states import Running

    context = FlowRunContext.get()
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(concurrency(LIMIT, occupy=1, strict=True, max_retries=0))
        except ConcurrencySlotAcquisitionError as e:
            cause = e.__cause__
            if not (isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 423):
                raise
            said = f"evaluation run {run_id} waits for a slot of the concurrency limit {LIMIT}"
            with get_client(sync_client=True) as client:
                limit = client.read_global_concurrency_limit_by_name(LIMIT)
                said += f" ({limit.limit} runs at a time, all taken)"
                logger.info(said)
                if context is not None and context.flow_run is not None:
                    client.set_flow_run_state(context.flow_run.id, Running(message=said), force=True)
            held.enter_context(concurrency(LIMIT, occupy=1, strict=True))
            logger.info(f"evaluation run {run_id} took a slot of {LIMIT}")
            if context is not None and context.flow_run is not None:
                with get_client(sync_client=True) as client:
                    client.set_flow_run_state(
                        context.flow_run.id, Running(message=f"took a slot of {LIMIT}"), force=True
                    )
        yield


@flow(name="evaluation", log_prints=True, on_cancellation=[_cancel])
def evaluation_flow(
    run_id: str | None = None,
    task: str | None = None,
    chip: str | None = None,
    day: str | None = None,
    task_ids: list[str] | None = None,
    model: str | None = None,
    with_examples: bool = False,
    knowledge_draft_id: str | None = None,
    question: str | None = None,
    max_figures: int = 1,
) -> dict[str, Any] | State:
    """Execute evaluation run ``run_id``, or request one from the selection and execute it (``question``:
    the optional question, one more point for the significance question). The run's summary is the
    result; a run that ends failed ends the flow run Failed, one cancelled or interrupted Cancelled, its
    summary the state's data's ``data``."""
    from pydantic import ValidationError

    from qsolve.evaluation.models import ConfigError, ModelUnavailable, UnknownModel

    home = qsolve_home()
    logger = get_run_logger()
    problem = selection_problem(run_id=run_id, task=task, chip=chip, day=day, task_ids=task_ids)
    if problem:
        return failed(f"refused: {problem}")
    with open_store(home) as store:
        if run_id is None:
            try:
                check_request(model)  # refused as ``qsolve evaluate`` refuses it: before anything is stored
                request = RunRequest(
                    task=task, chip=chip, day=day, task_ids=task_ids, model=model,
                    with_examples=with_examples, knowledge_draft_id=knowledge_draft_id, question=question,
                    max_figures=max_figures,
                )  # fmt: skip
                run_id = request_run(store.db, store, request, home=home).id
            except ValidationError as e:
                return failed(
                    "refused: " + "; ".join(i["msg"].removeprefix("Value error, ") for i in e.errors())
                )
            except (UnknownModel, ConfigError, ModelUnavailable, RunRefused, ValueError) as e:
                return failed(f"refused: {e}")
            logger.info("evaluation run %s requested", run_id)
        record(**{"evaluation-run": run_id})

        def told(r) -> None:
            log = logger.info if r.status == "completed" else logger.warning
            diagnosis = (r.output or {}).get("diagnosis") or {}
            log(
                "%s %s %s (record %s): %s%s", r.task, r.chip, r.qid, r.id, r.status.value,
                f", status {diagnosis.get('status')}" if r.output else f": {r.error}",
            )  # fmt: skip

        try:
            with _limited(run_id, logger):
                execute_run(store.db, store, run_id, home=home, owner=_executor(), on_record=told)
        except RunRefused as e:  # not pending: run already, or cancelled before it started
            return failed(f"refused: {e}")
        done = summary(store.db, run_id)
    create_markdown_artifact(_markdown(done), key=f"evaluation-run-{run_id}", description="An evaluation run")
    if done["status"] in ("cancelled", "interrupted"):
        return cancelled(summary_line(done), done)
    if done["status"] != "completed":
        return failed(summary_line(done), done)
    return done


def _executor() -> str | None:
    """The owner of the run this flow run executes: the flow run, where there is one (its cancellation
    hook cancels only a run it owns), else the process (a token of its own)."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return _owner(context.flow_run.id) if context is not None and context.flow_run is not None else None


def _limited(run_id: str, logger):
    """A slot of the ``evaluation`` limit where there is a Prefect server to keep it (a deployment's run,
    a command's flow), creating the limit where missing."""
    ensure_limit(logger.warning)
    return _slot(run_id, logger)


def _markdown(s: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(s["counts"].items())) or "no records"
    return (
        f"# Evaluation run `{s['id']}`\n\n- status: {s['status']}\n- model: `{s['model']}`\n"
        f"- records: {s['records']} ({counts}); skipped: {len(s['skipped'])}\n"
        f"- wall time: {s['wall_seconds'] or 0:.1f} s; model time: {s['model_seconds']:.1f} s\n"
    )
