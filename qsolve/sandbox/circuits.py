"""Circuits as data between the two roles: QPY, never a pickle (issue 10).

The workflow process writes each batch ``ctx.sample`` is given as one QPY file (base64 in a JSON line);
the platform reads it back only after checking, from QPY's own headers, that it is a file of the QPY
version this Qiskit writes (parameter expressions are QPY's replay of operations, never text parsed as
code) and that no circuit in it declares more qubits, bits, registers or instructions than
:data:`LIMITS` allows: a header of a few bytes cannot make the platform build a billion qubits.
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
from dataclasses import dataclass

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
    for i in range(file.num_programs):
        try:
            (offset,) = struct.unpack_from(
                formats.CIRCUIT_TABLE_ENTRY_PACK, data, at + i * formats.CIRCUIT_TABLE_ENTRY_SIZE
            )
            h = formats.CIRCUIT_HEADER_V12._make(
                struct.unpack_from(formats.CIRCUIT_HEADER_V12_PACK, data, offset)
            )
        except struct.error:
            raise CircuitsInvalid(f"circuit {i}: its header is cut short") from None
        header = Header(
            h.num_qubits, h.num_clbits, h.num_registers, h.num_instructions, h.metadata_size, h.name_size
        )
        for what, n, most in (
            ("qubits", header.num_qubits, MAX_QUBITS),
            ("classical bits", header.num_clbits, MAX_QUBITS),
            ("registers", header.num_registers, MAX_QUBITS),
        ):
            if n > most:
                raise CircuitsInvalid(f"circuit {i} declares {n} {what} (at most {most})")
        if header.metadata_size + header.name_size > len(data):
            raise CircuitsInvalid(f"circuit {i}: its header declares more bytes than the batch holds")
        out.append(header)
    total = sum(h.num_instructions for h in out)
    if total > MAX_INSTRUCTIONS:
        raise CircuitsInvalid(f"the batch declares {total} instructions (at most {MAX_INSTRUCTIONS:,})")
    return out
