"""What a compiler needs to know of a device, read from its ``describe`` answer (quantum-provider-protocol
§4, §5.1): its places, the gates it runs, which pairs a two-qubit gate may act on, and its computational
resonators. The basis a client compiles to is the first of §4's, in order, whose every gate it lists."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: §4's bases in the order a client tries them, each with its gates
BASES: dict[str, tuple[str, ...]] = {
    "rzsxxcz": ("rz", "sx", "x", "cz"),
    "prxcz": ("prx", "cz"),
    "gpizz": ("gpi", "gpi2", "zz"),
    "prxrzxx": ("prx", "rz", "xx"),
}
#: the bases a program may hold ``move`` in, on a device with resonators
MOVE_BASES = ("rzsxxcz", "prxcz")


class NoBasis(ValueError):
    """A device none of whose bases' gates it lists in full."""


class Device(BaseModel):
    """A device's shape: places ``0 … qubits − 1``, some of them resonators."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    qubits: int = Field(ge=0)
    native_gates: tuple[str, ...]
    connectivity: Literal["all"] | tuple[tuple[int, int], ...] = "all"
    resonators: tuple[int, ...] = ()
    moves: tuple[tuple[int, int], ...] = ()  # each [qubit, resonator] that ``move`` runs on

    @model_validator(mode="after")
    def _places(self) -> Device:
        places = range(self.qubits)
        pairs = () if self.connectivity == "all" else self.connectivity
        for a, b in pairs:
            if a not in places or b not in places or a == b:
                raise ValueError(f"connectivity pair [{a}, {b}] is not two of the {self.qubits} places")
        for r in self.resonators:
            if r not in places:
                raise ValueError(f"resonator {r} is not one of the {self.qubits} places")
        for q, r in self.moves:
            if r not in self.resonators or q in self.resonators or q not in places:
                raise ValueError(f"move [{q}, {r}] is not a qubit and one of the resonators")
        return self

    @property
    def computational_qubits(self) -> tuple[int, ...]:
        """The places a logical qubit may sit on: every place but the resonators."""
        return tuple(q for q in range(self.qubits) if q not in self.resonators)

    def connects(self, a: int, b: int) -> bool:
        if self.connectivity == "all":
            return a != b and 0 <= a < self.qubits and 0 <= b < self.qubits
        return (a, b) in self.connectivity or (b, a) in self.connectivity

    def basis(self) -> str:
        """The first basis of §4 whose every gate the device lists (NoBasis when none)."""
        listed = set(self.native_gates)
        for name, gates in BASES.items():
            if set(gates) <= listed and (not self.resonators or name in MOVE_BASES):
                return name
        raise NoBasis(
            f"the device lists {', '.join(self.native_gates) or 'no gates'}: no basis of wai.native/1 "
            f"({', '.join(BASES)}) has all its gates there"
            + (", among those a program with resonators may use (rzsxxcz, prxcz)" if self.resonators else "")
        )
