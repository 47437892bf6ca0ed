"""Targets: where a quantum method's circuits run (DESIGN.md §4).

sim-cpu                      qiskit-aer, ideal, seeded                 (sim_cpu.SimCpu)
fake:<device>[@<scale>]      a fake IBM device, noise scaled 1 to 10   (fake.FakeDevice)
ibm:<device>                 IBM Quantum, qiskit-ibm-runtime           (ibm.IbmBackend; never in validation)
provider:<name>              a device brought over wai.quantum.provider/1

base       the interface every target implements: transpile, execute, readout confusion
devices    fake IBM devices, loaded once per machine and kept in a cache
errors     the targets' errors (importing them loads no Qiskit)
routing    which Prefect work queue a hardware run goes to: its device's, on a machine holding it
cancel     a recorded device job cancelled from any process, on a provider or at IBM Quantum
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from qsolve.lazy import lazy_names
from qsolve.targets.errors import TargetUnavailable, UnknownTarget

if TYPE_CHECKING:
    from qsolve.targets.base import Backend

_FAKE = re.compile(r"fake:([A-Za-z0-9_]+)(?:@(.+))?")
_IBM = re.compile(r"ibm:[A-Za-z0-9_.-]{1,60}")
_PROVIDER = re.compile(r"provider:[A-Za-z0-9_.-]{1,60}")


SCALE_RANGE = (1.0, 10.0)


def check_target(spec: str) -> None:
    """Refuse a target string that names no kind of target (say what the kinds are), or a fake device's
    scale outside 1 to 10. Whether a device exists is found when the target is opened."""
    if m := _FAKE.fullmatch(spec):
        _scale(spec, m.group(2))
        return
    if spec == "sim-cpu" or _IBM.fullmatch(spec) or _PROVIDER.fullmatch(spec):
        return
    raise UnknownTarget(
        f"unknown target {spec!r}: use sim-cpu, fake:<device>[@<scale>], ibm:<device> or provider:<name>"
    )


def _scale(spec: str, text: str | None) -> float:
    if text is None:
        return 1.0
    try:
        scale = float(text)
    except ValueError:
        raise UnknownTarget(f"{spec}: the scale {text!r} is not a number") from None
    lo, hi = SCALE_RANGE
    if not lo <= scale <= hi:
        raise UnknownTarget(f"{spec}: the scale must be from {lo:g} to {hi:g}")
    return scale


def check_device(spec: str) -> None:
    """:func:`check_target`, and for a ``fake:`` target that the device exists (UnknownTarget names
    the known ones): what a command checks of its ``--target`` before it runs anything."""
    check_target(spec)
    if m := _FAKE.fullmatch(spec):
        from qsolve.targets.devices import fake_backend_class

        fake_backend_class(m.group(1))


def device_of(spec: str) -> str:
    """The device a target runs on, as the track record names it (without opening the target)."""
    check_target(spec)
    if spec == "sim-cpu":
        return "aer_simulator"
    if m := _FAKE.fullmatch(spec):
        return "fake_" + m.group(1).removeprefix("ibm_").lower()
    return spec.split(":", 1)[1]


_opened: dict[tuple[str, bool], Future] = {}
_opening = threading.Lock()


def open_target(spec: str, *, device_access: bool = False) -> Backend:
    """The backend of a target string, opened once per process (safe from several threads).

    Validation (``device_access=False``) refuses ``ibm:`` and ``provider:`` targets: it has no network
    and no device access."""
    key = (spec, device_access)
    with _opening:
        future, mine = _opened.get(key), False
        if future is None:
            future, mine = _opened.setdefault(key, Future()), True
    if mine:
        try:
            future.set_result(_open(spec, device_access))
        except BaseException as e:
            future.set_exception(e)
    return future.result()


def use(backend: Backend) -> None:
    """Make ``backend`` this process's target for its name (``qsolve run`` opens a ``provider:`` target
    itself, with the person's confirmation and the host's key, and the case's run then finds it)."""
    for device_access in (False, True):
        future: Future = Future()
        future.set_result(backend)
        with _opening:
            _opened[(backend.name, device_access)] = future


def warm(specs: Iterable[str]) -> None:
    """Open now the targets these strings name (a fake device read from its cache, Aer imported), so
    that a job's first circuits do not wait for them; a target that does not open is left for its
    case to report."""
    for spec in specs:
        with contextlib.suppress(Exception):
            open_target(spec)


def _open(spec: str, device_access: bool) -> Backend:
    check_target(spec)
    if spec == "sim-cpu":
        from qsolve.targets.sim_cpu import SimCpu

        return SimCpu()
    if m := _FAKE.fullmatch(spec):
        from qsolve.targets.fake import FakeDevice

        backend = FakeDevice(m.group(1), _scale(spec, m.group(2)))
        backend.name = spec
        return backend
    if not device_access:
        raise TargetUnavailable(
            f"{spec}: validation has no network and no device access; put real-device cases under "
            "hardware_cases"
        )
    if _IBM.fullmatch(spec):
        # a device of IBM's keeps its jobs in the state database: the command that runs it opens it with
        # that book (storage.sessions.ibm_backend: qsolve run, a hardware run) and ``use``s it
        raise TargetUnavailable(
            f"{spec}: opened by the command that runs it, with the state database as its book (qsolve run, "
            "a confirmed quote's hardware run)"
        )
    raise TargetUnavailable(f"{spec}: running on this target is not available yet")


__getattr__, __dir__ = lazy_names(__name__, {"Backend": "base"})  # Backend loads Qiskit: only when asked for


__all__ = [
    "Backend",
    "TargetUnavailable",
    "UnknownTarget",
    "check_device",
    "check_target",
    "device_of",
    "open_target",
    "use",
    "warm",
]
