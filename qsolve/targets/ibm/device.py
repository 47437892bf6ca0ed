"""The device as this client describes it (§8.1 ``provider.describe`` is the description's digest): its
qubits, gates, connectivity, calibration and provenance (``silicon`` only on IBM Quantum's own service and
a device its configuration does not call a simulator), its readout errors, and the check that its gates
are those qsolve sends."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

from qsolve.targets.ibm.errors import IbmUnavailable
from qsolve.targets.ibm.isa import ISA_GATES
from qsolve.targets.ibm.names import BASIS
from qsolve.targets.ibm.settings import IbmSettings


def describe(backend: Any, settings: IbmSettings) -> dict[str, Any]:
    """The description this client makes of the device (§8.1 ``provider.describe`` is its digest)."""
    configuration = backend.configuration()
    properties = backend.properties()
    calibration = properties.last_update_date.isoformat() if properties is not None else None
    pairs = sorted({tuple(sorted(p)) for p in (configuration.coupling_map or [])})
    out: dict[str, Any] = {
        "device": backend.name,
        "qubits": int(configuration.n_qubits),
        "basis": BASIS,
        "gates": sorted(configuration.basis_gates),
        "connectivity": [list(p) for p in pairs],
        "calibration": {"id": calibration},
        "backend_version": str(getattr(configuration, "backend_version", "")),
        "processor_type": dict(getattr(configuration, "processor_type", None) or {}),
        "service": settings.service,
        "client": f"qiskit-ibm-runtime {version('qiskit-ibm-runtime')}",
        "billing": {"free": False, "priced": False},
    }
    if getattr(configuration, "simulator", False):
        out["provenance"] = "simulator"
        out["simulator"] = f"IBM Quantum's simulator {backend.name}"
    elif settings.is_ibm:
        out["provenance"] = "silicon"
    else:
        out["provenance"] = "simulator"
        out["simulator"] = (
            f"the device {backend.name} as served by {settings.service}, which is not IBM Quantum's service: "
            "qsolve does not take its counts as measured"
        )
    return out


def _provenance_text(description: Mapping[str, Any]) -> str:
    from qsolve.providers.sealing import provenance_text

    return provenance_text(description)


def _readout_errors(backend: Any) -> list[tuple[float, float]]:
    props = backend.properties()
    out = []
    for q in range(backend.num_qubits):
        values = {n.name: n.value for n in props.qubits[q]} if props is not None else {}
        if "prob_meas1_prep0" in values and "prob_meas0_prep1" in values:
            out.append((float(values["prob_meas1_prep0"]), float(values["prob_meas0_prep1"])))
        else:
            error = float(values.get("readout_error", 0.0) or 0.0)
            out.append((error, error))
    return out


def _basis_check(name: str, backend: Any) -> None:
    gates = set(backend.configuration().basis_gates) - {"id", "delay", "reset", "measure"}
    if not gates <= ISA_GATES:
        raise IbmUnavailable(
            f"{name}: its gates are {', '.join(sorted(gates))}: qsolve sends rz, sx, x and cz only (the "
            "receipts' basis rzsxxcz), so devices of other two-qubit gates are not run yet"
        )
