"""The maintenance pass as a Prefect flow, deployed on a schedule (``prefect.yaml``, every minute):
abandoned runs ended, stale credit holds released, runs whose rows were lost filed again from the state
database, ended runs filed into the track record (20 a pass),
the track record compacted. The report is the flow's result and a markdown artifact,
``maintenance-report``."""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from storage.maintenance import MaintenanceReport
from storage.state import qsolve_home
from tasks.maintenance import (
    compact_track_record,
    end_abandoned_runs,
    file_ended_runs,
    refile_lost_runs,
    release_stale_holds,
)


@flow(name="maintenance")
def maintenance_flow(home: str | None = None) -> MaintenanceReport:
    """One pass over ``home`` (default: the worker's ``QSOLVE_HOME``)."""
    folder = qsolve_home(home).resolve()
    abandoned = end_abandoned_runs(folder)
    released = release_stale_holds(folder)
    refiled = refile_lost_runs(folder)
    filed, waiting = file_ended_runs(folder)
    report = MaintenanceReport(
        abandoned=abandoned,
        released=released,
        refiled=len(refiled.runs),
        set_aside=refiled.set_aside,
        filed=filed,
        waiting=waiting,
        compaction=compact_track_record(folder),
    )
    for line in report.set_aside:
        get_run_logger().warning("set aside %s", line)
    get_run_logger().info(
        "filed %d runs (%d wait); ended %d abandoned runs; released %d holds; compaction: %s",
        len(report.filed),
        report.waiting,
        len(report.abandoned),
        len(report.released),
        report.compaction,
    )
    create_markdown_artifact(report.markdown(), key="maintenance-report", description="One maintenance pass")
    return report
