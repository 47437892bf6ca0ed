"""Calibration task results with known answers (issue 14; the calibration-evaluation seed).

task_result   TaskResult: one run of a task on a qubit or coupling; its evidence for an evaluation
experiments   the tasks as circuits on one qubit of a fake device, with its noise (CheckT1, ...)
fitting       curve_fit models with standard errors, R² and reduced χ²
figures       reproducible PNG figures (matplotlib, Agg)
faults        known faults, each with the true status (a failure code of the task's knowledge)
calibrate     runs: one task on one qubit, a whole calibration, the knowledge examples' figures
importing     results from a folder of figures and JSON
held_apart    a held-apart known-answer set: faults drawn from wide ranges, with a fixed seed

Evaluating these results (knowledge, questions, models, records, compare) is :mod:`qsolve.evaluation`,
which reads calibration's task results; nothing here imports it.

Results are kept by :mod:`storage.calibration` (rows in the state database, figures as blobs); the
command ``qsolve calibrate`` is :mod:`qsolve.cli.calibration`. Nothing here imports Prefect or storage;
``flows/calibration.py`` is the flow over :mod:`.calibrate`.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "FAULTS": "faults",
        "TASKS": "experiments",
        "Calibrated": "calibrate",
        "Fault": "faults",
        "ImportInvalid": "importing",
        "TaskResult": "task_result",
        "calibrate": "calibrate",
        "import_folder": "importing",
        "known_answer": "faults",
        "run_task": "calibrate",
    },
)

__all__ = [
    "FAULTS",
    "TASKS",
    "Calibrated",
    "Fault",
    "ImportInvalid",
    "TaskResult",
    "calibrate",
    "import_folder",
    "known_answer",
    "run_task",
]
