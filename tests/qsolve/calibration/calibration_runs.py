"""Runs shared by the calibration tests, each made once per test session (a run takes a fraction of a
second: a fit, a figure), and task results built by hand for the storage tests."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

from qsolve.calibration.calibrate import Calibrated, run_task
from qsolve.calibration.task_result import Interval, Output, Settings, Sweep, TaskResult, figure_ref

CHIP = "fake:fez"
DAY = "2026-12-01"


@functools.cache
def calibrated(
    task: str, qubit: int, fault: str | None = None, chip: str = CHIP, seed: int = 0
) -> Calibrated:
    return run_task(chip, task, qubit, fault_name=fault, day=DAY, seed=seed)


PNG = b"\x89PNG\r\n\x1a\n" + b"not really a picture"
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def made(
    qid: str = "Q00",
    *,
    task: str = "CheckT1",
    chip: str = CHIP,
    day: str = DAY,
    status: str = "completed",
    minutes: int = 0,
    figure: bytes | None = PNG,
    true_status: str | None = "SUCCESS",
    fault: str | None = None,
) -> tuple[TaskResult, dict[str, bytes]]:
    """A task result by hand, ``minutes`` after 09:00, with one figure (or none)."""
    figures = {}
    refs = []
    if figure is not None:
        data = figure + qid.encode() + str(minutes).encode()
        ref = figure_ref(f"{task}_{qid}.png", data)
        refs.append(ref)
        figures[ref.sha256] = data
    result = TaskResult(
        task=task,
        chip=chip,
        qid=qid,
        day=day,
        status=status,
        message="Successfully finished" if status == "completed" else "fit failed: no convergence",
        figures=refs,
        sweep=Sweep.linear("delay", "us", 0.0, 1000.0, 31),
        settings=Settings(shots=1000, interval=Interval(value=2000.0, unit="us")),
        outputs={"t1": Output(value=215.0, unit="us", error=6.5)} if status == "completed" else {},
        true_status=true_status,
        fault=fault,
        created_at=START + timedelta(minutes=minutes),
    )
    return result, figures
