"""Fake IBM devices, loaded once per machine: what a ``fake:`` target needs of one, kept in a cache.

Opening ``FakeFez`` costs about a second: importing qiskit-ibm-runtime (0.7 s), building the device's
156-qubit transpiler target (0.2 s) and its properties (0.1 s). A fake target needs three things of it:
the device's name, that :class:`~qiskit.transpiler.Target`, and each qubit's readout errors. Those are
kept in ``QSOLVE_HOME/cache/devices/``, one file per device and per version of Python, qiskit and
qiskit-ibm-runtime (a new version writes a new file; the folder can be deleted at any time), and read
back in a few milliseconds. Transpiling against the cached target gives the same circuits, bit for bit,
as against the backend (tested).

The files are pickles, so only the platform reads and writes them, in its own process: workflow code
runs only in a workflow process, which Landlock keeps from reading or writing anything of
``QSOLVE_HOME`` (:mod:`qsolve.sandbox.confine`), and which needs no device at all.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import tempfile
import threading
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from qiskit.providers.backend import BackendV2
from qiskit.transpiler import Target

from qsolve.targets.errors import UnknownTarget

_cache_folder: Path | None = None
_loaded: dict[str, Device] = {}
_loading = threading.Lock()


@dataclass(frozen=True)
class Device:
    """A fake device as a target uses it; ``readout[q]`` is ``(P(1|0), P(0|1))`` of qubit ``q``."""

    name: str
    target: Target
    readout: tuple[tuple[float, float], ...]


def use_cache(folder: Path | None) -> None:
    """Keep devices' files in ``folder`` (created when first written); ``None``: keep none."""
    global _cache_folder
    _cache_folder = folder


def device(name: str) -> Device:
    """``fez`` (or ``ibm_fez``): from memory, else the cache, else qiskit-ibm-runtime (then cached)."""
    short = name.removeprefix("ibm_").lower()
    with _loading:
        if short not in _loaded:
            _loaded[short] = (_read(short) if short.isalnum() else None) or _build(name, short)
        return _loaded[short]


def _file(short: str) -> Path | None:
    if _cache_folder is None:
        return None
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    versions = f"{python}-qiskit-{version('qiskit')}-runtime-{version('qiskit-ibm-runtime')}"
    return _cache_folder / f"{short}-{versions}.pickle"


def _read(short: str) -> Device | None:
    path = _file(short)
    try:
        with open(path, "rb") as f:
            found = pickle.load(f)
    except Exception:  # no cache, no file yet, or a file that does not read: build the device again
        return None
    return found if isinstance(found, Device) else None


def _build(name: str, short: str) -> Device:
    backend = load_fake_backend(name)
    found = Device(backend.name, backend.target, _readout_errors(backend))
    path = _file(short)
    if path is not None:
        with contextlib.suppress(OSError):  # no cache written is slower next time, nothing worse
            _write(path, pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
    return found


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: a temporary file beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_fake_backend(device: str) -> BackendV2:
    """``fez`` (or ``ibm_fez``) -> ``FakeFez()``; an unknown name is refused, listing a few known ones."""
    return fake_backend_class(device)()


def fake_backend_class(device: str) -> type[BackendV2]:
    """``fez`` (or ``ibm_fez``) -> ``FakeFez``, without building it; UnknownTarget names known ones."""
    from qiskit_ibm_runtime import fake_provider

    short = device.removeprefix("ibm_")
    cls = getattr(fake_provider, "Fake" + short[:1].upper() + short[1:].lower(), None)
    if not (isinstance(cls, type) and issubclass(cls, BackendV2)) or not short.isalnum():
        known = sorted(
            n[4:].lower()
            for n in dir(fake_provider)
            if n.startswith("Fake")
            and not n.startswith("FakeProvider")
            and not n.endswith("V2")
            and isinstance(getattr(fake_provider, n), type)
            and issubclass(getattr(fake_provider, n), BackendV2)
        )
        raise UnknownTarget(f"fake:{device}: no such fake device (known: {', '.join(known[:12])}, ...)")
    return cls


def _readout_errors(backend: BackendV2) -> tuple[tuple[float, float], ...]:
    """The device's asymmetric readout errors where its properties give them, else ``measure``'s error."""
    props = backend.properties()
    out = []
    for q in range(backend.num_qubits):
        qp = {n.name: n.value for n in props.qubits[q]} if props is not None else {}
        if "prob_meas1_prep0" in qp and "prob_meas0_prep1" in qp:
            out.append((qp["prob_meas1_prep0"], qp["prob_meas0_prep1"]))
        else:
            err = backend.target["measure"][(q,)].error or 0.0
            out.append((err, err))
    return tuple(out)
