"""The history stage's per-case task: one `cases` entry as an ordinary platform run on the system account."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from qsolve.workflow import load_workflow
from storage.state import SYSTEM_ACCOUNT, Source, connect
from tasks.runs import RunOutcome, run_case


@task(name="history case", cache_policy=NO_CACHE)
def history_case(folder: str, workflow: str, version: str, case_name: str) -> RunOutcome:
    wf = load_workflow(Path(folder))
    case = next(c for c in wf.cases.cases if c.name == case_name)
    with connect() as db:
        v = db.get_version(workflow, version)
        return run_case(db, Path(folder), v, case, Source.HISTORY, SYSTEM_ACCOUNT, wf.manifest.resources)
