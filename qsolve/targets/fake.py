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
from qiskit.providers.backend import BackendV2
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
from qiskit_ibm_runtime import fake_provider

from qsolve.targets.base import Backend
from qsolve.targets.errors import UnknownTarget

SCALE_RANGE = (1.0, 10.0)
READOUT_CAP = 0.5


def _gate_cap(num_qubits: int) -> float:
    d = 2**num_qubits
    return d / (d + 1)


def load_fake_backend(device: str) -> BackendV2:
    """``fez`` (or ``ibm_fez``) -> ``FakeFez()``; an unknown name is refused, listing a few known ones."""
    short = device.removeprefix("ibm_")
    cls = getattr(fake_provider, "Fake" + short[:1].upper() + short[1:].lower(), None)
    if not (isinstance(cls, type) and issubclass(cls, BackendV2)) or not short.isalnum():
        known = sorted(
            n[4:].lower()
            for n in dir(fake_provider)
            if n.startswith("Fake")
            and not n.startswith("FakeProvider")
            and not n.endswith("V2")
            and isinstance(getattr(fake_provider, n), type)
            and issubclass(getattr(fake_provider, n), BackendV2)
        )
        raise UnknownTarget(f"fake:{device}: no such fake device (known: {', '.join(known[:12])}, ...)")
    return cls()


class FakeDevice(Backend):
    def __init__(self, device: str, scale: float = 1.0) -> None:
        lo, hi = SCALE_RANGE
        if not lo <= scale <= hi:
            raise UnknownTarget(f"fake:{device}@{scale:g}: the scale must be from {lo:g} to {hi:g}")
        self._backend = load_fake_backend(device)
        self.scale = float(scale)
        self.device = self._backend.name
        self.name = f"fake:{device}@{scale:g}"
        self._readout = self._readout_errors()
        self._sims: dict[frozenset, AerSimulator] = {}

    def pass_manager(self, seed: int) -> PassManager:
        return generate_preset_pass_manager(optimization_level=1, backend=self._backend, seed_transpiler=seed)

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
            self._sims[ops] = AerSimulator(noise_model=model, max_parallel_threads=1)
        return self._sims[ops]

    def _readout_errors(self) -> list[tuple[float, float]]:
        props = self._backend.properties()
        out = []
        for q in range(self._backend.num_qubits):
            qp = {n.name: n.value for n in props.qubits[q]} if props is not None else {}
            if "prob_meas1_prep0" in qp and "prob_meas0_prep1" in qp:
                pair = (qp["prob_meas1_prep0"], qp["prob_meas0_prep1"])
            else:
                err = self._backend.target["measure"][(q,)].error or 0.0
                pair = (err, err)
            out.append(tuple(min(p * self.scale, READOUT_CAP) for p in pair))
        return out

    def _build_noise_model(self, qubits: tuple[int, ...], ops: frozenset) -> NoiseModel:
        """Errors of exactly the (instruction, qubits) pairs used: building each costs ~10 ms."""
        full = self._backend.target
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
