"""The run context a method is given: a seed, a generator, and (for quantum methods) a backend.

Quantum methods get a :class:`qsolve.quantum_context.QuantumContext` over the run's target; classical
methods get a :class:`ClassicalContext`, whose ``sample`` refuses circuits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from qsolve.errors import CircuitsRefused


class Context(ABC):
    """What a method may use. ``seed`` and ``rng`` make a run reproducible."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.postselection: tuple[int, int] | None = None

    @abstractmethod
    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        """Run Qiskit circuits (with measurements); one counts dict per circuit, highest bit first."""

    def postselected(self, kept: int, total: int) -> None:
        """Report shots kept by the method's own error checks (adds up over calls)."""
        if kept < 0 or total <= 0 or kept > total:
            raise ValueError(f"postselected(kept={kept}, total={total}): need 0 <= kept <= total, total > 0")
        k, t = self.postselection or (0, 0)
        self.postselection = (k + kept, t + total)


class ClassicalContext(Context):
    """The context of a classical method: a seed and a generator, and no backend."""

    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        raise CircuitsRefused("a classical method cannot send circuits; declare it `kind: quantum`")
