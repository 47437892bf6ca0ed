"""``fake:<device>[@<scale>]``: a qiskit-ibm-runtime fake backend with its noise scaled (DESIGN.md §4).

Circuits are transpiled onto the whole device with a fixed seed, then renumbered onto the physical
qubits they use and run with a noise model of those qubits only (the full 156-qubit model of FakeFez
costs seconds a run; this one is built once per set of qubits). Every error is multiplied by the
scale, capped where a channel allows no more (average gate infidelity d/(d+1): 2/3 for one qubit,
4/5 for two; readout 0.5), and T1, T2 divided by it. Readout error is the device's own, asymmetric
(``prob_meas1_prep0``, ``prob_meas0_prep1``). Idle decoherence is not modelled (no scheduling).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import Gate
from qiskit.transpiler import (
    InstructionProperties,
    PassManager,
    QubitProperties,
    Target,
    generate_preset_pass_manager,
)
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, ReadoutError
from qiskit_aer.noise.device.models import basic_device_gate_errors

from qsolve.targets.base import SIMULATION_MB, Backend
from qsolve.targets.devices import device as load_device

READOUT_CAP = 0.5


def _gate_cap(num_qubits: int) -> float:
    d = 2**num_qubits
    return d / (d + 1)


class FakeDevice(Backend):
    def __init__(self, device: str, scale: float = 1.0) -> None:
        self._device = load_device(device)
        self.scale = float(scale)
        self.device = self._device.name
        self.name = f"fake:{device}@{scale:g}"
        self._readout = [
            tuple(min(p * self.scale, READOUT_CAP) for p in pair) for pair in self._device.readout
        ]
        self._sims: dict[frozenset, AerSimulator] = {}

    def pass_manager(self, seed: int) -> PassManager:
        return generate_preset_pass_manager(
            optimization_level=1, target=self._device.target, seed_transpiler=seed
        )

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        ops = frozenset(op for c in transpiled for op in _operations(c))
        qubits = tuple(sorted({q for _, qargs in ops for q in qargs}))
        compact = [_compact(c, qubits) for c in transpiled]
        result = self._simulator(qubits, ops).run(compact, shots=shots, seed_simulator=seed).result()
        return [dict(result.get_counts(i)) for i in range(len(compact))]

    def confusion(self, qubit: int) -> np.ndarray:
        p1_given_0, p0_given_1 = self._readout[qubit]
        return np.array([[1 - p1_given_0, p0_given_1], [p1_given_0, 1 - p0_given_1]])

    def _simulator(self, qubits: tuple[int, ...], ops: frozenset) -> AerSimulator:
        """One simulator per set of (instruction, physical qubits) used, built once."""
        if ops not in self._sims:
            model = self._build_noise_model(qubits, ops)
            self._sims[ops] = AerSimulator(
                noise_model=model, max_parallel_threads=1, max_memory_mb=SIMULATION_MB
            )
        return self._sims[ops]

    def _build_noise_model(self, qubits: tuple[int, ...], ops: frozenset) -> NoiseModel:
        """Errors of exactly the (instruction, qubits) pairs used: building each costs ~10 ms."""
        full = self._device.target
        s = self.scale
        index = {q: i for i, q in enumerate(qubits)}
        qubit_props = []
        for q in qubits:
            p = full.qubit_properties[q]
            qubit_props.append(
                QubitProperties(
                    t1=p.t1 / s if p.t1 else p.t1, t2=p.t2 / s if p.t2 else p.t2, frequency=p.frequency
                )
            )
        small = Target(num_qubits=len(qubits), dt=full.dt, qubit_properties=qubit_props)
        for name in full.operation_names:
            op = full.operation_from_name(name)
            props = full[name]
            if not isinstance(op, Gate) or props is None:
                continue
            kept = {
                tuple(index[q] for q in qargs): InstructionProperties(
                    duration=ip.duration,
                    error=None if ip.error is None else min(ip.error * s, _gate_cap(len(qargs))),
                )
                for qargs, ip in props.items()
                if ip is not None and (name, qargs) in ops
            }
            if kept:
                small.add_instruction(op, kept)
        model = NoiseModel(basis_gates=[n for n in full.operation_names if n not in ("measure", "delay")])
        for name, qargs, error in basic_device_gate_errors(target=small):
            model.add_quantum_error(error, name, qargs)
        for i, q in enumerate(qubits):
            p1_given_0, p0_given_1 = self._readout[q]
            model.add_readout_error(
                ReadoutError([[1 - p1_given_0, p1_given_0], [p0_given_1, 1 - p0_given_1]]), [i]
            )
        return model


def _operations(circuit: QuantumCircuit) -> set[tuple[str, tuple[int, ...]]]:
    """The (instruction, physical qubits) pairs a transpiled circuit uses, barriers aside."""
    return {
        (inst.name, tuple(circuit.find_bit(q).index for q in inst.qubits))
        for inst in circuit.data
        if inst.name != "barrier"
    }


def _compact(circuit: QuantumCircuit, qubits: tuple[int, ...]) -> QuantumCircuit:
    """The circuit on ``len(qubits)`` qubits, physical qubit ``qubits[i]`` becoming qubit ``i``."""
    index = {q: i for i, q in enumerate(qubits)}
    out = QuantumCircuit(len(qubits), circuit.num_clbits, name=circuit.name)
    for inst in circuit.data:
        if inst.operation.name == "barrier":
            continue
        out.append(
            inst.operation,
            [index[circuit.find_bit(q).index] for q in inst.qubits],
            [circuit.find_bit(c).index for c in inst.clbits],
        )
    return out
