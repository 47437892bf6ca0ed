"""The program a device runs: ``wai.native/1`` (quantum-provider-protocol §4).

A program is a device's own gates on its physical places, every angle an exact fraction of a turn
(``[m, k]`` is m/2^k of 2π), with the classical bit each measured place is read into. This module reads
one as a provider must (:func:`read_program`: ``invalid`` for a program that does not read, ``refused`` for
one its device cannot run), gives its exact semantics as a Qiskit circuit (:meth:`Program.to_circuit`, what
the reference provider simulates), writes its OpenQASM 3 text (:func:`qasm3_text`) and hashes that text
(:func:`program_digest`, a receipt's ``compiled.program``, §8.1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Annotated, Any

from blake3 import blake3
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_serializer,
    model_validator,
)
from qiskit import QuantumCircuit
from qiskit.circuit.library import CZGate, RGate, RXXGate, RZGate, RZZGate, SwapGate, SXGate, XGate

from .device import BASES, MOVE_BASES, Device

FORMAT = "wai.native/1"
#: the members every program gives (§4; ``qasm3`` is informative, and may be left out)
MEMBERS = ("basis", "bits", "gates", "measure")
TAU = 2 * math.pi
MAX_K = 32

#: each gate of wai.native/1: (places it acts on, angles it takes)
GATES: dict[str, tuple[int, int]] = {
    "rz": (1, 1),
    "sx": (1, 0),
    "x": (1, 0),
    "cz": (2, 0),
    "prx": (1, 2),
    "gpi": (1, 1),
    "gpi2": (1, 1),
    "zz": (2, 1),
    "xx": (2, 1),
    "move": (2, 0),
}
TWO_PLACE_GATES = frozenset(name for name, (arity, _) in GATES.items() if arity == 2)


class ProgramRefused(ValueError):
    """A program a provider does not take: ``code`` is §3's ``invalid`` or ``refused``; ``message`` is for a
    person, naming the gate (by its index in ``gates``) or the field and what is wrong with it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def error(self) -> dict[str, str]:
        """The answer's ``error`` object (§3)."""
        return {"code": self.code, "message": self.message}


class _Unreadable(ValueError):
    """Raised inside validation; its text is the person's message, unwrapped by :func:`read_program`."""


# --- angles -------------------------------------------------------------------------------------------


def _turn(value: Any) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise _Unreadable(f"an angle is [m, k], two whole numbers, not {value!r}")
    m, k = value
    if type(m) is not int or type(k) is not int:  # bools and floats are not whole numbers here
        raise _Unreadable(f"an angle is [m, k], two whole numbers, not {list(value)!r}")
    if not 0 <= k <= MAX_K:
        raise _Unreadable(f"angle [{m}, {k}]: k must be 0 to {MAX_K}")
    if not 0 <= m < 2**k:
        raise _Unreadable(f"angle [{m}, {k}]: m must be 0 to 2^{k} − 1 = {2**k - 1}")
    return (m, k)


#: ``[m, k]``: m/2^k of a full turn, 0 ≤ m < 2^k, 0 ≤ k ≤ 32
Turn = Annotated[tuple[int, int], BeforeValidator(_turn)]


def turn_value(t: tuple[int, int]) -> Fraction:
    """The fraction of a full turn ``[m, k]`` is."""
    m, k = _turn(t)
    return Fraction(m, 2**k)


def turn_radians(t: tuple[int, int]) -> float:
    """The angle ``[m, k]`` is, in radians (2π·m/2^k)."""
    m, k = _turn(t)
    return TAU * m / 2**k


def reduce_turn(m: int, k: int) -> tuple[int, int]:
    """``[m, k]`` in lowest terms: m odd, or ``[0, 0]``."""
    if m == 0:
        return (0, 0)
    while k > 0 and m % 2 == 0:
        m, k = m // 2, k - 1
    return (m, k)


def nearest_turn(radians: float, k: int = MAX_K) -> tuple[tuple[int, int], float]:
    """The nearest m/2^k of a turn to ``radians`` (taken modulo 2π), in lowest terms, and the rounding error
    ``radians − angle``, in radians, wrapped into [−π, π]."""
    if not 0 <= k <= MAX_K:
        raise ValueError(f"k must be 0 to {MAX_K}")
    if not math.isfinite(radians):
        raise ValueError(f"angle {radians} is not a finite number")
    scale = 2**k
    m = round((radians / TAU) % 1.0 * scale) % scale
    turn = reduce_turn(m, k)
    error = math.remainder(radians - TAU * m / scale, TAU)
    return turn, error


def _turn_text(t: tuple[int, int]) -> str:
    """The angle in radians as an exact OpenQASM expression: ``0``, ``pi``, ``pi*3/4``."""
    f = 2 * turn_value(t)  # in units of π
    if f == 0:
        return "0"
    if f == 1:
        return "pi"
    if f.denominator == 1:
        return f"pi*{f.numerator}"
    return f"pi*{f.numerator}/{f.denominator}"


# --- the program --------------------------------------------------------------------------------------

Place = Annotated[StrictInt, Field(ge=0)]


class Gate(BaseModel):
    """One gate: its name, the places it acts on, and its angles (``turns``) where it takes any:
    ``rz(t)``, ``prx(t, p)``, ``gpi(p)``, ``gpi2(p)``, ``zz(t)``, ``xx(t)``; ``sx``, ``x``, ``cz`` and
    ``move`` take none."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    gate: StrictStr
    qubits: tuple[Place, ...]
    turns: tuple[Turn, ...] = ()

    @model_serializer(mode="wrap")
    def _wire(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        if not out.get("turns"):
            out.pop("turns", None)  # as §4 writes a gate without angles
        return out

    def radians(self) -> tuple[float, ...]:
        return tuple(turn_radians(t) for t in self.turns)


class Measure(BaseModel):
    """Classical bit ``bit`` reads physical place ``qubit`` at the end of the program."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    qubit: Place
    bit: Place


class Program(BaseModel):
    """A ``wai.native/1`` program (§4). Constructing one checks everything a provider refuses as
    ``invalid``; what depends on a device is :func:`device_refusal`'s."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    format: StrictStr = FORMAT
    basis: StrictStr
    bits: Place
    gates: tuple[Gate, ...] = ()
    measure: tuple[Measure, ...] = ()
    qasm3: StrictStr | None = None

    @model_validator(mode="after")
    def _reads(self) -> Program:
        problem = _invalid(self)
        if problem:
            raise _Unreadable(problem)
        return self

    def with_qasm3(self) -> Program:
        """This program with its ``qasm3`` member written from its gates."""
        return self.model_copy(update={"qasm3": qasm3_text(self)})

    def places(self) -> int:
        """One more than the highest place the program names (0 for none)."""
        used = [q for g in self.gates for q in g.qubits] + [m.qubit for m in self.measure]
        return max(used, default=-1) + 1

    def to_circuit(self, qubits: int | Device | None = None, *, measure: bool = True) -> QuantumCircuit:
        """The program's exact semantics: a circuit on ``qubits`` physical places (a device's count, or
        :meth:`places`), with ``bits`` classical bits and, unless ``measure`` is false, the measurements.
        Each gate is §4's operator up to a global phase; ``move`` is a SWAP, the exchange it is on every
        state a program that uses its resonators in turn reaches."""
        n = qubits.qubits if isinstance(qubits, Device) else self.places() if qubits is None else qubits
        if n < self.places():
            raise ValueError(f"the program names place {self.places() - 1}; a circuit of {n} cannot hold it")
        circuit = QuantumCircuit(n, self.bits if measure else 0)
        append_gates(circuit, self.gates)
        if measure:
            for m in self.measure:
                circuit.measure(m.qubit, m.bit)
        return circuit


def qiskit_gate(gate: Gate):
    """The Qiskit gate §4 defines ``gate`` to be, up to a global phase."""
    a = gate.radians()
    match gate.gate:
        case "rz":
            return RZGate(a[0])  # exp(−iπt·Z) = Rz(2πt)
        case "sx":
            return SXGate()
        case "x":
            return XGate()
        case "cz":
            return CZGate()
        case "prx":
            return RGate(a[0], a[1])  # Rz(2πp)·Rx(2πt)·Rz(−2πp) = R(2πt, 2πp)
        case "gpi":
            return RGate(math.pi, a[0])  # Rz(2πp)·X·Rz(−2πp) = i·R(π, 2πp)
        case "gpi2":
            return RGate(math.pi / 2, a[0])
        case "zz":
            return RZZGate(a[0])  # exp(−iπt·Z⊗Z) = RZZ(2πt)
        case "xx":
            return RXXGate(a[0])  # exp(−iπt·X⊗X) = RXX(2πt)
        case "move":
            return SwapGate()
    raise ValueError(f"{gate.gate!r} is no gate of {FORMAT}")


def append_gates(circuit: QuantumCircuit, gates: Iterable[Gate], place: dict[int, int] | None = None) -> None:
    """Append each gate to ``circuit``, its places renumbered through ``place`` when given."""
    for g in gates:
        qubits = g.qubits if place is None else [place[q] for q in g.qubits]
        circuit.append(qiskit_gate(g), list(qubits))


# --- reading a program --------------------------------------------------------------------------------


def _invalid(p: Program) -> str | None:
    """What makes the program unreadable (§4's ``invalid``), or None."""
    if p.format != FORMAT:
        return f"format {p.format!r} is not {FORMAT}"
    if p.basis not in BASES:
        return f"basis {p.basis!r} is not one of {', '.join(BASES)}"
    basis = BASES[p.basis]
    for i, g in enumerate(p.gates):
        where = f"gate {i} ({g.gate} on {list(g.qubits)})"
        if g.gate not in GATES:
            return f"{where}: {g.gate!r} is no gate of {FORMAT}"
        if g.gate == "move":
            if p.basis not in MOVE_BASES:
                return f"{where}: move is only in {' and '.join(MOVE_BASES)}, not in {p.basis}"
        elif g.gate not in basis:
            return f"{where}: {g.gate} is not a gate of {p.basis} ({', '.join(basis)})"
        arity, angles = GATES[g.gate]
        if len(g.qubits) != arity:
            return f"{where}: {g.gate} acts on {arity} place{'s' * (arity > 1)}, not {len(g.qubits)}"
        if len(set(g.qubits)) != len(g.qubits):
            return f"{where}: names place {g.qubits[0]} twice"
        if len(g.turns) != angles:
            return f"{where}: {g.gate} takes {angles} angle{'s' * (angles != 1)}, not {len(g.turns)}"
        if p.basis == "prxrzxx":
            if g.gate == "xx" and turn_value(g.turns[0]) > Fraction(1, 4):
                return f"{where}: xx in prxrzxx takes 0 to ¼ of a turn, not {turn_value(g.turns[0])}"
            if g.gate == "prx" and turn_value(g.turns[0]) > Fraction(1, 2):
                return f"{where}: prx in prxrzxx takes 0 to ½ of a turn, not {turn_value(g.turns[0])}"
    read: dict[int, int] = {}
    for m in p.measure:
        if m.bit >= p.bits:
            return f"measure: bit {m.bit} is not one of the program's {p.bits} bits"
        if m.bit in read:
            return f"measure: bit {m.bit} reads two places ({read[m.bit]} and {m.qubit})"
        if m.qubit in read.values():
            return f"measure: place {m.qubit} is read twice"
        read[m.bit] = m.qubit
    for bit in range(p.bits):
        if bit not in read:
            return f"measure: bit {bit} reads no qubit"
    return None


def device_refusal(p: Program, device: Device) -> str | None:
    """Why ``device`` cannot run the (readable) program: §4's ``refused``, or None."""
    if not set(BASES[p.basis]) <= set(device.native_gates):
        return f"the device does not run {p.basis}: it lists {', '.join(device.native_gates) or 'no gates'}"
    resonators = set(device.resonators)
    holder: dict[int, int] = {}  # resonator -> the qubit whose state it holds
    moved: dict[int, int] = {}  # qubit -> the resonator holding its state
    for i, g in enumerate(p.gates):
        where = f"gate {i} ({g.gate} on {list(g.qubits)})"
        for q in g.qubits:
            if q >= device.qubits:
                return f"{where}: the device has no place {q} (it has 0 to {device.qubits - 1})"
        if g.gate == "move":
            if "move" not in device.native_gates:
                return f"{where}: the device does not list move"
            q, r = g.qubits
            if (q, r) not in device.moves:
                return (
                    f"{where}: move does not run on [{q}, {r}] (the device's moves are {list(device.moves)})"
                )
            if r not in holder:
                if q in moved:
                    return f"{where}: qubit {q}'s state is already in resonator {moved[q]}"
                holder[r], moved[q] = q, r
            elif holder[r] == q:
                del holder[r], moved[q]
            else:
                return (
                    f"{where}: resonator {r} holds qubit {holder[r]}'s state; only {holder[r]} moves it out"
                )
            continue
        for q in g.qubits:
            if q in moved:
                return (
                    f"{where}: qubit {q}'s state is in resonator {moved[q]}; "
                    f"no gate acts on {q} until it moves back"
                )
        on_resonator = [q for q in g.qubits if q in resonators]
        if on_resonator and (g.gate != "cz" or len(on_resonator) > 1):
            return (
                f"{where}: place {on_resonator[0]} is a resonator, which takes only move and cz with a qubit"
            )
        if len(g.qubits) == 2 and not device.connects(*g.qubits):
            return f"{where}: the device does not couple {g.qubits[0]} and {g.qubits[1]}"
    for m in p.measure:
        if m.qubit >= device.qubits:
            return f"measure: the device has no place {m.qubit} (it has 0 to {device.qubits - 1})"
        if m.qubit in resonators:
            return f"measure: place {m.qubit} is a resonator, which is never measured"
    if holder:
        r, q = next(iter(holder.items()))
        return f"resonator {r} still holds qubit {q}'s state at the end: every resonator ends empty"
    return None


def _message(error: ValidationError) -> str:
    """A person's sentence for a pydantic failure: ours where we raised it, else the field and the trouble."""
    parts = []
    for e in error.errors(include_url=False):
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, _Unreadable):
            where = ".".join(str(x) for x in e["loc"] if not str(x).startswith("function-"))
            parts.append(f"{where}: {cause}" if where else str(cause))
        else:
            where = ".".join(str(x) for x in e["loc"]) or "program"
            parts.append(f"{where}: {e['msg'].lower()}")
    return "; ".join(dict.fromkeys(parts[:5]))


def read_program(obj: Any, device: Device | None = None) -> Program:
    """Read a program as a provider must on receiving one (§4): :class:`ProgramRefused` with ``invalid``
    for one that does not read (another format, a member missing (``gates`` among them), a gate outside
    its basis, wrong arity or angle count, an angle out of range, inconsistent bits, a malformed field),
    and, given its ``device``, ``refused`` for one the device cannot run (a basis it does not run, a
    resonator used out of turn, places or pairs it does not have). Unknown members are ignored."""
    if not isinstance(obj, dict):
        raise ProgramRefused("invalid", "a program is a JSON object")
    if obj.get("format") != FORMAT:
        raise ProgramRefused("invalid", f"format {obj.get('format')!r} is not {FORMAT}")
    missing = [m for m in MEMBERS if m not in obj]
    if missing:  # §3: a field missing is invalid, even one a reader could take as empty
        raise ProgramRefused("invalid", f"the program has no {' and no '.join(missing)} (§4)")
    try:
        program = Program.model_validate(obj)
    except ValidationError as e:
        raise ProgramRefused("invalid", _message(e)) from None
    if device is not None:
        problem = device_refusal(program, device)
        if problem:
            raise ProgramRefused("refused", problem)
    return program


# --- OpenQASM 3 and the digest ------------------------------------------------------------------------

#: OpenQASM 3 definitions, from stdgates.inc's gates, of each gate it does not have; angles in radians.
#: prx's parameters are named in alphabetical order (theta, varphi): qiskit_qasm3_import 0.6 binds a
#: definition's parameters sorted by name, so ``(theta, phi)`` would be read with the two swapped.
_DEFINITIONS = {
    "prx": "gate prx(theta, varphi) a { rz(-varphi) a; rx(theta) a; rz(varphi) a; }",
    "gpi": "gate gpi(phi) a { rz(-phi) a; x a; rz(phi) a; }",
    "gpi2": "gate gpi2(phi) a { rz(-phi) a; rx(pi/2) a; rz(phi) a; }",
    "zz": "gate rzz(theta) a, b { cx a, b; rz(theta) b; cx a, b; }",
    "xx": "gate rxx(theta) a, b { h a; h b; cx a, b; rz(theta) b; cx a, b; h a; h b; }",
    "move": "gate move a, b { swap a, b; }",
}
#: the name each gate has in the OpenQASM text
_QASM_NAME = {"zz": "rzz", "xx": "rxx"}


def qasm3_text(program: Program) -> str:
    """The program as OpenQASM 3 on physical qubits ``$p`` (§4's ``qasm3``): the gates stdgates.inc lacks
    defined from its own (``zz`` and ``xx`` as ``rzz`` and ``rxx``, in radians), ``move`` as the exchange,
    one line a gate, then one measurement a bit. Angles are exact: ``pi*m/d``."""
    used = {g.gate for g in program.gates}
    lines = ["OPENQASM 3.0;", 'include "stdgates.inc";']
    lines += [text for name, text in _DEFINITIONS.items() if name in used]
    if program.bits:
        lines.append(f"bit[{program.bits}] c;")
    for g in program.gates:
        name = _QASM_NAME.get(g.gate, g.gate)
        args = f"({', '.join(_turn_text(t) for t in g.turns)})" if g.turns else ""
        lines.append(f"{name}{args} {', '.join(f'${q}' for q in g.qubits)};")
    for m in sorted(program.measure, key=lambda m: m.bit):
        lines.append(f"c[{m.bit}] = measure ${m.qubit};")
    return "\n".join(lines) + "\n"


def program_digest(program: Program | str) -> str:
    """BLAKE3 of the program's OpenQASM 3 text (its UTF-8 bytes), lower-case hex: a receipt's
    ``compiled.program`` (§8.1). Given a program, the text is :func:`qasm3_text`'s; given a string, that."""
    text = program if isinstance(program, str) else qasm3_text(program)
    return blake3(text.encode("utf-8")).hexdigest()
