"""The context of a quantum method: its circuits run on the run's target, each recorded and scored."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from qiskit import QuantumCircuit

from qsolve.judging.results import CircuitRecord
from qsolve.judging.scoring import Readout, readout, record, with_exact_distribution
from qsolve.targets.base import Backend
from qsolve.workflow.context import Context


class QuantumContext(Context):
    """The context of a quantum method: circuits run on the run's target, each one recorded and scored.

    Scoring waits until :attr:`records` is read (after the method), so that every circuit the method
    sent is scored in one batch, outside the method's time. On an ideal simulator the run that samples a
    circuit also saves its exact distribution (one simulation, not two); preparing that is scoring too,
    timed in :attr:`scoring_in_method` and not counted as the method's.
    """

    def __init__(self, seed: int, backend: Backend) -> None:
        super().__init__(seed)
        self.backend = backend
        self.dispatches = 0
        self.scoring_seconds = 0.0
        self.scoring_in_method = 0.0
        self._records: list[CircuitRecord] = []
        self._sent: list[
            tuple[QuantumCircuit, QuantumCircuit, dict[str, int], int, np.ndarray | None, Readout]
        ] = []

    @property
    def records(self) -> list[CircuitRecord]:
        """Every circuit sent so far, recorded and, where it can be, scored."""
        if self._sent:
            start = time.perf_counter()
            circuits, transpiled, counts, shots, ideals, readouts = zip(*self._sent, strict=True)
            confusion = None if self.backend.ideal else self.backend.confusion
            self._records.extend(record(circuits, transpiled, counts, shots, confusion, ideals, readouts))
            self._sent.clear()
            self.scoring_seconds += time.perf_counter() - start
        return self._records

    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        batch = self.batch(circuits, shots)
        transpiled = self.backend.transpile(batch, seed=self.seed)
        sim_seed = int(np.random.SeedSequence([self.seed, self.dispatches]).generate_state(1)[0])
        start = time.perf_counter()
        # the circuits as sent, copied: the method may change its circuit objects before scoring reads them
        sent = [(c.copy(), readout(c)) for c in batch]
        saving = [with_exact_distribution(t) for t in transpiled] if self.backend.ideal else None
        self.scoring_in_method += time.perf_counter() - start
        if saving is not None:
            counts, ideals = self.backend.execute_saving(saving, int(shots), seed=sim_seed)
        else:
            counts = self.backend.execute(transpiled, int(shots), seed=sim_seed)
            ideals = [None] * len(transpiled)
        self.dispatches += 1
        self._sent.extend(
            (c, t, k, int(shots), p, r)
            for (c, r), t, k, p in zip(sent, transpiled, counts, ideals, strict=True)
        )
        return counts
