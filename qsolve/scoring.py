"""What the platform records of every circuit a quantum method sends, and how it scores it.

DESIGN.md §4: qubits, two-qubit gates after transpiling for the target, and shots. A circuit of at most
20 qubits with no mid-circuit measurement is scored: per-qubit readout confusion inverted, projected to
the nearest probability distribution, Hellinger fidelity against the exact ideal distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import ControlFlowOp
from qiskit_aer import AerSimulator

from qsolve.results import CircuitRecord
from qsolve.targets.sim_cpu import NATIVE, native_gates

MAX_SCORED_QUBITS = 20
NON_UNITARY = {"reset", "initialize"}

Confusion = Callable[[int], np.ndarray | None]


CONTROL_FLOW = {"if_else", "while_loop", "for_loop", "switch_case", "box"}


def _has_control_flow(circuit: QuantumCircuit) -> bool:
    return any(name in CONTROL_FLOW for name in circuit.count_ops())


def two_qubit_gates(circuit: QuantumCircuit) -> int:
    """Gates on two or more qubits, counted inside control-flow blocks too."""
    if not _has_control_flow(circuit):
        return circuit.num_nonlocal_gates()
    n = 0
    for inst in circuit.data:
        if isinstance(inst.operation, ControlFlowOp):
            n += sum(two_qubit_gates(block) for block in inst.operation.blocks)
        elif len(inst.qubits) >= 2 and inst.name not in ("barrier", "measure"):
            n += 1
    return n


def mid_circuit_measurement(circuit: QuantumCircuit) -> bool:
    """Control flow, or a measurement with a later operation other than a measurement or a barrier among
    its descendants (found in one pass: wires a measurement reached stay marked)."""
    if _has_control_flow(circuit):
        return True
    reached: set = set()
    for inst in circuit.data:  # inst.name, not inst.operation.name: reading .operation builds a gate object
        wires = (*inst.qubits, *inst.clbits)
        if inst.name == "measure":
            reached.update(wires)
        elif reached and any(w in reached for w in wires):
            if inst.name != "barrier":
                return True
            reached.update(wires)
    return False


def final_measurements(circuit: QuantumCircuit) -> list[int] | None:
    """The qubit each classical bit measures, in clbit order; ``None`` unless every clbit is measured once."""
    source: dict[int, int] = {}
    for inst in circuit.data:
        if inst.name == "measure":
            clbit = circuit.find_bit(inst.clbits[0]).index
            if clbit in source:
                return None
            source[clbit] = circuit.find_bit(inst.qubits[0]).index
    if not source or sorted(source) != list(range(circuit.num_clbits)):
        return None
    return [source[c] for c in range(circuit.num_clbits)]


def ideal_distributions(
    circuits: Sequence[QuantumCircuit], measured: Sequence[list[int]]
) -> list[np.ndarray]:
    """Exact outcome probabilities of each circuit, index = the outcome read as a binary number (clbit 0
    lowest), computed by Aer's statevector simulator in one batch. The circuits' measurements are all
    final (scorable circuits have no other), so dropping them leaves the unitary part."""
    circuits = list(circuits)
    if any(name not in NATIVE for c in circuits for name in c.count_ops()):
        circuits = native_gates().run(circuits)
    unitary = [
        saving_probabilities(c, qubits, measure=False) for c, qubits in zip(circuits, measured, strict=True)
    ]
    result = _statevector().run(unitary, shots=1).result()
    return [np.asarray(result.data(i)["p"]) for i in range(len(unitary))]


def with_exact_distribution(circuit: QuantumCircuit) -> QuantumCircuit:
    """For an ideal simulator: a scorable circuit with its exact distribution saved by the run that
    samples it (:func:`saving_probabilities`); any other circuit as it is."""
    measured = final_measurements(circuit)
    return circuit if unscorable(circuit, measured) else saving_probabilities(circuit, measured)


def saving_probabilities(circuit: QuantumCircuit, qubits: list[int], measure: bool = True) -> QuantumCircuit:
    """The circuit with Aer's ``save_probabilities`` of ``qubits`` (labelled ``p``) where its final
    measurements begin, barriers dropped; the measurements kept after it, or dropped."""
    out = circuit.copy_empty_like()
    measurements = []
    for inst in circuit.data:
        if inst.name == "measure":
            measurements.append(inst)
        elif inst.name != "barrier":
            out._append(inst)
    out.save_probabilities(qubits=qubits, label="p")
    if measure:
        for inst in measurements:
            out._append(inst)
    return out


@cache
def _statevector() -> AerSimulator:
    return AerSimulator(method="statevector", max_parallel_threads=1)


def counts_vector(counts: dict[str, int], bits: int) -> np.ndarray:
    vec = np.zeros(2**bits)
    for key, n in counts.items():
        vec[int(key.replace(" ", ""), 2)] += n
    return vec / vec.sum()


def unfold_readout(p: np.ndarray, confusions: Sequence[np.ndarray | None]) -> np.ndarray:
    """Invert each clbit's 2x2 confusion matrix over the 2^n vector, one bit at a time."""
    n = len(confusions)
    tensor = p.reshape((2,) * n)  # axis 0 is the highest clbit
    for bit, a in enumerate(confusions):
        if a is None:
            continue
        axis = n - 1 - bit
        tensor = np.moveaxis(np.tensordot(np.linalg.inv(a), tensor, axes=([1], [axis])), 0, axis)
    return tensor.reshape(-1)


def nearest_probability(q: np.ndarray) -> np.ndarray:
    """The probability vector nearest (in L2) to a quasi-probability vector that sums to one.

    Smolin, Gambetta and Smith, PRL 108, 070502 (2012): drop the most negative entries and spread
    their weight evenly over the rest while any entry would go negative.
    """
    order = np.argsort(q)
    values = q[order]
    n = len(values)
    i, carried = 0, 0.0
    while i < n and values[i] + carried / (n - i) < 0:
        carried += values[i]
        i += 1
    out = np.zeros(n)
    out[order[i:]] = values[i:] + carried / (n - i)
    return out


def hellinger_fidelity(p: np.ndarray, q: np.ndarray) -> float:
    """(sum sqrt(p q))^2, what ``qiskit.quantum_info.hellinger_fidelity`` gives for dictionaries."""
    return float(np.sum(np.sqrt(p * q)) ** 2)


def record(
    circuits: Sequence[QuantumCircuit],
    transpiled: Sequence[QuantumCircuit],
    counts: Sequence[dict[str, int]],
    shots: Sequence[int],
    confusion: Confusion,
    ideals: Sequence[np.ndarray | None] | None = None,
) -> list[CircuitRecord]:
    """Record circuits a method sent (with the shots of each) and score those that can be scored.
    ``ideals[i]``, where given, is circuit ``i``'s exact distribution, saved by the run that sampled it
    (an ideal simulator); the others are computed here, in one batch."""
    ideals = list(ideals) if ideals is not None else [None] * len(circuits)
    out: list[CircuitRecord | None] = []
    scorable = []
    for i, (circuit, sent, n) in enumerate(zip(circuits, transpiled, shots, strict=True)):
        base = {"qubits": circuit.num_qubits, "two_qubit_gates": two_qubit_gates(sent), "shots": n}
        measured = final_measurements(circuit)
        why = unscorable(circuit, measured)
        out.append(CircuitRecord(**base, unscored=why) if why else None)
        if not why:
            scorable.append((i, base, measured))
    missing = [(i, measured) for i, _, measured in scorable if ideals[i] is None]
    if missing:
        computed = ideal_distributions([circuits[i] for i, _ in missing], [m for _, m in missing])
        for (i, _), ideal in zip(missing, computed, strict=True):
            ideals[i] = ideal
    for i, base, measured in scorable:
        physical = final_measurements(transpiled[i])
        observed = counts_vector(counts[i], len(measured))
        mitigated = nearest_probability(unfold_readout(observed, [confusion(q) for q in physical]))
        out[i] = CircuitRecord(**base, fidelity=hellinger_fidelity(ideals[i], mitigated))
    return out


def unscorable(circuit: QuantumCircuit, measured: list[int] | None) -> str | None:
    if circuit.num_qubits > MAX_SCORED_QUBITS:
        return f"{circuit.num_qubits} qubits (at most {MAX_SCORED_QUBITS} are scored)"
    if mid_circuit_measurement(circuit):
        return "mid-circuit measurement"
    if measured is None:
        return "not every classical bit is measured exactly once"
    if any(name in NON_UNITARY for name in circuit.count_ops()):
        return "a reset or initialisation: no exact ideal distribution"
    return None
