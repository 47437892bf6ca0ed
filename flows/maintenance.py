"""The maintenance pass as a Prefect flow, deployed on a schedule (``prefect.yaml``, every minute):
abandoned runs ended, stale credit holds released, runs whose rows were lost filed again from the state
database, ended runs filed into the track record (20 a pass), the track record compacted.

The report is the flow's result; the final state's message is its one line (what the UI lists), and a
pass that changed something also publishes it as a markdown artifact, ``maintenance-report`` (a pass
with nothing to do, every minute on an idle platform, adds none). The steps run in the flow itself, no
task runs: each is a short transaction of its own, and the flow run's log says what each did. Between
steps the pass reads its own flow run's state: cancelled (a runner that cannot kill it, as
``flows.maintenance_runner`` runs it in its own process), it stops there and ends Cancelled, saying which
steps ran. The deployed pass is served by :mod:`flows.maintenance_runner` (docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import Cancelled, Completed

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.maintenance import MaintenanceReport
from qsolve_pipeline.storage.state import connect, qsolve_home

STEPS = ("abandoned runs", "stale holds", "lost runs", "ended runs", "compaction")


@flow(name="maintenance")
def maintenance_flow(home: str | None = None) -> MaintenanceReport:
    """One pass over ``home`` (default: the worker's ``QSOLVE_HOME``). Its final state carries the report
    (``state.result()``) and a one-line summary as its message."""
    folder = qsolve_home(home).resolve()
    report = MaintenanceReport()
    for done, step in enumerate(STEPS):
        if done and _cancelling():
            line = f"cancelled after {', '.join(STEPS[:done])}: {one_line(report)}"
            get_run_logger().warning(line)
            return Cancelled(message=line, data=report)
        with connect(home=folder) as db:
            _step(step, db, folder, report)
    for line in report.set_aside:
        get_run_logger().warning("set aside %s", line)
    summary = one_line(report)
    get_run_logger().info(summary)
    if changed(report):
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(
            report.markdown(), key="maintenance-report", description="One maintenance pass"
        )
    return Completed(message=summary, data=report)


def _step(step: str, db, folder: Path, report: MaintenanceReport) -> None:
    if step == "abandoned runs":
        report.abandoned = maintenance.end_abandoned_runs(db)
    elif step == "stale holds":
        report.released = db.release_stale_holds(maintenance.ABANDONED_AFTER)
    elif step == "lost runs":
        refiled = maintenance.refile_lost_runs(db, folder)
        report.refiled, report.set_aside = len(refiled.runs), refiled.set_aside
    elif step == "ended runs":
        report.filed, report.waiting = maintenance.file_ended_runs(db, folder)
    else:
        report.compaction = maintenance.compact_track_record(db, folder)


def one_line(report: MaintenanceReport) -> str:
    """The pass in one line: the state's message and the log's."""
    return (
        f"filed {len(report.filed)} runs ({report.waiting} wait); ended {len(report.abandoned)} abandoned "
        f"runs; released {len(report.released)} holds"
        + (f"; filed {report.refiled} again, set aside {len(report.set_aside)}" if report.refiled else "")
        + f"; compaction: {report.compaction}"
    )


def changed(report: MaintenanceReport) -> bool:
    """Whether the pass did anything (an idle pass publishes no artifact)."""
    return bool(
        report.filed
        or report.abandoned
        or report.released
        or report.refiled
        or report.set_aside
        or not report.compaction.startswith(("nothing to merge", "not run"))
    )


def _cancelling() -> bool:
    """Whether this pass's flow run was asked to stop (Cancelling or Cancelled on the server); False
    outside a flow run and when the server does not answer (the pass goes on: each step is safe)."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or not isinstance(context.client, SyncPrefectClient):
        return False
    try:
        state = context.client.read_flow_run(context.flow_run.id).state
    except Exception:  # noqa: BLE001 - a server that does not answer now cancels nothing
        return False
    return state is not None and (state.is_cancelling() or state.is_cancelled())
