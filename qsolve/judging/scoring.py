"""What the platform records of every circuit a quantum method sends, and how it scores it.

DESIGN.md §4: qubits, two-qubit gates after transpiling for the target, and shots. A circuit of at most
20 qubits with no mid-circuit measurement is scored: per-qubit readout confusion inverted, projected to
the nearest probability distribution, Hellinger fidelity against the exact ideal distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import CircuitInstruction, ControlFlowOp
from qiskit_aer import AerSimulator
from qiskit_aer.library import SaveProbabilities

from qsolve.judging.results import CircuitRecord
from qsolve.targets.base import SIMULATION_MB
from qsolve.targets.sim_cpu import NATIVE, native_gates

MAX_SCORED_QUBITS = 20
NON_UNITARY = {"reset", "initialize"}

Confusion = Callable[[int], np.ndarray | None]


CONTROL_FLOW = {"if_else", "while_loop", "for_loop", "switch_case", "box"}


def _has_control_flow(circuit: QuantumCircuit, ops: dict[str, int] | None = None) -> bool:
    return any(name in CONTROL_FLOW for name in (circuit.count_ops() if ops is None else ops))


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


@dataclass(frozen=True)
class Readout:
    """What scoring needs to know of a circuit, found in one pass over it (:func:`readout`)."""

    #: the qubit each classical bit reads, in clbit order; ``None`` unless every clbit is measured once
    measured: list[int] | None
    #: why the circuit is not scored; ``None`` when it is
    unscored: str | None
    #: where its exact distribution can be saved without moving anything: the index after its last
    #: operation, when only measurements and barriers follow it; ``None`` otherwise
    save_at: int | None = None


def _scan(
    circuit: QuantumCircuit, ops: dict[str, int] | None = None
) -> tuple[list[int] | None, bool, int | None]:
    """(the qubit each clbit reads, or ``None`` unless every clbit is measured once; whether a
    measurement is mid-circuit; where a save can go, or ``None``).

    Mid-circuit: control flow, or a measurement with a later operation other than a measurement or a
    barrier among its descendants (wires a measurement reached stay marked). The clbits are read
    whatever else follows: a routed circuit may swap a measured qubit after its measurement."""
    mid = _has_control_flow(circuit, ops)
    source: dict[int, int] = {}
    twice = False
    reached: set = set()
    first_measure, last_op = None, -1
    for k, inst in enumerate(circuit.data):  # inst.name, not inst.operation.name: .operation builds a gate
        name = inst.name
        if name == "measure":
            reached.update(inst.qubits)
            reached.update(inst.clbits)
            clbit = circuit.find_bit(inst.clbits[0]).index
            twice = twice or clbit in source
            source[clbit] = circuit.find_bit(inst.qubits[0]).index
            first_measure = k if first_measure is None else first_measure
            continue
        if name != "barrier":
            last_op = k
        if not mid and reached:
            wires = (*inst.qubits, *inst.clbits)
            if any(w in reached for w in wires):
                if name != "barrier":
                    mid = True
                reached.update(wires)
    if twice or not source or sorted(source) != list(range(circuit.num_clbits)):
        return None, mid, None
    measured = [source[c] for c in range(circuit.num_clbits)]
    suffix = not mid and first_measure is not None and first_measure > last_op
    return measured, mid, last_op + 1 if suffix else None


def readout(circuit: QuantumCircuit) -> Readout:
    """Whether a circuit is scored (at most 20 qubits, no mid-circuit measurement, every clbit measured
    once, no reset or initialisation: the first that fails is the reason), and what its scoring needs."""
    if circuit.num_qubits > MAX_SCORED_QUBITS:
        return Readout(None, f"{circuit.num_qubits} qubits (at most {MAX_SCORED_QUBITS} are scored)")
    ops = circuit.count_ops()
    measured, mid, save_at = _scan(circuit, ops)
    if mid:
        return Readout(None, "mid-circuit measurement")
    if measured is None:
        return Readout(None, "not every classical bit is measured exactly once")
    if any(name in NON_UNITARY for name in ops):
        return Readout(measured, "a reset or initialisation: no exact ideal distribution")
    return Readout(measured, None, save_at)


def mid_circuit_measurement(circuit: QuantumCircuit) -> bool:
    return _scan(circuit)[1]


def final_measurements(circuit: QuantumCircuit) -> list[int] | None:
    """The qubit each classical bit measures, in clbit order; ``None`` unless every clbit is measured once."""
    return _scan(circuit)[0]


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
    r = readout(circuit)
    return circuit if r.unscored else saving_probabilities(circuit, r.measured, at=r.save_at)


def saving_probabilities(
    circuit: QuantumCircuit, qubits: list[int], measure: bool = True, at: int | None = None
) -> QuantumCircuit:
    """The circuit with Aer's ``save_probabilities`` of ``qubits`` (labelled ``p``) where its final
    measurements begin; the measurements kept after it, or dropped. ``at``: the index where they begin
    when nothing but measurements and barriers follows (:attr:`Readout.save_at`): a copy with the save
    put in; otherwise the circuit is rebuilt with the measurements moved after it."""
    save = CircuitInstruction(SaveProbabilities(len(qubits), label="p"), [circuit.qubits[q] for q in qubits])
    if at is not None and measure:
        out = circuit.copy()
        out.data.insert(at, save)
        return out
    out = circuit.copy_empty_like()
    measurements = []
    for inst in circuit.data:
        if inst.name == "measure":
            measurements.append(inst)
        elif inst.name != "barrier":
            out._append(inst)
    out._append(save)
    if measure:
        for inst in measurements:
            out._append(inst)
    return out


@cache
def _statevector() -> AerSimulator:
    return AerSimulator(method="statevector", max_parallel_threads=1, max_memory_mb=SIMULATION_MB)


def counts_support(counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """The outcomes seen, as indices (the bitstring read as a binary number), and the share of each."""
    index = np.fromiter((int(key.replace(" ", ""), 2) for key in counts), dtype=np.int64, count=len(counts))
    n = np.fromiter(counts.values(), dtype=float, count=len(counts))
    return index, n / n.sum()


def counts_vector(counts: dict[str, int], bits: int) -> np.ndarray:
    """The counts as a probability vector over all ``2**bits`` outcomes."""
    index, share = counts_support(counts)
    vec = np.zeros(2**bits)
    vec[index] = share
    return vec


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
    if q.min() >= 0:
        return q  # a distribution already
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


def counts_fidelity(ideal: np.ndarray, counts: dict[str, int]) -> float:
    """:func:`hellinger_fidelity` of the counts themselves (ideal readout: nothing to unfold or
    project), summed over the outcomes seen only: no ``2**n`` vector is made."""
    index, share = counts_support(counts)
    return float(np.sum(np.sqrt(ideal[index] * share)) ** 2)


def record(
    circuits: Sequence[QuantumCircuit],
    transpiled: Sequence[QuantumCircuit],
    counts: Sequence[dict[str, int]],
    shots: Sequence[int],
    confusion: Confusion | None,
    ideals: Sequence[np.ndarray | None] | None = None,
    readouts: Sequence[Readout] | None = None,
) -> list[CircuitRecord]:
    """Record circuits a method sent (with the shots of each) and score those that can be scored.

    ``confusion`` is the target's readout confusion of a physical qubit (``None``: ideal readout).
    ``ideals[i]``, where given, is circuit ``i``'s exact distribution, saved by the run that sampled it
    (an ideal simulator); the others are computed here, in one batch. ``readouts[i]``, where given, is
    :func:`readout` of circuit ``i``, found when it was sent."""
    ideals = list(ideals) if ideals is not None else [None] * len(circuits)
    readouts = list(readouts) if readouts is not None else [readout(c) for c in circuits]
    out: list[CircuitRecord | None] = []
    scorable = []
    for i, (circuit, sent, n, r) in enumerate(zip(circuits, transpiled, shots, readouts, strict=True)):
        base = {"qubits": circuit.num_qubits, "two_qubit_gates": two_qubit_gates(sent), "shots": n}
        out.append(CircuitRecord(**base, unscored=r.unscored) if r.unscored else None)
        if not r.unscored:
            scorable.append((i, base, r.measured))
    missing = [(i, measured) for i, _, measured in scorable if ideals[i] is None]
    if missing:
        computed = ideal_distributions([circuits[i] for i, _ in missing], [m for _, m in missing])
        for (i, _), ideal in zip(missing, computed, strict=True):
            ideals[i] = ideal
    for i, base, measured in scorable:
        if confusion is None:
            fidelity = counts_fidelity(ideals[i], counts[i])
        else:
            observed = counts_vector(counts[i], len(measured))
            observed = unfold_readout(observed, [confusion(q) for q in final_measurements(transpiled[i])])
            fidelity = hellinger_fidelity(ideals[i], nearest_probability(observed))
        out[i] = CircuitRecord(**base, fidelity=fidelity)
    return out
