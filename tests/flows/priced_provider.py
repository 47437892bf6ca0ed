"""A provider written for the cost tests (issue 21): its ``describe`` says ``billing: {"free": true}``
while every ``estimate`` prices the job, billed by the shot (both valid forms; §7: the estimate decides,
so the jobs are not free). It is the reference provider with its estimate replaced: the price is read
from a file at each ``estimate``, so a test can raise it between the quote and the run. Every message it
receives is recorded (one JSON line each, with ``taken``: whether it answered ok), so a test counts the
submits it was sent and reads which was taken first.

Over a process (:data:`SCRIPT`, written to a file and run with this Python) and over HTTP
(:class:`PricedServer`, on 127.0.0.1, port 0).
"""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from qsolve.providers.reference import ReferenceOptions, ReferenceProvider, ReferenceServer

#: argv: PRICE_FILE RECORD_FILE [FAILS]; a price of ``free`` leaves the reference's own (free) estimate; with
#: FAILS ``result``, every ``result`` answers ``internal`` (the job ran, its counts are lost); standard output
#: carries answers alone
SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    price, record = Path(sys.argv[1]), Path(sys.argv[2])
    provider = ReferenceProvider(ReferenceOptions(qubits=4))
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        answer = provider.handle(message)
        if message.get("op") == "result" and sys.argv[3:] == ["result"]:
            answer = {"ok": False, "error": {"code": "internal", "message": "the device lost the counts"}}
        if message.get("op") == "estimate" and answer.get("ok") and price.read_text().strip() != "free":
            answer = {"ok": True, "free": False, "amount": price.read_text().strip(), "currency": "EUR",
                      "unit": "shot"}
        with record.open("a") as f:  # each message, and whether it was taken
            f.write(json.dumps(dict(message, taken=answer.get("ok") is True)) + "\\n")
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)


class PricedProvider(ReferenceProvider):
    """The reference, its estimates priced from ``price`` (a file), every message recorded."""

    def __init__(self, price: Path, record: Path, *fails: str) -> None:
        super().__init__(ReferenceOptions(qubits=4))
        self.price, self.record, self.fails = price, record, fails
        self.lock = threading.Lock()

    def handle(self, message: Any) -> dict[str, Any]:
        answer = super().handle(message)
        op = message.get("op") if isinstance(message, dict) else None
        if op == "result" and self.fails == ("result",):
            answer = {"ok": False, "error": {"code": "internal", "message": "the device lost the counts"}}
        amount = self.price.read_text().strip()
        if op == "estimate" and answer.get("ok") and amount != "free":
            answer = {"ok": True, "free": False, "amount": amount, "currency": "EUR", "unit": "shot"}
        with self.lock, self.record.open("a") as f:
            f.write(json.dumps(dict(message, taken=answer.get("ok") is True)) + "\n")
        return answer


class PricedServer:
    """:class:`PricedProvider` over HTTP on 127.0.0.1; ``stop()`` ends it."""

    def __init__(self, price: Path, record: Path, *fails: str) -> None:
        self.server = ReferenceServer(("127.0.0.1", 0), PricedProvider(price, record, *fails), quiet=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def ops(record: Path) -> list[str]:
    """The operations the provider received, in order."""
    if not record.exists():
        return []
    return [json.loads(line).get("op") for line in record.read_text().splitlines() if line.strip()]


def received(record: Path) -> list[dict[str, Any]]:
    """The messages the provider received, in order, each with ``taken``: whether it answered ok."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def process_command(folder: Path, price: Path, record: Path, *fails: str) -> list[str]:
    script = folder / "priced_provider.py"
    script.write_text(SCRIPT)
    record.touch()  # what it writes: made here; its entry allows it by name (--allow-write)
    return [sys.executable, str(script), str(price), str(record), *fails]
