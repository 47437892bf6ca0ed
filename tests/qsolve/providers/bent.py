"""A provider written for the tests: the reference provider with one rule bent (issue 21), over standard
input and output or HTTP on this machine.

    python tests/qsolve/providers/bent.py --stdio TWIST [ARG]
    python tests/qsolve/providers/bent.py --http TWIST [ARG]      # prints its URL on one line

Twists:

    record FILE          writes its environment (a process) or every request's headers and body (HTTP)
                         to FILE, as JSON, and answers as the reference does
    wide | narrow        each outcome of a result one character longer (a 0 added last) or shorter
    calibration ID       each result names the calibration snapshot ID
    accepts WORDS        an estimate of a program the reference refuses with a message holding WORDS
                         is answered free
    any-credential       requires a credential, and takes any one at all
    echo-credential      requires a credential, and quotes the one it was given when it refuses it
    runs-on              every job it took stays running; cancel cancels it
    cannot-cancel        every job it took stays running; describe says cancels: false, and cancel
                         is unsupported
    lax-submit           refuses at estimate what the reference refuses, and takes it at submit all the
                         same (a job id, never run)
    charges              every result says it charged 1.00 EUR, while every estimate says free
    resonators           the reference's star device (a resonator at its centre), as it is; the
                         star device too for ``accepts "moves back"`` and ``accepts "never measured"``
    lax-angle GATE:WORDS an estimate of a program whose one gate is GATE, refused invalid by the
                         reference with a message holding WORDS, is answered free

With BENT_BASIS set, the device runs that basis of §4 (default rzsxxcz).

Credentialed twists read theirs from WAI_PROVIDER_CREDENTIAL, as the reference does. With BENT_LOG set,
each message's op is appended to that file.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from qsolve.providers.messages import error_answer, ok
from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

CREDENTIAL_ENV = "WAI_PROVIDER_CREDENTIAL"


class Bent:
    def __init__(self, twist: str, arg: str | None) -> None:
        self.twist, self.arg = twist, arg
        self.credential = os.environ.get(CREDENTIAL_ENV) or None
        star = twist == "resonators" or (twist == "accepts" and arg in ("moves back", "never measured"))
        options = ReferenceOptions(
            connectivity="star" if star else "line",
            qubits=4,
            max_shots=1000,
            basis=os.environ.get("BENT_BASIS") or "rzsxxcz",
        )
        self.reference = ReferenceProvider(options)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        if twist == "record" and arg:
            self.write({"environment": dict(os.environ)})

    def write(self, doc: dict[str, Any]) -> None:
        with open(self.arg, "w", encoding="utf-8") as f:
            json.dump(doc, f)

    def answer(self, message: Any, token: str | None) -> dict[str, Any]:
        if self.twist in ("any-credential", "echo-credential"):
            if not token:
                return error_answer("unauthorized", "no credential")
            if token != self.credential and self.twist == "echo-credential":
                return error_answer("unauthorized", f"the credential {token} is not accepted")
        op = message.get("op") if isinstance(message, dict) else None
        if os.environ.get("BENT_LOG"):
            with open(os.environ["BENT_LOG"], "a", encoding="utf-8") as f:
                f.write(f"{op}\n")
        if self.twist in ("runs-on", "cannot-cancel") and op in ("status", "cancel"):
            if self.reference.jobs.get(str(message.get("job"))) is None:
                return error_answer("not_found", "no such job")
            if op == "status":
                return ok(status="running")
            if self.twist == "cannot-cancel":
                return error_answer("unsupported", "this device cannot cancel a job")
            return ok(status="cancelled")
        answer = self.reference.handle(message)
        if self.twist == "lax-submit" and op == "submit" and answer.get("ok") is False:
            return ok(job=f"lax-{len(self.requests)}")
        if op == "describe" and self.twist == "cannot-cancel":
            answer["cancels"] = False
        refused = answer.get("ok") is False and str(self.arg) in str(answer["error"]["message"])
        if self.twist == "lax-angle" and op == "estimate" and self._lax_angle(message, answer):
            return ok(free=True)
        if self.twist == "accepts" and refused and op == "estimate":
            return ok(free=True)
        if op == "result" and answer.get("ok"):
            if self.twist == "wide":
                answer["counts"] = {k + "0": v for k, v in answer["counts"].items()}
            elif self.twist == "narrow":
                answer["counts"] = {k[1:]: v for k, v in answer["counts"].items()}
            elif self.twist == "calibration":
                answer["calibration"] = {"id": self.arg}
            elif self.twist == "charges":
                answer["charged"] = {"amount": "1.00", "currency": "EUR"}
        return answer


    def _lax_angle(self, message: dict[str, Any], answer: dict[str, Any]) -> bool:
        """The reference refused, invalid, a program whose one gate is GATE, with WORDS in its message."""
        gate, _, words = str(self.arg).partition(":")
        if answer.get("ok") is not False or answer["error"]["code"] != "invalid":
            return False
        program = message.get("program")
        gates = program.get("gates") if isinstance(program, dict) else None
        if not (isinstance(gates, list) and len(gates) == 1 and isinstance(gates[0], dict)):
            return False
        return gates[0].get("gate") == gate and words in answer["error"]["message"]


def serve_stdio(bent: Bent) -> None:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    for line in sys.stdin.buffer:
        if line.strip():
            answer = bent.answer(json.loads(line), bent.credential)
            out.write(json.dumps(answer).encode() + b"\n")


def serve_http(bent: Bent) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if bent.twist == "record":
                with bent.lock:
                    bent.requests.append({"headers": dict(self.headers.items()), "body": body.decode()})
                    bent.write({"requests": bent.requests})
            auth = self.headers.get("Authorization") or ""
            token = auth[7:] if auth.startswith("Bearer ") else None
            data = json.dumps(bent.answer(json.loads(body), token)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    import qiskit_aer  # noqa: F401 - loaded before any request's thread (as the reference does)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    how, twist, *rest = sys.argv[1:]
    provider = Bent(twist, rest[0] if rest else None)
    serve_stdio(provider) if how == "--stdio" else serve_http(provider)
