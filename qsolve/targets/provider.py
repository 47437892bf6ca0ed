"""``provider:<name>``: a device brought over ``wai.quantum.provider/1`` (issue 12), as a target.

Platform code compiles each circuit to the device, prices it, asks the person where it is not free,
sends it and seals it (``qsolve.providers.jobs``); the workflow's process never reaches the provider.
The circuits a method sent are scored as on any target: fidelity against the ideal, two-qubit gates
counted on the compiled program.
"""

from __future__ import annotations

from collections.abc import Sequence

from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager

from qsolve.targets.base import Backend


class ProviderBackend(Backend):
    """A provider's device as a target; every job it runs is sealed (``sealed``, in order)."""

    ideal = False

    def __init__(self, session) -> None:
        self.session = session
        self.name = f"provider:{session.name}"
        self.device = str(session.description().get("device", session.name))
        self.sealed: list = []
        self.stopped: list[str] = []  # why a job was not sent or not sealed, for the person
        self._compiled: dict[int, tuple[QuantumCircuit, object]] = {}

    def hold_until(self, deadline: float, limit_s: float) -> None:
        """Wait on each provider job no later than the job's deadline, its limit counted from its
        admission (issue 35)."""
        self.session.hold_until(deadline, limit_s)

    def close(self) -> None:
        self.session.close()

    def pass_manager(self, seed: int) -> PassManager:  # pragma: no cover - transpile is its own
        raise NotImplementedError("a provider's circuits are compiled by qsolve.providers.compiler")

    def transpile(self, circuits: Sequence[QuantumCircuit], seed: int) -> list[QuantumCircuit]:
        """Each circuit compiled to the device and checked; the program as a circuit on its places."""
        out = []
        for circuit in circuits:
            compiled = self.session.compile(circuit, seed)
            sent = compiled.program.to_circuit()
            self._compiled[id(sent)] = (circuit, compiled)
            out.append(sent)
        return out

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        from qsolve.providers.jobs import JobStopped

        counts = []
        for sent in transpiled:
            circuit, compiled = self._compiled.pop(id(sent))
            try:
                job = self.session.run(circuit, shots, seed, compiled=compiled)
            except JobStopped as e:  # the method is told; the person is too (``stopped``)
                self.stopped.append(str(e))
                raise
            self.sealed.append(job)
            counts.append(job.counts)
        return counts
