"""Calibration runs as a Prefect flow (issue 14, item 1): ``qsolve calibrate``'s twin for deployments.

One Prefect task per calibration task, over all the qubits asked for (a task's runs take a fraction of
a second each: a Prefect task per circuit, or per qubit, would cost more than the work), two at a time.
Each records its results as they are made (the state database; figures as blobs), so a flow stopped
midway keeps what it finished. The flow's result lists them, and a markdown artifact,
``calibration-report``, shows one line per result.
"""

from __future__ import annotations

from pathlib import Path

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from qsolve.calibration.calibrate import calibrate, parse_qubits, parse_tasks, today, use_device_cache
from qsolve.home import qsolve_home
from qsolve_pipeline.storage.calibration import open_store


@task(name="calibration task", cache_policy=NO_CACHE)
def run_calibration_task(
    home: str, chip: str, task_name: str, qubits: list[int], faults: bool, day: str, seed: int
) -> list[dict]:
    """One task on every qubit (and its faults), each result recorded as soon as it is made."""
    use_device_cache(Path(home))
    store = open_store(Path(home))
    recorded = []
    try:
        calibrate(
            chip,
            [task_name],
            qubits,
            faults=faults,
            day=day,
            seed=seed,
            each=lambda done: recorded.append(store.record(done.result, done.figures)),
        )
    finally:
        store.close()
    return [
        {"id": r.id, "task": r.task, "qid": r.qid, "status": r.status, "true_status": r.true_status,
         "fault": r.fault, "line": r.line()}
        for r in recorded
    ]  # fmt: skip


@flow(name="calibration", task_runner=ThreadPoolTaskRunner(max_workers=2))
def calibration_flow(
    chip: str = "fake:fez",
    tasks: str | None = None,
    qubits: str = "0-7",
    faults: bool = False,
    day: str | None = None,
    seed: int = 0,
    home: str | None = None,
) -> dict:
    """Run ``tasks`` (comma-separated; default all) on ``qubits`` (``0-7``) of ``chip``; with ``faults``,
    known faults too. ``home`` defaults to the worker's ``QSOLVE_HOME``."""
    folder = str(qsolve_home(home).resolve())
    day = day or today()
    names, indices = parse_tasks(tasks), parse_qubits(qubits)
    futures = [run_calibration_task.submit(folder, chip, name, indices, faults, day, seed) for name in names]
    results = [row for future in futures for row in future.result()]
    failed = sum(r["status"] == "failed" for r in results)
    get_run_logger().info("%d task results recorded for %s on %s, %d failed", len(results), chip, day, failed)
    lines = "\n".join(r["line"] for r in results)
    create_markdown_artifact(
        f"# Calibration of {chip} on {day}\n\n```\n{lines}\n```\n",
        key="calibration-report",
        description="One line per task result: task, qubit, status, true status, key fitted value",
    )
    rows = [{k: v for k, v in r.items() if k != "line"} for r in results]
    return {"chip": chip, "day": day, "results": rows}
