"""Validation as the platform runs it: the submission checks, the eight gates in the sandbox, and the
version they publish (its content: :mod:`qsolve.workflow.publication`).

pipeline      the checks, then the gates in the sandbox (validate, run_gates, ValidationReport)
checks        the submission checks: every case of ``cases`` and ``hardware_cases``, before the gates
gate_run      the gates job on the platform's side: the cases run, the first again in a fresh process
jobs          the sandbox jobs: the gates run, and one case as a platform run
case_runner   one case: every method on its target, objectives recomputed, the case decided
gates         the eight validation gates (benchmarks-and-gates.md, "The validation gates")
submission    what a submission produced, stage by stage, and how its report reads

Nothing here imports Prefect or storage: ``tasks/`` and ``flows/submission.py`` run these stages.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(
    __name__, {"ValidationReport": "pipeline", "run_gates": "pipeline", "validate": "pipeline"}
)

__all__ = ["ValidationReport", "run_gates", "validate"]
