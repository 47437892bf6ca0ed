"""The history stage's per-case task: one `cases` entry as an ordinary platform run on the system account."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from qsolve.workflow.cases import Case
from qsolve.workflow.manifest import Resources
from qsolve_pipeline.storage.state import SYSTEM_ACCOUNT, Source, Stage, Version, connect
from qsolve_pipeline.tasks.runs import RunOutcome, run_case


@task(name="history case", cache_policy=NO_CACHE, task_run_name="history case {index} {case.name}")
def history_case(
    folder: str, version: Version, index: int, case: Case, resources: Resources, owner: str, stage: Stage
) -> RunOutcome:
    logger = get_run_logger()
    with connect() as db:
        outcome = run_case(
            db, Path(folder), version, index, case, Source.HISTORY, SYSTEM_ACCOUNT, resources,
            owner=owner, stage=stage, tell=logger.warning,
        )  # fmt: skip
    log = logger.info if outcome.recorded and outcome.why == "pass" else logger.warning
    log("case %s %s on %s: %s", index, case.name, outcome.target, outcome.line())
    return outcome
