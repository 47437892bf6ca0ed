"""The reference provider (quantum-provider-protocol §9) answering messages itself: its description,
how it reads every message (§3, §4), its counts (§5.5, §6) and its jobs (§5.6, §5.7)."""

from __future__ import annotations

import json

import pytest

from qsolve.providers.device import BASES
from qsolve.providers.messages import (
    PROTOCOL,
    read_billing,
    read_cancel,
    read_description,
    read_envelope,
    read_estimate,
    read_result,
    read_status,
)
from qsolve.providers.reference import EXECUTION, SIMULATOR, ReferenceOptions, ReferenceProvider, serve_http

RZ_NO_TURNS = {"gate": "rz", "qubits": [0]}  # an angle missing


def message(op: str, **fields) -> dict:
    return {"protocol": PROTOCOL, "op": op, **fields}


def native(basis: str, gates: list[dict], measured: list[int]) -> dict:
    return {
        "format": "wai.native/1",
        "basis": basis,
        "bits": len(measured),
        "gates": gates,
        "measure": [{"qubit": q, "bit": b} for b, q in enumerate(measured)],
    }


#: X on qubit 0 in each basis (§4's operators, up to a global phase)
X0 = {
    "rzsxxcz": [{"gate": "x", "qubits": [0]}],
    "prxcz": [{"gate": "prx", "qubits": [0], "turns": [[1, 1], [0, 0]]}],
    "gpizz": [{"gate": "gpi", "qubits": [0], "turns": [[0, 0]]}],
    "prxrzxx": [{"gate": "prx", "qubits": [0], "turns": [[1, 1], [0, 0]]}],
}


def probe(basis: str = "rzsxxcz", qubits: int = 8) -> dict:
    return native(basis, X0[basis], list(range(qubits)))


def answer(provider: ReferenceProvider, op: str, **fields) -> dict:
    return read_envelope(provider.handle(message(op, **fields)))


def code(provider: ReferenceProvider, msg) -> str:
    got = provider.handle(msg)
    assert got["ok"] is False and set(got["error"]) == {"code", "message"}
    return got["error"]["code"]


@pytest.fixture(scope="module")
def ref() -> ReferenceProvider:
    return ReferenceProvider()


def test_description(ref):
    d = read_description(answer(ref, "describe"))
    assert d.protocol == PROTOCOL and d.provenance == "simulator" and d.simulator == SIMULATOR
    assert "qiskit-aer" in d.simulator and "exact" in d.simulator
    assert d.qubits == 8 and d.native_gates == ["rz", "sx", "x", "cz"] and d.connectivity == "all"
    assert d.billing.kind == "free" and d.seeded is True and d.cancels is True
    assert d.calibration.id == "reference" and d.max_shots == 100_000
    assert d.problems() == []
    assert d.device().basis() == "rzsxxcz"


@pytest.mark.parametrize("basis", ["rzsxxcz", "prxcz", "gpizz", "prxrzxx"])
@pytest.mark.parametrize("connectivity", ["all", "line"])
def test_probe_lands_on_01_in_every_basis(basis, connectivity):
    provider = ReferenceProvider(ReferenceOptions(qubits=4, basis=basis, connectivity=connectivity))
    d = read_description(answer(provider, "describe"))
    assert tuple(d.native_gates) == BASES[basis]
    assert d.device().basis() == basis
    job = answer(provider, "submit", program=probe(basis, 4), shots=50)["job"]
    result = read_result(answer(provider, "result", job=job), 50, bits=4)
    assert result.counts == {"0001": 50}


def test_star_device_has_a_resonator_and_moves():
    provider = ReferenceProvider(ReferenceOptions(qubits=4, connectivity="star"))
    d = read_description(answer(provider, "describe"))
    assert d.resonators == [3] and d.moves == [(0, 3), (1, 3), (2, 3)]
    assert d.connectivity == [(0, 3), (1, 3), (2, 3)] and "move" in d.native_gates
    assert d.device().basis() == "rzsxxcz"
    # a Bell pair of qubits 0 and 1 through the resonator: H on 0 as rz·sx·rz, then move · cz · move
    h = [
        {"gate": "rz", "qubits": [0], "turns": [[1, 2]]},
        {"gate": "sx", "qubits": [0]},
        {"gate": "rz", "qubits": [0], "turns": [[1, 2]]},
    ]
    h1 = [{**g, "qubits": [1]} for g in h]
    gates = [*h, *h1, {"gate": "move", "qubits": [0, 3]}, {"gate": "cz", "qubits": [1, 3]}]
    gates += [{"gate": "move", "qubits": [0, 3]}, *h1]
    job = answer(provider, "submit", program=native("rzsxxcz", gates, [0, 1, 2]), shots=400, seed=5)["job"]
    counts = read_result(answer(provider, "result", job=job), 400).counts
    assert set(counts) == {"000", "011"} and min(counts.values()) > 120
    # a gate on the resonator, or the resonator measured: refused
    assert code(
        provider, message("submit", program=native("rzsxxcz", [{"gate": "x", "qubits": [3]}], [0]), shots=1)
    ) == ("refused")
    with pytest.raises(ValueError, match="star"):
        ReferenceOptions(connectivity="star", basis="gpizz")


def test_counts_are_seeded_and_kept(ref):
    h = [{"gate": "sx", "qubits": [q]} for q in range(3)]
    program = native("rzsxxcz", h, [0, 1, 2])
    first = answer(ref, "submit", program=program, shots=200, seed=7)["job"]
    again = answer(ref, "submit", program=program, shots=200, seed=7)["job"]
    other = answer(ref, "submit", program=program, shots=200, seed=8)["job"]
    unseeded = answer(ref, "submit", program=program, shots=200)["job"]
    assert first != again
    counts = [read_result(answer(ref, "result", job=j), 200).counts for j in (first, again, other, unseeded)]
    assert counts[0] == counts[1] and counts[0] != counts[2] and len(counts[0]) == 8
    assert read_result(answer(ref, "result", job=first), 200).counts == counts[0]  # asked twice: the same
    seeded = answer(ref, "submit", program=program, shots=200, seed=1)["job"]
    assert read_result(answer(ref, "result", job=seeded), 200).counts == counts[3]  # the default seed is 1


def test_result_states_its_source_and_execution(ref):
    job = answer(ref, "submit", program=probe(), shots=10)["job"]
    got = answer(ref, "result", job=job)
    assert got["counts_source"] == "shots" and got["execution"] == EXECUTION and got["shots"] == 10
    result = read_result(got, 10, bits=8)
    assert result.counts == {"00000001": 10} and result.execution.verbatim
    assert read_status(answer(ref, "status", job=job)).status == "done"
    assert read_cancel(answer(ref, "cancel", job=job)).status == "done"  # a finished job: how it ended


def test_estimates_and_billing():
    assert read_estimate(answer(ReferenceProvider(), "estimate", program=probe(), shots=10)).kind == "free"
    unpriced = ReferenceProvider(ReferenceOptions(unpriced=True))
    assert read_billing(answer(unpriced, "describe")["billing"]).kind == "unpriced"
    estimate = answer(unpriced, "estimate", program=probe(), shots=10)
    assert read_estimate(estimate).kind == "unpriced" and estimate["priced"] is False


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        ({"op": "describe"}, "invalid"),
        ({"protocol": "wai.quantum.provider/2", "op": "describe"}, "unsupported_version"),
        ({"protocol": 1, "op": "describe"}, "invalid"),
        ({"protocol": PROTOCOL}, "invalid"),
        ({"protocol": PROTOCOL, "op": "teleport"}, "unsupported"),
        (message("submit", program=probe(), shots=0), "invalid"),
        (message("submit", program=probe(), shots="10"), "invalid"),
        (message("submit", program=probe(), shots=True), "invalid"),
        (message("submit", program=probe()), "invalid"),
        (message("estimate", shots=10), "invalid"),
        (message("estimate", landscape={"op": "run"}, shots=10), "invalid"),  # §11 is not offered
        (message("submit", program=probe(), shots=10, seed="one"), "invalid"),
        (message("submit", program=probe(), shots=100_001), "refused"),
        (message("estimate", program=probe(), shots=100_001), "refused"),
        (message("submit", program={**probe(), "format": "wai.native/0"}, shots=10), "invalid"),
        (message("submit", program="X 0", shots=10), "invalid"),
        (
            message("submit", program=native("rzsxxcz", [{"gate": "h", "qubits": [0]}], [0]), shots=10),
            "invalid",
        ),
        (
            message(
                "submit",
                program=native("rzsxxcz", [{"gate": "rz", "qubits": [0], "turns": [[5, 2]]}], [0]),
                shots=1,
            ),
            "invalid",
        ),
        (message("submit", program={**native("rzsxxcz", [], [0]), "bits": 2}, shots=10), "invalid"),
        (message("submit", program=probe("prxcz"), shots=10), "refused"),  # a basis the device does not run
        (
            message("submit", program=native("rzsxxcz", [{"gate": "x", "qubits": [8]}], [0]), shots=10),
            "refused",
        ),
        (message("submit", program=native("rzsxxcz", [], []), shots=10), "refused"),
        *[  # §3: a member missing is invalid, whatever a reader could take it to be (issue 21)
            (message(op, program={k: v for k, v in probe().items() if k != member}, shots=10), "invalid")
            for op in ("estimate", "submit")
            for member in ("format", "basis", "bits", "gates", "measure")
        ],
        (message("submit", program={**probe(), "gates": [{"gate": "x"}]}, shots=10), "invalid"),
        (message("submit", program={**probe(), "measure": [{"qubit": 0}]}, shots=10), "invalid"),
        (message("submit", program={**probe(), "gates": [RZ_NO_TURNS]}, shots=1), "invalid"),
        (message("status", job="j-17"), "not_found"),
        (message("result", job="../../etc/passwd"), "not_found"),
        (message("cancel", job="ref-000000000000000000000000"), "not_found"),
        (message("status"), "invalid"),
        (message("status", job=17), "invalid"),
        (message("describe", settings="eu"), "invalid"),
        ([], "invalid"),
    ],
)
def test_every_message_is_read(ref, msg, expected):
    assert code(ref, msg) == expected


def test_unknown_fields_and_settings_are_ignored(ref):
    got = ref.handle({**message("describe"), "settings": {"device": "any"}, "later": 1})
    assert got["ok"] is True


def test_jobs_folder_outlives_the_provider(tmp_path):
    first = ReferenceProvider(ReferenceOptions(jobs_dir=tmp_path / "jobs"))
    job = answer(first, "submit", program=probe(), shots=30)["job"]
    assert [p.name for p in (tmp_path / "jobs").iterdir()] == [f"{job}.json"]  # written whole: no temp left
    second = ReferenceProvider(ReferenceOptions(jobs_dir=tmp_path / "jobs"))
    assert read_result(answer(second, "result", job=job), 30).counts == {"00000001": 30}
    record = json.loads((tmp_path / "jobs" / f"{job}.json").read_text())
    record["status"] = "cancelled"
    (tmp_path / "jobs" / f"{job}.json").write_text(json.dumps(record))
    assert code(second, message("result", job=job)) == "refused"  # a cancelled job has no counts
    assert read_cancel(answer(second, "cancel", job=job)).status == "cancelled"
    record.update(status="failed", reason="the simulation failed")
    (tmp_path / "jobs" / f"{job}.json").write_text(json.dumps(record))
    failed = read_cancel(answer(second, "cancel", job=job))
    assert (failed.status, failed.reason) == ("failed", "the simulation failed")
    assert read_status(answer(second, "status", job=job)).reason == "the simulation failed"


def test_credential_required(monkeypatch):
    provider = ReferenceProvider(ReferenceOptions(credential="s3cr3t-TOKEN-123", require_credential=True))
    assert provider.authorized("s3cr3t-TOKEN-123")
    assert not provider.authorized("s3cr3t-TOKEN-12")
    assert not provider.authorized(None)
    assert not ReferenceProvider(ReferenceOptions(require_credential=True)).authorized("anything")


def test_http_refuses_what_is_not_a_json_post():
    import httpx

    server = serve_http(None, "127.0.0.1", 0, quiet=True)
    try:
        url = server.url
        with httpx.Client(trust_env=False) as http:
            assert http.get(url).status_code == 405
            assert http.put(url, content=b"{}").status_code == 405
            assert http.post(url, content=b"{}", headers={"Content-Type": "text/plain"}).status_code == 400
            not_json = http.post(url, content=b"not json", headers={"Content-Type": "application/json"})
            assert not_json.status_code == 400
            got = http.post(url, json={"op": "describe"})
            assert got.status_code == 200 and got.json()["error"]["code"] == "invalid"
            assert http.post(url, json=message("describe")).json()["ok"] is True
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="this machine"):
        serve_http(None, "0.0.0.0", 0)
