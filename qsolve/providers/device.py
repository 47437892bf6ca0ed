"""What a compiler needs to know of a device, read from its ``describe`` answer (quantum-provider-protocol
§4, §5.1): its places, the gates it runs, which pairs a two-qubit gate may act on, and its computational
resonators. The basis a client compiles to is the first of §4's, in order, whose every gate it lists."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: the most places (qubits and resonators) a device may state, refused past it where its description is
#: read, never built; a compiler routes a circuit over a region of at most 20 of them, whatever the
#: device (``qsolve.providers.compiler.REGION_PLACES``), never over a square of them
MAX_PLACES = 4096
#: the most coupled pairs (``connectivity``) and ``moves`` a device may state, each
MAX_PAIRS = 65536

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

    qubits: int = Field(ge=0, le=MAX_PLACES)
    native_gates: tuple[str, ...]
    connectivity: Literal["all"] | tuple[tuple[int, int], ...] = Field(default="all", max_length=MAX_PAIRS)
    resonators: tuple[int, ...] = Field(default=(), max_length=MAX_PLACES)
    #: each [qubit, resonator] that ``move`` runs on
    moves: tuple[tuple[int, int], ...] = Field(default=(), max_length=MAX_PAIRS)

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
        resonators = self._resonators
        for q, r in self.moves:
            if r not in resonators or q in resonators or q not in places:
                raise ValueError(f"move [{q}, {r}] is not a qubit and one of the resonators")
        return self

    @cached_property
    def _resonators(self) -> frozenset[int]:
        return frozenset(self.resonators)

    @cached_property
    def _pairs(self) -> frozenset[tuple[int, int]]:
        """Each coupled pair, both ways round (none for ``all``)."""
        pairs = () if self.connectivity == "all" else self.connectivity
        return frozenset((*pairs, *((b, a) for a, b in pairs)))

    @property
    def computational_qubits(self) -> tuple[int, ...]:
        """The places a logical qubit may sit on: every place but the resonators."""
        return self.first_places(self.qubits)

    @property
    def place_count(self) -> int:
        """How many places a logical qubit may sit on, counted without listing them."""
        return self.qubits - len(self._resonators)

    def first_places(self, count: int) -> tuple[int, ...]:
        """The first ``count`` places a logical qubit may sit on (fewer where the device has fewer)."""
        out: list[int] = []
        for q in range(self.qubits):
            if len(out) >= count:
                break
            if q not in self._resonators:
                out.append(q)
        return tuple(out)

    def connects(self, a: int, b: int) -> bool:
        if self.connectivity == "all":
            return a != b and 0 <= a < self.qubits and 0 <= b < self.qubits
        return (a, b) in self._pairs

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
