"""Circuits as data between the two roles: QPY, never a pickle (issue 10).

The workflow process writes each batch ``ctx.sample`` is given as one QPY file (base64 in a JSON line);
the platform reads it back only after checking, from QPY's own headers, that it is a file of the QPY
version this Qiskit writes (parameter expressions are QPY's replay of operations, never text parsed as
code) and that no circuit in it, and no custom-gate definition nested in one at any depth, declares
more qubits, bits, registers or instructions than the limits below allow: a header of a few bytes
cannot make the platform build a billion qubits. The decoding itself then runs in a platform worker
(:mod:`qsolve.runtime.worker`), within a memory bound and by the job's deadline.
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
from dataclasses import dataclass
from typing import Any

#: the most one batch may carry, checked before anything is built
MAX_BATCH_BYTES = 16 * 2**20
MAX_CIRCUITS = 1000
MAX_QUBITS = 1024
MAX_INSTRUCTIONS = 1_000_000  # over the whole batch


class CircuitsInvalid(ValueError):
    """A batch of circuits that the platform will not read, with why."""


@dataclass(frozen=True)
class Header:
    num_qubits: int
    num_clbits: int
    num_registers: int
    num_instructions: int
    metadata_size: int
    name_size: int


def encode(circuits: list) -> str:
    from qiskit import qpy

    buffer = io.BytesIO()
    qpy.dump(circuits, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def decode(text: str) -> list:
    """The circuits of a batch, or :class:`CircuitsInvalid` naming what is wrong."""
    if len(text) > MAX_BATCH_BYTES * 4 // 3 + 4:
        raise CircuitsInvalid(f"the batch is larger than {MAX_BATCH_BYTES // 2**20} MiB")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CircuitsInvalid("the batch is not base64") from None
    headers(data)
    from qiskit import qpy

    try:
        circuits = qpy.load(io.BytesIO(data))
    except Exception as e:
        raise CircuitsInvalid(f"the batch does not read as QPY: {type(e).__name__}: {e}") from None
    from qiskit import QuantumCircuit

    if not all(isinstance(c, QuantumCircuit) for c in circuits):
        raise CircuitsInvalid("the batch holds something other than circuits")
    return circuits


def widest(text: str) -> tuple[int, int] | None:
    """``(index, qubits)`` of the widest circuit of a batch, from its headers alone (nothing is built);
    ``None`` for a batch that does not read (:func:`decode` then says why)."""
    if len(text) > MAX_BATCH_BYTES * 4 // 3 + 4:
        return None
    try:
        found = headers(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None
    return max(enumerate(h.num_qubits for h in found), key=lambda x: x[1], default=None)


def state_vector_bytes(qubits: int) -> int:
    """What one state vector of ``qubits`` qubits holds: 2**qubits amplitudes of 16 bytes."""
    return 16 << qubits


def stabilizer_bytes(qubits: int) -> int:
    """What Aer's stabilizer method holds for ``qubits`` qubits: a tableau of ``2 * qubits`` rows of
    X and Z bits (packed in 64-bit words) and their phases."""
    return 2 * qubits * (2 * 8 * ((qubits + 63) // 64) + 1)


def _stabilizer_names() -> frozenset[str]:
    """The instructions Aer's stabilizer method takes (its own target's names)."""
    global _STABILIZER
    if _STABILIZER is None:
        from qiskit_aer import AerSimulator

        _STABILIZER = frozenset(AerSimulator(method="stabilizer").target.operation_names) | {"barrier"}
    return _STABILIZER


_STABILIZER: frozenset[str] | None = None


def runs_by_stabilizer(circuit: Any) -> bool:
    """Whether Aer's automatic method, without a noise model, takes the stabilizer method for
    ``circuit``: as Aer decides it, by its instructions' names, every one (in every block of its control
    flow) one its stabilizer method takes."""
    names = _stabilizer_names()
    for instruction in circuit.data:
        op = instruction.operation
        if op.name not in names:
            return False
        if any(not runs_by_stabilizer(block) for block in getattr(op, "blocks", ())):
            return False
    return True


def simulation_bytes(qubits: int, shots: object, *, noisy: bool, cap_mb: int) -> tuple[int, str]:
    """``(bytes, what)``: what Aer's automatic method holds to simulate one circuit of ``qubits`` qubits.
    Under a noise model with more shots than ``2**qubits`` it takes a density matrix (``4**qubits``
    entries of 16 bytes) where that fits its ``max_memory_mb`` (``cap_mb``); else a state vector."""
    if noisy and isinstance(shots, int) and qubits < 64 and shots > (1 << qubits):
        matrix = 16 << (2 * qubits)
        if matrix <= cap_mb * 2**20:
            return matrix, "density matrix"
    return state_vector_bytes(qubits), "state vector"


def headers(data: bytes) -> list[Header]:
    """Every circuit's header, read with QPY's own formats, each within :data:`LIMITS`."""
    from qiskit.qpy import common, formats

    try:
        file = formats.FILE_HEADER_V10._make(struct.unpack_from(formats.FILE_HEADER_V10_PACK, data, 0))
    except struct.error:
        raise CircuitsInvalid("the batch is not a QPY file") from None
    if file.preface != b"QISKIT":
        raise CircuitsInvalid("the batch is not a QPY file")
    if file.qpy_version != common.QPY_VERSION:
        raise CircuitsInvalid(f"QPY version {file.qpy_version}: only {common.QPY_VERSION} is read")
    if not 1 <= file.num_programs <= MAX_CIRCUITS:
        raise CircuitsInvalid(f"{file.num_programs} circuits: a batch holds 1 to {MAX_CIRCUITS}")
    at = formats.FILE_HEADER_V10_SIZE + 1  # the program type key
    if data[at - 1 : at] != b"q":
        raise CircuitsInvalid("the batch holds something other than circuits")
    out = []
    budget = _Budget()
    for i in range(file.num_programs):
        try:
            (offset,) = struct.unpack_from(
                formats.CIRCUIT_TABLE_ENTRY_PACK, data, at + i * formats.CIRCUIT_TABLE_ENTRY_SIZE
            )
        except struct.error:
            raise CircuitsInvalid(f"circuit {i}: its header is cut short") from None
        out.append(_circuit(data, offset, f"circuit {i}", 0, budget))
    return out


_REGISTER_V18 = "!1c?IH?c"  # type, standalone, size, name_size, in_circuit, register_attachment
MAX_DEPTH = 8  # custom gates defined by custom gates, this deep at most
MAX_CUSTOM = 10_000  # custom-gate definitions over the whole batch


class _Budget:
    """What the whole batch declares, nested definitions included."""

    def __init__(self) -> None:
        self.instructions = 0
        self.custom = 0


def _unpack(pack: str, data: bytes, at: int, what: str) -> tuple[tuple, int]:
    try:
        return struct.unpack_from(pack, data, at), at + struct.calcsize(pack)
    except struct.error:
        raise CircuitsInvalid(f"{what}: cut short") from None


def _skip(data: bytes, at: int, n: int, what: str) -> int:
    if n < 0 or at + n > len(data):
        raise CircuitsInvalid(f"{what}: declares more bytes than the batch holds")
    return at + n


def _check(what: str, counts: tuple[tuple[str, int, int], ...]) -> None:
    for name, n, most in counts:
        if n > most:
            raise CircuitsInvalid(f"{what} declares {n} {name} (at most {most})")


def _circuit(data: bytes, at: int, what: str, depth: int, budget: _Budget) -> Header:
    """The circuit whose header is at ``at``, every custom-gate definition in it walked as well, each
    header checked before anything of it is built: QPY reads the custom gates' table before the
    instructions, so a definition that claims billions of qubits is found here first."""
    from qiskit.qpy import formats

    fields, at = _unpack(formats.CIRCUIT_HEADER_V12_PACK, data, at, f"{what}: its header")
    h = formats.CIRCUIT_HEADER_V12._make(fields)
    header = Header(
        h.num_qubits, h.num_clbits, h.num_registers, h.num_instructions, h.metadata_size, h.name_size
    )
    _check(what, (
        ("qubits", h.num_qubits, MAX_QUBITS), ("classical bits", h.num_clbits, MAX_QUBITS),
        ("registers", h.num_registers, MAX_QUBITS), ("standalone variables", h.num_vars, 0),
    ))
    budget.instructions += h.num_instructions
    if budget.instructions > MAX_INSTRUCTIONS:
        raise CircuitsInvalid(
            f"the batch declares {budget.instructions} instructions (at most {MAX_INSTRUCTIONS:,})"
        )
    for n in (h.name_size, h.global_phase_size, h.metadata_size):
        at = _skip(data, at, n, f"{what}: its header")
    for r in range(h.num_registers):  # QPY 18: a u32 index per bit, or one (the first) if contiguous
        (_, _, size, name_size, _, contiguous), at = _unpack(_REGISTER_V18, data, at, f"{what}: register {r}")
        _check(f"{what}: register {r}", (("bits", size, MAX_QUBITS),))
        at = _skip(data, at, name_size + 4 * (1 if contiguous == b"\x01" else size), f"{what}: register {r}")
    (namespaces,), at = _unpack(formats.ANNOTATION_HEADER_STATIC_PACK, data, at, f"{what}: its annotations")
    _check(what, (("annotation namespaces", namespaces, 64),))
    for _ in range(namespaces):
        (name_size, state_size), at = _unpack(formats.ANNOTATION_STATE_HEADER_PACK, data, at, what)
        at = _skip(data, at, name_size + state_size, f"{what}: its annotations")
    (vectors,), at = _unpack("!H", data, at, f"{what}: its parameter vectors")  # QPY 18's table
    for v in range(vectors):
        (name_size, size, _), at = _unpack("!HQ16s", data, at, f"{what}: parameter vector {v}")
        _check(f"{what}: parameter vector {v}", (("elements", size, MAX_INSTRUCTIONS),))
        at = _skip(data, at, name_size, f"{what}: parameter vector {v}")
    (customs,), at = _unpack(formats.CUSTOM_CIRCUIT_DEF_HEADER_PACK, data, at, f"{what}: its custom gates")
    budget.custom += customs
    _check("the batch", (("custom-gate definitions", budget.custom, MAX_CUSTOM),))
    for c in range(customs):
        where = f"{what}: custom gate {c}"
        fields, at = _unpack(formats.CUSTOM_CIRCUIT_INST_DEF_V2_PACK, data, at, where)
        d = formats.CUSTOM_CIRCUIT_INST_DEF_V2._make(fields)
        _check(where, (
            ("qubits", d.num_qubits, MAX_QUBITS), ("classical bits", d.num_clbits, MAX_QUBITS),
            ("control qubits", d.num_ctrl_qubits, MAX_QUBITS),
        ))
        name_at = at
        at = _skip(data, at, d.gate_name_size, where)
        name = data[name_at:at]
        definition = at
        at = _skip(data, at, d.size, where)
        if d.custom_definition and not name.startswith(b"###PauliEvolutionGate_"):
            if depth + 1 > MAX_DEPTH:
                raise CircuitsInvalid(f"{where}: definitions nested more than {MAX_DEPTH} deep")
            inner = _circuit(data[definition:at], 0, f"{where}'s definition", depth + 1, budget)
            _check(f"{where}'s definition", (("qubits", inner.num_qubits, max(d.num_qubits, 0)),))
        at = _skip(data, at, d.base_gate_size, where)
    return header
