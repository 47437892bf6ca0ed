"""The reference provider (quantum-provider-protocol §9): ``wai.quantum.provider/1`` around qiskit-aer's
exact state-vector simulator. It is what the tests run against over both transports, and the template
to copy: a provider for any device is this module with :func:`simulate` replaced by the device.

    python -m qsolve.providers.reference --stdio
    python -m qsolve.providers.reference --http 127.0.0.1:0      # prints its address on one line
        [--unpriced] [--qubits N] [--basis B] [--connectivity all|line|star] [--jobs DIR]
        [--max-shots N] [--require-credential [--credential-file PATH]]

It reads every message as a provider must (§3, §4): a message without ``protocol`` is ``invalid``,
another protocol ``unsupported_version``, an ``op`` it does not know ``unsupported``, a field missing
or of the wrong type ``invalid`` (zero shots among them), a program that
:func:`~qsolve.providers.program.read_program` refuses with its code, too many shots ``refused``, a
job it does not hold ``not_found``, and a result of a job that is not done ``refused``. A job is
simulated when it is submitted, seeded by its ``seed`` (or :data:`DEFAULT_SEED`), so its counts are
reproducible; they are tallied from the simulator's sampled shots (``counts_source: shots``), and the
gates run as written on the places named.

Jobs outlive the connection that submitted them (§5.7): with ``jobs_dir`` each is a JSON file there,
written whole (a temporary file, then a rename), which any later process or connection reads; without
one they live as long as the process. Settings (``settings``) are accepted and not used.

With ``require_credential`` the provider takes messages only with its credential: over HTTP an
``Authorization: Bearer`` header equal to ``credential`` (read by :func:`main` from ``--credential-file``,
else from ``WAI_PROVIDER_CREDENTIAL``), over standard input its own environment's
``WAI_PROVIDER_CREDENTIAL`` set by the client, equal to the one ``--credential-file`` holds (without one,
whatever credential the client set is taken as its own: it cannot tell a wrong one).
A missing or wrong one is ``unauthorized``, and no answer or log quotes it.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import json
import os
import re
import secrets
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qsolve.providers.device import BASES, MOVE_BASES, Device
from qsolve.providers.messages import OPS, PROTOCOL, REQUESTS, error_answer, ok
from qsolve.providers.program_env import CREDENTIAL_ENV
from qsolve.providers.reference_options import add_arguments
from qsolve.providers.transport import MAX_ANSWER_BYTES, is_loopback

DEFAULT_SEED = 1
MAX_QUBITS = 24  # a state vector of 2^24 amplitudes, 256 MiB
MAX_MESSAGE_BYTES = MAX_ANSWER_BYTES
SIMULATOR = (
    "qiskit-aer's exact state-vector simulator (AerSimulator, method statevector), noiseless: "
    "each shot sampled from the program's exact final state, seeded by the submit's seed"
)
EXECUTION = {
    "mitigation": "none",
    "twirling": "none",
    "decoupling": "none",
    "remapping": "off",
    "optimisation": "off",
    "verbatim": True,
}
JOB_ID = re.compile(r"ref-[0-9a-f]{24}")


class ReferenceOptions(BaseModel):
    """How the reference provider presents its device."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    qubits: int = Field(default=8, ge=1, le=MAX_QUBITS)
    basis: Literal["rzsxxcz", "prxcz", "gpizz", "prxrzxx"] = "rzsxxcz"
    connectivity: Literal["all", "line", "star"] = "all"
    unpriced: bool = False
    max_shots: int = Field(default=100_000, ge=1)
    jobs_dir: Path | None = None
    credential: str | None = Field(default=None, repr=False)
    require_credential: bool = False
    provider: str = "qsolve-reference"

    @model_validator(mode="after")
    def _star(self) -> ReferenceOptions:
        if self.connectivity == "star":
            if self.basis not in MOVE_BASES:
                raise ValueError(
                    f"a star device (a resonator at its centre) runs {' or '.join(MOVE_BASES)} only"
                )
            if self.qubits < 2:
                raise ValueError("a star device has at least one qubit and its resonator")
        return self

    def device(self) -> Device:
        n = self.qubits
        gates = BASES[self.basis]
        if self.connectivity == "all":
            return Device(qubits=n, native_gates=gates, connectivity="all")
        if self.connectivity == "line":
            return Device(qubits=n, native_gates=gates, connectivity=tuple((i, i + 1) for i in range(n - 1)))
        centre = n - 1
        around = tuple((i, centre) for i in range(centre))
        return Device(
            qubits=n, native_gates=(*gates, "move"), connectivity=around, resonators=(centre,), moves=around
        )

    def description(self) -> dict[str, Any]:
        device = self.device()
        answer: dict[str, Any] = {
            "protocol": PROTOCOL,
            "provider": self.provider,
            "device": f"aer-statevector-{self.qubits}-{self.basis}-{self.connectivity}",
            "provenance": "simulator",
            "simulator": SIMULATOR,
            "qubits": device.qubits,
            "native_gates": list(device.native_gates),
            "connectivity": "all" if device.connectivity == "all" else [list(p) for p in device.connectivity],
        }
        if device.resonators:
            answer["resonators"] = list(device.resonators)
            answer["moves"] = [list(m) for m in device.moves]
        answer.update(
            calibration={"id": "reference"},
            billing={"free": False, "priced": False} if self.unpriced else {"free": True},
            max_shots=self.max_shots,
            seeded=True,
            approximate=False,
            cancels=True,
        )
        return answer


# ---- jobs ---------------------------------------------------------------------------------------


class MemoryJobs:
    """Jobs that live as long as the process."""

    def __init__(self) -> None:
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, job: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._jobs.get(job)
            return json.loads(json.dumps(record)) if record is not None else None

    def put(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._jobs[record["id"]] = json.loads(json.dumps(record))


class FolderJobs:
    """One JSON file a job, written whole, so any later process reads it (§5.7)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def get(self, job: str) -> dict[str, Any] | None:
        if not JOB_ID.fullmatch(job):  # an id names a file here: nothing else is looked up
            return None
        try:
            return json.loads((self.folder / f"{job}.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def put(self, record: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".job-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(record, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / f"{record['id']}.json")
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


# ---- the simulation -------------------------------------------------------------------------------


def simulate(program: Any, device: Device, shots: int, seed: int) -> dict[str, int]:
    """The program's counts: ``shots`` samples of its exact final state, seeded, keyed as §6 writes
    outcomes (bit 0 last). The one part a provider for a real device replaces."""
    from qiskit_aer import AerSimulator

    circuit = program.to_circuit(device)
    result = AerSimulator(method="statevector").run(circuit, shots=shots, seed_simulator=seed).result()
    counts = result.get_counts(0)
    return {outcome.replace(" ", ""): int(n) for outcome, n in sorted(counts.items())}


# ---- the provider ---------------------------------------------------------------------------------


class ReferenceProvider:
    """Answers one message at a time (thread-safe: the HTTP server calls it from many threads)."""

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        self.options = options or ReferenceOptions()
        self.device = self.options.device()
        self._description = self.options.description()
        self.jobs: MemoryJobs | FolderJobs = (
            FolderJobs(self.options.jobs_dir) if self.options.jobs_dir else MemoryJobs()
        )

    def authorized(self, token: str | None) -> bool:
        """Whether a message carrying ``token`` may be answered."""
        if not self.options.require_credential:
            return True
        expected = self.options.credential
        if not expected or not token:
            return False
        return hmac.compare_digest(token.encode(), expected.encode())

    def handle(self, message: Any) -> dict[str, Any]:
        """The answer to one message (never raises)."""
        try:
            return self._handle(message)
        except _Answer as answer:
            return error_answer(answer.code, answer.message)
        except Exception as exc:  # noqa: BLE001 - a provider answers every message
            return error_answer("internal", f"the reference provider failed: {type(exc).__name__}: {exc}")

    def _handle(self, message: Any) -> dict[str, Any]:
        if not isinstance(message, dict):
            raise _Answer("invalid", "a message is a JSON object")
        if "protocol" not in message:
            raise _Answer("invalid", "the message has no protocol")
        protocol = message["protocol"]
        if not isinstance(protocol, str):
            raise _Answer("invalid", "protocol is not a string")
        if protocol != PROTOCOL:
            raise _Answer(
                "unsupported_version", f"this provider speaks {PROTOCOL} only, not {protocol[:80]!r}"
            )
        op = message.get("op")
        if not isinstance(op, str):
            raise _Answer("invalid", "the message has no op")
        if op not in OPS:
            raise _Answer("unsupported", f"no operation {op[:80]!r}: this provider offers {', '.join(OPS)}")
        model = REQUESTS[op]
        known = {k: v for k, v in message.items() if k in model.model_fields}
        try:
            request = model.model_validate(known)
        except ValidationError as exc:
            raise _Answer("invalid", _problems(exc)) from None
        return getattr(self, f"_{op}")(request)

    def _describe(self, request: Any) -> dict[str, Any]:
        return ok(**self._description)

    def _program(self, request: Any):
        from qsolve.providers.program import ProgramRefused, read_program

        try:
            program = read_program(request.program, self.device)
        except ProgramRefused as exc:
            raise _Answer(exc.code, exc.message) from None
        if program.bits < 1:
            raise _Answer("refused", "the program measures no bit: it has no counts to give")
        if request.shots > self.options.max_shots:
            raise _Answer(
                "refused", f"{request.shots} shots: this device takes at most {self.options.max_shots}"
            )
        return program

    def _estimate(self, request: Any) -> dict[str, Any]:
        self._program(request)
        if self.options.unpriced:
            return ok(free=False, priced=False, note="the reference provider sets no price")
        return ok(free=True)

    def _submit(self, request: Any) -> dict[str, Any]:
        program = self._program(request)
        seed = DEFAULT_SEED if request.seed is None else request.seed
        job = "ref-" + secrets.token_hex(12)
        record: dict[str, Any] = {
            "id": job,
            "shots": request.shots,
            "seed": seed,
            "submitted_ms": int(time.time() * 1000),
        }
        try:
            record.update(status="done", counts=simulate(program, self.device, request.shots, seed))
        except Exception as exc:  # noqa: BLE001 - the job failed; it is still the person's job
            record.update(status="failed", reason=f"the simulation failed: {type(exc).__name__}: {exc}")
        self.jobs.put(record)
        return ok(job=job)

    def _job(self, request: Any) -> dict[str, Any]:
        record = self.jobs.get(request.job)
        if record is None:
            raise _Answer("not_found", f"no job {request.job[:80]!r}")
        return record

    def _status(self, request: Any) -> dict[str, Any]:
        record = self._job(request)
        return ok(status=record["status"], **({"reason": record["reason"]} if record.get("reason") else {}))

    def _result(self, request: Any) -> dict[str, Any]:
        record = self._job(request)
        if record["status"] != "done":
            raise _Answer("refused", f"job {record['id']} is {record['status']}: it has no counts")
        return ok(
            counts=record["counts"],
            shots=record["shots"],
            counts_source="shots",
            execution=dict(EXECUTION),
        )

    def _cancel(self, request: Any) -> dict[str, Any]:
        record = self._job(request)
        if record["status"] in ("queued", "running"):  # never, here: a job runs when it is submitted
            record.update(status="cancelled")
            self.jobs.put(record)
            return ok(status="cancelled")
        if record["status"] == "failed":
            return ok(status="failed", reason=record.get("reason") or "the job failed")
        return ok(status=record["status"])


class _Answer(Exception):  # noqa: N818 - an error answer, raised to the top of handle
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg'][0].lower()}{err['msg'][1:]}")
    return "the message is malformed: " + "; ".join(parts)


def _encode(answer: dict[str, Any]) -> bytes:
    return json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _parse(data: bytes) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    return json.loads(data.decode("utf-8"), parse_constant=no_constant)


# ---- standard input and output (§2.2) -------------------------------------------------------------


def serve_stdio(options: ReferenceOptions | None, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Answer each line of ``stdin`` with one line on ``stdout``, until ``stdin`` ends.

    Binary streams (``sys.stdin.buffer``); a line that is not JSON is answered ``invalid``."""
    provider = ReferenceProvider(options)
    token = os.environ.get(CREDENTIAL_ENV)
    while True:
        line = stdin.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # the rest of the line is that message's too
                line = stdin.readline(MAX_MESSAGE_BYTES)
            answer = error_answer("invalid", f"the message is longer than {MAX_MESSAGE_BYTES} bytes")
        elif not line.strip():
            continue
        elif not provider.authorized(token):
            answer = error_answer(
                "unauthorized", f"this provider takes messages only with its credential ({CREDENTIAL_ENV})"
            )
        else:
            try:
                message = _parse(line)
            except (ValueError, RecursionError):
                answer = error_answer("invalid", "the message is not JSON")
            else:
                answer = provider.handle(message)
        stdout.write(_encode(answer) + b"\n")
        stdout.flush()


# ---- HTTP (§2.1) ------------------------------------------------------------------------------------


class ReferenceServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], provider: ReferenceProvider, *, quiet: bool = False) -> None:
        self.provider = provider
        self.quiet = quiet
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: ReferenceServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if not self.server.quiet:
            sys.stderr.write(f"reference provider: {self.address_string()}: {format % args}\n")

    def _send(self, status: int, body: bytes, *, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status: int, why: str, *, read: bool = False, **headers: str) -> None:
        """A status but 200, and the connection closed; a small body not ``read`` yet is read first,
        so that closing does not reset the connection before the client reads the refusal."""
        length = self.headers.get("Content-Length") or ""
        if not read and length.isdigit() and int(length) <= 1 << 20:
            self.rfile.read(int(length))
        self._send(status, _encode({"error": why}), headers={"Connection": "close", **headers})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            return self._refuse(400, "a message is a POST of Content-Type application/json")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return self._refuse(400, "a message has a Content-Length")
        if int(length) > MAX_MESSAGE_BYTES:
            return self._refuse(413, f"a message has at most {MAX_MESSAGE_BYTES} bytes", read=True)
        data = self.rfile.read(int(length))
        provider = self.server.provider
        auth = self.headers.get("Authorization") or ""
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        if not provider.authorized(token):
            why = "no credential" if token is None else "a credential this provider does not accept"
            return self._send(200, _encode(error_answer("unauthorized", why)))
        try:
            message = _parse(data)
        except (ValueError, RecursionError):
            return self._refuse(400, "the body is not JSON", read=True)
        self._send(200, _encode(provider.handle(message)))

    def _not_allowed(self) -> None:
        self._refuse(405, "a message is a POST", Allow="POST")

    do_GET = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve_http(
    options: ReferenceOptions | None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    background: bool = True,
    quiet: bool = False,
) -> ReferenceServer:
    """The reference provider at ``http://host:port/`` (this machine only; port 0 picks one: see
    ``server.url``). With ``background`` it serves in a daemon thread until ``server.shutdown()``;
    otherwise the caller calls ``server.serve_forever()``."""
    if not is_loopback(host):
        raise ValueError(f"the reference provider serves plain http:// on this machine only, not on {host}")
    # Qiskit's compiled core, loaded first in a request's thread that then ends, crashes the next thread
    # that uses it (a segmentation fault, qiskit 2.6): it is loaded here, before any request's thread
    import qiskit_aer  # noqa: F401

    import qsolve.providers.program  # noqa: F401

    server = ReferenceServer((host.strip("[]"), port), ReferenceProvider(options), quiet=quiet)
    if background:
        threading.Thread(
            target=server.serve_forever, args=(0.1,), name="reference-provider", daemon=True
        ).start()
    return server


# ---- the command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qsolve.providers.reference",
        description="The reference provider of wai.quantum.provider/1: qiskit-aer's exact simulator.",
    )
    add_arguments(parser)
    return serve(parser.parse_args(argv), parser)


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Serve as ``args`` say, over standard input and output or HTTP, until the input or the server ends."""
    try:
        options = ReferenceOptions(
            qubits=args.qubits,
            basis=args.basis,
            connectivity=args.connectivity,
            unpriced=args.unpriced,
            max_shots=args.max_shots,
            jobs_dir=args.jobs,
            credential=_accepted(args.credential_file, parser),
            require_credential=args.require_credential,
        )
    except ValidationError as exc:
        parser.error("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False)))
    if args.require_credential and args.http and not options.credential:
        parser.error(f"--require-credential needs the credential in {CREDENTIAL_ENV} or --credential-file")
    if args.stdio:
        out = _protocol_stdout()
        serve_stdio(options, sys.stdin.buffer, out)
        return 0
    host, port = args.http
    try:
        server = serve_http(options, host, port, background=False, quiet=args.quiet)
    except (ValueError, OSError) as exc:
        print(f"reference provider: {exc}", file=sys.stderr)
        return 2
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.server_close()
    return 0


def _accepted(path: Path | None, parser: argparse.ArgumentParser) -> str | None:
    """The credential the provider accepts: the file's, when one is named, else its environment's."""
    if path is None:
        return os.environ.get(CREDENTIAL_ENV) or None
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        parser.error(f"--credential-file {path}: {exc.strerror or exc}")


def _protocol_stdout() -> IO[bytes]:
    """Standard output kept for answers alone: file descriptor 1 becomes standard error, so nothing
    else written there (a library's print, a C library's warning) reaches the client as an answer."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


if __name__ == "__main__":
    raise SystemExit(main())
