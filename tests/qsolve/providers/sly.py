"""A provider written for the tester's attacks on cost and secrets (issue 21), independently of qsolve's
code: it imports nothing of qsolve, and speaks quantum-provider-protocol/1 from the text alone.

Its behaviour is read from a JSON file (argv[1]) at every message, so a test can change it between a
quote and a run: ``describe`` (members laid over the device's own description), ``estimate`` (the
answer, or a list of answers taken in turn from when it was set, the last kept), ``result`` (members
laid over the result's own, the counts among them), ``status`` (the status every job reports) and
``raw`` (an operation's answer as text). Every message it receives is appended to argv[2], one JSON
line each; at start it writes its whole environment there as ``{"environ": {...}}``.

``python sly.py CONFIG RECORD --stdio`` answers on standard input and output (§2.2);
``python sly.py CONFIG RECORD --http`` serves on 127.0.0.1, port 0, and prints its URL (§2.1).
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROTOCOL = "wai.quantum.provider/1"
CONFIG, RECORD = Path(sys.argv[1]), Path(sys.argv[2])
JOBS: dict[str, dict] = {}
ESTIMATES: list = [None, 0]


def record(obj: dict) -> None:
    with RECORD.open("a") as f:
        f.write(json.dumps(obj) + "\n")


def config() -> dict:
    return json.loads(CONFIG.read_text()) if CONFIG.exists() else {}


def describe(cfg: dict) -> dict:
    return {
        "protocol": PROTOCOL,
        "provider": "sly",
        "device": "sly-2",
        "provenance": "simulator",
        "simulator": "an answering machine that measures every qubit as 0",
        "qubits": 2,
        "native_gates": ["rz", "sx", "x", "cz"],
        "connectivity": "all",
        "calibration": {"id": "sly-cal"},
        "billing": {"free": True},
    } | cfg.get("describe", {})


def handle(message: dict, authorization: str | None) -> dict:
    cfg = config()
    record(dict(message, authorization=authorization))
    op = message.get("op")
    if op == "describe":
        return {"ok": True, **describe(cfg)}
    if op == "estimate":
        said = cfg.get("estimate", {"free": True})
        if ESTIMATES[0] != said:  # a list is taken in turn from the time it was set
            ESTIMATES[:] = [said, 0]
        if isinstance(said, list):
            said = said[min(ESTIMATES[1], len(said) - 1)]
        ESTIMATES[1] += 1
        return {"ok": True, **said}
    if op == "submit":
        job = f"s-{len(JOBS) + 1}"
        JOBS[job] = {"shots": message["shots"], "bits": message["program"]["bits"]}
        return {"ok": True, "job": job}
    if op == "status":
        if message.get("job") not in JOBS:
            return {"ok": False, "error": {"code": "not_found", "message": "no such job"}}
        return {"ok": True, "status": cfg.get("status", "done")}
    if op == "result":
        job = JOBS.get(message.get("job"))
        if job is None:
            return {"ok": False, "error": {"code": "not_found", "message": "no such job"}}
        return {"ok": True, "counts": {"0" * job["bits"]: job["shots"]}, "shots": job["shots"]} | cfg.get(
            "result", {}
        )
    if op == "cancel":
        return {"ok": True, "status": "cancelled"}
    return {"ok": False, "error": {"code": "unsupported", "message": f"no op {op}"}}


def text_of(message: dict, answer: dict, credential: str | None = None) -> str:
    """The answer's text: ``raw`` in the configuration gives an operation's text as it is, with
    ``$CREDENTIAL`` replaced by the credential this provider was given (its environment's, or the
    bearer token of an HTTP request)."""
    raw = config().get("raw", {}).get(message.get("op"))
    if raw is None:
        return json.dumps(answer)
    return raw.replace("$CREDENTIAL", credential or os.environ.get("WAI_PROVIDER_CREDENTIAL", "?"))


def stdio() -> None:
    for line in sys.stdin:
        if line.strip():
            message = json.loads(line)
            sys.stdout.write(text_of(message, handle(message, None)) + "\n")
            sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        message, authorization = json.loads(body), self.headers.get("Authorization")
        bearer = (authorization or "").removeprefix("Bearer ") or None
        answer = text_of(message, handle(message, authorization), bearer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    record({"environ": dict(os.environ)})
    if sys.argv[3] == "--http":
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
        server.serve_forever()
    else:
        stdio()
