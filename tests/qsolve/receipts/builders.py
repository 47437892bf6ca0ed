"""Jobs to verify: a typical provider result of each built-in kind, sealed by a key made for the tests."""

from __future__ import annotations

import copy
from typing import Any

from blake3 import blake3

from qsolve.receipts.keys import HostKey
from qsolve.receipts.seal import seal

SEED = bytes(range(32))
KEY = HostKey(SEED)
OTHER_KEY = HostKey(bytes(range(1, 33)))

QASM3 = (
    "OPENQASM 3.0;\nbit[2] c;\nrz(pi/2) $0;\nsx $0;\nrz(pi/2) $0;\ncz $0, $1;\nsx $1;\n"
    "c[0] = measure $0;\nc[1] = measure $1;\n"
)

SAMPLER_EXECUTION: dict[str, Any] = {
    "stated_by": "client",
    "mitigation": "default",
    "twirling": "off",
    "decoupling": "off",
    "remapping": "default",
    "optimisation": "default",
    "verbatim": False,
    "sent": {
        "fields": ["backend", "params", "program_id"],
        "settings": {
            "/params/options/dynamical_decoupling/enable": False,
            "/params/options/twirling/enable_gates": False,
            "/params/options/twirling/enable_measure": False,
        },
    },
}


def request() -> dict[str, Any]:
    return {
        "provider": "ibm-fez",
        "qasm": "OPENQASM 3.0;\nqubit[2] q;\nh q[0];\ncx q[0], q[1];\n",
        "shots": 1000,
    }


def result(kind: str = "sampler-v2") -> dict[str, Any]:
    """A stated provider's result of the sampler kind on silicon: every member §8.1 lists."""
    return {
        "method": "provider",
        "accuracy": {"class": "measured", "note": "counts measured on a processor"},
        "provider": {
            "name": "ibm-fez",
            "kind": kind,
            "protocol": "ibm-runtime/sampler-v2",
            "device": "ibm_fez",
            "provenance": "silicon",
            "qubits": 156,
            "basis": "rzsxxcz",
            "describe": blake3(b"the device description").hexdigest(),
        },
        "calibration": "2026-11-20T06:00:00Z",
        "compiled": {
            "basis": "rzsxxcz",
            "qasm3": QASM3,
            "program": blake3(QASM3.encode()).hexdigest(),
            "hash": "BLAKE3 of the UTF-8 bytes of qasm3",
            "native_gates": 6,
            "two_qubit_gates": 1,
            "swaps": 0,
            "layout": [0, 1],
            "final_layout": [0, 1],
            "checked": "equivalent to the circuit on random product states",
            "placement": {"target": "calibration", "expected_success": 0.95, "fewest_swaps_success": 0.95},
        },
        "job": {"id": "d1x7f3k2", "polls": 4},
        "counts": {"00": 488, "11": 493, "01": 11, "10": 8},
        "distinct_outcomes": 4,
        "omitted_shots": 0,
        "shots": 1000,
        "counts_source": "shots",
        "execution": copy.deepcopy(SAMPLER_EXECUTION),
        "ideal": {
            "computed": True,
            "total_variation_distance": 0.019,
            "hellinger_fidelity": 0.981,
            "sampling_tvd_expected": 0.0178,
            "ideal_outcomes": 2,
        },
        "cost": {
            "free": False,
            "estimate": {"free": False, "amount": "1.60", "currency": "USD"},
            "charged": {"amount": "1.60", "currency": "USD"},
            "confirmed": True,
        },
        "energy": {"unmetered": "the provider does not meter a job's energy"},
        "engine": {"name": "wai-quantum", "version": "qsolve/0.1.0"},
        "schema": "wai.quantum.job-result/1",
    }


def earlier_result() -> dict[str, Any]:
    """A provider's result of the earlier form: no counts_source, no execution."""
    r = result()
    del r["counts_source"], r["execution"]
    return r


def sealed(req: dict[str, Any] | None = None, res: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return seal(request() if req is None else req, result() if res is None else res, KEY, **kw)
