"""``sim-cpu``: qiskit-aer, ideal, seeded.

Transpiling for an ideal simulator only writes each circuit in Aer's native gates (any standard gate
on any qubits); nothing is routed or optimised away, so the two-qubit gates counted are the circuit's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit.equivalence_library import SessionEquivalenceLibrary
from qiskit.circuit.library import get_standard_gate_name_mapping
from qiskit.transpiler import PassManager
from qiskit.transpiler.passes import BasisTranslator, HighLevelSynthesis
from qiskit_aer import AerSimulator
from qiskit_aer.backends.backend_utils import BASIS_GATES

from qsolve.targets.base import SIMULATION_MB, Backend

#: The standard gates Aer simulates natively, and the other instructions it takes.
NATIVE = frozenset(set(BASIS_GATES["statevector"]) & set(get_standard_gate_name_mapping())) | {
    "measure",
    "reset",
    "barrier",
    "delay",
}


@cache
def native_gates() -> PassManager:
    """A pass manager that writes a circuit in the standard gates Aer simulates natively."""
    basis = sorted(NATIVE)
    return PassManager(
        [HighLevelSynthesis(basis_gates=basis), BasisTranslator(SessionEquivalenceLibrary, basis)]
    )


class SimCpu(Backend):
    name = "sim-cpu"
    device = "aer_simulator"
    ideal = True

    def __init__(self) -> None:
        self._sim = AerSimulator(max_parallel_threads=1, max_memory_mb=SIMULATION_MB)

    def pass_manager(self, seed: int) -> PassManager:
        return native_gates()

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        return self.execute_saving(transpiled, shots, seed)[0]

    def execute_saving(
        self, circuits: Sequence[QuantumCircuit], shots: int, seed: int
    ) -> tuple[list[dict[str, int]], list[np.ndarray | None]]:
        result = self._sim.run(list(circuits), shots=shots, seed_simulator=seed).result()
        indices = range(len(circuits))
        counts = [dict(result.get_counts(i)) for i in indices]
        return counts, [np.asarray(result.data(i)["p"]) if "p" in result.data(i) else None for i in indices]
