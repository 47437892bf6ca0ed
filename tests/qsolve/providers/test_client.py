"""ProviderClient: the messages it builds, how it reads each answer, and the errors it raises, against
real providers on 127.0.0.1 that answer what each test scripts (quantum-provider-protocol §3, §5, §7)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from qsolve.providers.client import ProviderClient
from qsolve.providers.errors import PROVIDER_CODES, ProviderError
from qsolve.providers.messages import PROTOCOL

SECRET = "s3cr3t-TOKEN-123"
PROGRAM = {
    "format": "wai.native/1",
    "basis": "rzsxxcz",
    "bits": 2,
    "gates": [{"gate": "x", "qubits": [0]}],
    "measure": [{"qubit": 0, "bit": 0}, {"qubit": 1, "bit": 1}],
}
DESCRIBE = {
    "ok": True,
    "protocol": PROTOCOL,
    "provider": "lab",
    "device": "two",
    "provenance": "simulator",
    "simulator": "a two-qubit state vector",
    "qubits": 2,
    "native_gates": ["rz", "sx", "x", "cz"],
    "connectivity": [[0, 1]],
    "calibration": {"id": "c1"},
    "billing": {"free": False, "priced": False},
}


class Provider(ThreadingHTTPServer):
    """Answers each message with ``answers[op]`` (a dict, or a callable of the message); records them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, answers: dict):
        self.answers = answers
        self.messages: list[dict] = []
        self.headers_seen: list[dict] = []
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.messages.append(message)
        self.server.headers_seen.append(dict(self.headers))
        got = self.server.answers.get(
            message.get("op"), {"ok": False, "error": {"code": "unsupported", "message": "?"}}
        )
        body = json.dumps(got(message) if callable(got) else got).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def provider():
    made = []

    def make(**answers) -> Provider:
        made.append(Provider(answers))
        return made[-1]

    yield make
    for p in made:
        p.shutdown()
        p.server_close()


def client_of(server: Provider, **kw) -> ProviderClient:
    return ProviderClient.over_http("lab", server.url, **kw)


def raised(call) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


def fail(code: str, message: str) -> dict:
    return {"ok": False, "error": {"code": code, "message": message}}


def test_every_message_carries_protocol_op_and_settings(provider):
    server = provider(
        describe=DESCRIBE,
        estimate={"ok": True, "free": False, "priced": False},
        submit={"ok": True, "job": "j-1"},
        status={"ok": True, "status": "done"},
        result={"ok": True, "counts": {"01": 10}, "shots": 10, "counts_source": "shots"},
        cancel={"ok": True, "status": "done"},
    )
    with client_of(server, settings={"device": "b"}, credential=SECRET) as client:
        assert client.describe().device().connects(0, 1)
        assert client.estimate(PROGRAM, 10).kind == "unpriced"
        assert client.submit(PROGRAM, 10, seed=4) == "j-1"
        assert client.status("j-1").status == "done"
        assert client.result("j-1", 10, bits=2).counts == {"01": 10}
        assert client.cancel("j-1").status == "done"
    ops = [m["op"] for m in server.messages]
    assert ops == ["describe", "estimate", "submit", "status", "result", "cancel"]
    assert all(m["protocol"] == PROTOCOL and m["settings"] == {"device": "b"} for m in server.messages)
    assert server.messages[1] == {
        "protocol": PROTOCOL,
        "op": "estimate",
        "settings": {"device": "b"},
        "program": PROGRAM,
        "shots": 10,
    }
    assert server.messages[2]["seed"] == 4 and server.messages[3]["job"] == "j-1"
    assert all(h["Authorization"] == f"Bearer {SECRET}" for h in server.headers_seen)


@pytest.mark.parametrize("code", PROVIDER_CODES)
def test_ok_false_is_the_providers_code(provider, code):
    server = provider(status=fail(code, "no job j-17"))
    with client_of(server) as client:
        e = raised(lambda: client.status("j-17"))
    assert (e.provider, e.op, e.code, e.detail) == ("lab", "status", code, "no job j-17")
    assert str(e) == f"provider lab: status: {code}: no job j-17"


def test_a_code_this_text_does_not_know_is_internal(provider):
    server = provider(submit=fail("overheated", "the fridge is warm"))
    with client_of(server) as client:
        e = raised(lambda: client.submit(PROGRAM, 10))
    assert e.code == "internal" and "overheated" in str(e) and "the fridge is warm" in str(e)


@pytest.mark.parametrize(
    ("op", "answer", "words"),
    [
        ("describe", {"ok": True, "protocol": PROTOCOL}, "description"),
        ("describe", {**DESCRIBE, "ok": "yes"}, '"ok"'),
        ("describe", {k: v for k, v in DESCRIBE.items() if k != "ok"}, '"ok"'),
        ("describe", {"ok": False}, "error {code, message}"),
        ("submit", {"ok": True}, "submit"),
        ("status", {"ok": True, "status": "lost"}, "status"),
        ("result", {"ok": True, "counts": {"01": 9}}, "sum to 9"),
        ("result", {"ok": True, "counts": {"01": 10}, "counts_source": "guess"}, "counts_source"),
        ("result", {"ok": True, "counts": {"01": 10}, "execution": {"verbatim": True}}, "execution"),
        ("cancel", {"ok": True, "status": "queued"}, "cancel"),
    ],
)
def test_an_answer_that_breaks_the_protocol(provider, op, answer, words):
    server = provider(**{op: answer})
    calls = {
        "describe": lambda c: c.describe(),
        "submit": lambda c: c.submit(PROGRAM, 10),
        "status": lambda c: c.status("j"),
        "result": lambda c: c.result("j", 10),
        "cancel": lambda c: c.cancel("j"),
    }
    with client_of(server) as client:
        e = raised(lambda: calls[op](client))
    assert (e.provider, e.op, e.code) == ("lab", op, "protocol") and words in str(e)


def test_estimates_unknown_cost(provider):
    server = provider(estimate={"ok": True, "free": False, "amount": 3, "currency": "USD"})
    with client_of(server) as client:
        estimate = client.estimate(PROGRAM, 10)  # of no form: a cost unknown, not an error
    assert estimate.kind == "refused" and not estimate.cost_known and "amount" not in estimate.shown()
    server = provider(estimate=fail("unsupported", "no estimates here"))
    with client_of(server) as client:
        e = raised(lambda: client.estimate(PROGRAM, 10))
        assert (e.op, e.code) == ("estimate", "unsupported")
        cost = client.cost(PROGRAM, 10)
    assert cost.kind == "refused" and "no estimates here" in cost.reason and not cost.free
    server = provider(estimate=fail("quota", "out of credit"))
    with client_of(server) as client:
        assert raised(lambda: client.cost(PROGRAM, 10)).code == "quota"


def test_a_message_the_client_will_not_send(provider):
    server = provider(submit={"ok": True, "job": "j"})
    with client_of(server) as client:
        for call in (
            lambda: client.submit(PROGRAM, 0),
            lambda: client.submit(PROGRAM, 10, seed=-1),
            lambda: client.status(""),
            lambda: client.submit({**PROGRAM, "gates": [{"turns": [[float("nan"), 1]]}]}, 10),
        ):
            e = raised(call)
            assert e.code == "invalid" and "was not sent" in str(e)
    assert server.messages == []


def test_raw_sends_the_message_as_it_is(provider):
    server = provider(describe=DESCRIBE)
    with client_of(server, credential=SECRET) as client:
        got = client.raw({"op": "teleport", "protocol": "x/9"})
        assert got["ok"] is False and got["error"]["code"] == "unsupported"
        assert client.raw({"op": "describe"})["device"] == "two"
    assert server.messages == [{"op": "teleport", "protocol": "x/9"}, {"op": "describe"}]


def test_a_provider_that_echoes_the_credential(provider):
    def echo(message):
        return fail("unauthorized", f"wrong token {SECRET}; you sent {SECRET}")

    server = provider(
        describe={**DESCRIBE, "device": f"device-{SECRET}", "later": [SECRET]},
        submit=echo,
        status={"ok": True, "status": "lost", "reason": SECRET},
        result={"ok": True, "counts": {"01": 10}, "calibration": {"id": SECRET}},
    )
    with client_of(server, credential=SECRET) as client:
        e = raised(lambda: client.submit(PROGRAM, 10))
        assert str(e) == (
            "provider lab: submit: unauthorized: "
            "wrong token [credential redacted]; you sent [credential redacted]"
        )
        d = client.describe()
        assert SECRET not in json.dumps(d.answer) and d.device_name == "device-[credential redacted]"
        assert SECRET not in str(raised(lambda: client.status("j")))
        assert client.result("j", 10).calibration.id == "[credential redacted]"
        assert SECRET not in json.dumps(client.raw({"protocol": PROTOCOL, "op": "submit"}))


def test_the_credential_is_redacted_from_the_providers_own_name():
    e = ProviderError(
        f"n-{SECRET}", "describe", "transport", f"at https://{SECRET}.example", secrets=[SECRET]
    )
    assert SECRET not in str(e) and SECRET not in e.provider


def test_timeout_is_positive():
    with pytest.raises(ValueError):
        ProviderClient.over_http("lab", "http://127.0.0.1:9/", timeout=0)
