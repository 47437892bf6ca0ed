"""Both transports of quantum-provider-protocol §2 against the reference provider, and against providers
that misbehave on the transport they concern: each failure a ProviderError naming provider and op."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from qsolve.providers.client import ProviderClient
from qsolve.providers.errors import ProviderError
from qsolve.providers.messages import PROTOCOL
from qsolve.providers.over_http import HttpTransport, InsecureCredential, is_loopback
from qsolve.providers.over_process import ProcessTransport
from qsolve.providers.program_env import CREDENTIAL_ENV
from qsolve.providers.reference import ReferenceOptions, serve_http

SECRET = "s3cr3t-TOKEN-123"
N = 8
PROBE = {
    "format": "wai.native/1",
    "basis": "rzsxxcz",
    "bits": N,
    "gates": [{"gate": "x", "qubits": [0]}],
    "measure": [{"qubit": q, "bit": q} for q in range(N)],
}
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference", "--stdio"]


def full_cycle(client: ProviderClient) -> str:
    """describe, estimate, submit, status, result, cancel: the job's id."""
    d = client.describe()
    assert d.provenance == "simulator" and d.device().basis() == "rzsxxcz" and d.billing.free
    assert client.estimate(PROBE, 100).free
    job = client.submit(PROBE, 100, seed=1)
    assert client.status(job).status == "done"
    result = client.result(job, 100, bits=N)
    assert result.counts == {"00000001": 100} and result.counts_source == "shots"
    assert result.execution.verbatim is True
    assert client.result(job, 100).counts == result.counts  # asked twice: the same
    assert client.cancel(job).status == "done"
    return job


def error_of(call) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


# ---- HTTP against the reference -------------------------------------------------------------------------


@pytest.fixture
def reference_http(tmp_path):
    server = serve_http(ReferenceOptions(jobs_dir=tmp_path / "jobs"), "127.0.0.1", 0, quiet=True)
    yield server
    server.shutdown()
    server.server_close()


def test_http_full_cycle_and_a_later_connection(reference_http, tmp_path):
    with ProviderClient.over_http("ref", reference_http.url, settings={"region": "here"}) as client:
        job = full_cycle(client)
    with ProviderClient.over_http("ref", reference_http.url) as later:
        assert later.result(job, 100).counts == {"00000001": 100}
    # and a process that keeps its jobs in the same folder reads it too (§5.7)
    argv = [*REFERENCE, "--jobs", str(tmp_path / "jobs")]
    with ProviderClient.over_process("ref-process", argv) as other:
        assert other.status(job).status == "done"
        assert other.result(job, 100).counts == {"00000001": 100}


def test_http_reference_command_line_with_a_credential(tmp_path):
    env = {**os.environ, CREDENTIAL_ENV: SECRET}
    argv = [sys.executable, "-m", "qsolve.providers.reference", "--http", "127.0.0.1:0", "--quiet"]
    proc = subprocess.Popen(
        [*argv, "--require-credential", "--unpriced"], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with ProviderClient.over_http("lab", url, credential=SECRET) as client:
            d = client.describe()
            assert d.billing.kind == "unpriced"
            assert client.estimate(PROBE, 10).kind == "unpriced"
            job = client.submit(PROBE, 10)
            assert client.result(job, 10).counts == {"00000001": 10}
        for wrong in ("s3cr3t-TOKEN-124", None):
            with ProviderClient.over_http("lab", url, credential=wrong) as client:
                e = error_of(client.describe)
            assert (e.provider, e.op, e.code) == ("lab", "describe", "unauthorized")
            assert str(e).startswith("provider lab: describe: unauthorized: ")
            assert SECRET not in str(e) and "s3cr3t-TOKEN-124" not in str(e)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ---- HTTP providers that misbehave ------------------------------------------------------------------------


class Scripted(ThreadingHTTPServer):
    """An HTTP provider on 127.0.0.1 answering each POST with ``respond(message, headers)``:
    ``(status, body bytes)``, or ``(status, body, extra headers)``."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address) -> None:
        pass  # a client that stopped waiting (the time-out test) closed its end

    def __init__(self, respond):
        self.respond = respond
        self.seen: list[tuple[str, dict, bytes]] = []
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/wai"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, dict(self.headers), body))
        status, data, *extra = self.server.respond(json.loads(body or b"null"), self.headers)
        self.send_response(status)
        for k, v in (extra[0] if extra else {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def scripted():
    servers = []

    def make(respond) -> Scripted:
        servers.append(Scripted(respond))
        return servers[-1]

    yield make
    for s in servers:
        s.stop()


GOOD_DESCRIBE = json.dumps(
    {
        "ok": True,
        "protocol": PROTOCOL,
        "provider": "x",
        "device": "y",
        "provenance": "silicon",
        "qubits": 2,
        "native_gates": ["rz", "sx", "x", "cz"],
        "connectivity": "all",
        "billing": {"free": True},
    }
).encode()


def test_http_sends_a_json_post_with_the_bearer_credential(scripted):
    server = scripted(lambda msg, headers: (200, GOOD_DESCRIBE))
    with ProviderClient.over_http("lab", server.url, credential=SECRET, settings={"device": "a"}) as client:
        assert client.describe().qubits == 2
    path, headers, body = server.seen[0]
    assert path == "/wai" and headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert json.loads(body) == {"protocol": PROTOCOL, "op": "describe", "settings": {"device": "a"}}
    with ProviderClient.over_http("lab", server.url) as client:
        client.describe()
    assert "Authorization" not in server.seen[1][1]


def test_http_500_with_a_good_looking_body_is_a_transport_failure(scripted):
    server = scripted(lambda msg, headers: (500, GOOD_DESCRIBE))
    with ProviderClient.over_http("lab", server.url) as client:
        e = error_of(client.describe)
    assert (e.provider, e.op, e.code) == ("lab", "describe", "transport")
    assert str(e).startswith("provider lab: describe: transport: HTTP 500")


def test_http_redirect_is_not_followed(scripted):
    target = scripted(lambda msg, headers: (200, GOOD_DESCRIBE))
    server = scripted(lambda msg, headers: (307, b"", {"Location": target.url}))
    with ProviderClient.over_http("lab", server.url, credential=SECRET) as client:
        e = error_of(lambda: client.submit(PROBE, 10))
    assert (e.op, e.code) == ("submit", "transport") and "HTTP 307" in str(e)
    assert target.seen == []  # the credential went nowhere else


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<html>ok</html>", "not JSON"),
        (b"[1, 2]", "array"),
        (b'{"ok": NaN}', "not JSON"),
        (b"\xff", "UTF-8"),
    ],
)
def test_http_200_that_is_not_an_object_breaks_the_protocol(scripted, body, words):
    server = scripted(lambda msg, headers: (200, body))
    with ProviderClient.over_http("lab", server.url) as client:
        e = error_of(lambda: client.status("j-1"))
    assert (e.provider, e.op, e.code) == ("lab", "status", "protocol") and words in str(e)


def test_http_provider_that_hangs_times_out(scripted):
    release = threading.Event()

    def hang(msg, headers):
        release.wait(10)
        return 200, GOOD_DESCRIBE

    server = scripted(hang)
    try:
        with ProviderClient.over_http("slow", server.url, timeout=0.3) as client:
            started = time.monotonic()
            e = error_of(lambda: client.result("j-1", 10))
        assert time.monotonic() - started < 3
        assert (e.provider, e.op, e.code) == ("slow", "result", "timeout")
        assert str(e).startswith("provider slow: result: timeout:")
    finally:
        release.set()


def test_http_no_server_is_a_transport_failure():
    with ProviderClient.over_http("gone", "http://127.0.0.1:9/") as client:
        e = error_of(client.describe)
    assert (e.provider, e.op, e.code) == ("gone", "describe", "transport")


def test_no_credential_over_plain_http_to_another_machine():
    e = error_of(lambda: ProviderClient.over_http("lab", "http://192.0.2.7/wai", credential=SECRET))
    assert (e.provider, e.op, e.code) == ("lab", "connect", "transport") and SECRET not in str(e)
    with pytest.raises(InsecureCredential):
        HttpTransport("http://lab.example/wai", credential=SECRET)
    HttpTransport("https://lab.example/wai", credential=SECRET).close()  # over https: fine
    HttpTransport("http://lab.example/wai").close()  # no credential: fine
    for here in ("http://localhost:8000/", "http://127.0.0.2/", "http://[::1]:8000/"):
        HttpTransport(here, credential=SECRET).close()
    assert is_loopback("127.255.0.1") and is_loopback("::1") and not is_loopback("128.0.0.1")
    with pytest.raises(Exception, match="not an http"):
        HttpTransport("ftp://lab.example/")
    with pytest.raises(Exception, match="user or a password"):
        HttpTransport(f"https://me:{SECRET}@lab.example/")


# ---- a local process against the reference ---------------------------------------------------------------


def test_process_full_cycle_and_a_second_process(tmp_path):
    argv = [*REFERENCE, "--jobs", str(tmp_path / "jobs")]
    client = ProviderClient.over_process("ref", argv)
    job = full_cycle(client)
    pid = client.transport.pid
    client.close()
    assert _gone(pid)
    with ProviderClient.over_process("ref", argv) as second:
        assert second.result(job, 100).counts == {"00000001": 100}
        assert second.cancel(job).status == "done"
        e = error_of(lambda: second.status("ref-ffffffffffffffffffffffff"))
        assert (e.op, e.code) == ("status", "not_found")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# ---- processes that misbehave -----------------------------------------------------------------------------

PRELUDE = """
import hashlib, json, os, sys, time
def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()
DESCRIBE = {GOOD}
""".replace("{GOOD}", repr(json.loads(GOOD_DESCRIBE)))


def script(tmp_path: Path, body: str, name: str = "provider.py") -> list[str]:
    path = tmp_path / name
    path.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(path)]


def test_process_that_hangs_is_killed_and_times_out(tmp_path):
    argv = script(tmp_path, "for line in sys.stdin:\n    time.sleep(60)\n")
    client = ProviderClient.over_process("hung", argv, timeout=0.5)
    started = time.monotonic()
    e = error_of(lambda: client.submit(PROBE, 10))
    assert time.monotonic() - started < 5
    assert (e.provider, e.op, e.code) == ("hung", "submit", "timeout")
    assert str(e).startswith("provider hung: submit: timeout:")
    assert _gone(client.transport.pid)
    later = error_of(client.describe)
    assert (later.op, later.code) == ("describe", "transport") and "not used again" in str(later)
    client.close()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("for line in sys.stdin:\n    print('hello from the provider', flush=True)\n", "not JSON"),
        ("for line in sys.stdin:\n    print('[1]', flush=True)\n", "array"),
        (
            "for line in sys.stdin:\n    sys.stdout.write(json.dumps(DESCRIBE) + '\\n' + json.dumps(DESCRIBE)"
            " + '\\n')\n    sys.stdout.flush()\n",
            "more than one line",
        ),
        # a banner before the first answer: read as the answer (not JSON), or beside it
        (
            "print('starting up', flush=True)\nfor line in sys.stdin:\n    answer(DESCRIBE)\n",
            "not JSON|more than one line",
        ),
    ],
)
def test_process_output_that_breaks_the_protocol_ends_it(tmp_path, body, words):
    client = ProviderClient.over_process("odd", script(tmp_path, body))
    e = error_of(client.describe)
    assert (e.provider, e.op, e.code) == ("odd", "describe", "protocol") and re.search(words, str(e))
    assert _gone(client.transport.pid)
    assert "not used again" in str(error_of(lambda: client.status("j")))
    client.close()


def test_process_second_line_written_late_is_caught_at_the_next_message(tmp_path):
    body = "for line in sys.stdin:\n    answer(DESCRIBE)\n    time.sleep(0.2)\n    answer(DESCRIBE)\n"
    client = ProviderClient.over_process("late", script(tmp_path, body))
    client.describe()
    time.sleep(0.6)
    e = error_of(client.describe)
    assert (e.op, e.code) == ("describe", "protocol") and "unasked" in str(e)
    client.close()


def test_process_that_dies_after_submit(tmp_path):
    body = """
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "submit":
            answer({"ok": True, "job": "j-1"})
            sys.exit(3)
        answer(DESCRIBE)
    """
    client = ProviderClient.over_process("brief", script(tmp_path, body))
    assert client.describe().qubits == 2
    assert client.submit(PROBE, 10) == "j-1"
    e = error_of(lambda: client.status("j-1"))
    assert (e.provider, e.op, e.code) == ("brief", "status", "transport")
    assert "ended" in str(e) and "exit code 3" in str(e)
    client.close()


def test_process_line_longer_than_allowed(tmp_path):
    body = "for line in sys.stdin:\n    sys.stdout.write('x' * 100_000)\n    sys.stdout.flush()\n"
    body += "    time.sleep(5)\n"
    transport = ProcessTransport(script(tmp_path, body), max_line=1000)
    client = ProviderClient("long", transport, timeout=5)
    e = error_of(client.describe)
    assert e.code == "protocol" and "longer than 1000" in str(e)
    client.close()


def test_process_that_does_not_start():
    client = ProviderClient.over_process("none", ["/nonexistent/provider", "--stdio"])
    e = error_of(client.describe)
    assert (e.provider, e.op, e.code) == ("none", "describe", "transport") and "did not start" in str(e)
    client.close()
    with pytest.raises(ProviderError, match="list of strings"):
        ProviderClient.over_process("shell", "python -m provider")


def test_process_credential_is_in_the_environment_only(tmp_path, monkeypatch):
    monkeypatch.setenv(CREDENTIAL_ENV, "another-providers-credential")
    body = """
    for line in sys.stdin:
        seen = os.environ.get("WAI_PROVIDER_CREDENTIAL", "")
        digest = hashlib.sha256(seen.encode()).hexdigest()
        answer({**DESCRIBE, "device": digest, "provider": json.dumps(sys.argv)})
    """
    argv = script(tmp_path, body)
    with ProviderClient.over_process("env", argv, credential=SECRET) as client:
        d = client.describe()
    assert d.device_name == hashlib.sha256(SECRET.encode()).hexdigest()
    assert SECRET not in d.provider and json.loads(d.provider) == argv[1:]
    with ProviderClient.over_process("env", argv) as client:  # none: and not another provider's
        assert client.describe().device_name == hashlib.sha256(b"").hexdigest()


def test_process_log_is_drained_bounded_and_redacted(tmp_path):
    body = """
    sys.stderr.write("e" * 3_000_000)
    sys.stderr.write("\\nthe token is " + os.environ["WAI_PROVIDER_CREDENTIAL"] + "\\n")
    sys.stderr.flush()
    for line in sys.stdin:
        sys.stderr.write("asked: " + line)
        sys.stderr.write("half " + os.environ["WAI_PROVIDER_CREDENTIAL"][:8])
        sys.stderr.flush()
        time.sleep(0.05)
        sys.stderr.write(os.environ["WAI_PROVIDER_CREDENTIAL"][8:] + " end\\n")
        sys.stderr.flush()
        echo = "wrong token " + os.environ["WAI_PROVIDER_CREDENTIAL"]
        answer({"ok": False, "error": {"code": "unauthorized", "message": echo}})
    """
    log_file = tmp_path / "provider.log"
    transport = ProcessTransport(
        script(tmp_path, body), credential=SECRET, log_path=log_file, log_chars=100_000
    )
    client = ProviderClient("ref", transport, credential=SECRET, timeout=10)
    e = error_of(lambda: client.submit(PROBE, 10))
    assert str(e) == "provider ref: submit: unauthorized: wrong token [credential redacted]"
    assert SECRET not in e.detail
    client.close()
    log = client.log()
    assert "the token is [credential redacted]" in log and "half [credential redacted] end" in log
    assert "earlier characters dropped" in log and len(log) < 100_200
    assert SECRET not in log and SECRET[:8] not in log
    kept = log_file.read_text()
    assert len(kept) > 3_000_000 and SECRET not in kept and "half [credential redacted] end" in kept
