"""The replay target of a hardware row: the device's own sealed counts answer each circuit again.

Each circuit the workflow's method sends is compiled to the provider's device exactly as the platform
compiled it (``qsolve.providers.compiler``, the device described by the ``describe`` answer its receipt
names by digest), and the compiled program's hash is held to the next receipt of the row, in order: the
same program gets that receipt's counts. A circuit whose program is not the one sealed next, more
circuits than receipts, or shots other than sealed, stops the replay of that row, saying which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager

from qsolve.targets.base import Backend


class SealedMismatch(RuntimeError):
    """A circuit the method sent is not the one its row's next receipt sealed."""


class SealedCounts(Backend):
    """A ``provider:`` target answered from a row's receipts (``jobs``: the sealed jobs, in order)."""

    ideal = False

    def __init__(self, target: str, describe: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        from qsolve.providers.messages import Description

        self.name = target
        self.device = str(describe.get("device", target.split(":", 1)[-1]))
        self._shape = Description.model_validate(describe).device()
        self.jobs = jobs
        self.used = 0
        self.problem: str | None = None
        self._sent: dict[int, dict[str, Any]] = {}

    def pass_manager(self, seed: int) -> PassManager:  # pragma: no cover - transpile is its own
        raise NotImplementedError("a provider's circuits are compiled by qsolve.providers.compiler")

    def _stop(self, why: str) -> SealedMismatch:
        self.problem = self.problem or why
        return SealedMismatch(why)

    def transpile(self, circuits: Sequence[QuantumCircuit], seed: int) -> list[QuantumCircuit]:
        from qsolve.providers.compiler import compile_circuit

        out = []
        for circuit in circuits:
            n = self.used + 1
            if self.used >= len(self.jobs):
                raise self._stop(f"circuit {n} was sent, and the row has {len(self.jobs)} receipts")
            compiled = compile_circuit(circuit, self._shape, seed=seed)
            job = self.jobs[self.used]
            sealed = job["result"].get("compiled", {}).get("program")
            if compiled.digest != sealed:
                raise self._stop(
                    f"circuit {n} compiles to program {compiled.digest[:16]}, and receipt {n} sealed "
                    f"{str(sealed)[:16]}"
                )
            self.used += 1
            sent = compiled.program.to_circuit()
            self._sent[id(sent)] = job
            out.append(sent)
        return out

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        counts = []
        for sent in transpiled:
            job = self._sent.pop(id(sent))
            if job["result"].get("shots") != shots:
                raise self._stop(
                    f"{shots} shots were asked, and the receipt sealed {job['result'].get('shots')}"
                )
            counts.append({str(k): int(v) for k, v in job["result"]["counts"].items()})
        return counts
