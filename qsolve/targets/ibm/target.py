"""The ``ibm:<device>`` target: ``IbmBackend`` (transpile to the ISA and check it; then, for each job,
confirm, read the device's status, record, send, store IBM's job id, follow, read the counts from the
shots, seal, keep) and ``open_ibm``, which opens one with the key, the client, the device, the state
database as the book of its jobs, the host's key and this run's confirmation."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from blake3 import blake3
from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager, generate_preset_pass_manager

from qsolve.errors import RecordStateError
from qsolve.providers.credentials import Secret
from qsolve.providers.jobs import (
    Confirmation,
    HeldToLimit,
    JobStopped,
    NotConfirmed,
    Sealed,
    StillRunning,
    job_text,
)
from qsolve.providers.sealing import provider_request, provider_result
from qsolve.runtime.heartbeat import beat
from qsolve.targets.base import Backend
from qsolve.targets.ibm.credentials import ibm_key
from qsolve.targets.ibm.device import _provenance_text, _readout_errors, describe
from qsolve.targets.ibm.errors import IbmJobStopped, _scrub
from qsolve.targets.ibm.isa import (
    OPTIMIZATION_LEVEL,
    _circuit,
    _CountSwaps,
    _isa_parts,
    _qasm3,
    _qpy,
    check_isa,
)
from qsolve.targets.ibm.names import BASIS, KIND, PROVIDER
from qsolve.targets.ibm.sampler import IbmSampler, _Bodies, _is_transport
from qsolve.targets.ibm.sealing import FIELDS, _execution_from, _protocol, execution_of, is_the_row
from qsolve.targets.ibm.service import connect, unavailable
from qsolve.targets.ibm.settings import IbmSettings

WAIT_S = 600.0  # how long one command follows a job before it says how to collect it later
POLL_S = 0.5  # the client's own default poll interval for a job outside a session
FIRST_POLL_S = 0.05  # the first polls come sooner, doubling up to POLL_S: a short job is read soon
#: 1 − |⟨circuit|ISA⟩| allowed: the ISA's angles are sent as floats, so only synthesis' rounding is left
CHECK_TOLERANCE = 1e-9
UNKNOWN_COST = (
    "IBM Quantum states no price before a job runs: it is billed as QPU time on the account's plan "
    "(job.usage() after it ran)"
)


@dataclass
class _Pending:
    record: str
    circuit: QuantumCircuit
    job: Any | None  # the client's job, in the process that sent it


class IbmBackend(HeldToLimit, Backend):
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
        run: dict[str, str] | None = None,
    ) -> None:
        self.name = f"ibm:{device}"
        self.device = device
        self.service, self.backend, self.settings = service, backend, settings
        self._secret = secret
        self.book, self.signer, self.keep = book, signer, keep
        self.confirmation, self.tell = confirmation, tell
        self.wait_s, self.poll_s, self.run_id = wait_s, poll_s, run_id
        #: the job's own time limit, when it runs for one (:meth:`hold_to`): no wait goes past it
        self.limit_s: float | None = None
        self.deadline: float | None = None
        self.sealed_run = run  # the platform run each job's request seals (sealing.run_member)
        self.sealed: list[Sealed] = []
        self.stopped: list[str] = []
        self.records: list[str] = []  # every job recorded, in order (qsolve run names each one sent)
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
                self.records.append(records[-1])
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
            "request": provider_request(PROVIDER, _qasm3(circuit), shots, None, self.sealed_run),
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
        deadline, limit = self._wait_until()
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
                    f"{self.name}: following job {row.job}: still {status} after {limit}; it was "
                    f"not cancelled: `python -m qsolve.targets.ibm collect {record}` reads it later",
                    record=record,
                )
            beat()  # a poll, bounded by its deadline: progress that keeps the run's lease
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
        if why := unavailable(self.backend, self._secret):
            raise IbmJobStopped(
                f"{self.name}: {operation}: {why}: nothing was sent", reason="backend_unavailable"
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
        with contextlib.suppress(RecordStateError):
            self.book.provider_job_ended(record, status, why)

    def _cancel_job(self, record: str, job: Any, why: str) -> bool:
        try:
            job.cancel()
        except Exception as e:  # an ended job cannot be cancelled: its end is read by following it
            self.tell(f"{self.name}: cancelling job {job.job_id()}: {_scrub(str(e), self._secret)}")
            return False
        self._end(record, "cancelled", f"{self.name}: job {job.job_id()} cancelled: {why}")
        return True


def open_ibm(
    spec: str,
    *,
    book: Any,
    keep: Callable[[str], tuple[str, str]],
    home: Path | None = None,
    confirmation: Confirmation | None = None,
    tell: Callable[[str], None] | None = None,
    run_id: str | None = None,
    wait_s: float = WAIT_S,
    poll_s: float = POLL_S,
    env: Mapping[str, str] | None = None,
    run: dict[str, str] | None = None,
) -> IbmBackend:
    """``ibm:<device>`` opened: the key, the client, the device, ``book`` (the state database) as the book of
    its jobs and the keeper of the host's key, ``keep`` as the keeper of sealed jobs (blobs), and this run's
    confirmation (none by default: every job's cost is unknown, so nothing is sent without one).
    ``storage.sessions.ibm_backend`` opens it over a home's state database and blobs."""
    from qsolve.home import qsolve_home

    device = spec.removeprefix("ibm:")
    home = qsolve_home(home)
    settings = IbmSettings.from_environment(env)
    secret, where = ibm_key(home, env)
    service, backend = connect(device, settings, secret, where)
    if settings.instance is None:
        with contextlib.suppress(Exception):
            settings = IbmSettings(settings.channel, service.active_instance(), settings.url)
    return IbmBackend(
        device,
        service=service,
        backend=backend,
        settings=settings,
        secret=secret,
        book=book,
        signer=book.signing_key(home, tell=tell),
        keep=keep,
        confirmation=confirmation or Confirmation(),
        tell=tell or (lambda line: print(line, file=sys.stderr)),
        run_id=run_id,
        run=run,
        wait_s=wait_s,
        poll_s=poll_s,
    )
