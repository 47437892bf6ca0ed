"""A describe answer of a few bytes may claim any size of device (issue 35): its places, coupled pairs and
moves are bounded where the answer is read, over either transport, refused in one line naming the
provider, the field and the bound, and so is every string of the other answers (an estimate's note, a
status's reason, a result's execution note), nothing of them kept; the compiler lists no more places
than the circuit uses on a device whose every pair is coupled."""

from __future__ import annotations

import pytest
from qiskit import QuantumCircuit

from qsolve.providers.client import ProviderClient
from qsolve.providers.compiler import _coupling, compile_circuit
from qsolve.providers.device import MAX_PAIRS, MAX_PLACES, Device
from qsolve.providers.errors import ProviderError
from qsolve.providers.messages import MAX_NAME_CHARS, MAX_TEXT_CHARS
from tests.qsolve.providers.test_misbehaving import home, servers, sessions  # noqa: F401 - fixtures, by name

GATES = ("rz", "sx", "x", "cz")


def claiming(**fields):
    def alter(message, answer, headers):
        if message.get("op") == "describe":
            answer = {**answer, **fields}
        return 200, answer

    return alter


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (
            {"qubits": 10**12, "connectivity": "all"},
            f"qubits: input should be less than or equal to {MAX_PLACES}",
        ),
        ({"qubits": MAX_PLACES + 1, "connectivity": "all"}, f"less than or equal to {MAX_PLACES}"),
        ({"qubits": 4, "connectivity": [[0, 1]] * (MAX_PAIRS + 1)}, f"at most {MAX_PAIRS} items"),
    ],
)
def test_an_http_providers_device_past_the_bound_is_refused_in_one_line(servers, fields, said):  # noqa: F811
    server = servers(claiming(**fields))
    client = ProviderClient.over_http("huge", server.url)
    try:
        with pytest.raises(ProviderError) as caught:
            client.describe()
    finally:
        client.close()
    text = str(caught.value)
    assert text.startswith("provider huge: describe:") and said in text and len(text.splitlines()) == 1


def test_a_device_at_the_bound_is_read(servers):  # noqa: F811
    server = servers(claiming(qubits=MAX_PLACES, connectivity="all"))
    client = ProviderClient.over_http("big", server.url)
    try:
        device = client.describe().device()
    finally:
        client.close()
    assert device.qubits == MAX_PLACES


def test_an_all_coupled_device_is_compiled_on_the_places_the_circuit_uses():
    device = Device(qubits=MAX_PLACES, native_gates=GATES, connectivity="all", resonators=(0,))
    places, coupling, direct, _ = _coupling(device, 2)
    assert places == [1, 2] and coupling.size() == 2 and direct == 1
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    assert set(compile_circuit(circuit, device, seed=3).layout) == {1, 2}


def test_pairs_through_a_resonator_are_found_by_its_neighbours():
    # a star: resonator 0, qubits 1..4 coupled to it, 1 and 2 moving into it
    device = Device(
        qubits=5, native_gates=GATES, connectivity=((1, 0), (2, 0), (3, 0), (4, 0)), resonators=(0,),
        moves=((1, 0), (2, 0)),
    )  # fmt: skip
    places, coupling, direct, through = _coupling(device, 2)
    assert places == [1, 2, 3, 4] and direct == 0
    assert through == 5  # 1-2, 1-3, 1-4, 2-3, 2-4
    assert device.connects(0, 3) and device.connects(3, 0) and not device.connects(1, 2)


def _ghz(n: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n, n)
    circuit.h(0)
    for q in range(1, n):
        circuit.cx(0, q)
    circuit.measure(range(n), range(n))
    return circuit


def test_a_star_at_the_bound_is_routed_over_a_region_never_its_every_pair():
    """Round-2 finding 9: a star of 4,096 places, each coupled to one resonator and moving into it, joins
    every pair through it (8.4 million pairs): the map a circuit is routed over holds a region of at most
    REGION_PLACES places and the pairs among them, and the circuit compiles, checked, in it."""
    from qsolve.providers.compiler import REGION_PLACES

    star = tuple((i, 0) for i in range(1, MAX_PLACES))
    device = Device(qubits=MAX_PLACES, native_gates=GATES, connectivity=star, resonators=(0,), moves=star)
    places, coupling, direct, through = _coupling(device, 3)
    assert places == list(range(1, REGION_PLACES + 1)) and direct == 0
    assert through == REGION_PLACES * (REGION_PLACES - 1) // 2 and len(coupling.get_edges()) == 2 * through
    compiled = compile_circuit(_ghz(3), device, seed=2)
    assert set(compiled.layout) <= set(places) and "a region of the device's 4095" in compiled.transpiler


def test_the_region_is_a_connected_part_large_enough_for_the_circuit():
    # places 0-1 a pair, 2 alone, then a line 3 … 63: a circuit of 3 qubits goes on the line
    line = tuple((q, q + 1) for q in range(3, 63))
    device = Device(qubits=64, native_gates=GATES, connectivity=((0, 1), *line))
    assert _coupling(device, 2)[0] == [0, 1]
    places, coupling, direct, _ = _coupling(device, 3)
    assert places == list(range(3, 23)) and direct == 19 and coupling.is_connected()
    assert set(compile_circuit(_ghz(3), device, seed=1).layout) <= set(places)


def test_a_circuit_wider_than_the_check_is_refused_before_any_map_is_built():
    from qsolve.providers.compiler import CompileError

    device = Device(qubits=64, native_gates=GATES, connectivity=tuple((q, q + 1) for q in range(63)))
    with pytest.raises(CompileError, match="the circuit has 21 qubits: the check simulates at most 20"):
        compile_circuit(_ghz(21), device)


# ---- the other answers' strings (issue 35): as describe's, names 256 characters, other text 4,096 -------

LONG_TEXT = "x" * (MAX_TEXT_CHARS + 1)
LONG_NAME = "E" * (MAX_NAME_CHARS + 1)


def answering(op: str, **fields):
    def alter(message, answer, headers):
        if message.get("op") == op and answer.get("ok"):
            answer = {**answer, **fields}
        return 200, answer

    return alter


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    return circuit


def _through(client: ProviderClient, op: str) -> None:
    """The client's operations in order, up to ``op``."""
    program = compile_circuit(bell(), client.describe().device()).program.model_dump(
        mode="json", exclude_none=True
    )
    client.estimate(program, 100)
    if op == "estimate":
        return
    job = client.submit(program, 100)
    if op == "submit":
        return
    client.status(job)
    if op == "status":
        return
    if op == "cancel":
        client.cancel(job)
        return
    client.result(job, 100, bits=2)


@pytest.mark.parametrize(
    ("op", "fields", "field", "bound"),
    [
        ("estimate", {"note": LONG_TEXT}, "note", MAX_TEXT_CHARS),
        ("estimate", {"currency": LONG_NAME, "free": False, "amount": "1"}, "currency", MAX_NAME_CHARS),
        ("estimate", {"later": {"deep": [LONG_TEXT]}}, "later.deep[0]", MAX_TEXT_CHARS),
        ("submit", {"job": LONG_NAME}, "job", MAX_NAME_CHARS),
        ("status", {"reason": LONG_TEXT}, "reason", MAX_TEXT_CHARS),
        ("cancel", {"reason": LONG_TEXT}, "reason", MAX_TEXT_CHARS),
        ("result", {"note": LONG_TEXT}, "note", MAX_TEXT_CHARS),
        ("result", {"charged": {"amount": "1", "currency": LONG_NAME}}, "charged.currency", MAX_NAME_CHARS),
        ("result", {LONG_NAME: 1}, "a key of", MAX_NAME_CHARS),
    ],
)
def test_a_providers_string_past_its_bound_is_refused_in_one_line(servers, op, fields, field, bound):  # noqa: F811
    server = servers(answering(op, **fields))
    client = ProviderClient.over_http("loud", server.url)
    try:
        with pytest.raises(ProviderError) as caught:
            _through(client, op)
    finally:
        client.close()
    text = str(caught.value)
    assert text.startswith(f"provider loud: {op}: protocol: the {op} answer does not read: "), text[:300]
    assert field in text and f"past the bound of {bound}" in text, text[:300]
    assert len(text.splitlines()) == 1 and len(text) < 400  # nothing of the long string is said
    if op == "estimate":
        assert "submit" not in server.ops


def test_strings_at_their_bounds_are_read(servers):  # noqa: F811
    server = servers(answering("status", reason="r" * MAX_TEXT_CHARS))
    client = ProviderClient.over_http("wordy", server.url)
    try:
        program = compile_circuit(bell(), client.describe().device()).program.model_dump(mode="json")
        assert client.status(client.submit(program, 10)).reason == "r" * MAX_TEXT_CHARS
    finally:
        client.close()


def test_a_result_past_its_bound_is_sealed_nowhere(servers, sessions):  # noqa: F811
    from qsolve.providers.jobs import JobStopped

    server = servers(answering("result", execution={"note": LONG_TEXT}))
    session = sessions("loud", ProviderClient.over_http("loud", server.url), "http", yes=True)
    with pytest.raises(JobStopped) as caught:
        session.run(bell(), 100)
    said = str(caught.value)
    assert "the result answer does not read" in said and "nothing was sealed" in said, said[:300]
    job = session.book.get_provider_job(session.records[0])
    assert str(getattr(job.status, "value", job.status)) == "failed" and LONG_TEXT not in repr(job)
