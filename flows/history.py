"""The history stage: every `cases` entry of a published version run as a platform run, three at a time,
each a track-record row (seed: "How results enter the track record"). Also its own deployment, so an
operator can run it again for a version."""

from __future__ import annotations

import tempfile
from pathlib import Path

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from qsolve.publication import unpack
from qsolve.submission import HistoryOutcome, NotRun
from qsolve.workflow import load_workflow
from storage.blobs import BlobStore
from storage.state import connect, qsolve_home
from storage.trackrecord.filing import file_rows
from storage.trackrecord.row import TrackRecordRow
from tasks.history import history_case


@flow(name="history", task_runner=ThreadPoolTaskRunner(max_workers=3), log_prints=True)
def history_flow(workflow: str, version: str, again: bool = False) -> HistoryOutcome:
    home = qsolve_home()
    with connect() as db:
        v = db.get_version(workflow, version)
        if db.has_recorded_results(v) and not again:
            return HistoryOutcome(
                status="already recorded", message=f"{workflow} {version} has a track record"
            )
    with tempfile.TemporaryDirectory(prefix="qsolve-history-") as tmp:
        folder = unpack(BlobStore(home).get(v.digest), Path(tmp) / "workflow")
        wf = load_workflow(folder)
        futures = [history_case.submit(str(folder), v, c, wf.manifest.resources) for c in wf.cases.cases]
        outcomes = [f.result() for f in futures]
    with connect() as db:
        runs = [db.get_run(o.run_id) for o in outcomes if o.recorded]
        file_rows([TrackRecordRow.from_run(r) for r in runs], home)
        db.mark_filed(r.id for r in runs)
    return HistoryOutcome(
        status="ran",
        recorded=[o.case for o in outcomes if o.recorded],
        not_run=[NotRun(case=o.case, reason=f"{o.reason}: {o.detail}") for o in outcomes if not o.recorded],
        credits=float(sum(o.credits for o in outcomes)),
    )
