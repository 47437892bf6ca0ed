"""The maintenance pass's tasks: each a step of :mod:`storage.maintenance`, on a state database it opens."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import connect


@task(name="end abandoned runs", cache_policy=NO_CACHE)
def end_abandoned_runs(home: Path) -> list[str]:
    with connect(home=home) as db:
        return maintenance.end_abandoned_runs(db)


@task(name="release stale holds", cache_policy=NO_CACHE)
def release_stale_holds(home: Path) -> list[str]:
    with connect(home=home) as db:
        return db.release_stale_holds(maintenance.ABANDONED_AFTER)


@task(name="refile lost runs", cache_policy=NO_CACHE)
def refile_lost_runs(home: Path) -> maintenance.Refiled:
    with connect(home=home) as db:
        return maintenance.refile_lost_runs(db, home)


@task(name="file ended runs", cache_policy=NO_CACHE)
def file_ended_runs(home: Path) -> tuple[list[str], int]:
    with connect(home=home) as db:
        return maintenance.file_ended_runs(db, home)


@task(name="compact the track record", cache_policy=NO_CACHE)
def compact_track_record(home: Path) -> str:
    with connect(home=home) as db:
        return maintenance.compact_track_record(db, home)
