"""``sim-cpu``: qiskit-aer, ideal, seeded."""

from __future__ import annotations

from collections.abc import Sequence

from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager, generate_preset_pass_manager
from qiskit_aer import AerSimulator

from qsolve.targets.base import Backend


class SimCpu(Backend):
    name = "sim-cpu"
    device = "aer_simulator"

    def __init__(self) -> None:
        self._sim = AerSimulator()

    def pass_manager(self, seed: int) -> PassManager:
        return generate_preset_pass_manager(
            optimization_level=1, target=self._sim.target, seed_transpiler=seed
        )

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        result = self._sim.run(list(transpiled), shots=shots, seed_simulator=seed).result()
        return [dict(result.get_counts(i)) for i in range(len(transpiled))]
