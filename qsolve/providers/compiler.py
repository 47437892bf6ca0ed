"""Compiling a circuit to a device's own program (quantum-provider-protocol §1.3, §4, §6, §8.1).

:func:`compile_circuit` places and routes a Qiskit circuit on a described :class:`Device` with Qiskit's
transpiler, translates what Qiskit gives into the device's basis of ``wai.native/1``, rounds every angle to
an exact fraction of a turn, and checks the program against the circuit (:func:`check`) before it returns
it: no program it returns fails the check.

How each basis is reached (Qiskit transpiles to the gates in brackets, with routing and optimization):

- ``rzsxxcz`` [rz, sx, x, cz]: gate for gate.
- ``prxcz`` [rz, sx, x, cz, then each run of one-qubit gates resynthesised as Rz·Ry·Rz]: Z rotations are
  virtual, carried in a frame per qubit into the phase of the next ``prx`` (Rz(f) then R(θ, φ) is R(θ, φ + f)
  then Rz(f)), through ``cz`` (diagonal, it commutes with them); Ry(θ) is ``prx(θ, ¼)``, so each run of
  one-qubit gates is at most one ``prx``. Qiskit's own ['r', 'cz'] gives two ``r`` a run; this gives one.
- ``gpizz`` [rz, sx, x, rzz]: the same frame; sx is ``gpi2``, x is ``gpi`` (their phases the frame's), rzz(θ)
  is ``zz(θ/2π)``, which commutes with the frame.
- ``prxrzxx`` [as ``prxcz``]: the same frame, and each ``cz`` written as §4 says: ``prx(¼, ¼)`` on each
  qubit, ``xx(¼)``, ``prx(¼, ¾)`` on each, which is cz up to Rz(π/2) on each qubit, carried in the frame (cz
  commutes with the frame, so the template's phases are sent as they are). Every ``prx`` is folded to
  0 ≤ t ≤ ½ (R(θ, φ) is R(2π − θ, φ + π) up to phase), ``xx`` is only ever ¼, and no ``rz`` is sent.

The frame left at the end is dropped: a Z rotation just before a measurement in the computational basis
changes no outcome. :attr:`Compiled.final_z` records it, and :func:`check` puts it back before comparing, so
the check is exact. On a device with resonators, a ``cz`` between two qubits that are not coupled, where one
has a ``move`` into a resonator the other is coupled to, is ``move · cz(partner, resonator) · move`` (§4):
Qiskit routes over a coupling map in which such pairs count as coupled, and each such ``cz`` is expanded.
Logical qubits are placed on the device's qubits only, never on a resonator. The coupling map is built
over a connected region of at most :data:`REGION_PLACES` places (:func:`_region`, found breadth first from
the described pairs), never over every pair a resonator joins: its cost is in the device's described size
and the circuit's, never in the square of its places.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from functools import reduce

import numpy as np
import qiskit
from pydantic import BaseModel, ConfigDict
from qiskit import QuantumCircuit
from qiskit.circuit import ControlFlowOp
from qiskit.circuit import Gate as QiskitGate
from qiskit.quantum_info import Statevector
from qiskit.transpiler import CouplingMap, PassManager
from qiskit.transpiler.basepasses import AnalysisPass
from qiskit.transpiler.passes import Optimize1qGatesDecomposition
from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

from .device import Device, NoBasis
from .program import Gate, Measure, Program, append_gates, nearest_turn, program_digest

#: the optimization level of Qiskit's preset pass manager: its default, which resynthesises two-qubit
#: blocks and cancels what commutes. Level 3 gave the same programs (gate for gate, swaps included) on the
#: 6-qubit QAOA measured on a 7-qubit line, in each basis, in the same time
OPTIMIZATION_LEVEL = 2
#: the gates Qiskit transpiles to, for each basis
QISKIT_BASIS = {
    "rzsxxcz": ["rz", "sx", "x", "cz"],
    "prxcz": ["rz", "sx", "x", "cz"],
    "gpizz": ["rz", "sx", "x", "rzz"],
    "prxrzxx": ["rz", "sx", "x", "cz"],
}
#: the most places the check simulates (a state vector of 2^20 amplitudes, 16 MiB)
MAX_CHECK_QUBITS = 20
#: random product inputs the check tries (powers of two: they are simulated as one state): this many up to
#: 12 places, fewer beyond
CHECK_INPUTS = 8
CHECK_INPUTS_LARGE = 2
#: the largest state (in qubits, inputs stacked included) the check evolves in one pass
BATCH_QUBITS = 13
#: floating-point slack of a state-vector comparison, beside the rounding bound (in state distance)
NUMERIC_SLACK = 1e-6

HALF_PI = math.pi / 2
TAU = 2 * math.pi


class CompileError(ValueError):
    """A circuit this compiler does not compile to the device, and why."""


class CheckFailed(RuntimeError):
    """A compiled program that is not the circuit it was compiled from."""


class Compiled(BaseModel):
    """A program compiled for a device, what was done to make it, and the check it passed (§8.1's
    ``compiled``)."""

    model_config = ConfigDict(frozen=True)

    program: Program
    basis: str
    #: for each logical qubit, the physical place it starts on and the place it ends on (and is read on)
    layout: tuple[int, ...]
    final_layout: tuple[int, ...]
    #: gates in the program; those of two places (cz, zz, xx and move); routing swaps Qiskit inserted
    native_gates: int
    two_qubit_gates: int
    swaps: int
    #: radians: Σ|Δθ|/2 over rotation angles plus Σ|Δφ| over phases, an operator-norm bound on how far the
    #: rounded program is from the unrounded one, ‖U − U′‖ up to a global phase
    rounding_bound: float
    #: the Z rotation (radians) left in the frame on each physical place at the end, not sent
    final_z: dict[int, float] = {}
    checked: str = ""
    transpiler: str = ""
    seconds: float = 0.0

    @property
    def qasm3(self) -> str:
        return self.program.qasm3 or ""

    @property
    def digest(self) -> str:
        """BLAKE3 of the program's OpenQASM 3 text: the receipt's ``compiled.program``."""
        return program_digest(self.qasm3 or self.program)

    def receipt_member(self) -> dict:
        """§8.1's ``compiled`` member, less ``qubit_names`` and ``placement``, which its client adds."""
        return {
            "basis": self.basis,
            "qasm3": self.qasm3,
            "program": self.digest,
            "hash": "BLAKE3 of the UTF-8 bytes of qasm3, lower-case hex",
            "native_gates": self.native_gates,
            "two_qubit_gates": self.two_qubit_gates,
            "swaps": self.swaps,
            "layout": list(self.layout),
            "final_layout": list(self.final_layout),
            "checked": self.checked,
        }


def probe(qubits: int) -> QuantumCircuit:
    """§6's probe: X on qubit 0, each qubit i measured into bit i: its counts all land on ``…01``."""
    circuit = QuantumCircuit(qubits, qubits, name="probe")
    circuit.x(0)
    circuit.measure(range(qubits), range(qubits))
    return circuit


# --- the circuit ---------------------------------------------------------------------------------------


def _logical(circuit: QuantumCircuit) -> tuple[QuantumCircuit, dict[int, int]]:
    """The circuit's gates, without measurements, barriers or delays, and which qubit each classical bit
    reads; CompileError for what a program cannot hold (§4: final measurements only, no classical control)."""
    if circuit.parameters:
        names = ", ".join(sorted(p.name for p in circuit.parameters)[:5])
        raise CompileError(f"the circuit has unbound parameters ({names}): bind them before compiling")
    if circuit.num_vars:
        raise CompileError("the circuit has classical variables: a wai.native/1 program has none")
    unitary = QuantumCircuit(circuit.num_qubits, global_phase=circuit.global_phase)
    measured: dict[int, int] = {}  # clbit -> qubit
    done: set[int] = set()  # qubits measured
    for index, instruction in enumerate(circuit.data):
        op = instruction.operation
        qubits = [circuit.find_bit(q).index for q in instruction.qubits]
        where = f"instruction {index} ({op.name} on qubits {qubits})"
        if isinstance(op, ControlFlowOp):
            raise CompileError(f"{where}: classical control flow cannot be sent as a wai.native/1 program")
        if op.name == "barrier":
            continue
        if op.name == "measure":
            (q,) = qubits
            (c,) = (circuit.find_bit(b).index for b in instruction.clbits)
            if q in done:
                raise CompileError(f"{where}: qubit {q} is measured twice; a program reads each qubit once")
            if c in measured:
                raise CompileError(f"{where}: classical bit {c} is written twice")
            measured[c] = q
            done.add(q)
            continue
        if done.intersection(qubits):
            q = min(done.intersection(qubits))
            raise CompileError(
                f"{where}: qubit {q} is acted on after it is measured (mid-circuit measurement)"
            )
        if op.name == "reset":
            raise CompileError(f"{where}: a reset cannot be sent as a wai.native/1 program")
        if op.name == "delay":
            continue
        if not isinstance(op, QiskitGate) or instruction.clbits:
            raise CompileError(f"{where}: {op.name} is not a unitary gate")
        unitary.append(op, qubits)
    unread = [c for c in range(circuit.num_clbits) if c not in measured]
    if unread:
        raise CompileError(
            f"classical bit {unread[0]} is never measured: every bit of a program reads a qubit"
        )
    return unitary, measured


def ideal_distribution(circuit: QuantumCircuit) -> dict[str, float]:
    """The circuit's exact outcome distribution, keyed as §6 keys counts (highest classical bit first)."""
    unitary, measured = _logical(circuit)
    order = [measured[c] for c in range(circuit.num_clbits)]
    if not order:
        return {"": 1.0}
    probabilities = Statevector(unitary).probabilities(qargs=order)
    bits = len(order)
    return {format(i, f"0{bits}b"): float(p) for i, p in enumerate(probabilities) if p > 1e-15}


# --- routing -------------------------------------------------------------------------------------------


class _CountSwaps(AnalysisPass):
    """Writes the DAG's swap count into ``sink[key]``."""

    def __init__(self, sink: dict[str, int], key: str) -> None:
        super().__init__()
        self.sink, self.key = sink, key

    def run(self, dag) -> None:
        self.sink[self.key] = dag.count_ops().get("swap", 0)


#: the most places the coupling map a circuit is routed over holds: the check simulates at most
#: :data:`MAX_CHECK_QUBITS` places, so no program that uses more is ever sent, and a map of more would
#: only cost time (a star of 4,096 places, each pair coupled through its resonator, is 8.4 million
#: pairs; its region of 20 places is 190)
REGION_PLACES = MAX_CHECK_QUBITS


def _region(device: Device, logical: int, neighbours: dict[int, set[int]], moves: dict[int, list[int]]):
    """At most :data:`REGION_PLACES` of the places a logical qubit may sit on, connected where the device
    allows it: every such place when there are no more; else found breadth first over the pairs coupled
    directly or through a resonator, from the lowest-numbered place whose connected part holds at least
    ``logical`` places (the lowest's, and the next parts', when none does), each pair looked up as it is
    reached. Its time is in the device's described pairs and moves, and the region's size, never in the
    square of its places."""
    if device.place_count <= REGION_PLACES:
        return list(device.computational_qubits)
    resonators = frozenset(device.resonators)
    movers: dict[int, list[int]] = defaultdict(list)  # resonator -> the qubits that move into it
    for q, rs in moves.items():
        for r in rs:
            movers[r].append(q)

    def reached(place: int):
        for b in neighbours.get(place, ()):
            if b in resonators:
                yield from movers.get(b, ())  # b's movers reach place through b
            else:
                yield b
        for r in moves.get(place, ()):  # place moves into r, and reaches r's coupled places
            for b in neighbours.get(r, ()):
                if b not in resonators:
                    yield b

    seen: set[int] = set()
    parts: list[list[int]] = []
    for start in range(device.qubits):
        if start in resonators or start in seen:
            continue
        part, queue = [start], [start]
        seen.add(start)
        while queue and len(part) < REGION_PLACES:
            place = queue.pop(0)
            for b in reached(place):
                if b != place and b not in seen:
                    seen.add(b)
                    part.append(b)
                    queue.append(b)
                    if len(part) >= REGION_PLACES:
                        break
        if len(part) >= min(logical, REGION_PLACES):
            return sorted(part)
        parts.append(part)
        if sum(map(len, parts)) >= REGION_PLACES:
            break
    # no connected part is large enough: the first parts together, as many places as the region holds
    return sorted(p for part in parts for p in part)[:REGION_PLACES]


def _coupling(device: Device, logical: int) -> tuple[list[int], CouplingMap, int, int]:
    """The places a logical qubit may sit on (compact index i is place ``places[i]``: at most
    :data:`REGION_PLACES` of them, :func:`_region`), the coupling map over them with each pair reached
    through a resonator counted as coupled, the pairs coupled directly and the pairs coupled through a
    resonator only. Built from the described pairs among those places, never from a list of every pair a
    resonator joins (a star of 4,096 places would give 16.8 million edges)."""
    if device.connectivity == "all":  # every pair is coupled: any `logical` of them will do
        places = list(device.first_places(logical))  # never a list of every place the device claims
        return places, CouplingMap.from_full(len(places)), len(places) * (len(places) - 1) // 2, 0
    neighbours: dict[int, set[int]] = defaultdict(set)  # each place's coupled places
    for a, b in device.connectivity:
        neighbours[a].add(b)
        neighbours[b].add(a)
    moves: dict[int, list[int]] = defaultdict(list)  # qubit -> the resonators it moves into
    for q, r in device.moves:
        moves[q].append(r)
    places = _region(device, logical, neighbours, moves)
    index = {p: i for i, p in enumerate(places)}
    direct = {(a, b) for a in places for b in neighbours.get(a, ()) if a < b and b in index}
    through = set()
    for q in places:
        for r in moves.get(q, ()):
            coupled = neighbours.get(r, set())
            for b in places:  # at most REGION_PLACES: the region's pairs, never the resonator's every pair
                pair = (min(q, b), max(q, b))
                if b != q and b in coupled and pair not in direct:
                    through.add(pair)
    edges = []
    for a, b in sorted(direct | through):
        edges += [(index[a], index[b]), (index[b], index[a])]
    coupling = CouplingMap(edges)
    for i in range(len(places)):  # a place no pair names is still a place
        if i not in coupling.physical_qubits:
            coupling.add_physical_qubit(i)
    return places, coupling, len(direct), len(through)


# --- translation ---------------------------------------------------------------------------------------


class _Writer:
    """Writes wai.native/1 gates from Qiskit's, carrying Z rotations in a frame where the basis has no
    ``rz`` to spend on them, and adding up the rounding."""

    def __init__(self, basis: str, device: Device) -> None:
        self.basis, self.device = basis, device
        self.written: list[Gate | None] = []
        self.touched: dict[int, list[int]] = defaultdict(list)  # place -> indices of its gates, in order
        self.frame: dict[int, float] = defaultdict(float)
        self.bound = 0.0

    def turn(self, radians: float, weight: float) -> tuple[int, int]:
        turn, error = nearest_turn(radians)
        self.bound += weight * abs(error)
        return turn

    def emit(self, gate: str, qubits: tuple[int, ...], turns: tuple[tuple[int, int], ...] = ()) -> None:
        if gate == "move" and self._moved_out_last(*qubits):
            # a move back out, then straight back in, by the same qubit: neither is needed
            self.written[self._last(qubits)] = None
            for q in qubits:
                self.touched[q].pop()
            return
        for q in qubits:
            self.touched[q].append(len(self.written))
        self.written.append(Gate(gate=gate, qubits=qubits, turns=turns))

    @property
    def gates(self) -> list[Gate]:
        return [g for g in self.written if g is not None]

    def rotation(self, q: int, theta: float, phi: float) -> None:
        """R(θ, φ) on place q, in the frame: sent as R(θ, φ − f)."""
        theta %= TAU
        phi -= self.frame[q]
        if theta > math.pi:  # R(θ, φ) = R(2π − θ, φ + π) up to a global phase: keep 0 ≤ t ≤ ½
            theta, phi = TAU - theta, phi + math.pi
        t = self.turn(theta, 0.5)
        if t == (0, 0):
            return
        if self.basis == "gpizz":
            if t == (1, 1):
                self.emit("gpi", (q,), (self.turn(phi, 1.0),))
            elif t == (1, 2):
                self.emit("gpi2", (q,), (self.turn(phi, 1.0),))
            else:
                raise CompileError(f"internal: a rotation of {theta} rad has no single gpi or gpi2")
            return
        self.emit("prx", (q,), (t, self.turn(phi, 1.0)))

    def cz(self, a: int, b: int) -> None:
        if self.basis == "prxrzxx":  # §4: prx(¼, ¼) each, xx(¼), prx(¼, ¾) each = cz · Rz(π/2) ⊗ Rz(π/2)
            for q in (a, b):
                self.emit("prx", (q,), ((1, 2), (1, 2)))
            self.emit("xx", (a, b), ((1, 2),))
            for q in (a, b):
                self.emit("prx", (q,), ((1, 2), (3, 2)))
                self.frame[q] -= HALF_PI  # cz = Rz(−π/2) ⊗ Rz(−π/2) · template: carried in the frame
            return
        if self.device.connects(a, b):
            self.emit("cz", (a, b))
            return
        ways = [
            (mover, partner, r)
            for mover, partner in ((a, b), (b, a))
            for q, r in self.device.moves
            if q == mover and self.device.connects(partner, r)
        ]
        if not ways:
            raise CompileError(
                f"internal: places {a} and {b} are neither coupled nor reached through a resonator"
            )
        # a qubit whose state has just moved out of the resonator moves it back in for free: prefer it
        mover, partner, r = next((w for w in ways if self._moved_out_last(w[0], w[2])), ways[0])
        self.emit("move", (mover, r))
        self.emit("cz", (partner, r))
        self.emit("move", (mover, r))

    def _last(self, qubits: tuple[int, ...]) -> int | None:
        return max((self.touched[q][-1] for q in qubits if self.touched[q]), default=None)

    def _moved_out_last(self, q: int, r: int) -> bool:
        last = self._last((q, r))
        return last is not None and self.written[last] == Gate(gate="move", qubits=(q, r))

    def write(self, name: str, qubits: tuple[int, ...], params: list[float]) -> None:
        virtual = self.basis != "rzsxxcz"
        match name:
            case "rz" if virtual:
                self.frame[qubits[0]] += params[0]
            case "rz":
                t = self.turn(params[0], 0.5)
                if t != (0, 0):
                    self.emit("rz", qubits, (t,))
            case "sx" | "x" if not virtual:
                self.emit(name, qubits)
            case "sx":
                self.rotation(qubits[0], HALF_PI, 0.0)
            case "x":
                self.rotation(qubits[0], math.pi, 0.0)
            case "ry" if self.basis in ("prxcz", "prxrzxx"):
                self.rotation(qubits[0], params[0], HALF_PI)
            case "cz" if self.basis != "gpizz":
                self.cz(*qubits)
            case "rzz" if self.basis == "gpizz":
                t = self.turn(params[0], 0.5)
                if t != (0, 0):
                    self.emit("zz", qubits, (t,))
            case _:
                raise CompileError(
                    f"internal: Qiskit left {name} on {list(qubits)}, which {self.basis} lacks"
                )


# --- compiling -----------------------------------------------------------------------------------------


def compile_circuit(circuit: QuantumCircuit, device: Device, *, seed: int = 0) -> Compiled:
    """Compile ``circuit`` to ``device``'s basis, placed and routed on its qubits, every angle an exact
    fraction of a turn, each logical qubit ending on the place its bit reads (§6), checked against the
    circuit (:func:`check`) before it is returned. CompileError for a circuit a program cannot hold or a
    device it does not fit; CheckFailed should never escape, and means a bug here."""
    started = time.perf_counter()
    unitary, measured = _logical(circuit)
    try:
        basis = device.basis()
    except NoBasis as e:
        raise CompileError(str(e)) from e
    n = unitary.num_qubits
    if n == 0:
        raise CompileError("the circuit has no qubits")
    if n > device.place_count:
        raise CompileError(
            f"the circuit has {n} qubits; the device has {device.place_count} places for them"
            + (f" (and {len(device.resonators)} resonators, which hold none)" if device.resonators else "")
        )
    if n > MAX_CHECK_QUBITS:  # the check would refuse any program of it: no map is built for it
        raise CompileError(
            f"the circuit has {n} qubits: the check simulates at most {MAX_CHECK_QUBITS} places, "
            "and no program is sent unchecked"
        )
    places, coupling, direct, through = _coupling(device, n)
    counts: dict[str, int] = {}
    pm = generate_preset_pass_manager(
        optimization_level=OPTIMIZATION_LEVEL,
        basis_gates=QISKIT_BASIS[basis],
        coupling_map=coupling,
        seed_transpiler=seed,
    )
    pm.pre_layout = PassManager([_CountSwaps(counts, "before")])
    pm.post_routing = PassManager([_CountSwaps(counts, "after")])
    if basis in ("prxcz", "prxrzxx"):
        pm.post_optimization = PassManager([Optimize1qGatesDecomposition(basis=["rz", "ry"])])
    try:
        routed = pm.run(unitary)
    except Exception as e:  # the transpiler's own refusal: a disconnected map too small, say
        raise CompileError(f"Qiskit could not place the circuit on the device: {e}") from e
    if routed.layout is not None:
        start = routed.layout.initial_index_layout(filter_ancillas=True)
        end = routed.layout.final_index_layout(filter_ancillas=True)
    else:
        start = end = list(range(n))
    layout = tuple(places[i] for i in start)
    final_layout = tuple(places[i] for i in end)

    writer = _Writer(basis, device)
    for instruction in routed.data:
        qubits = tuple(places[routed.find_bit(q).index] for q in instruction.qubits)
        writer.write(instruction.operation.name, qubits, [float(p) for p in instruction.operation.params])
    measure = tuple(Measure(qubit=final_layout[measured[c]], bit=c) for c in sorted(measured))
    program = Program(basis=basis, bits=len(measure), gates=tuple(writer.gates), measure=measure).with_qasm3()
    final_z = {q: math.remainder(f, TAU) for q, f in sorted(writer.frame.items()) if math.remainder(f, TAU)}

    region = f", a region of the device's {device.place_count}" if len(places) < device.place_count else ""
    routes = f"{direct} coupled pairs" + (f" and {through} pairs through a resonator" if through else "")
    steps = {
        "rzsxxcz": "gate for gate",
        "prxcz": "one-qubit runs resynthesised as Rz·Ry·Rz, Z rotations carried in prx phases",
        "gpizz": "sx as gpi2, x as gpi, rzz as zz, Z rotations carried in their phases",
        "prxrzxx": "one-qubit runs as Rz·Ry·Rz, cz as prx(¼,¼)·xx(¼)·prx(¼,¾), Z rotations in prx phases",
    }[basis]
    compiled = Compiled(
        program=program,
        basis=basis,
        layout=layout,
        final_layout=final_layout,
        native_gates=len(program.gates),
        two_qubit_gates=sum(len(g.qubits) == 2 for g in program.gates),
        swaps=counts.get("after", 0) - counts.get("before", 0),
        rounding_bound=writer.bound,
        final_z=final_z,
        transpiler=(
            f"qiskit {qiskit.__version__} preset pass manager, optimization_level {OPTIMIZATION_LEVEL}, "
            f"seed_transpiler {seed}, to [{', '.join(QISKIT_BASIS[basis])}] over {routes} of "
            f"{len(places)} qubits{region} (no resonator holds a logical qubit); then to {basis}: {steps}; "
            f"angles rounded to the nearest 1/2^32 of a turn"
        ),
    )
    checked = check(compiled, circuit, seed=seed)
    return compiled.model_copy(update={"checked": checked, "seconds": time.perf_counter() - started})


# --- the check -----------------------------------------------------------------------------------------


def _random_qubit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=2) + 1j * rng.normal(size=2)
    return v / np.linalg.norm(v)


def _product(states: list[np.ndarray]) -> np.ndarray:
    """The product state with ``states[i]`` on qubit i, in Qiskit's order (qubit 0 least significant)."""
    return reduce(np.kron, reversed(states), np.ones(1, dtype=complex))


def _batch(vectors: list[np.ndarray], circuit: QuantumCircuit) -> np.ndarray:
    """Each vector evolved by the circuit, a few at a time in one Statevector pass: a group of inputs (a
    power of two of them) stacked as the most significant qubits, the circuit on the others, groups kept to
    at most 2^BATCH_QUBITS amplitudes, past which numpy's contractions slow. Row k is input k's output."""
    size, qubits = len(vectors[0]), circuit.num_qubits
    group = 1
    while group * 2 <= len(vectors) and (group * 2) * size <= 2**BATCH_QUBITS:
        group *= 2
    rows = []
    for start in range(0, len(vectors), group):
        chunk = vectors[start : start + group]
        out = Statevector(np.concatenate(chunk)).evolve(circuit, qargs=list(range(qubits)))
        rows.append(out.data.reshape(len(chunk), size))
    return np.concatenate(rows)


def _axes(vector: np.ndarray, qubits: int) -> np.ndarray:
    """A state vector as a tensor whose axis i is qubit i."""
    return vector.reshape([2] * qubits).transpose(list(reversed(range(qubits))))


def check(compiled: Compiled, circuit: QuantumCircuit, *, seed: int = 0) -> str:
    """Compare the compiled program with the circuit it was compiled from, measurements aside, on random
    product states of the logical qubits (seeded): logical qubit i enters on ``layout[i]`` and must leave on
    ``final_layout[i]``; every other place the program touches enters in |0⟩ and must leave in |0⟩
    (resonators empty, ancillas returned); places it never touches are dropped. The frame's final Z
    rotations are put back first, so the comparison is of states, up to a global phase, within the rounding
    bound. Each bit must read the place its logical qubit ends on. Returns the sentence of what was
    checked; CheckFailed when the program is not the circuit."""
    unitary, measured = _logical(circuit)
    program, n = compiled.program, unitary.num_qubits
    if len(compiled.layout) != n or len(compiled.final_layout) != n:
        raise CheckFailed(f"the layout names {len(compiled.layout)} qubits; the circuit has {n}")
    want = {c: compiled.final_layout[q] for c, q in measured.items()}
    got = {m.bit: m.qubit for m in program.measure}
    if got != want or program.bits != circuit.num_clbits:
        raise CheckFailed(f"the bits read places {got}; their logical qubits end on {want}")
    used = sorted(
        {q for g in program.gates for q in g.qubits} | set(compiled.layout) | set(compiled.final_layout)
    )
    if len(used) > MAX_CHECK_QUBITS:
        raise CompileError(
            f"the program uses {len(used)} places: the check simulates at most {MAX_CHECK_QUBITS}, "
            "and no program is sent unchecked"
        )
    index = {p: i for i, p in enumerate(used)}
    ours = QuantumCircuit(len(used))
    append_gates(ours, program.gates, index)
    for q, z in compiled.final_z.items():
        ours.rz(z, index[q])
    rest = [i for i in range(len(used)) if i not in {index[p] for p in compiled.final_layout}]
    order = [index[p] for p in compiled.final_layout] + rest
    distance = compiled.rounding_bound + NUMERIC_SLACK  # ‖ψ − e^{iα}φ‖ ≤ this
    tolerance = distance**2 / 2  # so 1 − |⟨ψ|φ⟩| ≤ this
    inputs = CHECK_INPUTS if len(used) <= 12 else CHECK_INPUTS_LARGE
    rng = np.random.default_rng(seed)
    zero = np.array([1, 0], dtype=complex)
    logical_in, program_in = [], []
    for _ in range(inputs):
        states = [_random_qubit(rng) for _ in range(n)]
        entering = [zero] * len(used)
        for i, p in enumerate(compiled.layout):
            entering[index[p]] = states[i]
        logical_in.append(_product(states))
        program_in.append(_product(entering))
    psis = _batch(logical_in, unitary)
    phis = _batch(program_in, ours)
    worst = 0.0
    for k in range(inputs):
        psi = _axes(psis[k], n)
        phi = _axes(phis[k], len(used)).transpose(order)
        phi = phi[(Ellipsis,) + (0,) * len(rest)]  # the part with every other place in |0⟩
        overlap = abs(np.vdot(psi.ravel(), phi.ravel()))
        worst = max(worst, 1 - overlap)
        if 1 - overlap > tolerance:
            raise CheckFailed(
                f"input {k}: the program's state has overlap {overlap:.12f} with the circuit's "
                f"(at least 1 − {tolerance:.1e} wanted, "
                f"from the rounding bound {compiled.rounding_bound:.2e} rad)"
            )
    return (
        f"state vectors of {inputs} random product inputs (seed {seed}) on the {len(used)} places the "
        f"program uses, idle places dropped, every other place (ancilla or resonator) entering and "
        f"required to leave in |0⟩: |⟨circuit|program⟩| ≥ 1 − {max(worst, 0.0):.1e} (allowed "
        f"1 − {tolerance:.1e}), the final Z rotations dropped before measurement put back; every bit "
        f"reads the place its logical qubit ends on; every angle the nearest m/2^k of a turn (k ≤ 32), "
        f"the rounding bounded by {compiled.rounding_bound:.1e} rad in all (‖U − U′‖)"
    )
