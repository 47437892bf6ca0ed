"""The run context a method is given: a seed, a generator, and (for quantum methods) a backend.

Quantum methods get a :class:`qsolve.judging.quantum_context.QuantumContext` over the run's target; classical
methods get a :class:`ClassicalContext`, whose ``sample`` refuses circuits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from qsolve.errors import CircuitsRefused
from qsolve.workflow.params import MAX_SHOTS

#: the most outcomes one batch may bring back: each circuit's ``min(shots, 2**measured bits)``, summed
#: over the batch (issue 35). The platform holds a batch's counts whole (the target's answer, what it
#: seals, the records it scores) outside the job's memory budget, at about 180 bytes an outcome as
#: measured (40 circuits of 100,000 shots took 717 MB): 2**18 outcomes are about 45 MiB
MAX_BATCH_OUTCOMES = 2**18


class Context(ABC):
    """What a method may use. ``seed`` and ``rng`` make a run reproducible."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.postselection: tuple[int, int] | None = None

    @abstractmethod
    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        """Run Qiskit circuits (with measurements); one counts dict per circuit, highest bit first."""

    @staticmethod
    def batch(circuits: Sequence[Any] | Any, shots: int) -> list[Any]:
        """What ``sample`` was given, as a list, checked: circuits with measurements, and shots from 1 to
        100,000. Both roles check: the workflow process for a clear error where the method is, the
        platform because only its check counts."""
        from qiskit import QuantumCircuit

        batch = [circuits] if isinstance(circuits, QuantumCircuit) else list(circuits)
        if not batch or not all(isinstance(c, QuantumCircuit) for c in batch):
            raise TypeError("ctx.sample takes a non-empty list of qiskit QuantumCircuit")
        if isinstance(shots, bool) or not isinstance(shots, int | np.integer) or not 1 <= shots <= MAX_SHOTS:
            raise ValueError(f"ctx.sample: shots must be an integer from 1 to {MAX_SHOTS:,}, got {shots!r}")
        for i, c in enumerate(batch):
            if "measure" not in c.count_ops():
                raise ValueError(f"ctx.sample: circuit {i} ({c.name}) has no measurement")
        outcomes = sum(min(int(shots), 1 << min(measured_bits(c), 62)) for c in batch)
        if outcomes > MAX_BATCH_OUTCOMES:
            raise ValueError(
                f"ctx.sample: a batch of {len(batch)} circuits at {int(shots):,} shots may bring back "
                f"{outcomes:,} outcomes (each circuit's min(shots, 2^measured bits)), past the bound of "
                f"{MAX_BATCH_OUTCOMES:,} a batch: nothing was run; send fewer circuits or shots at once"
            )
        return batch

    def postselected(self, kept: int, total: int) -> None:
        """Report shots kept by the method's own error checks (adds up over calls)."""
        if kept < 0 or total <= 0 or kept > total:
            raise ValueError(f"postselected(kept={kept}, total={total}): need 0 <= kept <= total, total > 0")
        k, t = self.postselection or (0, 0)
        self.postselection = (k + kept, t + total)


def measured_bits(circuit: Any) -> int:
    """The classical bits a circuit's instructions may write (its measurements', and any instruction's
    given bits: a gate of its own may hold measurements): its outcomes are at most ``2**`` that many.
    Every bit, for a circuit with control flow, whose blocks may write any."""
    written: set[Any] = set()
    for instruction in circuit.data:
        if getattr(instruction.operation, "blocks", ()):
            return circuit.num_clbits
        written.update(instruction.clbits)
    return len(written)


class ClassicalContext(Context):
    """The context of a classical method: a seed and a generator, and no backend."""

    def sample(self, circuits: Sequence[Any], shots: int) -> list[dict[str, int]]:
        raise CircuitsRefused("a classical method cannot send circuits; declare it `kind: quantum`")
