"""What the platform records of every circuit a quantum method sends, and how it scores it.

DESIGN.md §4: qubits, two-qubit gates after transpiling for the target, and shots. A circuit of at most
20 qubits with no mid-circuit measurement is scored: per-qubit readout confusion inverted, projected to
the nearest probability distribution, Hellinger fidelity against the exact ideal distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from qiskit import QuantumCircuit
from qiskit.circuit import ControlFlowOp
from qiskit.converters import circuit_to_dag
from qiskit.dagcircuit import DAGOpNode
from qiskit.quantum_info import Statevector

MAX_SCORED_QUBITS = 20

Confusion = Callable[[int], np.ndarray | None]


class CircuitRecord(BaseModel):
    """One circuit as sent: its size on the target, its shots, and its fidelity when it could be scored."""

    model_config = ConfigDict(frozen=True)

    qubits: int
    two_qubit_gates: int
    shots: int
    fidelity: float | None = None
    unscored: str | None = None  # why it could not be scored


class Quality(BaseModel):
    """A run's quality numbers: shot-weighted fidelity, share of shots scored, post-selection share."""

    model_config = ConfigDict(frozen=True)

    fidelity: float | None
    coverage: float | None
    postselection: float | None


def quality(records: Sequence[CircuitRecord], postselection: tuple[int, int] | None) -> Quality:
    total = sum(r.shots for r in records)
    scored = [r for r in records if r.fidelity is not None]
    scored_shots = sum(r.shots for r in scored)
    return Quality(
        fidelity=sum(r.fidelity * r.shots for r in scored) / scored_shots if scored_shots else None,
        coverage=scored_shots / total if total else None,
        postselection=postselection[0] / postselection[1] if postselection else None,
    )


def two_qubit_gates(circuit: QuantumCircuit) -> int:
    """Gates on two or more qubits, counted inside control-flow blocks too."""
    n = 0
    for inst in circuit.data:
        op = inst.operation
        if isinstance(op, ControlFlowOp):
            n += sum(two_qubit_gates(block) for block in op.blocks)
        elif len(inst.qubits) >= 2 and op.name not in ("barrier", "measure"):
            n += 1
    return n


def mid_circuit_measurement(circuit: QuantumCircuit) -> bool:
    """Control flow, or a measurement followed by an operation other than a measurement or a barrier."""
    if any(isinstance(inst.operation, ControlFlowOp) for inst in circuit.data):
        return True
    dag = circuit_to_dag(circuit)
    for node in dag.op_nodes():
        if node.op.name == "measure":
            for later in dag.descendants(node):
                if isinstance(later, DAGOpNode) and later.op.name not in ("measure", "barrier"):
                    return True
    return False


def final_measurements(circuit: QuantumCircuit) -> list[int] | None:
    """The qubit each classical bit measures, in clbit order; ``None`` unless every clbit is measured once."""
    source: dict[int, int] = {}
    for inst in circuit.data:
        if inst.operation.name == "measure":
            clbit = circuit.find_bit(inst.clbits[0]).index
            if clbit in source:
                return None
            source[clbit] = circuit.find_bit(inst.qubits[0]).index
    if not source or sorted(source) != list(range(circuit.num_clbits)):
        return None
    return [source[c] for c in range(circuit.num_clbits)]


def ideal_distribution(circuit: QuantumCircuit, measured: list[int]) -> np.ndarray:
    """Exact outcome probabilities, index = the outcome read as a binary number (clbit 0 lowest)."""
    unitary_part = circuit.remove_final_measurements(inplace=False)
    return Statevector(unitary_part).probabilities(qargs=measured)


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
    circuit: QuantumCircuit,
    transpiled: QuantumCircuit,
    counts: dict[str, int],
    shots: int,
    confusion: Confusion,
) -> CircuitRecord:
    """Record and, where it can be, score one circuit the method sent."""
    base = {"qubits": circuit.num_qubits, "two_qubit_gates": two_qubit_gates(transpiled), "shots": shots}
    why = _unscorable(circuit)
    if why:
        return CircuitRecord(**base, unscored=why)
    measured = final_measurements(circuit)
    physical = final_measurements(transpiled)
    try:
        ideal = ideal_distribution(circuit, measured)
    except Exception as e:  # a reset or another non-unitary operation before the measurements
        return CircuitRecord(**base, unscored=f"no ideal distribution: {type(e).__name__}")
    observed = counts_vector(counts, len(measured))
    mitigated = nearest_probability(unfold_readout(observed, [confusion(q) for q in physical]))
    return CircuitRecord(**base, fidelity=hellinger_fidelity(ideal, mitigated))


def _unscorable(circuit: QuantumCircuit) -> str | None:
    if circuit.num_qubits > MAX_SCORED_QUBITS:
        return f"{circuit.num_qubits} qubits (at most {MAX_SCORED_QUBITS} are scored)"
    if mid_circuit_measurement(circuit):
        return "mid-circuit measurement"
    if final_measurements(circuit) is None:
        return "not every classical bit is measured exactly once"
    return None
