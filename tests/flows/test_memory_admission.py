"""The history stage's three cases at once within the host's budget of concurrent jobs' memory (issue 35,
item 4): with room for two jobs, the third case waits, says so once in the flow's log, and runs when one
of the others releases its claim; every case is recorded."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from qsolve.runtime.cgroups import JOB_OVERHEAD_MB
from tests.conftest import SAMPLING_MODULE, WorkflowDir

MEMORY_MB = 256
BUDGET_MB = 2 * (MEMORY_MB + JOB_OVERHEAD_MB)  # room for two of the cases' jobs at once, not three


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_three_cases_at_once_never_claim_more_than_the_hosts_budget(
    prefect, home, wf: WorkflowDir, monkeypatch
) -> None:
    from qsolve.validation.checks import check_submission
    from qsolve_pipeline.flows.history import history_flow
    from qsolve_pipeline.tasks.publication import publish

    monkeypatch.setenv("QSOLVE_JOBS_MEMORY_MB", str(BUDGET_MB))
    wf.manifest["name"] = "three-heavy"
    wf.manifest["resources"] = {"timeout_s": 300, "memory_mb": MEMORY_MB}
    wf.write("workflow.py", SAMPLING_MODULE)
    wf.cases["cases"] = [{"name": f"c{x}", "input": {"x": x}} for x in (1, 2, 3)]
    wf.save()
    assert publish(check_submission(wf.root)).published.created

    claims = Path(os.environ["QSOLVE_JOBS_MEMORY_DIR"])  # the test's own (tests/conftest.py)
    most: list[int] = [0]
    done = threading.Event()

    def watch() -> None:  # what the host's claims hold, as often as the flow lets it look
        while not done.is_set():
            held = sum(int(p.name.split("-", 1)[0]) for p in claims.glob("*.claim")) if claims.is_dir() else 0
            most[0] = max(most[0], held)
            done.wait(0.02)

    lines = Lines()
    logger = logging.getLogger("prefect.task_runs")
    logger.addHandler(lines)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        outcome = history_flow("three-heavy")
    finally:
        done.set()
        watcher.join()
        logger.removeHandler(lines)
    assert outcome.status == "ran" and sorted(outcome.recorded) == ["c1", "c2", "c3"], outcome
    assert most[0] == BUDGET_MB  # two at once, never three
    waits = [line for line in lines.lines if "waits for memory" in line]
    assert len(waits) == 1, lines.lines
    assert waits[0].startswith("case ") and waits[0].endswith(
        f"waits for memory: its budget of {MEMORY_MB + JOB_OVERHEAD_MB} MB and the {BUDGET_MB} MB held by "
        f"2 running jobs are more than this host's {BUDGET_MB} MB for jobs at once (QSOLVE_JOBS_MEMORY_MB); "
        "it starts when enough is released"
    )
    assert list(claims.glob("*.claim")) == []  # every claim released
