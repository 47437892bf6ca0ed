"""The run context a method is given: a seed, a generator, and (for quantum methods) a backend.

A target (``qsolve.targets``) implements :meth:`Context.sample`; classical methods get a
:class:`ClassicalContext`, whose ``sample`` refuses circuits.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from qsolve.errors import CircuitsRefused
from qsolve.params import MAX_SHOTS
from qsolve.scoring import CircuitRecord, record
from qsolve.targets.base import Backend


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


class QuantumContext(Context):
    """The context of a quantum method: circuits run on the run's target, each one recorded and scored."""

    def __init__(self, seed: int, backend: Backend) -> None:
        super().__init__(seed)
        self.backend = backend
        self.records: list[CircuitRecord] = []
        self.dispatches = 0
        self.scoring_seconds = 0.0  # the platform's own time inside sample()

    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        from qiskit import QuantumCircuit

        batch = [circuits] if isinstance(circuits, QuantumCircuit) else list(circuits)
        if not batch or not all(isinstance(c, QuantumCircuit) for c in batch):
            raise TypeError("ctx.sample takes a non-empty list of qiskit QuantumCircuit")
        if isinstance(shots, bool) or not isinstance(shots, int | np.integer) or not 1 <= shots <= MAX_SHOTS:
            raise ValueError(f"ctx.sample: shots must be an integer from 1 to {MAX_SHOTS:,}, got {shots!r}")
        for i, c in enumerate(batch):
            if not any(inst.operation.name == "measure" for inst in c.data):
                raise ValueError(f"ctx.sample: circuit {i} ({c.name}) has no measurement")
        transpiled = self.backend.transpile(batch, seed=self.seed)
        sim_seed = int(np.random.SeedSequence([self.seed, self.dispatches]).generate_state(1)[0])
        counts = self.backend.execute(transpiled, int(shots), seed=sim_seed)
        self.dispatches += 1
        start = time.perf_counter()
        for c, t, k in zip(batch, transpiled, counts, strict=True):
            self.records.append(record(c, t, k, int(shots), self.backend.confusion))
        self.scoring_seconds += time.perf_counter() - start
        return counts
