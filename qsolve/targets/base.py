"""The interface every target implements (DESIGN.md §4): transpile, execute, readout confusion."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager

#: the most memory one simulation may take in the platform's process: Aer refuses a circuit that needs
#: more (a 28-qubit state vector is 4 GiB) with "Insufficient memory", which the method is told
SIMULATION_MB = 4096

_TRANSPILING = threading.Lock()  # transpiling holds the GIL anyway: nothing is lost by taking turns


class Backend(ABC):
    """Where a quantum method's circuits run. Subclasses give :meth:`pass_manager`; transpiling uses
    one preset pass manager per transpiler seed, built once (building one costs ~0.2 s)."""

    #: the target string, e.g. ``fake:fez@1.6``
    name: str
    #: the device, as recorded in the track record
    device: str
    #: an ideal simulator: the run that samples a circuit can save its exact distribution too
    #: (:meth:`execute_saving`)
    ideal: bool = False

    @abstractmethod
    def pass_manager(self, seed: int) -> PassManager:
        """A preset pass manager for this target with the transpiler seed fixed."""

    def transpile(self, circuits: Sequence[QuantumCircuit], seed: int) -> list[QuantumCircuit]:
        """The circuits as this target runs them, with a fixed transpiler seed. One at a time per
        target: the platform runs several cases on threads of one process (a Prefect task runner),
        and a pass manager's passes are not safe to share between threads."""
        with _TRANSPILING:  # in this process: Qiskit would fork a pool of the platform's process
            out = self._pass_manager(seed).run(list(circuits), num_processes=1)
        return out if isinstance(out, list) else [out]

    @abstractmethod
    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        """Counts of each transpiled circuit, keys highest clbit first."""

    def execute_saving(
        self, circuits: Sequence[QuantumCircuit], shots: int, seed: int
    ) -> tuple[list[dict[str, int]], list[np.ndarray | None]]:
        """Counts, and what each circuit's ``save_probabilities`` (label ``p``) saved, where it has one;
        only an :attr:`ideal` target gives exact distributions so."""
        raise NotImplementedError(f"{self.name} is not an ideal simulator")

    def _pass_manager(self, seed: int) -> PassManager:
        cache = self.__dict__.setdefault("_pass_managers", {})
        if seed not in cache:
            cache[seed] = self.pass_manager(seed)
        return cache[seed]

    def confusion(self, qubit: int) -> np.ndarray | None:
        """``A[j, i] = P(read j | prepared i)`` for a physical qubit; ``None`` for ideal readout."""
        return None
