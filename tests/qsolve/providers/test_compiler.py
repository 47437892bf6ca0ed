"""Compiling circuits to wai.native/1 programs (quantum-provider-protocol §4, §6) and checking them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.circuit import Parameter
from qiskit.quantum_info import Statevector
from qiskit_aer import AerSimulator

from qsolve.providers.compiler import (
    CheckFailed,
    CompileError,
    check,
    compile_circuit,
    ideal_distribution,
    probe,
)
from qsolve.providers.device import BASES, Device
from qsolve.providers.program import Gate, qasm3_text, read_program, turn_value

LINE = ((0, 1), (1, 2), (2, 3), (3, 4))
STAR = Device(
    qubits=6,
    native_gates=("prx", "cz", "move"),
    connectivity=tuple((q, 5) for q in range(5)),
    resonators=(5,),
    moves=tuple((q, 5) for q in range(5)),
)
# a star whose qubits 3 and 4 have no move: they reach the others only through a qubit that moves in
HALF_STAR = Device(
    qubits=6,
    native_gates=("rz", "sx", "x", "cz", "move"),
    connectivity=tuple((q, 5) for q in range(5)),
    resonators=(5,),
    moves=((0, 5), (1, 5), (2, 5)),
)


def line(basis: str, qubits: int = 5) -> Device:
    return Device(qubits=qubits, native_gates=BASES[basis], connectivity=LINE[: qubits - 1])


def bell() -> QuantumCircuit:
    c = QuantumCircuit(2, 2)
    c.h(0)
    c.cx(0, 1)
    c.measure([0, 1], [0, 1])
    return c


def ghz(n: int) -> QuantumCircuit:
    c = QuantumCircuit(n, n)
    c.h(0)
    for q in range(1, n):
        c.cx(q - 1, q)
    c.measure(range(n), range(n))
    return c


def crossed() -> QuantumCircuit:
    """Bits named out of order: q0 → c1, q1 → c0, on a state that tells them apart."""
    c = QuantumCircuit(2, 2)
    c.ry(0.6, 0)
    c.ry(2.1, 1)
    c.cx(0, 1)
    c.measure(0, 1)
    c.measure(1, 0)
    return c


def triangle() -> QuantumCircuit:
    """Two-qubit gates on every pair of three qubits: on a line, one pair needs a swap."""
    c = QuantumCircuit(3, 3)
    c.h([0, 1, 2])
    c.cx(0, 1)
    c.rzz(0.7, 1, 2)
    c.cx(2, 0)
    c.ry(0.3, 0)
    c.cz(0, 1)
    c.rx(1.1, 2)
    c.cx(0, 2)
    c.measure([0, 1, 2], [2, 0, 1])
    return c


def rotations() -> QuantumCircuit:
    """Angles no fraction of a turn holds exactly."""
    c = QuantumCircuit(3, 3)
    c.u(0.1, 0.2, 0.3, 0)
    c.u(1.3, -0.7, 2.9, 1)
    c.rxx(0.42, 0, 1)
    c.crz(0.77, 1, 2)
    c.ry(1.234567, 2)
    c.measure(range(3), range(3))
    return c


CIRCUITS = {
    "bell": bell,
    "ghz4": lambda: ghz(4),
    "crossed": crossed,
    "triangle": triangle,
    "rotations": rotations,
}


def probabilities(compiled, device: Device) -> dict[str, float]:
    """The compiled program's exact outcome distribution, each bit read where its measurement says."""
    program = compiled.program
    circuit = program.to_circuit(device, measure=False)
    order = [m.qubit for m in sorted(program.measure, key=lambda m: m.bit)]
    p = Statevector(circuit).probabilities(qargs=order)
    return {format(i, f"0{len(order)}b"): float(v) for i, v in enumerate(p) if v > 1e-12}


def same(p: dict[str, float], q: dict[str, float], atol: float) -> bool:
    return all(abs(p.get(k, 0.0) - q.get(k, 0.0)) <= atol for k in set(p) | set(q))


def aer_counts(compiled, device: Device, shots: int = 2000) -> dict[str, int]:
    circuit = compiled.program.to_circuit(device)
    return (
        AerSimulator(method="statevector").run(circuit, shots=shots, seed_simulator=7).result().get_counts()
    )


def assert_sound(compiled, circuit: QuantumCircuit, device: Device) -> None:
    program = compiled.program
    read_program(program.model_dump(), device)  # a provider takes it: basis, places, pairs, resonators
    assert program.qasm3 == qasm3_text(program)
    assert compiled.native_gates == len(program.gates)
    assert set(compiled.layout) <= set(device.computational_qubits)
    assert set(compiled.final_layout) <= set(device.computational_qubits)
    assert sorted(m.bit for m in program.measure) == list(range(circuit.num_clbits))
    ideal = ideal_distribution(circuit)
    assert same(probabilities(compiled, device), ideal, 1e-9)
    counts = aer_counts(compiled, device)
    assert set(counts) <= {k for k, v in ideal.items() if v > 1e-9}
    tvd = sum(abs(counts.get(k, 0) / 2000 - ideal.get(k, 0.0)) for k in set(counts) | set(ideal)) / 2
    assert tvd < 0.06, (tvd, counts, ideal)


@pytest.mark.parametrize("basis", list(BASES))
@pytest.mark.parametrize("name", list(CIRCUITS))
def test_compiles_on_a_line_in_each_basis(basis, name):
    device = line(basis)
    circuit = CIRCUITS[name]()
    compiled = compile_circuit(circuit, device, seed=3)
    assert compiled.basis == basis == compiled.program.basis
    assert "random product inputs" in compiled.checked and "qiskit" in compiled.transpiler
    assert_sound(compiled, circuit, device)
    gates = {g.gate for g in compiled.program.gates}
    assert gates <= set(BASES[basis])
    if name == "triangle":
        assert compiled.swaps > 0
    if basis == "prxrzxx":  # §4: xx only ¼, prx within ½, no rz: the Z rotations are in the phases
        assert "rz" not in gates
        for g in compiled.program.gates:
            if g.gate == "xx":
                assert g.turns == ((1, 2),)
            if g.gate == "prx":
                assert turn_value(g.turns[0]) <= 0.5


def test_bits_named_out_of_order_land_on_their_bits():
    device = line("rzsxxcz")
    c = QuantumCircuit(2, 2)
    c.x(0)  # q0 is 1, and is read into c1: every outcome is "10" (bit 1 first)
    c.measure(0, 1)
    c.measure(1, 0)
    compiled = compile_circuit(c, device)
    assert aer_counts(compiled, device) == {"10": 2000}
    assert {m.bit: m.qubit for m in compiled.program.measure} == {
        1: compiled.final_layout[0],
        0: compiled.final_layout[1],
    }


@pytest.mark.parametrize("basis", list(BASES))
def test_the_probe_lands_on_01(basis):
    device = line(basis)
    compiled = compile_circuit(probe(3), device)
    assert aer_counts(compiled, device) == {"001": 2000}


def test_routing_ends_each_logical_qubit_where_its_bit_reads():
    device = line("prxcz")
    compiled = compile_circuit(triangle(), device, seed=1)
    assert compiled.swaps > 0
    bits = {m.bit: m.qubit for m in compiled.program.measure}
    assert bits == {2: compiled.final_layout[0], 0: compiled.final_layout[1], 1: compiled.final_layout[2]}


@pytest.mark.parametrize("device", [STAR, HALF_STAR], ids=["star", "half-star"])
@pytest.mark.parametrize("name", ["ghz5", "triangle", "crossed", "rotations"])
def test_compiles_through_a_resonator(device, name):
    circuit = ghz(5) if name == "ghz5" else CIRCUITS[name]()
    compiled = compile_circuit(circuit, device, seed=2)
    assert 5 not in compiled.layout and 5 not in compiled.final_layout
    assert all(m.qubit != 5 for m in compiled.program.measure)
    assert_sound(compiled, circuit, device)
    gates = [g.gate for g in compiled.program.gates]
    assert "move" in gates
    # no cz between two qubits: every pair reached through the resonator
    for g in compiled.program.gates:
        if g.gate == "cz":
            assert 5 in g.qubits
        if g.gate == "move":
            assert tuple(g.qubits) in device.moves


def test_a_move_out_and_straight_back_in_is_dropped():
    fan = QuantumCircuit(5, 5)  # qubit 0 entangled with each other qubit in turn
    fan.h(0)
    for q in range(1, 5):
        fan.cx(0, q)
    fan.measure(range(5), range(5))
    compiled = compile_circuit(fan, STAR)
    moves = [g for g in compiled.program.gates if g.gate == "move"]
    czs = [g for g in compiled.program.gates if g.gate == "cz"]
    assert len(czs) == 4 and len(moves) == 2  # one move in, four cz, one move out
    assert_sound(compiled, fan, STAR)


def test_all_to_all_device():
    device = Device(qubits=4, native_gates=("gpi", "gpi2", "zz"), connectivity="all")
    compiled = compile_circuit(triangle(), device)
    assert compiled.swaps == 0
    assert_sound(compiled, triangle(), device)


def test_rounding_is_bounded_and_stated():
    compiled = compile_circuit(rotations(), line("prxcz"))
    assert 0 < compiled.rounding_bound < 1e-7
    exact = compile_circuit(bell(), line("rzsxxcz"))
    assert exact.rounding_bound == 0.0
    for g in compiled.program.gates:
        for m, k in g.turns:
            assert k <= 32 and (m % 2 == 1 or (m, k) == (0, 0))


def test_compiling_is_reproducible():
    a = compile_circuit(triangle(), line("gpizz"), seed=5)
    b = compile_circuit(triangle(), line("gpizz"), seed=5)
    assert a.program == b.program and a.digest == b.digest
    member = a.receipt_member()
    assert member["program"] == a.digest and member["qasm3"] == a.program.qasm3
    assert member["layout"] == list(a.layout) and member["checked"] == a.checked


# --- the check refuses what is not the circuit ---------------------------------------------------------


def broken(compiled, **update):
    return compiled.model_copy(update={"program": compiled.program.model_copy(update=update)})


@pytest.mark.parametrize("basis", list(BASES))
def test_check_refuses_a_changed_gate(basis):
    circuit = rotations()
    compiled = compile_circuit(circuit, line(basis))
    gates = list(compiled.program.gates)
    i = next(i for i, g in enumerate(gates) if g.turns)
    moved = (turn_value(gates[i].turns[-1]) + Fraction(1, 8)) % 1  # its last angle an eighth of a turn on
    turns = (*gates[i].turns[:-1], (moved.numerator, moved.denominator.bit_length() - 1))
    gates[i] = Gate(gate=gates[i].gate, qubits=gates[i].qubits, turns=turns)
    with pytest.raises(CheckFailed):
        check(broken(compiled, gates=tuple(gates)), circuit)
    with pytest.raises(CheckFailed):  # a gate dropped
        check(broken(compiled, gates=compiled.program.gates[1:]), circuit)
    check(compiled, circuit)  # and the program as compiled passes


def test_check_refuses_bits_on_the_wrong_places_and_a_wrong_layout():
    circuit = crossed()
    compiled = compile_circuit(circuit, line("rzsxxcz"))
    swapped = tuple(m.model_copy(update={"bit": 1 - m.bit}) for m in compiled.program.measure)
    with pytest.raises(CheckFailed, match="bits read"):
        check(broken(compiled, measure=swapped), circuit)
    wrong = compiled.model_copy(update={"final_layout": compiled.final_layout[::-1]})
    with pytest.raises(CheckFailed):
        check(wrong, circuit)


def test_check_refuses_a_resonator_left_holding_a_state():
    circuit = ghz(3)
    compiled = compile_circuit(circuit, STAR)
    gates = compiled.program.gates
    last_move = max(i for i, g in enumerate(gates) if g.gate == "move")
    with pytest.raises(CheckFailed):
        check(broken(compiled, gates=gates[:last_move] + gates[last_move + 1 :]), circuit)


# --- what is not compiled -------------------------------------------------------------------------------


def refused(circuit: QuantumCircuit, device: Device | None = None) -> str:
    with pytest.raises(CompileError) as caught:
        compile_circuit(circuit, device or line("rzsxxcz"))
    return str(caught.value)


def test_refuses_mid_circuit_measurement():
    c = QuantumCircuit(2, 2)
    c.h(0)
    c.measure(0, 0)
    c.cx(0, 1)
    c.measure(1, 1)
    assert "mid-circuit" in refused(c)


def test_refuses_classical_control_and_resets():
    c = QuantumCircuit(2, 2)
    c.h(0)
    c.measure(0, 0)
    with c.if_test((c.clbits[0], 1)):
        c.x(1)
    c.measure(1, 1)
    assert "control flow" in refused(c)
    c = QuantumCircuit(1, 1)
    c.reset(0)
    c.measure(0, 0)
    assert "reset" in refused(c)


def test_refuses_too_many_qubits_and_a_qubit_measured_twice():
    assert "6 qubits" in refused(ghz(6))
    assert "4 places for them (and 1 resonators" in refused(
        ghz(5),
        Device(qubits=5, native_gates=STAR.native_gates, connectivity=((0, 4), (1, 4)), resonators=(4,)),
    )
    c = QuantumCircuit(1, 2)
    c.measure(0, 0)
    c.measure(0, 1)
    assert "measured twice" in refused(c)


def test_refuses_a_device_with_no_basis():
    device = Device(qubits=3, native_gates=("rz", "sx", "cx"))
    assert "no basis of wai.native/1" in refused(bell(), device)


def test_refuses_unread_bits_and_unbound_parameters():
    c = QuantumCircuit(2, 3)
    c.measure([0, 1], [0, 1])
    assert "classical bit 2 is never measured" in refused(c)
    c = QuantumCircuit(1, 1)
    c.rx(Parameter("theta"), 0)
    c.measure(0, 0)
    assert "unbound parameters (theta)" in refused(c)


def test_ideal_distribution_keys_bits_as_counts_are_keyed():
    c = QuantumCircuit(2, 2)
    c.x(0)
    c.measure(0, 1)
    c.measure(1, 0)
    assert ideal_distribution(c) == {"10": 1.0}
    assert ideal_distribution(probe(3)) == {"001": 1.0}
    assert math.isclose(sum(ideal_distribution(rotations()).values()), 1.0)
    assert np.isclose(ideal_distribution(bell())["11"], 0.5)
