"""The ISA and its check: a circuit transpiled to the device's ISA (Qiskit's preset pass manager on the
device's own ``Target``, seeded) is checked against the circuit before anything is sent (state vectors on
random product inputs, as ``qsolve.providers.compiler`` checks a provider's program); an ISA holding a gate
outside rz, sx, x and cz, or a gate after a measurement, is never sent. The circuit's QPY and OpenQASM 3
forms, as records and receipts keep them."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.transpiler.basepasses import AnalysisPass

#: the gates an ISA circuit may hold to be sent (beside measurements and barriers): those of ``rzsxxcz``
ISA_GATES = frozenset({"rz", "sx", "x", "cz"})
OPTIMIZATION_LEVEL = 2  # the preset pass manager's own default, as qsolve.providers.compiler uses
#: 1 − |⟨circuit|ISA⟩| allowed: the ISA's angles are sent as floats, so only synthesis' rounding is left
CHECK_TOLERANCE = 1e-9


class _CountSwaps(AnalysisPass):
    """Writes the DAG's swap count into ``sink[key]`` (before layout and after routing)."""

    def __init__(self, sink: dict[str, int], key: str) -> None:
        super().__init__()
        self.sink, self.key = sink, key

    def run(self, dag: Any) -> None:
        self.sink[self.key] = dag.count_ops().get("swap", 0)


def _isa_parts(isa: QuantumCircuit) -> tuple[list[tuple[str, tuple[int, ...], list[float]]], dict[int, int]]:
    """The ISA's gates on physical qubits, in order, and which physical qubit each classical bit reads;
    ValueError for what cannot be sent as checked (a gate outside rz, sx, x, cz; a gate after a measure)."""
    gates, reads, measured = [], {}, set()
    for inst in isa.data:
        name = inst.operation.name
        qubits = tuple(isa.find_bit(q).index for q in inst.qubits)
        if name == "barrier":
            continue
        if name == "measure":
            reads[isa.find_bit(inst.clbits[0]).index] = qubits[0]
            measured.add(qubits[0])
            continue
        if name not in ISA_GATES:
            raise ValueError(
                f"the device's ISA gave {name} on {list(qubits)}: only rz, sx, x and cz are sent"
            )
        if measured.intersection(qubits):
            raise ValueError(f"{name} on {list(qubits)} comes after a measurement (mid-circuit measurement)")
        gates.append((name, qubits, [float(p) for p in inst.operation.params]))
    return gates, reads


def check_isa(
    circuit: QuantumCircuit,
    isa: QuantumCircuit,
    layout: Sequence[int],
    final_layout: Sequence[int],
    seed: int,
) -> str:
    """The ISA circuit is the circuit: on random product inputs of the logical qubits (seeded), each
    entering on its ``layout`` place, the ISA's state on the places it uses (every other place entering and
    required to leave in |0⟩) equals the circuit's, each logical qubit leaving on its ``final_layout``
    place, up to a global phase; and each classical bit reads the place its logical qubit ends on. Returns
    the sentence of what was checked; ValueError when it is not the circuit."""
    from qsolve.providers.compiler import MAX_CHECK_QUBITS, _axes, _batch, _logical, _product, _random_qubit

    unitary, measured = _logical(circuit)
    gates, reads = _isa_parts(isa)
    n = unitary.num_qubits
    want = {c: final_layout[q] for c, q in measured.items()}
    if reads != want:
        raise ValueError(f"the bits read places {reads}; their logical qubits end on {want}")
    used = sorted({q for _, qs, _ in gates for q in qs} | set(layout) | set(final_layout))
    if len(used) > MAX_CHECK_QUBITS:
        raise ValueError(f"the ISA uses {len(used)} qubits: the check simulates at most {MAX_CHECK_QUBITS}")
    index = {p: i for i, p in enumerate(used)}
    ours = QuantumCircuit(len(used), global_phase=isa.global_phase)
    for name, qs, params in gates:
        getattr(ours, name)(*params, *(index[q] for q in qs))
    ends = [index[p] for p in final_layout]
    rest = [i for i in range(len(used)) if i not in ends]
    rng = np.random.default_rng(seed)
    zero = np.array([1, 0], dtype=complex)
    logical_in, isa_in = [], []
    inputs = 8 if len(used) <= 12 else 2
    for _ in range(inputs):
        states = [_random_qubit(rng) for _ in range(n)]
        entering = [zero] * len(used)
        for i, p in enumerate(layout):
            entering[index[p]] = states[i]
        logical_in.append(_product(states))
        isa_in.append(_product(entering))
    psis, phis = _batch(logical_in, unitary), _batch(isa_in, ours)
    worst = 0.0
    for k in range(inputs):
        psi = _axes(psis[k], n)
        phi = _axes(phis[k], len(used)).transpose(ends + rest)[(Ellipsis,) + (0,) * len(rest)]
        worst = max(worst, 1 - abs(np.vdot(psi.ravel(), phi.ravel())))
        if worst > CHECK_TOLERANCE:
            raise ValueError(f"input {k}: the ISA's state is 1 − {worst:.1e} from the circuit's")
    return (
        f"state vectors of {inputs} random product inputs (seed {seed}) on the {len(used)} qubits the ISA "
        f"circuit uses, every other one entering and required to leave in |0⟩: |⟨circuit|ISA⟩| ≥ 1 − "
        f"{max(worst, 0.0):.1e} (allowed 1 − {CHECK_TOLERANCE:.0e}); every bit reads the qubit its logical "
        "qubit ends on; the angles are sent as the ISA holds them (double precision)"
    )


def _qpy(circuit: QuantumCircuit) -> str:
    from qiskit import qpy

    buffer = io.BytesIO()
    qpy.dump(circuit, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _circuit(text: str) -> QuantumCircuit:
    from qiskit import qpy

    return qpy.load(io.BytesIO(base64.b64decode(text)))[0]


def _qasm3(circuit: QuantumCircuit) -> str:
    from qiskit import qasm3

    return qasm3.dumps(circuit)
