"""Judging what a method's run gave: the platform's record of its circuits, the case's result and its
decision against the expectations and the baseline.

quantum_context  a quantum method's context: its circuits run on the run's target, recorded, scored
scoring          what the platform records of every circuit a quantum method sends, and how it scores it
results          a case's result: every method's outcome, the comparison with the baseline, its quality
deciding         deciding a case (expectations, bounds, the first failure); quantum against the baseline

Nothing here imports Prefect or storage; the gates that judge a whole validation are
:mod:`qsolve.validation.gates`.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {"compare": "deciding", "meets_expect": "deciding"})

__all__ = ["compare", "meets_expect"]
