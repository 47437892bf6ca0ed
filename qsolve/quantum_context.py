"""The context of a quantum method: its circuits run on the run's target, each recorded and scored."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from qiskit import QuantumCircuit

from qsolve.context import Context
from qsolve.params import MAX_SHOTS
from qsolve.results import CircuitRecord
from qsolve.scoring import record
from qsolve.targets.base import Backend


class QuantumContext(Context):
    """The context of a quantum method: circuits run on the run's target, each one recorded and scored."""

    def __init__(self, seed: int, backend: Backend) -> None:
        super().__init__(seed)
        self.backend = backend
        self.records: list[CircuitRecord] = []
        self.dispatches = 0
        self.scoring_seconds = 0.0  # the platform's own time inside sample()

    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
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
        self.records.extend(record(batch, transpiled, counts, int(shots), self.backend.confusion))
        self.scoring_seconds += time.perf_counter() - start
        return counts
