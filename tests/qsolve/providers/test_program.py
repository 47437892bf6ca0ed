"""The wai.native/1 program (quantum-provider-protocol §4): angles, reading, semantics, OpenQASM 3, digest."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from blake3 import blake3
from qiskit import QuantumCircuit, qasm3
from qiskit.quantum_info import Operator
from scipy.linalg import expm

from qsolve.providers.device import Device
from qsolve.providers.program import (
    Gate,
    Program,
    ProgramRefused,
    nearest_turn,
    program_digest,
    qasm3_text,
    read_program,
    turn_value,
)

I2 = np.eye(2)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Z = np.diag([1.0, -1.0]).astype(complex)


def rz(theta: float) -> np.ndarray:  # Rz(θ) = exp(−iθZ/2)
    return expm(-1j * theta / 2 * Z)


def rx(theta: float) -> np.ndarray:
    return expm(-1j * theta / 2 * X)


def program(basis: str, gates: list[dict], measure: list[tuple[int, int]] | None = None, **extra) -> dict:
    measure = [(0, 0)] if measure is None else measure
    return {
        "format": "wai.native/1",
        "basis": basis,
        "bits": len(measure),
        "gates": gates,
        "measure": [{"qubit": q, "bit": b} for q, b in measure],
        **extra,
    }


def refused(obj: dict, device: Device | None = None) -> ProgramRefused:
    with pytest.raises(ProgramRefused) as caught:
        read_program(obj, device)
    return caught.value


# --- angles -------------------------------------------------------------------------------------------


def test_turn_value_and_reading():
    assert turn_value((1, 2)) == Fraction(1, 4)
    assert turn_value((0, 0)) == 0
    assert turn_value((2**32 - 1, 32)) == Fraction(2**32 - 1, 2**32)
    p = read_program(program("rzsxxcz", [{"gate": "rz", "qubits": [0], "turns": [[6, 4]]}]))
    assert p.gates[0].turns == ((6, 4),)  # not reduced on reading: [6, 4] is 3/8 exactly


@pytest.mark.parametrize(
    "turn, why",
    [
        ([True, 1], "whole numbers"),
        ([1, True], "whole numbers"),
        ([0.5, 1], "whole numbers"),
        ([1], "two whole numbers"),
        ([1, 2, 3], "two whole numbers"),
        ([4, 2], "m must be"),
        ([-1, 2], "m must be"),
        ([1, 33], "k must be"),
        ([0, -1], "k must be"),
        ("1/4", "two whole numbers"),
    ],
)
def test_bad_turns_are_invalid(turn, why):
    e = refused(program("rzsxxcz", [{"gate": "rz", "qubits": [0], "turns": [turn]}]))
    assert e.code == "invalid" and why in e.message and "gates.0.turns.0" in e.message


def test_nearest_turn():
    assert nearest_turn(math.pi / 2) == ((1, 2), 0.0)
    assert nearest_turn(math.pi) == ((1, 1), 0.0)
    assert nearest_turn(0.0) == ((0, 0), 0.0)
    assert nearest_turn(-math.pi / 2)[0] == (3, 2)  # taken modulo a turn
    assert nearest_turn(5 * math.pi / 2)[0] == (1, 2)
    (m, k), err = nearest_turn(2 * math.pi - 1e-12)  # rounds up to a whole turn: zero
    assert (m, k) == (0, 0) and abs(err + 1e-12) < 1e-15
    (m, k), err = nearest_turn(1.0)
    assert m % 2 == 1 and k <= 32 and abs(err) <= math.pi / 2**32
    assert abs(2 * math.pi * m / 2**k + err - 1.0) < 1e-15
    (m, k), err = nearest_turn(1.0, k=3)  # 1 rad is 0.159 of a turn: 1/8 is nearest
    assert (m, k) == (1, 3) and err == pytest.approx(1.0 - math.pi / 4)


# --- reading: invalid ---------------------------------------------------------------------------------


def test_a_program_reads_and_unknown_members_are_ignored():
    obj = program(
        "rzsxxcz",
        [{"gate": "sx", "qubits": [0], "note": "x"}, {"gate": "cz", "qubits": [0, 1]}],
        [(1, 0), (0, 1)],
        comment="ignored",
    )
    p = read_program(obj)
    assert [g.gate for g in p.gates] == ["sx", "cz"] and p.bits == 2
    assert read_program(p.model_dump()) == p
    assert "turns" not in p.model_dump()["gates"][0]


@pytest.mark.parametrize(
    "obj, why",
    [
        (program("rzsxxcz", [], format="wai.native/2"), "format 'wai.native/2'"),
        ({"basis": "rzsxxcz", "bits": 0}, "format None"),
        (program("rzcx", []), "basis 'rzcx'"),
        (
            program("gpizz", [{"gate": "cz", "qubits": [0, 1]}]),
            "gate 0 (cz on [0, 1]): cz is not a gate of gpizz",
        ),
        (program("rzsxxcz", [{"gate": "h", "qubits": [0]}]), "'h' is no gate"),
        (program("gpizz", [{"gate": "move", "qubits": [0, 1]}]), "move is only in rzsxxcz and prxcz"),
        (program("prxrzxx", [{"gate": "move", "qubits": [0, 1]}]), "move is only in"),
        (program("rzsxxcz", [{"gate": "sx", "qubits": []}]), "sx acts on 1 place, not 0"),
        (program("rzsxxcz", [{"gate": "cz", "qubits": [0]}]), "cz acts on 2 places, not 1"),
        (program("rzsxxcz", [{"gate": "cz", "qubits": [1, 1]}]), "names place 1 twice"),
        (program("rzsxxcz", [{"gate": "rz", "qubits": [0]}]), "rz takes 1 angle, not 0"),
        (program("rzsxxcz", [{"gate": "x", "qubits": [0], "turns": [[1, 1]]}]), "x takes 0 angles, not 1"),
        (program("prxcz", [{"gate": "prx", "qubits": [0], "turns": [[1, 1]]}]), "prx takes 2 angles"),
        (
            program("prxrzxx", [{"gate": "xx", "qubits": [0, 1], "turns": [[3, 3]]}]),
            "xx in prxrzxx takes 0 to ¼",
        ),
        (
            program("prxrzxx", [{"gate": "prx", "qubits": [0], "turns": [[3, 2], [0, 0]]}]),
            "prx in prxrzxx takes 0 to ½",
        ),
        ({**program("rzsxxcz", [], [(0, 0)]), "bits": 2}, "bit 1 reads no qubit"),
        (program("rzsxxcz", [], [(0, 0), (0, 1)]), "place 0 is read twice"),
        (program("rzsxxcz", [], [(0, 0), (1, 0)]), "bit 0 reads two places"),
        ({**program("rzsxxcz", [], [(0, 3)]), "bits": 1}, "bit 3 is not one of the program's 1 bits"),
        ({**program("rzsxxcz", []), "bits": True}, "bits"),
        ({**program("rzsxxcz", []), "gates": {"gate": "x"}}, "gates"),
        (program("rzsxxcz", [{"gate": "x", "qubits": [-1]}]), "gates.0.qubits.0"),
        (program("rzsxxcz", [{"gate": "x", "qubits": [1.0]}]), "gates.0.qubits.0"),
        (program("rzsxxcz", [{"qubits": [0]}]), "gates.0.gate: field required"),
        ({"format": "wai.native/1", "bits": 0}, "the program has no basis and no gates and no measure (§4)"),
        ("not an object", "a program is a JSON object"),
    ],
)
def test_invalid_programs(obj, why):
    e = refused(obj)
    assert e.code == "invalid"
    assert why in e.message, e.message
    assert e.error() == {"code": "invalid", "message": e.message}


def test_angles_in_range_in_prxrzxx():
    gates = [{"gate": "xx", "qubits": [0, 1], "turns": [[1, 1]]}]
    assert refused(program("prxrzxx", gates)).code == "invalid"  # xx(½)
    read_program(
        program("prxcz", [{"gate": "prx", "qubits": [0], "turns": [[3, 2], [0, 0]]}])
    )  # no range there
    ok = [
        {"gate": "xx", "qubits": [0, 1], "turns": [[2, 3]]},
        {"gate": "prx", "qubits": [0], "turns": [[1, 1], [3, 2]]},
    ]
    read_program(program("prxrzxx", ok))  # xx(¼) and prx(½, ¾) are the edges of the ranges


# --- reading: refused ---------------------------------------------------------------------------------

LINE = Device(qubits=3, native_gates=("rz", "sx", "x", "cz"), connectivity=((0, 1), (1, 2)))
STAR = Device(
    qubits=6,
    native_gates=("prx", "cz", "move"),
    connectivity=((0, 5), (1, 5), (2, 5), (3, 5), (4, 5)),
    resonators=(5,),
    moves=((0, 5), (1, 5), (2, 5)),
)
TWO_RESONATORS = Device(
    qubits=4,
    native_gates=("rz", "sx", "x", "cz", "move"),
    connectivity=((0, 2), (1, 2), (0, 3), (1, 3), (2, 3)),
    resonators=(2, 3),
    moves=((0, 2), (0, 3), (1, 2)),
)
PRX = [[1, 2], [0, 0]]


def move(q: int, r: int) -> dict:
    return {"gate": "move", "qubits": [q, r]}


def cz(a: int, b: int) -> dict:
    return {"gate": "cz", "qubits": [a, b]}


def prx(q: int) -> dict:
    return {"gate": "prx", "qubits": [q], "turns": PRX}


@pytest.mark.parametrize(
    "obj, device, why",
    [
        (program("prxcz", [prx(0)]), LINE, "does not run prxcz"),
        (
            program("rzsxxcz", [{"gate": "x", "qubits": [3]}]),
            LINE,
            "gate 0 (x on [3]): the device has no place 3",
        ),
        (program("rzsxxcz", [cz(0, 2)]), LINE, "does not couple 0 and 2"),
        (program("rzsxxcz", [], [(4, 0)]), LINE, "has no place 4"),
        (program("prxcz", [prx(5)]), STAR, "place 5 is a resonator"),
        (program("prxcz", [cz(0, 1)]), STAR, "does not couple 0 and 1"),
        (program("prxcz", [move(3, 5), move(3, 5)]), STAR, "move does not run on [3, 5]"),
        (program("prxcz", [move(5, 0)]), STAR, "move does not run on [5, 0]"),
        (program("prxcz", [move(0, 5), move(1, 5)]), STAR, "resonator 5 holds qubit 0's state"),
        (
            program("prxcz", [move(0, 5), prx(0), move(0, 5)]),
            STAR,
            "gate 1 (prx on [0]): qubit 0's state is in",
        ),
        (program("prxcz", [move(0, 5), cz(0, 5), move(0, 5)]), STAR, "qubit 0's state is in resonator 5"),
        (program("prxcz", [move(0, 5)], [(1, 0)]), STAR, "resonator 5 still holds qubit 0's state"),
        (program("prxcz", [], [(5, 0)]), STAR, "place 5 is a resonator, which is never measured"),
        (program("rzsxxcz", [cz(2, 3)]), TWO_RESONATORS, "place 2 is a resonator"),
        (
            program("rzsxxcz", [move(0, 2), move(0, 3)]),
            TWO_RESONATORS,
            "qubit 0's state is already in resonator 2",
        ),
        (program("rzsxxcz", [{"gate": "rz", "qubits": [3], "turns": [[1, 1]]}]), TWO_RESONATORS, "resonator"),
    ],
)
def test_refused_programs(obj, device, why):
    read_program(obj)  # each reads without a device: only the device refuses it
    e = refused(obj, device)
    assert e.code == "refused"
    assert why in e.message, e.message


def test_a_resonator_used_in_turn_is_taken():
    gates = [prx(0), move(0, 5), cz(3, 5), move(0, 5), move(1, 5), cz(4, 5), cz(0, 5), move(1, 5), prx(1)]
    p = read_program(program("prxcz", gates, [(0, 0), (1, 1), (3, 2)]), STAR)
    assert len(p.gates) == 9
    two = [move(0, 2), cz(1, 2), move(0, 2), move(0, 3), cz(1, 3), move(0, 3)]
    read_program(program("rzsxxcz", two, [(0, 0), (1, 1)]), TWO_RESONATORS)


# --- semantics ----------------------------------------------------------------------------------------


def spec_operator(gate: str, turns: list[Fraction]) -> np.ndarray:
    """§4's definition of each gate, written from its sentence, as a matrix on (first, second) qubit with
    the first as the most significant factor; compared with Qiskit's little-endian order below."""
    tau = 2 * math.pi
    match gate:
        case "rz":
            return expm(-1j * math.pi * float(turns[0]) * Z)
        case "sx":
            return np.array([[1 + 1j, 1 - 1j], [1 - 1j, 1 + 1j]]) / 2
        case "x":
            return X
        case "cz":
            return np.diag([1, 1, 1, -1]).astype(complex)
        case "prx":
            t, p = (float(v) for v in turns)
            return rz(tau * p) @ rx(tau * t) @ rz(-tau * p)
        case "gpi":
            p = float(turns[0])
            return rz(tau * p) @ X @ rz(-tau * p)
        case "gpi2":
            p = float(turns[0])
            return rz(tau * p) @ rx(math.pi / 2) @ rz(-tau * p)
        case "zz":
            return expm(-1j * math.pi * float(turns[0]) * np.kron(Z, Z))
        case "xx":
            return expm(-1j * math.pi * float(turns[0]) * np.kron(X, X))
        case "move":
            return np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=complex)
    raise AssertionError(gate)


@pytest.mark.parametrize(
    "gate, turns",
    [
        ("rz", [(1, 2)]),
        ("rz", [(12345, 17)]),
        ("sx", []),
        ("x", []),
        ("cz", []),
        ("prx", [(1, 2), (1, 2)]),
        ("prx", [(3, 3), (5, 5)]),
        ("gpi", [(3, 4)]),
        ("gpi2", [(7, 5)]),
        ("zz", [(1, 3)]),
        ("zz", [(9, 4)]),
        ("xx", [(1, 2)]),
        ("xx", [(3, 7)]),
        ("move", []),
    ],
)
def test_each_gate_is_its_definition(gate, turns):
    arity = 2 if gate in ("cz", "zz", "xx", "move") else 1
    g = Gate(gate=gate, qubits=tuple(range(arity)), turns=tuple(turns))
    basis = {"rz": "rzsxxcz", "sx": "rzsxxcz", "x": "rzsxxcz", "cz": "rzsxxcz", "move": "prxcz"}.get(gate)
    basis = basis or {"prx": "prxcz", "gpi": "gpizz", "gpi2": "gpizz", "zz": "gpizz", "xx": "prxrzxx"}[gate]
    p = Program(basis=basis, bits=0, gates=(g,))
    circuit = p.to_circuit(measure=False)
    want = spec_operator(gate, [turn_value(t) for t in turns])
    # the definition names qubits (first, second) with the first most significant: Qiskit's is the last
    assert Operator(circuit).equiv(Operator(want).reverse_qargs()), gate


def test_identities_of_section_4():
    """cz written as xx(¼) between prx(¼, ¼) on each qubit and prx(¼, ¾), up to Z rotations (§4)."""
    quarter = [(1, 2), (1, 2)]
    three_quarters = [(1, 2), (3, 2)]
    gates = (
        Gate(gate="prx", qubits=(0,), turns=quarter),
        Gate(gate="prx", qubits=(1,), turns=quarter),
        Gate(gate="xx", qubits=(0, 1), turns=((1, 2),)),
        Gate(gate="prx", qubits=(0,), turns=three_quarters),
        Gate(gate="prx", qubits=(1,), turns=three_quarters),
        Gate(gate="rz", qubits=(0,), turns=((3, 2),)),  # rz(¾) = Rz(−π/2), the Z rotation it leaves
        Gate(gate="rz", qubits=(1,), turns=((3, 2),)),
    )
    circuit = Program(basis="prxrzxx", bits=0, gates=gates).to_circuit(measure=False)
    reference = QuantumCircuit(2)
    reference.cz(0, 1)
    assert Operator(circuit).equiv(Operator(reference))
    # prx(¼, ¼) is Ry(π/2)
    ry = Program(basis="prxcz", bits=0, gates=(Gate(gate="prx", qubits=(0,), turns=quarter),)).to_circuit()
    reference = QuantumCircuit(1)
    reference.ry(math.pi / 2, 0)
    assert Operator(ry).equiv(Operator(reference))


def test_to_circuit_places_and_measures():
    p = read_program(program("rzsxxcz", [{"gate": "x", "qubits": [2]}], [(2, 0), (0, 1)]))
    c = p.to_circuit()
    assert c.num_qubits == 3 and c.num_clbits == 2
    measures = [
        (c.find_bit(i.qubits[0]).index, c.find_bit(i.clbits[0]).index) for i in c.data if i.name == "measure"
    ]
    assert measures == [(2, 0), (0, 1)]
    assert p.to_circuit(LINE).num_qubits == 3
    assert p.to_circuit(5).num_qubits == 5
    with pytest.raises(ValueError):
        p.to_circuit(2)


# --- OpenQASM 3 and the digest ------------------------------------------------------------------------

SAMPLES = {
    "rzsxxcz": [{"gate": "rz", "qubits": [0], "turns": [[3, 3]]}, {"gate": "sx", "qubits": [1]}, cz(1, 0)]
    + [{"gate": "x", "qubits": [2]}, cz(1, 2)],
    "prxcz": [
        prx(0),
        {"gate": "prx", "qubits": [1], "turns": [[5, 6], [7, 9]]},
        cz(0, 1),
        move(1, 2),
        cz(0, 2),
    ]
    + [move(1, 2)],
    "gpizz": [
        {"gate": "gpi", "qubits": [0], "turns": [[1, 3]]},
        {"gate": "gpi2", "qubits": [1], "turns": [[3, 4]]},
    ]
    + [
        {"gate": "zz", "qubits": [1, 2], "turns": [[7, 5]]},
        {"gate": "gpi2", "qubits": [2], "turns": [[0, 0]]},
    ],
    "prxrzxx": [
        {"gate": "prx", "qubits": [2], "turns": [[1, 2], [3, 2]]},
        {"gate": "rz", "qubits": [0], "turns": [[1, 5]]},
    ]
    + [
        {"gate": "xx", "qubits": [2, 0], "turns": [[1, 3]]},
        {"gate": "xx", "qubits": [0, 1], "turns": [[1, 6]]},
    ],
}


@pytest.mark.parametrize("basis", sorted(SAMPLES))
def test_qasm3_text_is_the_program(basis):
    p = read_program(program(basis, SAMPLES[basis], [(0, 1), (1, 0)]))
    text = qasm3_text(p)
    assert text.startswith("OPENQASM 3.0;\n")
    body = [
        line for line in text.splitlines() if line.endswith(";") and "$" in line and "measure" not in line
    ]
    assert len(body) == len(p.gates)  # one line a gate
    assert "c[0] = measure $1;" in text and "c[1] = measure $0;" in text
    for gate, definition in {
        "prx": "gate prx(",
        "gpi": "gate gpi(",
        "gpi2": "gate gpi2(",
        "zz": "gate rzz(",
    }.items():
        assert (definition in text) == any(g["gate"] == gate for g in SAMPLES[basis])
    assert ("gate rxx(" in text) == (basis == "prxrzxx")
    assert ("gate move a, b { swap a, b; }" in text) == (basis == "prxcz")
    loaded = qasm3.loads(text)  # qiskit_qasm3_import is installed here
    assert loaded.num_qubits == p.places()
    ours = p.to_circuit(measure=False)
    assert Operator(loaded.remove_final_measurements(inplace=False)).equiv(Operator(ours))


def test_qasm3_angles_are_exact_text():
    p = read_program(program("rzsxxcz", [{"gate": "rz", "qubits": [0], "turns": [[1, 1]]}]))
    assert "rz(pi) $0;" in qasm3_text(p)
    p = read_program(program("rzsxxcz", [{"gate": "rz", "qubits": [0], "turns": [[12345, 32]]}]))
    assert "rz(pi*12345/2147483648) $0;" in qasm3_text(p)
    p = read_program(program("prxrzxx", [{"gate": "xx", "qubits": [0, 1], "turns": [[1, 3]]}]))
    assert "rxx(pi*1/4) $0, $1;" in qasm3_text(p)  # xx(⅛) is rxx(π/4), in radians


def test_digest_is_blake3_of_the_text():
    p = read_program(program("gpizz", SAMPLES["gpizz"], [(0, 0)]))
    text = qasm3_text(p)
    assert program_digest(p) == blake3(text.encode()).hexdigest() == program_digest(text)
    assert len(program_digest(p)) == 64 and program_digest(p) == program_digest(p).lower()
    q = p.with_qasm3()
    assert q.qasm3 == text and program_digest(q) == program_digest(p)
    changed = p.model_copy(update={"gates": p.gates[:-1]})
    assert program_digest(changed) != program_digest(p)
