"""Evaluation runs as a Prefect flow (issue 14, item 6), deployed in ``prefect.yaml``: a run requested
(a task and a chip, a day, or task-result ids) or named by its id, executed a few records at a time
(``qsolve.evaluation.runs``), each record's end in the flow's log, the run's summary as its result
and a markdown artifact. Cancelling the flow run in the UI cancels the evaluation run: its unfinished
records are marked cancelled (the process is stopped by Prefect; a run it left running is read as
interrupted once its heartbeat is stale, and ``qsolve evaluations retry`` finishes it)."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Cancelled, State

from qsolve.evaluation.runs import RunRequest, execute_run, request_run, summary
from storage.calibration import open_store
from storage.state import qsolve_home


def _cancel(flow, flow_run, state) -> None:
    """Prefect's cancellation of the flow run, carried to the evaluation run it was executing."""
    run_id = (flow_run.parameters or {}).get("run_id")
    if run_id:
        with open_store(qsolve_home()) as store:
            store.db.cancel_evaluation_run(run_id)


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
    the optional question, one more point for the significance question). A run cancelled meanwhile
    ends the flow run Cancelled, its summary the state's data."""
    home = qsolve_home()
    logger = get_run_logger()
    with open_store(home) as store:
        if run_id is None:
            request = RunRequest(
                task=task, chip=chip, day=day, task_ids=task_ids, model=model,
                with_examples=with_examples, knowledge_draft_id=knowledge_draft_id, question=question,
                max_figures=max_figures,
            )  # fmt: skip
            run_id = request_run(store.db, store, request, home=home).id
            logger.info("evaluation run %s requested", run_id)

        def told(record) -> None:
            log = logger.info if record.status == "completed" else logger.warning
            diagnosis = (record.output or {}).get("diagnosis") or {}
            log(
                "%s %s %s: %s%s", record.task, record.chip, record.qid, record.status.value,
                f", status {diagnosis.get('status')}" if record.output else f": {record.error}",
            )  # fmt: skip

        execute_run(store.db, store, run_id, home=home, on_record=told)
        done = summary(store.db, run_id)
    create_markdown_artifact(_markdown(done), key=f"evaluation-run-{run_id}", description="An evaluation run")
    if done["status"] == "cancelled":
        return Cancelled(message=f"evaluation run {run_id} was cancelled", data=done)
    return done


def _markdown(s: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(s["counts"].items())) or "no records"
    return (
        f"# Evaluation run `{s['id']}`\n\n- status: {s['status']}\n- model: `{s['model']}`\n"
        f"- records: {s['records']} ({counts}); skipped: {len(s['skipped'])}\n"
        f"- wall time: {s['wall_seconds'] or 0:.1f} s; model time: {s['model_seconds']:.1f} s\n"
    )
