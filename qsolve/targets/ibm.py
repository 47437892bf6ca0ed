"""``ibm:<device>``: an IBM Quantum device through qiskit-ibm-runtime (issue 13, item 4; docs/ibm.md).

Platform code, in the platform's process; the workflow's process never reaches IBM. For each circuit a
method sends, in this order:

1. the circuit is transpiled to the device's ISA (Qiskit's preset pass manager on the device's own
   ``Target``, seeded) and checked against the circuit before anything is sent (state vectors on random
   product inputs, as ``qsolve.providers.compiler`` checks a provider's program): a circuit that fails the
   check, or whose ISA holds a gate outside rz, sx, x and cz, is never sent;
2. IBM states no price, so the cost is unknown: the person is told, and the job goes on only with their
   confirmation for this run (``qsolve.providers.jobs.Confirmation``: ``--yes``, or yes when asked);
3. the device's status is read: a device that is not operational stops the job (``backend_unavailable``);
4. the job is recorded in the state database's ``provider_jobs`` table (provider ``ibm``, its context
   holding what sealing needs), ``submitting`` is set, the job is sent as a SamplerV2 job with dynamical
   decoupling and twirling set off explicitly, and IBM's job id is stored as soon as it is given, so that a
   later process can collect the job (:func:`collect`) if this one ends;
5. the job is followed to its end (never cancelled because this process stopped waiting); its counts are
   read from its shots (the SamplerV2 result's bit arrays), sealed as a ``sampler-v2`` provider result
   (quantum-provider-protocol §8.1, §8.3) with the host's key, kept as a blob, and the record marked done.

What was sent is recorded exactly: ``execution.sent`` is built from the body the client posted (read back
from the client's own HTTP session as it went), and is checked to be §8.3's ``sampler-v2`` row before
anything is sealed. A job whose body is not that row is cancelled, and nothing is sealed.

The credential: ``QISKIT_IBM_TOKEN``, else the one kept under ``ibm`` in the keychain or an owner-only file
(``qsolve.providers.credentials.CredentialStore``; ``python -m qsolve.targets.ibm save-key`` puts it there).
It is handed to ``QiskitRuntimeService`` directly: ``save_account`` (a plain file) is never called, and the
credential is in no log, message, record or receipt. ``QISKIT_IBM_INSTANCE``, ``QISKIT_IBM_CHANNEL`` and
``QISKIT_IBM_URL`` (a base URL used as it is, with ``/api/v1`` beneath it) are honoured, and so are the
client's own ``IAM_URL``, ``GLOBAL_SEARCH_URL`` and ``GLOBAL_CATALOG_URL``, which it reads itself.

Provenance: the device is ``silicon`` only when the service is IBM Quantum's own (no ``QISKIT_IBM_URL``,
or an ``https://`` URL on ``cloud.ibm.com``) and the device's configuration does not say it is a
simulator. Any other service (a stand-in on this machine among them) is sealed as ``simulator``, naming
the URL: qsolve cannot tell what answers there, and never calls counts measured that it cannot vouch
came from IBM's processors.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import numpy as np
from blake3 import blake3
from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager, generate_preset_pass_manager
from qiskit.transpiler.basepasses import AnalysisPass

from qsolve.errors import QsolveError
from qsolve.providers.credentials import CredentialStore, Secret
from qsolve.providers.jobs import Confirmation, JobStopped, NotConfirmed, Sealed, StillRunning, job_text
from qsolve.providers.sealing import provider_request, provider_result
from qsolve.targets.base import Backend
from qsolve.targets.errors import TargetUnavailable

PROVIDER = "ibm"  # the receipts' provider name, the provider_jobs rows' provider, the credential's name
KIND = "sampler-v2"
BASIS = "rzsxxcz"
#: the gates an ISA circuit may hold to be sent (beside measurements and barriers): those of ``rzsxxcz``
ISA_GATES = frozenset({"rz", "sx", "x", "cz"})
CHANNELS = ("ibm_quantum_platform", "ibm_cloud")
IBM_DEFAULT_URL = "https://cloud.ibm.com"
#: the environment a person sets (the client reads the last three itself)
ENVIRONMENT = (
    "QISKIT_IBM_TOKEN",
    "QISKIT_IBM_INSTANCE",
    "QISKIT_IBM_CHANNEL",
    "QISKIT_IBM_URL",
    "IAM_URL",
    "GLOBAL_SEARCH_URL",
    "GLOBAL_CATALOG_URL",
)
#: the settings this client sends, as JSON Pointers into the job's body, with their values (§8.3)
SETTINGS = {
    "/params/options/dynamical_decoupling/enable": False,
    "/params/options/twirling/enable_gates": False,
    "/params/options/twirling/enable_measure": False,
}
FIELDS = ("backend", "params", "program_id")
OPTIMIZATION_LEVEL = 2  # the preset pass manager's own default, as qsolve.providers.compiler uses
WAIT_S = 600.0  # how long one command follows a job before it says how to collect it later
POLL_S = 0.5  # the client's own default poll interval for a job outside a session
FIRST_POLL_S = 0.05  # the first polls come sooner, doubling up to POLL_S: a short job is read soon
#: 1 − |⟨circuit|ISA⟩| allowed: the ISA's angles are sent as floats, so only synthesis' rounding is left
CHECK_TOLERANCE = 1e-9
UNKNOWN_COST = (
    "IBM Quantum states no price before a job runs: it is billed as QPU time on the account's plan "
    "(job.usage() after it ran)"
)


# --- errors ---------------------------------------------------------------------------------------------


class IbmUnavailable(TargetUnavailable):
    """An ``ibm:`` target that could not be opened; ``reason`` is the platform's reason for it."""

    def __init__(self, message: str, *, reason: str = "platform_error") -> None:
        super().__init__(message)
        self.reason = reason


class IbmJobStopped(JobStopped):
    """An IBM job that gave no counts: not sent, failed, cancelled, or not sealed; ``reason`` is the
    platform's reason (``backend_unavailable``, ``cancelled``, ``platform_error``)."""

    def __init__(self, message: str, *, reason: str = "platform_error", record: str | None = None) -> None:
        super().__init__(message, record=record)
        self.reason = reason


def _scrub(text: str, secret: Secret | None) -> str:
    """A message with the credential taken out, should any library have put it in."""
    if secret is None:
        return text
    return text.replace(secret.reveal(), "[the API key]")


# --- settings and the credential ------------------------------------------------------------------------


@dataclass(frozen=True)
class IbmSettings:
    """Where the client goes: the channel, the instance (a CRN or a name, or none: the client picks), and
    the service's base URL when it is not IBM Quantum's default."""

    channel: str = "ibm_quantum_platform"
    instance: str | None = None
    url: str | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> IbmSettings:
        env = os.environ if env is None else env
        channel = env.get("QISKIT_IBM_CHANNEL") or "ibm_quantum_platform"
        if channel not in CHANNELS:
            raise IbmUnavailable(f"QISKIT_IBM_CHANNEL={channel!r}: use {' or '.join(CHANNELS)}")
        url = (env.get("QISKIT_IBM_URL") or "").rstrip("/") or None
        settings = cls(channel=channel, instance=env.get("QISKIT_IBM_INSTANCE") or None, url=url)
        settings.check(env)
        return settings

    @property
    def service(self) -> str:
        return self.url or IBM_DEFAULT_URL

    @property
    def is_ibm(self) -> bool:
        """The service is IBM Quantum's own: its default, or an https URL on cloud.ibm.com."""
        if self.url is None:
            return True
        parts = urlsplit(self.url)
        host = (parts.hostname or "").lower()
        return parts.scheme == "https" and (host == "cloud.ibm.com" or host.endswith(".cloud.ibm.com"))

    def check(self, env: Mapping[str, str]) -> None:
        """Refuse settings that would send the API key in clear over the network, or to a host made up
        from the URL: the client sends the key to IAM, and, when IAM does not answer, to the API host."""
        from qsolve.providers.transport import is_loopback

        for name, value in (("QISKIT_IBM_URL", self.url), *((n, env.get(n)) for n in ENVIRONMENT[4:])):
            if not value:
                continue
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise IbmUnavailable(f"{name}={value!r}: not an http:// or https:// address")
            if parts.scheme == "http" and not is_loopback(parts.hostname):
                raise IbmUnavailable(
                    f"{name}={value!r}: the API key goes over https:// only, or to this machine"
                )
        if self.url is not None and not self.is_ibm:
            missing = [n for n in ENVIRONMENT[4:] if not env.get(n)]
            if missing:
                raise IbmUnavailable(
                    f"QISKIT_IBM_URL={self.url!r} is not IBM Quantum's: set {', '.join(missing)} too (the "
                    "client otherwise makes their hosts up from the URL's, and after IAM fails sends the key "
                    "itself)"
                )

    def public(self) -> dict[str, Any]:
        """What a record keeps of them (a later process collects the job with the same ones)."""
        return {"channel": self.channel, "instance": self.instance, "url": self.url}


def ibm_key(home: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[Secret, str]:
    """The person's IBM Quantum API key and where it was found: ``QISKIT_IBM_TOKEN``, else the keychain or
    the owner-only file ``CredentialStore`` keeps it in under ``ibm``."""
    env = os.environ if env is None else env
    if env.get("QISKIT_IBM_TOKEN"):
        return Secret(env["QISKIT_IBM_TOKEN"]), "the environment (QISKIT_IBM_TOKEN)"
    store = CredentialStore(home)
    secret = store.get(PROVIDER)
    if secret is None:
        raise IbmUnavailable(
            "no IBM Quantum API key: set QISKIT_IBM_TOKEN, or keep it with "
            "`QISKIT_IBM_TOKEN=... python -m qsolve.targets.ibm save-key` (the keychain, or a file only you "
            "can read); qsolve never reads or writes qiskit's saved accounts"
        )
    where = store.where(PROVIDER)
    return secret, where.label if where else "the credential store"


# --- the client -----------------------------------------------------------------------------------------


class _Bodies:
    """The body of each job the client posted, keyed by the id IBM gave it: read from the client's own
    HTTP session as each response arrives, so ``execution.sent`` states what went, not what was meant."""

    def __init__(self) -> None:
        self.by_job: dict[str, dict[str, Any]] = {}
        self.hooked = False

    def attach(self, service: Any) -> None:
        clients = [
            getattr(service, "_active_api_client", None),
            *getattr(service, "_api_clients", {}).values(),
        ]
        for client in clients:
            session = getattr(client, "_session", None)
            hooks = getattr(session, "hooks", None)
            if isinstance(hooks, dict) and self._seen not in hooks.setdefault("response", []):
                hooks["response"].append(self._seen)
                self.hooked = True

    def _seen(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        request = response.request
        if request.method == "POST" and urlsplit(request.url).path.endswith("/jobs") and response.ok:
            with contextlib.suppress(Exception):  # a body it cannot read is no body: the job is not sealed
                body = request.body.decode("utf-8") if isinstance(request.body, bytes) else request.body
                self.by_job[str(response.json()["id"])] = json.loads(body)
        return response


class IbmSampler:
    """How circuits are sent to an IBM device: SamplerV2 today, with dynamical decoupling and twirling set
    off explicitly and nothing else set (qiskit-ibm-runtime deprecates SamplerV2 in favour of
    ``executor_sampler.Sampler``, which sends another program, ``executor``: replacing this class, and adding
    §8.3's row for what it sends, is all that changes)."""

    program_id = "sampler"

    def __init__(self, backend: Any) -> None:
        from qiskit_ibm_runtime import SamplerV2
        from qiskit_ibm_runtime.options.utils import Unset

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*SamplerV2.*")
            self._sampler = SamplerV2(mode=backend)
        options = self._sampler.options
        options.dynamical_decoupling.enable = False
        options.twirling.enable_gates = False
        options.twirling.enable_measure = False
        # The job's body holds `log_level` unless it is unset; the option's type has no "unset" for it, so
        # it is unset under the validation: the body is then exactly backend, params and program_id.
        object.__setattr__(options.environment, "log_level", Unset)

    def settings(self) -> dict[str, Any]:
        """What the options set, as the job's body holds them (JSON Pointers)."""
        options = self._sampler.options
        return {
            "/params/options/dynamical_decoupling/enable": options.dynamical_decoupling.enable,
            "/params/options/twirling/enable_gates": options.twirling.enable_gates,
            "/params/options/twirling/enable_measure": options.twirling.enable_measure,
        }

    def run(self, isa_circuits: Sequence[QuantumCircuit], shots: int) -> Any:
        """One job of these ISA circuits, ``shots`` each: the client's job (``job_id()``, ``status()``,
        ``result()``, ``cancel()``)."""
        return self._sampler.run(list(isa_circuits), shots=shots)

    @staticmethod
    def counts(result: Any, circuit: QuantumCircuit, index: int = 0) -> dict[str, int]:
        """The counts of pub ``index`` from its shots: every classical register's bits joined, keyed with
        the highest classical bit first."""
        bits = [b for creg in circuit.cregs for b in creg]
        if bits != list(circuit.clbits):
            raise ValueError("the circuit's classical registers do not hold its bits once each, in order")
        pub = result[index]
        return {
            k: int(v) for k, v in pub.join_data(names=[c.name for c in circuit.cregs]).get_counts().items()
        }


def execution_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """§8.3's ``execution`` stated by this client, built from the job's body as it was posted."""
    settings = {pointer: _at(body, pointer) for pointer in SETTINGS}
    settings = {k: v for k, v in settings.items() if v is not _ABSENT}

    def step(*pointers: str) -> str:
        values = [settings.get(p, _ABSENT) for p in pointers]
        if all(v is False for v in values):
            return "off"
        if any(v is True for v in values):
            return "on"
        return "default"

    return {
        "stated_by": "client",
        "mitigation": "default",
        "twirling": step("/params/options/twirling/enable_gates", "/params/options/twirling/enable_measure"),
        "decoupling": step("/params/options/dynamical_decoupling/enable"),
        "remapping": "default",
        "optimisation": "default",
        "verbatim": False,
        "sent": {"fields": sorted(body, key=lambda k: k.encode("utf-8")), "settings": settings},
    }


_ABSENT = object()


def _at(body: Any, pointer: str) -> Any:
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(body, Mapping) or token not in body:
            return _ABSENT
        body = body[token]
    return body


def is_the_row(execution: Mapping[str, Any], provenance: str) -> bool:
    """``execution`` is §8.3's ``sampler-v2`` row, as the verifier holds it."""
    from qsolve.receipts.execution import execution_breaks_rules, rows_for

    return not execution_breaks_rules(dict(execution)) and any(
        row.matches(dict(execution)) for row in rows_for(KIND, provenance.split(":", 1)[0])
    )


# --- the ISA and its check ------------------------------------------------------------------------------


class _CountSwaps(AnalysisPass):
    """Writes the DAG's swap count into ``sink[key]`` (before layout and after routing)."""

    def __init__(self, sink: dict[str, int], key: str) -> None:
        super().__init__()
        self.sink, self.key = sink, key

    def run(self, dag: Any) -> None:
        self.sink[self.key] = dag.count_ops().get("swap", 0)


def _isa_parts(isa: QuantumCircuit) -> tuple[list[tuple[str, tuple[int, ...], list[float]]], dict[int, int]]:
    """The ISA's gates on physical qubits, in order, and which physical qubit each classical bit reads;
    ValueError for what cannot be sent as checked (a gate outside rz, sx, x, cz; a gate after a measure)."""
    gates, reads, measured = [], {}, set()
    for inst in isa.data:
        name = inst.operation.name
        qubits = tuple(isa.find_bit(q).index for q in inst.qubits)
        if name == "barrier":
            continue
        if name == "measure":
            reads[isa.find_bit(inst.clbits[0]).index] = qubits[0]
            measured.add(qubits[0])
            continue
        if name not in ISA_GATES:
            raise ValueError(
                f"the device's ISA gave {name} on {list(qubits)}: only rz, sx, x and cz are sent"
            )
        if measured.intersection(qubits):
            raise ValueError(f"{name} on {list(qubits)} comes after a measurement (mid-circuit measurement)")
        gates.append((name, qubits, [float(p) for p in inst.operation.params]))
    return gates, reads


def check_isa(
    circuit: QuantumCircuit,
    isa: QuantumCircuit,
    layout: Sequence[int],
    final_layout: Sequence[int],
    seed: int,
) -> str:
    """The ISA circuit is the circuit: on random product inputs of the logical qubits (seeded), each
    entering on its ``layout`` place, the ISA's state on the places it uses (every other place entering and
    required to leave in |0⟩) equals the circuit's, each logical qubit leaving on its ``final_layout``
    place, up to a global phase; and each classical bit reads the place its logical qubit ends on. Returns
    the sentence of what was checked; ValueError when it is not the circuit."""
    from qsolve.providers.compiler import MAX_CHECK_QUBITS, _axes, _batch, _logical, _product, _random_qubit

    unitary, measured = _logical(circuit)
    gates, reads = _isa_parts(isa)
    n = unitary.num_qubits
    want = {c: final_layout[q] for c, q in measured.items()}
    if reads != want:
        raise ValueError(f"the bits read places {reads}; their logical qubits end on {want}")
    used = sorted({q for _, qs, _ in gates for q in qs} | set(layout) | set(final_layout))
    if len(used) > MAX_CHECK_QUBITS:
        raise ValueError(f"the ISA uses {len(used)} qubits: the check simulates at most {MAX_CHECK_QUBITS}")
    index = {p: i for i, p in enumerate(used)}
    ours = QuantumCircuit(len(used), global_phase=isa.global_phase)
    for name, qs, params in gates:
        getattr(ours, name)(*params, *(index[q] for q in qs))
    ends = [index[p] for p in final_layout]
    rest = [i for i in range(len(used)) if i not in ends]
    rng = np.random.default_rng(seed)
    zero = np.array([1, 0], dtype=complex)
    logical_in, isa_in = [], []
    inputs = 8 if len(used) <= 12 else 2
    for _ in range(inputs):
        states = [_random_qubit(rng) for _ in range(n)]
        entering = [zero] * len(used)
        for i, p in enumerate(layout):
            entering[index[p]] = states[i]
        logical_in.append(_product(states))
        isa_in.append(_product(entering))
    psis, phis = _batch(logical_in, unitary), _batch(isa_in, ours)
    worst = 0.0
    for k in range(inputs):
        psi = _axes(psis[k], n)
        phi = _axes(phis[k], len(used)).transpose(ends + rest)[(Ellipsis,) + (0,) * len(rest)]
        worst = max(worst, 1 - abs(np.vdot(psi.ravel(), phi.ravel())))
        if worst > CHECK_TOLERANCE:
            raise ValueError(f"input {k}: the ISA's state is 1 − {worst:.1e} from the circuit's")
    return (
        f"state vectors of {inputs} random product inputs (seed {seed}) on the {len(used)} qubits the ISA "
        f"circuit uses, every other one entering and required to leave in |0⟩: |⟨circuit|ISA⟩| ≥ 1 − "
        f"{max(worst, 0.0):.1e} (allowed 1 − {CHECK_TOLERANCE:.0e}); every bit reads the qubit its logical "
        "qubit ends on; the angles are sent as the ISA holds them (double precision)"
    )


def _qpy(circuit: QuantumCircuit) -> str:
    from qiskit import qpy

    buffer = io.BytesIO()
    qpy.dump(circuit, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _circuit(text: str) -> QuantumCircuit:
    from qiskit import qpy

    return qpy.load(io.BytesIO(base64.b64decode(text)))[0]


# --- the target -----------------------------------------------------------------------------------------


@dataclass
class _Pending:
    record: str
    circuit: QuantumCircuit
    job: Any | None  # the client's job, in the process that sent it


class IbmBackend(Backend):
    """An IBM Quantum device as a target; every job it runs is sealed (``sealed``, in order)."""

    ideal = False

    def __init__(
        self,
        device: str,
        *,
        service: Any,
        backend: Any,
        settings: IbmSettings,
        secret: Secret,
        book: Any,
        signer: Any,
        keep: Callable[[str], tuple[str, str]],
        confirmation: Confirmation,
        tell: Callable[[str], None] = print,
        wait_s: float = WAIT_S,
        poll_s: float = POLL_S,
        run_id: str | None = None,
    ) -> None:
        self.name = f"ibm:{device}"
        self.device = device
        self.service, self.backend, self.settings = service, backend, settings
        self._secret = secret
        self.book, self.signer, self.keep = book, signer, keep
        self.confirmation, self.tell = confirmation, tell
        self.wait_s, self.poll_s, self.run_id = wait_s, poll_s, run_id
        self.sealed: list[Sealed] = []
        self.stopped: list[str] = []
        self.pending: dict[str, _Pending] = {}  # submitted and not yet ended, by record
        self.description = describe(backend, settings)
        self.provenance = _provenance_text(self.description)
        self.sampler = IbmSampler(backend)
        self._bodies = _Bodies()
        self._bodies.attach(service)
        self._compiled: dict[int, tuple[QuantumCircuit, dict[str, Any]]] = {}
        self._readout = _readout_errors(backend)
        self._swaps: dict[str, int] = {}
        self._told = False
        self._lock = threading.Lock()

    # --- the Backend interface ---------------------------------------------------------------------------

    def pass_manager(self, seed: int) -> PassManager:
        pm = generate_preset_pass_manager(
            optimization_level=OPTIMIZATION_LEVEL, backend=self.backend, seed_transpiler=seed
        )
        pm.pre_layout = PassManager([_CountSwaps(self._swaps, "before")])
        pm.post_routing = PassManager([_CountSwaps(self._swaps, "after")])
        return pm

    def transpile(self, circuits: Sequence[QuantumCircuit], seed: int) -> list[QuantumCircuit]:
        """Each circuit transpiled to the device's ISA and checked against it; refused, with why, when it
        cannot be sent as checked."""
        out = []
        with self._lock:
            pm = self._pass_manager(seed)
            for circuit in circuits:
                self._swaps.clear()
                try:
                    isa = pm.run(circuit)
                    layout = isa.layout.initial_index_layout(filter_ancillas=True) if isa.layout else []
                    final = isa.layout.final_index_layout(filter_ancillas=True) if isa.layout else []
                    checked = check_isa(circuit, isa, layout, final, seed)
                except Exception as e:
                    stopped = IbmJobStopped(
                        f"{self.name}: transpiling a circuit to the device's ISA: {e}: nothing was sent"
                    )
                    self.stopped.append(str(stopped))
                    raise stopped from None
                gates, _ = _isa_parts(isa)
                compiled = {
                    "basis": BASIS,
                    "qasm3": _qasm3(isa),
                    "native_gates": len(gates),
                    "two_qubit_gates": sum(len(qs) == 2 for _, qs, _ in gates),
                    "swaps": self._swaps.get("after", 0) - self._swaps.get("before", 0),
                    "layout": list(layout),
                    "final_layout": list(final),
                    "checked": checked,
                    "placement": (
                        f"qiskit {version('qiskit')} preset pass manager, optimization_level "
                        f"{OPTIMIZATION_LEVEL}, seed_transpiler {seed}, on the device's Target (its "
                        f"calibration {self.description['calibration']['id']} read as the target)"
                    ),
                }
                compiled["program"] = blake3(compiled["qasm3"].encode("utf-8")).hexdigest()
                compiled["hash"] = "BLAKE3 of the UTF-8 bytes of qasm3, lower-case hex"
                self._compiled[id(isa)] = (circuit, compiled)
                out.append(isa)
        return out

    def execute(self, transpiled: Sequence[QuantumCircuit], shots: int, seed: int) -> list[dict[str, int]]:
        """Every circuit sent as its own job (all submitted first, then each followed), sealed, and its
        counts given back. ``seed`` is not sent: a device takes none."""
        records: list[str] = []
        try:
            for isa in transpiled:
                records.append(self.submit(isa, shots))
        except JobStopped as e:  # the method is told; the person is too (``stopped``)
            sent = [r for r in records if r in self.pending]
            if sent:  # sent, and perhaps billed: recorded, to be collected, never sent again
                e = IbmJobStopped(
                    f"{e}; {len(sent)} earlier job(s) of this batch were sent and are recorded "
                    f"({', '.join(sent)}): `python -m qsolve.targets.ibm collect RECORD` reads each",
                    reason=getattr(e, "reason", "platform_error"),
                    record=e.record,
                )
            self.stopped.append(str(e))
            raise e from None
        try:
            return [self.follow(record).counts for record in records]
        except JobStopped as e:
            self.stopped.append(str(e))
            raise

    def confusion(self, qubit: int) -> np.ndarray:
        p1_given_0, p0_given_1 = self._readout[qubit]
        return np.array([[1 - p1_given_0, p0_given_1], [p1_given_0, 1 - p0_given_1]])

    # --- one job ---------------------------------------------------------------------------------------

    def submit(self, isa: QuantumCircuit, shots: int) -> str:
        """Confirm, check the device, record, send; the record's id (IBM's job id stored in it)."""
        circuit, compiled = self._compiled.pop(id(isa))
        if not self._told:
            self.tell(f"{self.name}: each job's cost is unknown ({UNKNOWN_COST})")
            self._told = True
        question = f"{self.name}: the cost of {shots} shots of one circuit is unknown. Submit it?"
        if not self.confirmation.confirm(question):
            raise NotConfirmed(
                f"{self.name}: submitting a job: the cost is unknown (IBM Quantum states no price) and this "
                "run has no confirmation (--yes, or yes when asked): nothing was submitted"
            )
        self._check_status("submitting a job")
        description = self.description
        context = {
            "name": PROVIDER,
            "kind": KIND,
            "device": self.device,
            "settings": self.settings.public(),
            "request": provider_request(PROVIDER, _qasm3(circuit), shots, None),
            "compiled": compiled,
            "cost": {"free": False, "estimate": {"unknown": UNKNOWN_COST}},
            "circuit_qpy": _qpy(circuit),
            "sent": {"fields": list(FIELDS), "settings": self.sampler.settings()},
            "confirmed": self.confirmation.given[-1] if self.confirmation.given else None,
        }
        program = {"format": "qiskit.qpy", "qpy": _qpy(isa), "qasm3": compiled["qasm3"]}
        record = self.book.record_provider_job(
            PROVIDER, program, description, shots, seed=None, context=context, run_id=self.run_id
        ).id
        self.book.provider_job_submitting(record)
        try:
            job = self.sampler.run([isa], shots)
            job_id = job.job_id()
        except Exception as e:
            why = _scrub(f"{type(e).__name__}: {e}", self._secret)
            if _is_transport(e):
                raise IbmJobStopped(
                    f"{self.name}: submitting a job: {why}; the submit did not complete and IBM may have "
                    f"taken it: recorded as {record}, never sent again without the person's word",
                    record=record,
                ) from None
            self._end(record, "failed", f"{self.name}: submitting a job: {why}")
            raise IbmJobStopped(
                f"{self.name}: submitting a job: {why}: nothing was sealed", record=record
            ) from None
        # IBM's id, stored as soon as it is known: a later process collects the job by it
        self.book.provider_job_submitted(record, job_id)
        self.pending[record] = _Pending(record, circuit, job)
        body = self._bodies.by_job.get(job_id)
        if body is not None and not is_the_row(execution_of(body), self.provenance):
            self._cancel_job(record, job, "what the client sent is not the sampler-v2 row of §8.3")
            raise IbmJobStopped(
                f"{self.name}: submitting a job: the client sent fields {sorted(body)} and settings "
                f"{execution_of(body)['sent']['settings']}, not §8.3's sampler-v2 row: job "
                f"{job_id} was cancelled and nothing is sealed",
                record=record,
            )
        return record

    def follow(self, record: str) -> Sealed:
        """Follow a submitted job to its end, then read, seal and keep its counts."""
        from qsolve.receipts.seal import seal

        row = self.book.get_provider_job(record)
        if row.status != "submitted":
            raise IbmJobStopped(
                f"{self.name}: IBM job {row.job} ({record}) is {row.status}: nothing to follow"
            )
        pending = self.pending.get(record)
        job = pending.job if pending is not None and pending.job is not None else self._job(row.job, record)
        deadline = time.monotonic() + self.wait_s
        polls = row.polls
        while True:
            try:
                status = job.status()
            except Exception as e:
                raise StillRunning(
                    f"{self.name}: following job {row.job}: {_scrub(str(e), self._secret)}; it is recorded "
                    f"as {record}: `python -m qsolve.targets.ibm collect {record}` reads it later",
                    record=record,
                ) from None
            polls += 1
            self.book.provider_job_polled(record)
            if status == "DONE":
                break
            if status in ("ERROR", "CANCELLED"):
                self.pending.pop(record, None)
                return self._ended(record, row.job, job, status)
            if time.monotonic() > deadline:
                raise StillRunning(
                    f"{self.name}: following job {row.job}: still {status} after {self.wait_s:g} s; it was "
                    f"not cancelled: `python -m qsolve.targets.ibm collect {record}` reads it later",
                    record=record,
                )
            time.sleep(
                min(self.poll_s, FIRST_POLL_S * 2 ** (polls - row.polls - 1))
            )  # soon, then every poll_s
        context = row.context
        circuit = _circuit(context["circuit_qpy"])
        try:
            result = job.result()
            counts = IbmSampler.counts(result, circuit)
        except Exception as e:
            why = f"{self.name}: reading the counts of job {row.job}: {_scrub(str(e), self._secret)}"
            self._end(record, "failed", why + ": nothing was sealed")
            self.pending.pop(record, None)
            raise IbmJobStopped(why + ": nothing was sealed", record=record) from None
        body = self._bodies.by_job.get(row.job)
        sent = execution_of(body) if body is not None else _execution_from(context["sent"])
        if not is_the_row(sent, self.provenance):
            why = f"{self.name}: sealing job {row.job}: what was sent is not §8.3's sampler-v2 row"
            self._end(record, "failed", why)
            raise IbmJobStopped(why + ": nothing was sealed", record=record)
        answer = {
            "counts": counts,
            "counts_source": "shots",
            "calibration": row.description["calibration"]["id"],
        }
        result_doc = provider_result(
            name=PROVIDER,
            kind=KIND,
            describe=row.description,
            compiled=context["compiled"],
            job=row.job,
            polls=polls,
            answer=answer,
            shots=row.shots,
            circuit=circuit,
            cost=context["cost"],
        )
        result_doc["provider"]["protocol"] = _protocol()
        result_doc["counts_source"] = "shots"
        result_doc["execution"] = sent
        sealed = seal(context["request"], result_doc, self.signer)
        digest, path = self.keep(job_text(sealed))
        usage = None
        with contextlib.suppress(Exception):
            usage = job.usage()
        self.book.provider_job_done(record, answer | {"execution": sent, "qpu_seconds": usage}, digest)
        self.pending.pop(record, None)
        done = Sealed(record, counts, sealed, digest, path)
        self.sealed.append(done)
        return done

    def cancel(self, record: str | None = None) -> list[str]:
        """Pass a cancellation on to IBM: this record's job, or every job this backend sent that has not
        ended. The records cancelled."""
        records = [record] if record is not None else list(self.pending)
        out = []
        for r in records:
            row = self.book.get_provider_job(r)
            if row.status != "submitted":
                continue
            pending = self.pending.pop(r, None)
            job = pending.job if pending is not None and pending.job is not None else self._job(row.job, r)
            if self._cancel_job(r, job, "cancelled by the person or the platform"):
                out.append(r)
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.book.close()

    # --- helpers ---------------------------------------------------------------------------------------

    def _check_status(self, operation: str) -> None:
        try:
            status = self.backend.status()
        except Exception as e:
            raise IbmJobStopped(
                f"{self.name}: {operation}: the device's status could not be read "
                f"({_scrub(str(e), self._secret)}): nothing was sent",
                reason="backend_unavailable",
            ) from None
        if not status.operational:
            said = f" ({status.status_msg})" if status.status_msg else ""
            raise IbmJobStopped(
                f"{self.name}: {operation}: the device is not available: IBM Quantum says it is not "
                f"operational{said}: nothing was sent",
                reason="backend_unavailable",
            )

    def _job(self, job_id: str, record: str) -> Any:
        try:
            return self.service.job(job_id)
        except Exception as e:
            raise StillRunning(
                f"{self.name}: reading job {job_id}: {_scrub(str(e), self._secret)}; it is recorded as "
                f"{record}",
                record=record,
            ) from None

    def _ended(self, record: str, job_id: str, job: Any, status: str) -> NoReturn:
        if status == "CANCELLED":
            why = f"{self.name}: following job {job_id}: it was cancelled at IBM Quantum"
            self._end(record, "cancelled", why)
            raise IbmJobStopped(why + ": nothing was sealed", reason="cancelled", record=record)
        said = ""
        with contextlib.suppress(Exception):
            said = " ".join((job.error_message() or "").split())
        why = f"{self.name}: following job {job_id}: it failed at IBM Quantum" + (
            f": {_scrub(said, self._secret)}" if said else ""
        )
        self._end(record, "failed", why)
        raise IbmJobStopped(why + ": nothing was sealed", record=record)

    def _end(self, record: str, status: str, why: str) -> None:
        """End the record, unless it has ended already (a cancellation passed on from another thread or
        process ends it first)."""
        from storage.state import RunStateError

        with contextlib.suppress(RunStateError):
            self.book.provider_job_ended(record, status, why)

    def _cancel_job(self, record: str, job: Any, why: str) -> bool:
        try:
            job.cancel()
        except Exception as e:  # an ended job cannot be cancelled: its end is read by following it
            self.tell(f"{self.name}: cancelling job {job.job_id()}: {_scrub(str(e), self._secret)}")
            return False
        self._end(record, "cancelled", f"{self.name}: job {job.job_id()} cancelled: {why}")
        return True


def _execution_from(sent: Mapping[str, Any]) -> dict[str, Any]:
    """The execution of a record whose posted body this process did not see (a job collected later): what
    the sampler set when the job was recorded, in the body's form."""
    body: dict[str, Any] = {name: {} for name in sent["fields"]}
    for pointer, value in sent["settings"].items():
        tokens = pointer.lstrip("/").split("/")
        node = body
        for token in tokens[:-1]:
            node = node.setdefault(token, {})
        node[tokens[-1]] = value
    return execution_of(body)


def _is_transport(e: Exception) -> bool:
    import requests
    from qiskit_ibm_runtime.api.exceptions import RequestsApiError

    if isinstance(e, requests.exceptions.RequestException):
        return True
    return isinstance(e, RequestsApiError) and getattr(e, "status_code", -1) in (-1, 500, 502, 503, 504)


def _qasm3(circuit: QuantumCircuit) -> str:
    from qiskit import qasm3

    return qasm3.dumps(circuit)


def _protocol() -> str:
    return f"qiskit-ibm-runtime {version('qiskit-ibm-runtime')} (IBM Quantum Platform REST API, SamplerV2)"


def describe(backend: Any, settings: IbmSettings) -> dict[str, Any]:
    """The description this client makes of the device (§8.1 ``provider.describe`` is its digest)."""
    configuration = backend.configuration()
    properties = backend.properties()
    calibration = properties.last_update_date.isoformat() if properties is not None else None
    pairs = sorted({tuple(sorted(p)) for p in (configuration.coupling_map or [])})
    out: dict[str, Any] = {
        "device": backend.name,
        "qubits": int(configuration.n_qubits),
        "basis": BASIS,
        "gates": sorted(configuration.basis_gates),
        "connectivity": [list(p) for p in pairs],
        "calibration": {"id": calibration},
        "backend_version": str(getattr(configuration, "backend_version", "")),
        "processor_type": dict(getattr(configuration, "processor_type", None) or {}),
        "service": settings.service,
        "client": f"qiskit-ibm-runtime {version('qiskit-ibm-runtime')}",
        "billing": {"free": False, "priced": False},
    }
    if getattr(configuration, "simulator", False):
        out["provenance"] = "simulator"
        out["simulator"] = f"IBM Quantum's simulator {backend.name}"
    elif settings.is_ibm:
        out["provenance"] = "silicon"
    else:
        out["provenance"] = "simulator"
        out["simulator"] = (
            f"the device {backend.name} as served by {settings.service}, which is not IBM Quantum's service: "
            "qsolve does not take its counts as measured"
        )
    return out


def _provenance_text(description: Mapping[str, Any]) -> str:
    from qsolve.providers.sealing import provenance_text

    return provenance_text(description)


def _readout_errors(backend: Any) -> list[tuple[float, float]]:
    props = backend.properties()
    out = []
    for q in range(backend.num_qubits):
        values = {n.name: n.value for n in props.qubits[q]} if props is not None else {}
        if "prob_meas1_prep0" in values and "prob_meas0_prep1" in values:
            out.append((float(values["prob_meas1_prep0"]), float(values["prob_meas0_prep1"])))
        else:
            error = float(values.get("readout_error", 0.0) or 0.0)
            out.append((error, error))
    return out


# --- opening it -----------------------------------------------------------------------------------------


def _basis_check(name: str, backend: Any) -> None:
    gates = set(backend.configuration().basis_gates) - {"id", "delay", "reset", "measure"}
    if not gates <= ISA_GATES:
        raise IbmUnavailable(
            f"{name}: its gates are {', '.join(sorted(gates))}: qsolve sends rz, sx, x and cz only (the "
            "receipts' basis rzsxxcz), so devices of other two-qubit gates are not run yet"
        )


def connect(device: str, settings: IbmSettings, secret: Secret, where: str) -> tuple[Any, Any]:
    """The client's service, with the key passed to it (never saved), and the device's backend."""
    from qiskit.providers.exceptions import QiskitBackendNotFoundError
    from qiskit_ibm_runtime import QiskitRuntimeService
    from qiskit_ibm_runtime.accounts.exceptions import InvalidAccountError

    name = f"ibm:{device}"
    extra: dict[str, Any] = {}
    if settings.url is not None:
        extra = {"url": settings.url, "url_resolver": lambda u, i, p, c: f"{u}/api/v1"}
    try:
        service = QiskitRuntimeService(
            channel=settings.channel, token=secret.reveal(), instance=settings.instance or "auto", **extra
        )
    except InvalidAccountError as e:
        raise IbmUnavailable(
            f"{name}: opening the device: IBM Quantum did not accept the API key from {where}: "
            f"{_scrub(str(e), secret)}"
        ) from None
    except Exception as e:
        raise IbmUnavailable(
            f"{name}: opening the device: IBM Quantum at {settings.service} could not be used: "
            f"{_scrub(f'{type(e).__name__}: {e}', secret)}",
            reason="backend_unavailable",
        ) from None
    try:
        backend = service.backend(device)
    except QiskitBackendNotFoundError:
        known = ""
        with contextlib.suppress(Exception):
            known = ", ".join(sorted(b.name for b in service.backends()))
        raise IbmUnavailable(
            f"{name}: opening the device: the instance has no device named {device}"
            + (f" (it has: {known})" if known else "")
        ) from None
    except Exception as e:
        raise IbmUnavailable(
            f"{name}: opening the device: {_scrub(f'{type(e).__name__}: {e}', secret)}",
            reason="backend_unavailable",
        ) from None
    _basis_check(name, backend)
    return service, backend


def open_ibm(
    spec: str,
    *,
    home: Path | None = None,
    confirmation: Confirmation | None = None,
    tell: Callable[[str], None] | None = None,
    run_id: str | None = None,
    wait_s: float = WAIT_S,
    poll_s: float = POLL_S,
    env: Mapping[str, str] | None = None,
) -> IbmBackend:
    """``ibm:<device>`` opened: the key, the client, the device, the state database as the book of its jobs,
    the host's key, blobs as the keeper of sealed jobs, and this run's confirmation (none by default: every
    job's cost is unknown, so nothing is sent without one)."""
    from qsolve.home import qsolve_home
    from qsolve.receipts.keys import load_host_key
    from storage.blobs import BlobStore
    from storage.state import connect as connect_state

    device = spec.removeprefix("ibm:")
    home = qsolve_home(home)
    settings = IbmSettings.from_environment(env)
    secret, where = ibm_key(home, env)
    service, backend = connect(device, settings, secret, where)
    if settings.instance is None:
        with contextlib.suppress(Exception):
            settings = IbmSettings(settings.channel, service.active_instance(), settings.url)
    blobs = BlobStore(home)

    def keep(text: str) -> tuple[str, str]:
        digest = blobs.put(text.encode("utf-8"))
        return digest, str(blobs.path(digest))

    return IbmBackend(
        device,
        service=service,
        backend=backend,
        settings=settings,
        secret=secret,
        book=connect_state(home=home),
        signer=load_host_key(home),
        keep=keep,
        confirmation=confirmation or Confirmation(),
        tell=tell or (lambda line: print(line, file=sys.stderr)),
        run_id=run_id,
        wait_s=wait_s,
        poll_s=poll_s,
    )


def _backend_of(record: str, home: Path | None, **kwargs: Any) -> IbmBackend:
    from storage.state import connect as connect_state

    with connect_state(home=home) as db:
        row = db.get_provider_job(record)
    if row.provider != PROVIDER or row.context.get("kind") != KIND:
        raise IbmUnavailable(f"provider job {record} is {row.provider}'s, not an IBM Quantum job")
    given = kwargs.pop("env", None)
    env = dict(os.environ if given is None else given)
    recorded = row.context.get("settings") or {}
    for name, key in (
        ("QISKIT_IBM_CHANNEL", "channel"),
        ("QISKIT_IBM_INSTANCE", "instance"),
        ("QISKIT_IBM_URL", "url"),
    ):
        if not env.get(name) and recorded.get(key):
            env[name] = recorded[key]
    return open_ibm(f"ibm:{row.context['device']}", home=home, env=env, **kwargs)


def collect(record: str, *, home: Path | None = None, **kwargs: Any) -> Sealed:
    """Collect a recorded IBM job from any process (its first client may have ended): follow it, seal it."""
    backend = _backend_of(record, home, **kwargs)
    try:
        return backend.follow(record)
    finally:
        backend.close()


def cancel(record: str, *, home: Path | None = None, **kwargs: Any) -> bool:
    """Pass a cancellation on to IBM for a recorded job, from any process."""
    backend = _backend_of(record, home, **kwargs)
    try:
        return bool(backend.cancel(record))
    finally:
        backend.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m qsolve.targets.ibm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "save-key", help="keep QISKIT_IBM_TOKEN's key in the keychain, or a file only you can read"
    )
    for name, text in (
        ("collect", "follow a recorded IBM job and seal it"),
        ("cancel", "cancel a recorded IBM job"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("record")
    args = parser.parse_args(argv)
    try:
        if args.command == "save-key":
            value = os.environ.get("QISKIT_IBM_TOKEN")
            if not value:
                print(
                    "save-key: set QISKIT_IBM_TOKEN to the key (it is read from there, once)", file=sys.stderr
                )
                return 2
            stored = CredentialStore().put(PROVIDER, Secret(value))
            print(f"the IBM Quantum API key is kept in {stored.label}")
            return 0
        if args.command == "collect":
            from storage.blobs import BlobStore
            from storage.state import connect as connect_state
            from storage.state import qsolve_home

            with connect_state() as db:
                row = db.get_provider_job(args.record)
            if row.status in ("done", "failed", "cancelled"):  # ended: sealed once, never again
                print(f"IBM job {args.record} (IBM's id {row.job or 'never given'}): {row.status}")
                if row.receipt:
                    print(
                        f"IBM job {args.record}: done; receipt {BlobStore(qsolve_home()).path(row.receipt)}"
                    )
                elif row.error:
                    print(f"  {row.error}")
                return 0 if row.status == "done" else 1
            sealed = collect(args.record)
            print(f"IBM job {args.record}: done; receipt {sealed.path}")
            return 0
        print(f"IBM job {args.record}: " + ("cancelled" if cancel(args.record) else "had already ended"))
        return 0
    except QsolveError as e:
        print(f"python -m qsolve.targets.ibm: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
