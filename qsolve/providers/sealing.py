"""A provider job as the host seals it (quantum-provider-protocol §8.1, §8.2): the request as it was
asked, and the result as the provider returned it with what the host compiled, checked, computed and
was told, signed by the host's key. Everything here is the host's word except the counts, their
source and ``execution``, which are the provider's, sealed as such (§8.3).
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from blake3 import blake3

from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.seal import ENGINE_NAME

if TYPE_CHECKING:  # in signatures only: checking a receipt's run member (qsolve page) loads no Qiskit
    from qiskit import QuantumCircuit

PROTOCOL = "wai.quantum.provider/1"
SCHEMA = "wai.quantum.job-result/1"
IDEAL_QUBITS = 22  # §8.1: the ideal distribution is computed up to 22 qubits
LISTED_OUTCOMES = 65_536
STEPS = ("mitigation", "twirling", "decoupling", "remapping", "optimisation")


def describe_digest(describe: Mapping[str, Any]) -> str:
    """BLAKE3 of the RFC 8785 text of the provider's ``describe`` answer (§8.1 ``provider.describe``)."""
    return blake3(canonical_bytes(dict(describe))).hexdigest()


def provenance_text(describe: Mapping[str, Any]) -> str:
    """``silicon``, or ``simulator``/``emulator`` followed by ``:`` and the sentence naming it."""
    provenance = describe.get("provenance")
    sentence = describe.get(provenance) if provenance in ("simulator", "emulator") else None
    if provenance in ("simulator", "emulator") and isinstance(sentence, str) and sentence:
        return f"{provenance}: {sentence}"
    return str(provenance)


def accuracy_of(describe: Mapping[str, Any]) -> dict[str, Any]:
    if describe.get("provenance") == "silicon":
        return {"class": "measured", "note": "counts the provider says its processor measured"}
    out: dict[str, Any] = {
        "class": "simulated",
        "note": f"counts from a {describe.get('provenance')}: no device measured them",
    }
    if describe.get("approximate") is True:
        out["approximate"] = True
    return out


def execution_of(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The provider's ``execution`` as stated by it, or nobody's when it gave none (§8.3)."""
    given = answer.get("execution")
    if not isinstance(given, Mapping):
        return {"stated_by": "nobody", **dict.fromkeys(STEPS, "unknown"), "verbatim": None}
    out = {"stated_by": "provider", **{s: given[s] for s in STEPS}, "verbatim": given["verbatim"]}
    if isinstance(given.get("note"), str):
        out["note"] = given["note"]
    return out


def ideal_of(circuit: QuantumCircuit, counts: Mapping[str, int]) -> dict[str, Any]:
    """The circuit's exact distribution set beside the counts' frequencies (§8.1 ``ideal``)."""
    if circuit.num_qubits > IDEAL_QUBITS:
        return {"computed": False, "why": f"{circuit.num_qubits} qubits: computed up to {IDEAL_QUBITS}"}
    from qsolve.providers.compiler import ideal_distribution

    p = {k: v for k, v in ideal_distribution(circuit).items() if v > 1e-12}
    total = sum(counts.values())
    q = {k: v / total for k, v in counts.items()}
    tvd = 0.5 * sum(abs(q.get(k, 0.0) - p.get(k, 0.0)) for k in set(p) | set(q))
    fidelity = sum(math.sqrt(p.get(k, 0.0) * v) for k, v in q.items()) ** 2
    sampling = 0.5 * sum(math.sqrt(2 * v * (1 - v) / (math.pi * total)) for v in p.values())
    return {
        "computed": True,
        "total_variation_distance": tvd,
        "hellinger_fidelity": min(fidelity, 1.0),
        "sampling_tvd_expected": sampling,
        "ideal_outcomes": len(p),
    }


def listed_counts(counts: Mapping[str, int]) -> tuple[dict[str, int], int, int]:
    """The counts a host lists (no outcome counted 0; at most 65,536, the most frequent), the outcomes
    that occurred, and the shots of outcomes not listed."""
    occurred = {k: int(v) for k, v in counts.items() if int(v) > 0}
    if len(occurred) <= LISTED_OUTCOMES:
        return dict(sorted(occurred.items())), len(occurred), 0
    kept = sorted(occurred.items(), key=lambda kv: (-kv[1], kv[0]))[:LISTED_OUTCOMES]
    listed = dict(sorted(kept))
    return listed, len(occurred), sum(occurred.values()) - sum(listed.values())


def engine() -> dict[str, str]:
    try:
        version = importlib.metadata.version("qsolve")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return {"name": ENGINE_NAME, "version": f"qsolve {version}"}


def provider_result(
    *,
    name: str,
    kind: str,
    describe: Mapping[str, Any],
    compiled: Mapping[str, Any],
    job: str,
    polls: int,
    answer: Mapping[str, Any],
    shots: int,
    circuit: QuantumCircuit,
    cost: Mapping[str, Any],
) -> dict[str, Any]:
    """The result a host seals for a provider's job (§8.1), from the provider's checked ``result``
    answer. ``compiled`` is what the host sent (``basis``, ``qasm3``, ``program``, counts, layouts,
    ``checked``); ``cost`` is ``free``, ``estimate`` and ``confirmed`` (``charged`` is the answer's)."""
    counts, distinct, omitted = listed_counts(answer["counts"])
    calibration = _snapshot(answer.get("calibration")) or _snapshot(describe.get("calibration"))
    result: dict[str, Any] = {
        "method": "provider",
        "accuracy": accuracy_of(describe),
        "provider": {
            "name": name,
            "kind": kind,
            "protocol": PROTOCOL,
            "device": describe["device"],
            "provenance": provenance_text(describe),
            "qubits": describe["qubits"],
            "basis": compiled["basis"],
            "describe": describe_digest(describe),
        },
        "calibration": calibration,
        "compiled": dict(compiled),
        "job": {"id": job, "polls": polls},
        "counts": counts,
        "distinct_outcomes": distinct,
        "omitted_shots": omitted,
        "shots": shots,
        "counts_source": answer.get("counts_source", "vendor_counts"),
        "execution": execution_of(answer),
        "ideal": ideal_of(circuit, answer["counts"]),
        "cost": {
            "free": bool(cost["free"]),
            "estimate": dict(cost["estimate"]),
            "charged": dict(answer["charged"]) if isinstance(answer.get("charged"), Mapping) else None,
            "confirmed": not cost["free"],
        },
        "energy": {"unmetered": "the host meters no provider's device; the provider's own figure, if any"},
        "engine": engine(),
        "schema": SCHEMA,
    }
    if answer.get("accepted_shots") is not None:
        result["accepted_shots"] = answer["accepted_shots"]
    kwh = (answer.get("energy") or {}).get("kwh") if isinstance(answer.get("energy"), Mapping) else None
    if isinstance(kwh, int | float) and not isinstance(kwh, bool):
        result["energy"] |= {"service_kwh": kwh, "service_kwh_is": "the provider's own figure for the job"}
    return result


def _snapshot(calibration: Any) -> str | None:
    """The id a calibration snapshot is named by (§5.1 ``{"id"}``; §5.5 ``calibration``), or None."""
    if isinstance(calibration, Mapping):
        calibration = calibration.get("id")
    return calibration if isinstance(calibration, str) and calibration else None


def compiled_member(compiled: Any) -> dict[str, Any]:
    """§8.1's ``compiled``, from the compiler's output, with how it was placed."""
    return compiled.receipt_member() | {
        "placement": "Qiskit's layout and routing on the described coupling map (no calibration read)"
    }


def provider_request(
    name: str, circuit_qasm3: str, shots: int, seed: int | None, run: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The job as it was asked: the person's circuit (OpenQASM 3), the shots, the provider named; and,
    for a platform run, ``run`` (:func:`run_member`): the run it was sent for, sealed with it."""
    request: dict[str, Any] = {"provider": name, "qasm": circuit_qasm3, "shots": shots}
    if seed is not None:
        request["seed"] = seed
    if run is not None:
        request[RUN] = dict(run)
    return request


#: the request's member naming the platform run a job was sent for (a member §10 lets a request add;
#: the verifier reads none of it): receipts sealed before it was added name no run
RUN = "run"


def run_member(run_id: str, workflow: str, version: str, case: str, target: str) -> dict[str, str]:
    """The platform run a device job is sent for, as its request seals it: the run's id, its workflow,
    version, case and target. The track record holds a row's receipts to it (a receipt belongs to the
    row whose run it names)."""
    return {"id": run_id, "workflow": workflow, "version": version, "case": case, "target": target}
