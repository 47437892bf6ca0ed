"""A local stand-in for IBM Quantum, for the tests: enough of the IBM Quantum Platform's REST protocol, on
127.0.0.1, for the real qiskit-ibm-runtime client (0.51) to run a SamplerV2 job against it unchanged.

Everything is one :class:`~http.server.ThreadingHTTPServer`; its parts sit under their own prefixes, which
the client is pointed at through its own settings (``../shared/FACTS.md``, "IBM Quantum through
qiskit-ibm-runtime 0.51.0"):

    POST /iam/identity/token                  IAM: an API key for a JWT-looking access token (``IAM_URL``)
    POST /search/v3/resources/search          Global Search: the account's instances (``GLOBAL_SEARCH_URL``)
    GET  /catalog/{plan}                      Global Catalog: an instance's plan (``GLOBAL_CATALOG_URL``)
    GET  /api/v1/backends                     the devices (``QISKIT_IBM_URL`` is the base, /api/v1 beneath it)
    GET  /api/v1/backends/{name}/configuration, /properties, /status
    GET  /api/v1/instances/usage
    POST /api/v1/jobs                         a job: ``program_id`` sampler, ``params.pubs`` base64 zlib QPY
    GET  /api/v1/jobs/{id}, /results, /metrics;  POST /api/v1/jobs/{id}/cancel

A device's configuration and properties are the package's own fake-provider files (``conf_prague.json``,
``props_prague.json``: a 33-qubit device of rz, sx, x and cz), served unchanged. A job's circuits are run
on qiskit-aer (seeded), on the qubits they use, with the device's own readout errors, and answered as the
service answers a SamplerV2 job: a ``PrimitiveResult`` of ``SamplerPubResult``s whose ``DataBin`` holds a
``BitArray`` of every shot per classical register (the form ``qiskit_ibm_runtime.json.RuntimeDecoder``
reads, written here by hand).

Modes for the tests: :attr:`IbmStandIn.down` (a device whose status is not operational, and whose job
submissions answer 503), :attr:`IbmStandIn.down_after` (a device that goes down once it has taken that many
jobs: down mid-run), :attr:`IbmStandIn.fail_jobs` (jobs end ``Failed`` with that reason),
:attr:`IbmStandIn.hold` (jobs stay ``Queued`` until :meth:`IbmStandIn.release`, to cancel one or to stop a
client before it ends). A wrong API key is refused at IAM with 401. Every request is recorded
(:attr:`IbmStandIn.requests`), headers and body as received, so a test can read the options sent and find
where a credential went.
"""

from __future__ import annotations

import base64
import io
import json
import secrets
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import qiskit_aer  # noqa: F401  (Aer imported in the main thread first: see FACTS.md, "A crash to know")
import qiskit_ibm_runtime.fake_provider
from qiskit import QuantumCircuit, qpy
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, ReadoutError

FAKE_DATA = Path(qiskit_ibm_runtime.fake_provider.__file__).parent / "backends"
#: the devices it can serve: the IBM name, and the fake provider's folder of its files
DEVICES = {"ibm_prague": "prague", "ibm_fez": "fez", "ibm_torino": "torino"}
CRN = "crn:v1:bluemix:public:quantum-computing:us-east:a/5tand1n0000000000000000000000000:0000-standin::"
PLAN = "standin-open-plan"
TOKEN_S = 3600


@dataclass(frozen=True)
class Recorded:
    """One request as it arrived, and the status it was answered with."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int = 0

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Job:
    id: str
    backend: str
    body: dict[str, Any]
    pubs: list[tuple[QuantumCircuit, int]]
    number: int = 0  # the stand-in's count of jobs when it took this one: its simulator's seed
    status: str = "Queued"  # Queued, Running, Completed, Failed, Cancelled
    reason: str | None = None
    reason_code: int | None = None
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    running: datetime | None = None
    finished: datetime | None = None
    results: str | None = None
    go: threading.Event = field(default_factory=threading.Event)


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat().replace("+00:00", "Z")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def access_token(subject: str, lifetime_s: int = TOKEN_S) -> str:
    """A token of JWT form (the client decodes ``iat`` and ``exp`` without checking the signature)."""
    now = int(time.time())
    header = _b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "standin"}).encode())
    claims = {
        "iat": now,
        "exp": now + lifetime_s,
        "sub": subject,
        "iss": "ibm-standin",
        "nonce": secrets.token_hex(8),
    }
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(secrets.token_bytes(32))}"


def read_pubs(params: dict[str, Any]) -> list[tuple[QuantumCircuit, int]]:
    """``params.pubs`` as the client writes them: each ``[circuit, parameter values, shots]``, the circuit
    ``{"__type__": "QuantumCircuit", "__value__": base64 of zlib of QPY}``; a pub's shots, else the job's
    default (``params.shots``, else 4096)."""
    default = params.get("shots") or 4096
    out = []
    for pub in params["pubs"]:
        circuit_json = pub[0] if isinstance(pub, list) else pub
        if circuit_json.get("__type__") != "QuantumCircuit":
            raise ValueError("a pub's circuit is not a QuantumCircuit")
        data = zlib.decompress(base64.standard_b64decode(circuit_json["__value__"]))
        (circuit,) = qpy.load(io.BytesIO(data))
        shots = pub[2] if isinstance(pub, list) and len(pub) > 2 and pub[2] is not None else default
        out.append((circuit, int(shots)))
    return out


def _ndarray(array: np.ndarray) -> dict[str, Any]:
    """An array as the service writes one: ``np.save`` bytes, zlib, base64."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return {
        "__type__": "ndarray",
        "__value__": base64.standard_b64encode(zlib.compress(buffer.getvalue())).decode(),
    }


def _bit_array(samples: list[int], num_bits: int) -> dict[str, Any]:
    """A ``BitArray``: one row a shot, ``ceil(num_bits / 8)`` bytes, big-endian (bit 0 the last byte's
    lowest bit)."""
    width = max(1, (num_bits + 7) // 8)
    rows = np.array([list(s.to_bytes(width, "big")) for s in samples], dtype=np.uint8).reshape(
        len(samples), width
    )
    return {"__type__": "BitArray", "__value__": {"array": _ndarray(rows), "num_bits": num_bits}}


def primitive_result(pubs: list[dict[str, dict[str, Any]]], metadata: dict[str, Any]) -> str:
    """The results' text of a SamplerV2 job: ``PrimitiveResult`` of ``SamplerPubResult``s of ``DataBin``s."""
    results = [
        {
            "__type__": "SamplerPubResult",
            "__value__": {
                "data": {
                    "__type__": "DataBin",
                    "__value__": {"field_names": list(fields), "shape": [], "fields": fields},
                },
                "metadata": {"circuit_metadata": {}},
            },
        }
        for fields in pubs
    ]
    return json.dumps(
        {"__type__": "PrimitiveResult", "__value__": {"pub_results": results, "metadata": metadata}}
    )


class Device:
    """A device served from the fake provider's files."""

    def __init__(self, name: str) -> None:
        folder = FAKE_DATA / DEVICES[name]
        short = DEVICES[name]
        self.name = name
        self.configuration = json.loads((folder / f"conf_{short}.json").read_text())
        self.properties = json.loads((folder / f"props_{short}.json").read_text())
        self.readout = {}
        for q, entries in enumerate(self.properties["qubits"]):
            values = {e["name"]: e["value"] for e in entries}
            p10, p01 = values.get("prob_meas1_prep0"), values.get("prob_meas0_prep1")
            if p10 is None or p01 is None:
                p10 = p01 = values.get("readout_error", 0.0)
            self.readout[q] = (float(p10), float(p01))

    @property
    def qubits(self) -> int:
        return int(self.configuration["n_qubits"])

    def run(self, circuit: QuantumCircuit, shots: int, seed: int) -> dict[str, dict[str, Any]]:
        """Every shot of ``circuit`` on the qubits it uses, with their readout errors: one BitArray per
        classical register."""
        used = sorted(
            {
                circuit.find_bit(q).index
                for inst in circuit.data
                for q in inst.qubits
                if inst.name != "barrier"
            }
        )
        index = {q: i for i, q in enumerate(used)}
        compact = QuantumCircuit(max(1, len(used)), circuit.num_clbits)
        for inst in circuit.data:
            if inst.operation.name == "barrier":
                continue
            compact.append(
                inst.operation,
                [index[circuit.find_bit(q).index] for q in inst.qubits],
                [circuit.find_bit(c).index for c in inst.clbits],
            )
        model = NoiseModel()
        for q, i in index.items():
            p10, p01 = self.readout[q]
            model.add_readout_error(ReadoutError([[1 - p10, p10], [p01, 1 - p01]]), [i])
        sim = AerSimulator(noise_model=model, max_parallel_threads=1)
        memory = sim.run(compact, shots=shots, seed_simulator=seed, memory=True).result().get_memory(0)
        whole = [int(m.replace(" ", ""), 2) for m in memory]  # every clbit, the highest first
        fields = {}
        for creg in circuit.cregs:
            positions = [circuit.find_bit(b).index for b in creg]
            samples = [sum(((w >> p) & 1) << k for k, p in enumerate(positions)) for w in whole]
            fields[creg.name] = _bit_array(samples, len(positions))
        return fields


class IbmStandIn:
    """The stand-in: :meth:`start` it (or use it as a context manager), point the client at it with
    :meth:`environment`, read what it was sent in :attr:`requests`."""

    def __init__(
        self,
        api_key: str,
        *,
        devices: tuple[str, ...] = ("ibm_prague",),
        seed: int = 20261201,
        run_s: float = 0.05,
    ) -> None:
        self.api_key = api_key
        self.devices = {name: Device(name) for name in devices}
        self.seed = seed
        self.run_s = run_s  # how long a job stays Running
        self.down: set[str] = set()
        self.down_after: int | None = None
        self.fail_jobs: str | None = None
        self.hold = False
        self.requests: list[Recorded] = []
        self.jobs: dict[str, Job] = {}
        self._tokens: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life ----------------------------------------------------------------------------------------

    def start(self) -> IbmStandIn:
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="ibm-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self.release()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> IbmStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start the stand-in first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def environment(self, *, instance: bool = True) -> dict[str, str]:
        """The settings that point the real client here, as a person would set them."""
        env = {
            "QISKIT_IBM_CHANNEL": "ibm_quantum_platform",
            "QISKIT_IBM_URL": self.url,
            "IAM_URL": f"{self.url}/iam",
            "GLOBAL_SEARCH_URL": f"{self.url}/search",
            "GLOBAL_CATALOG_URL": f"{self.url}/catalog",
        }
        if instance:
            env["QISKIT_IBM_INSTANCE"] = CRN
        return env

    # --- what tests read -----------------------------------------------------------------------------

    def sent(self, method: str, path_prefix: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    def job_bodies(self) -> list[dict[str, Any]]:
        """The body of every job submission, as JSON."""
        return [r.json() for r in self.sent("POST", "/api/v1/jobs") if r.path == "/api/v1/jobs"]

    def release(self) -> None:
        """Let every held job run."""
        self.hold = False
        for job in list(self.jobs.values()):
            job.go.set()

    def wait_for(self, predicate, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("the stand-in did not get there in time")
            time.sleep(0.01)

    # --- jobs ----------------------------------------------------------------------------------------

    def submit(self, body: dict[str, Any]) -> Job:
        name = body.get("backend")
        if body.get("program_id") != "sampler":
            raise _Answer(
                404, {"errors": [{"code": 1203, "message": f"program {body.get('program_id')!r} not found"}]}
            )
        if name not in self.devices:
            raise _Answer(404, {"errors": [{"code": 1216, "message": f"backend {name!r} not found"}]})
        if name in self.down:
            raise _Answer(503, {"errors": [{"code": 1217, "message": f"backend {name} is not available"}]})
        pubs = read_pubs(body["params"])
        with self._lock:
            job = Job(
                id="d" + secrets.token_hex(9), backend=name, body=body, pubs=pubs, number=len(self.jobs)
            )
            self.jobs[job.id] = job
            if self.down_after is not None and len(self.jobs) >= self.down_after:
                self.down.add(name)
        if not self.hold:
            job.go.set()
        threading.Thread(target=self._run, args=(job,), name=f"job-{job.id}", daemon=True).start()
        return job

    def _run(self, job: Job) -> None:
        job.go.wait()
        if job.status != "Queued":
            return
        job.status, job.running = "Running", datetime.now(UTC)
        time.sleep(self.run_s)
        if job.status != "Running":  # cancelled while it ran
            return
        if self.fail_jobs is not None:
            job.status, job.reason, job.reason_code = "Failed", self.fail_jobs, 1517
            job.results = f"Error code 1517; {self.fail_jobs}"
            job.finished = datetime.now(UTC)
            return
        device = self.devices[job.backend]
        pubs = []
        for i, (circuit, shots) in enumerate(job.pubs):
            seed = int(np.random.SeedSequence([self.seed, job.number, i]).generate_state(1)[0])
            pubs.append(device.run(circuit, shots, seed))
        job.results = primitive_result(pubs, {"version": 2, "standin": "simulated by qiskit-aer"})
        job.status, job.finished = "Completed", datetime.now(UTC)

    def cancel(self, job: Job) -> None:
        if job.status in ("Completed", "Failed", "Cancelled"):
            raise _Answer(409, {"errors": [{"code": 1211, "message": f"job {job.id} is {job.status}"}]})
        job.status, job.reason, job.finished = "Cancelled", "cancelled by the user", datetime.now(UTC)
        job.go.set()

    def job_json(self, job: Job) -> dict[str, Any]:
        state: dict[str, Any] = {"status": job.status}
        if job.reason:
            state["reason"] = job.reason
        if job.reason_code:
            state["reason_code"] = job.reason_code
        return {
            "id": job.id,
            "backend": job.backend,
            "state": state,
            "status": job.status,
            "program": {"id": "sampler"},
            "created": _iso(job.created),
            "runtime": "",
            "tags": [],
            "session_id": None,
            "private": False,
            "user_id": "standin-user",
            "estimated_running_time_seconds": 2.0,
        }

    def metrics(self, job: Job) -> dict[str, Any]:
        seconds = (job.finished - job.running).total_seconds() if job.finished and job.running else 0
        return {
            "timestamps": {
                "created": _iso(job.created),
                "running": _iso(job.running),
                "finished": _iso(job.finished),
            },
            "usage": {
                "quantum_seconds": seconds,
                "seconds": seconds,
                "qpu_charge_time_seconds": seconds,
                "status": "final" if job.finished else "pending",
            },
            "bss": {"seconds": seconds},
            "qiskit_version": "standin",
        }

    # --- the other services --------------------------------------------------------------------------

    def device_list(self) -> dict[str, Any]:
        return {
            "devices": [
                {
                    "name": name,
                    "status": {
                        "name": "offline" if name in self.down else "online",
                        "reason": "maintenance" if name in self.down else "available",
                    },
                    "qubits": device.qubits,
                    "processor_type": device.configuration.get("processor_type"),
                    "queue_length": sum(
                        j.status == "Queued" for j in self.jobs.values() if j.backend == name
                    ),
                    "performance_metrics": {},
                }
                for name, device in self.devices.items()
            ]
        }

    def status(self, name: str) -> dict[str, Any]:
        down = name in self.down
        return {
            "state": not down,
            "status": "maintenance" if down else "active",
            "message": "the device is under maintenance" if down else "",
            "length_queue": sum(j.status == "Queued" for j in self.jobs.values() if j.backend == name),
            "backend_version": self.devices[name].configuration.get("backend_version", "0.0.0"),
        }


class _Answer(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


class _Handler(BaseHTTPRequestHandler):
    owner: IbmStandIn
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go as two writes: without it each answer waits ~40 ms

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        try:
            status, answer, headers = 200, self._route(method, parts.path, query, body), {}
        except _Answer as a:
            status, answer, headers = a.status, a.body, a.headers
        except Exception as e:  # the stand-in's own fault: a 500 the client retries, said plainly
            status, answer, headers = (
                500,
                {"errors": [{"code": 500, "message": f"stand-in: {type(e).__name__}: {e}"}]},
                {},
            )
        recorded = Recorded(method, parts.path, query, dict(self.headers.items()), body, status)
        with self.owner._lock:
            self.owner.requests.append(recorded)
        if status == 204:
            payload, kind = b"", None
        elif isinstance(answer, str):
            payload, kind = answer.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            payload, kind = json.dumps(answer).encode("utf-8"), "application/json"
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    # --- routes ----------------------------------------------------------------------------------------

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> Any:
        o = self.owner
        if method == "POST" and path == "/iam/identity/token":
            form = parse_qs(body.decode("utf-8"))
            if form.get("apikey", [None])[0] != o.api_key:
                raise _Answer(
                    401,
                    {
                        "errorCode": "BXNIM0415E",
                        "errorMessage": "Provided API key could not be found.",
                        "context": {"requestId": secrets.token_hex(8)},
                    },
                )
            token = access_token("standin-user")
            with o._lock:
                o._tokens.add(token)
            return {
                "access_token": token,
                "refresh_token": "not_supported",
                "token_type": "Bearer",
                "expires_in": TOKEN_S,
                "expiration": int(time.time()) + TOKEN_S,
                "scope": "ibm openid",
            }
        self._authorised(path)
        if method == "POST" and path == "/search/v3/resources/search":
            return {
                "items": [
                    {
                        "crn": CRN,
                        "name": "standin-instance",
                        "service_plan_unique_id": PLAN,
                        "tags": [],
                        "doc": {"extensions": {"allocations": ["standin"]}},
                    }
                ],
                "limit": 100,
                "search_cursor": None,
            }
        if method == "GET" and path == f"/catalog/{PLAN}":
            return {
                "id": PLAN,
                "overview_ui": {"en": {"display_name": "Open"}},
                "metadata": {"pricing": {"type": "free"}},
            }
        if not path.startswith("/api/v1/"):
            raise _Answer(404, {"errors": [{"code": 404, "message": f"no {method} {path} here"}]})
        if self.headers.get("Service-CRN") != CRN:
            raise _Answer(403, {"errors": [{"code": 1352, "message": "the instance is not this account's"}]})
        route = path[len("/api/v1") :].strip("/").split("/")
        if method == "GET" and route == ["backends"]:
            return o.device_list()
        if method == "GET" and route[0] == "backends" and len(route) == 3:
            device = o.devices.get(route[1])
            if device is None:
                raise _Answer(404, {"errors": [{"code": 1216, "message": f"backend {route[1]} not found"}]})
            if route[2] == "configuration":
                return device.configuration
            if route[2] == "properties":
                return device.properties
            if route[2] == "status":
                return o.status(route[1])
        if method == "GET" and route == ["instances", "usage"]:
            return {
                "instance_id": CRN,
                "plan_id": PLAN,
                "usage_consumed_seconds": 0,
                "usage_limit_seconds": 600,
                "usage_limit_reached": False,
                "usage_allocation_seconds": 600,
            }
        if method == "POST" and route == ["jobs"]:
            job = o.submit(json.loads(body))
            return {"id": job.id, "backend": job.backend}
        if route[0] == "jobs" and len(route) >= 2:
            job = o.jobs.get(route[1])
            if job is None:
                raise _Answer(404, {"errors": [{"code": 1291, "message": f"job {route[1]} not found"}]})
            tail = route[2:]
            if method == "GET" and not tail:
                return o.job_json(job)
            if method == "GET" and tail == ["results"]:
                if job.results is None:
                    raise _Answer(
                        404, {"errors": [{"code": 1290, "message": f"job {job.id} has no results"}]}
                    )
                return job.results
            if method == "GET" and tail == ["metrics"]:
                return o.metrics(job)
            if method == "POST" and tail == ["cancel"]:
                o.cancel(job)
                raise _Answer(204, None)
        raise _Answer(404, {"errors": [{"code": 404, "message": f"no {method} {path} here"}]})

    def _authorised(self, path: str) -> None:
        given = self.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        with self.owner._lock:
            known = token in self.owner._tokens
        if scheme != "Bearer" or not known:
            raise _Answer(
                401, {"errors": [{"code": 1000, "message": "the access token is missing or not valid"}]}
            )
