"""Calibration task results with known answers (issue 14; the calibration-evaluation seed).

task_result   TaskResult: one run of a task on a qubit or coupling; its evidence for an evaluation
experiments   the tasks as circuits on one qubit of a fake device, with its noise (CheckT1, ...)
fitting       curve_fit models with standard errors, R² and reduced χ²
figures       reproducible PNG figures (matplotlib, Agg)
faults        known faults, each with the true status (a failure code of the task's knowledge)
calibrate     runs: one task on one qubit, a whole calibration, the knowledge examples' figures
store         results in the state database, figures as blobs
importing     results from a folder of figures and JSON
commands      ``qsolve calibrate``

knowledge     a task's knowledge (task-knowledge/<Task>/task.md) and the reference derived from it
examples      a task's labeled examples and the seed's examplesOf
questions     the six questions of an evaluation
prompts       the six requests of one evaluation, and the prompt preview
answers       reading the six answers
units         the units of the numbers an answer states: a parameter's, read and converted
drafts        knowledge drafts: one task directory as a zip, stored under its SHA-256, refused whole
models        the declared evaluation models (config/evaluation.yaml) and the seed's choice order
vlm           a vision-language model through the openai package: six requests at once, one retry each
classical_judge  the baseline: answers what the data and fit show, declines the rest
evaluate      one evaluation and its record (input, output, evaluator)
runs          evaluation runs: selection, heartbeat, cancel, retry;  compare: two runs, and scores
verdicts      a reviewer's verdict choices and areas
knowledge_commands  ``qsolve knowledge reference|preview|draft|archive``
evaluation_commands  ``qsolve evaluate`` and ``qsolve evaluations ...``

Nothing here imports Prefect; ``flows/calibration.py`` is the flow over :mod:`.calibrate`.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "FAULTS": "faults",
        "TASKS": "experiments",
        "Calibrated": "calibrate",
        "CalibrationStore": "store",
        "Fault": "faults",
        "ImportInvalid": "importing",
        "TaskResult": "task_result",
        "calibrate": "calibrate",
        "import_folder": "importing",
        "known_answer": "faults",
        "open_store": "store",
        "run_task": "calibrate",
    },
)

__all__ = [
    "FAULTS",
    "TASKS",
    "Calibrated",
    "CalibrationStore",
    "Fault",
    "ImportInvalid",
    "TaskResult",
    "calibrate",
    "import_folder",
    "known_answer",
    "open_store",
    "run_task",
]
