"""One circuit as a provider job, from platform code (quantum-provider-protocol §1, §5, §5.7, §7, §8).

In this order, and never otherwise:

1. the circuit is compiled to the device as its ``describe`` answer describes it and checked against
   the circuit (a program that fails the check is never sent);
2. the job is estimated, and the estimate, or that its cost is unknown, is told to the person;
3. a job that is not free goes on only with the person's confirmation for this run: on a quote's run,
   only within what the quote's confirmation authorised (``qsolve.providers.cost.Authority``: a job
   whose estimate is past the quote's price of a job, or the run's total past what was authorised, is
   not sent); the record says how its cost was confirmed (``cost.confirmed_by``);
4. the device is described again: a description that changed since the program was compiled against
   it stops the job (nothing is sent);
5. the job is recorded in the state database, ``submitting`` is set, the submit is sent, and the
   provider's id is stored as soon as it is given. A submit that did not complete stays
   ``submitting``: it is never sent again without the person's word (``qsolve providers follow``);
6. the job is followed to its end (never cancelled because the client stopped waiting: past the
   wait, the person is told how to follow it later);
7. its answer is checked (an outcome not of exactly the program's ``bits`` characters of 0 and 1, or
   counts that sum to neither the shots nor ``accepted_shots``, are refused naming the provider and the
   operation, and nothing is sealed), sealed with the host's key (the calibration snapshot the result
   names, as the provider named it), kept, and the record marked done.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from qiskit import QuantumCircuit

from qsolve.errors import QsolveError
from qsolve.providers.errors import ProviderError
from qsolve.providers.sealing import (
    compiled_member,
    describe_digest,
    provider_request,
    provider_result,
)
from qsolve.runtime.heartbeat import beat

WAIT_S = 600.0  # how long one command follows a job before it says how to follow it later
POLL_S = 0.2


class JobBook(Protocol):
    """Where provider jobs are recorded (the state database's ``ProviderJobs``)."""

    def record_provider_job(self, provider, program, description, shots, *, seed, context, run_id): ...
    def get_provider_job(self, job_id): ...
    def provider_job_submitting(self, job_id): ...
    def provider_job_resubmitting(self, job_id): ...
    def provider_job_submitted(self, job_id, job): ...
    def provider_job_polled(self, job_id): ...
    def provider_job_done(self, job_id, answer, receipt): ...
    def provider_job_ended(self, job_id, status, error): ...


class JobStopped(QsolveError):
    """A provider job that did not give counts; the message says why and what to do."""

    def __init__(self, message: str, *, record: str | None = None) -> None:
        super().__init__(message)
        self.record = record


class CostRefused(JobStopped):
    """A job not sent: its estimate is past what the person confirmed (a platform reason;
    ``qsolve.providers.cost`` holds the confirmation, :class:`~qsolve.providers.cost.Authority`)."""

    reason = "run_too_large"


class NotConfirmed(JobStopped):
    """A job that is not free, and no confirmation for this run: nothing was submitted."""


class StillRunning(JobStopped):
    """A job past this command's wait: recorded, and followed later (never cancelled for it)."""


class SubmitIncomplete(JobStopped):
    """A submit whose answer never came: the provider may have taken it."""


@dataclass
class Confirmation:
    """The person's confirmation for one run: ``yes`` (``--yes`` on that command), or ``ask``, a
    question put to them (an interactive yes), or neither. Never remembered across runs."""

    yes: bool = False
    ask: Callable[[str], bool] | None = None
    given: list[str] = field(default_factory=list)

    def confirm(self, question: str) -> bool:
        if self.yes:
            self.given.append(question)
            return True
        if self.ask is not None and self.ask(question):
            self.given.append(question)
            return True
        return False


@dataclass(frozen=True)
class Sealed:
    """A provider job's counts and its sealed receipt."""

    record: str
    counts: dict[str, int]
    job: dict[str, Any]  # {"request", "result"} with the receipt
    digest: str  # where it was kept (a blob digest)
    path: str


@dataclass
class ProviderSession:
    """What one provider's jobs need from the platform: its client, its name and kind, the book,
    the host's signer, where a sealed job is kept, the person's confirmation, and who is told what."""

    name: str
    kind: str  # "http" or "process"
    client: Any  # a ProviderClient
    book: JobBook
    signer: Any  # the host key (qsolve.receipts.keys.HostKey)
    keep: Callable[[str], tuple[str, str]]  # sealed job text -> (digest, path)
    confirmation: Confirmation
    tell: Callable[[str], None] = print
    wait_s: float = WAIT_S
    run_id: str | None = None
    #: the platform run its jobs are sent for, sealed in each request (``sealing.run_member``); none for a
    #: person's own ``qsolve run``
    sealed_run: dict[str, str] | None = None
    authority: Any = None  # a quote's confirmation (qsolve.providers.cost.Authority), held to at each job
    records: list[str] = field(default_factory=list)  # the record of each job of this session, in order
    #: why no further job is sent: a job the provider charged more than its estimate said (free, or a
    #: lower amount, or another currency), so its estimates no longer tell the person what a job costs
    overcharged: str | None = None
    _description: dict[str, Any] | None = None
    _device: Any = None

    def close(self) -> None:
        """The provider's client and the book closed."""
        self.client.close()
        self.book.close()

    def description(self) -> dict[str, Any]:
        if self._description is None:
            self._description = self.client.describe().answer
        return self._description

    def device(self):
        """The device's shape, read once from its description (every circuit of the run compiles to it)."""
        if self._device is None:
            from qsolve.providers.messages import Description

            self._device = Description.model_validate(self.description()).device()
        return self._device

    def compile(self, circuit: QuantumCircuit, seed: int = 0):
        """The circuit compiled to this provider's device and checked against it."""
        from qsolve.providers.compiler import compile_circuit

        return compile_circuit(circuit, self.device(), seed=seed)

    def run(self, circuit: QuantumCircuit, shots: int, seed: int | None = None, compiled=None) -> Sealed:
        if self.overcharged is not None:
            raise CostRefused(f"{self.overcharged}: no further job was sent")
        described = self.description()
        compiled = compiled or self.compile(circuit, seed or 0)
        program = compiled.program.model_dump(mode="json", exclude_none=True)
        estimate, free = self._estimate(program, shots, described)
        confirmed_by = None
        if self.authority is not None:  # a quote's run: held to what its confirmation authorised
            confirmed_by = self.authority.admit(self.name, estimate, free)
        elif not free:
            said = estimate_text(estimate)
            if not self.confirmation.confirm(
                f"provider {self.name}: {said} for {shots} shots of one circuit. Submit it?"
            ):
                raise NotConfirmed(
                    f"provider {self.name}: the job is not free ({said}) and this run has "
                    "no confirmation (--yes, or yes when asked): nothing was submitted"
                )
            confirmed_by = "--yes" if self.confirmation.yes else "a yes when asked"
        again = self.client.describe().answer
        if describe_digest(again) != describe_digest(described):
            raise JobStopped(
                f"provider {self.name}: describe changed between estimate and submit (the program was "
                "compiled against the earlier description): nothing was submitted"
            )
        context = {
            "name": self.name,
            "kind": self.kind,
            "request": provider_request(self.name, _qasm3(circuit), shots, seed, self.sealed_run),
            "compiled": compiled_member(compiled),
            "cost": {"free": free, "estimate": estimate, "confirmed_by": confirmed_by},
            "circuit_qpy": _qpy(circuit),
        }
        record = self.book.record_provider_job(
            self.name, program, described, shots, seed=seed, context=context, run_id=self.run_id
        )
        self.records.append(record.id)
        sealed = self.submit(record.id, program, shots, seed)
        if why := _charged_past(self.name, record.id, estimate, sealed.job["result"].get("cost", {})):
            self.overcharged = why
            self.tell(why)
        return sealed

    def submit(self, record: str, program: dict[str, Any], shots: int, seed: int | None) -> Sealed:
        self.book.provider_job_submitting(record)
        return self._send(record, program, shots, seed)

    def submit_again(self, record: str) -> Sealed:
        """Send again a job whose submit did not complete: only on the person's word (the caller's)."""
        job = self.book.provider_job_resubmitting(record)
        return self._send(record, job.program, job.shots, job.seed)

    def _send(self, record: str, program: dict[str, Any], shots: int, seed: int | None) -> Sealed:
        try:
            job = self.client.submit(program, shots, seed=seed)
        except ProviderError as e:
            if e.code in ("transport", "timeout", "protocol"):
                raise SubmitIncomplete(
                    f"{e}; the submit did not complete and the provider may have taken it: recorded as "
                    f"{record}; `qsolve providers follow {record}` says what is known, and only "
                    f"`qsolve providers follow {record} --resubmit --yes` sends it again",
                    record=record,
                ) from None
            self.book.provider_job_ended(record, "failed", str(e))
            raise JobStopped(str(e), record=record) from None
        self.book.provider_job_submitted(record, job)
        return self.follow(record)

    def follow(self, record: str) -> Sealed:
        """Follow a submitted job to its end, then read, check, seal and keep its counts."""
        from qsolve.receipts.seal import seal

        job = self.book.get_provider_job(record)
        if job.status != "submitted":
            raise JobStopped(f"provider job {record} is {job.status}: there is nothing to follow")
        if why := other_device(self.name, self.description(), job.description):
            raise JobStopped(f"{why}: job {record} was not asked of it", record=record)
        deadline = time.monotonic() + self.wait_s
        polls = job.polls
        while True:
            status = self.client.status(job.job)
            polls += 1
            self.book.provider_job_polled(record)
            if status.status == "done":
                break
            if status.status in ("failed", "cancelled"):
                why = f"provider {self.name}: job {job.job} {status.status}" + (
                    f": {status.reason}" if status.reason else ""
                )
                self.book.provider_job_ended(record, status.status, why)
                raise JobStopped(why + ": nothing was sealed", record=record)
            if time.monotonic() > deadline:
                raise StillRunning(
                    f"provider {self.name}: job {job.job} is still {status.status} after {self.wait_s:g} s; "
                    f"it was not cancelled: `qsolve providers follow {record}` reads it later",
                    record=record,
                )
            beat()  # a poll, bounded by its deadline: progress that keeps the run's lease
            time.sleep(POLL_S)
        try:
            answer = self.client.result(job.job, job.shots, bits=_bits(job.program))
        except ProviderError as e:
            if e.code in ("transport", "timeout"):
                raise StillRunning(
                    f"{e}; the job is recorded as {record}: `qsolve providers follow {record}`",
                    record=record,
                ) from None
            self.book.provider_job_ended(record, "failed", f"{e}: nothing was sealed")
            raise JobStopped(f"{e}: nothing was sealed", record=record) from None
        given = answer.model_dump(mode="json", exclude_none=True)
        context = job.context
        result = provider_result(
            name=context["name"],
            kind=context["kind"],
            describe=job.description,
            compiled=context["compiled"],
            job=job.job,
            polls=polls,
            answer=given,
            shots=job.shots,
            circuit=circuit_of(context),
            cost=context["cost"],
        )
        sealed = seal(context["request"], result, self.signer)
        digest, path = self.keep(job_text(sealed))
        self.book.provider_job_done(record, given, digest)
        return Sealed(record, {k: int(v) for k, v in given["counts"].items()}, sealed, digest, path)

    def _estimate(
        self, program: dict[str, Any], shots: int, described: Mapping[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """The estimate as it is shown and sealed, and whether the job is free (§7)."""
        from qsolve.providers.messages import read_billing

        try:
            estimate = self.client.estimate(program, shots)
        except ProviderError as e:
            if e.code != "unsupported":
                raise
            billing = read_billing(described.get("billing"))
            if billing.kind == "free":
                shown = {"free": True, "note": "no estimate: the device's billing says it is free"}
                self.tell(f"provider {self.name}: free (its billing says so; it gives no estimate)")
                return shown, True
            shown = {"unknown": "the provider gives no estimate, and its billing sets no price it states"}
            self.tell(f"provider {self.name}: the cost is unknown (no estimate)")
            return shown, False
        shown = estimate.shown()
        self.tell(f"provider {self.name}: {estimate_text(shown)}")
        return shown, estimate.kind == "free"


def other_device(name: str, now: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    """Why the provider ``name`` now answers for another device than the one a job was sent to, else
    '': its entry in providers.yaml replaced since, a job of the same id there would be another's."""

    def named(d: Mapping[str, Any]) -> str:
        return f"provider {d.get('provider')!r}, device {d.get('device')!r}"

    if named(now) == named(recorded):
        return ""
    return f"{name} is now {named(now)}, not the {named(recorded)} the job was sent to"


def _charged_past(name: str, record: str, estimate: Mapping[str, Any], cost: Mapping[str, Any]) -> str:
    """Why a job's charge is past the estimate the person was shown, else '' (:func:`past_estimate`)."""
    charged = cost.get("charged")
    if not charged or not (why := past_estimate(estimate, charged)):
        return ""
    return f"provider {name} charged {charged['amount']} {charged['currency']} for job record {record}, {why}"


def past_estimate(estimate: Mapping[str, Any], charged: Mapping[str, Any]) -> str:
    """How a charge (§5.5 ``charged``) is past the estimate shown before its submit (§5.2, §7), else '':
    a free job charged any amount, a priced one charged more (an ``at_least`` amount excepted) or in
    another currency. An unknown cost is held to no figure."""
    from decimal import Decimal

    if estimate.get("free") is True:
        return "whose estimate said free" if Decimal(charged["amount"]) > 0 else ""
    if "amount" not in estimate:
        return ""
    shown = f"{estimate['amount']} {estimate['currency']}"
    if charged["currency"] != estimate["currency"]:
        return f"whose estimate was {shown}"
    if not estimate.get("at_least") and Decimal(charged["amount"]) > Decimal(estimate["amount"]):
        return f"more than its estimate of {shown}"
    return ""


def _bits(program: Mapping[str, Any]) -> int | None:
    """The classical bits of the program sent: every outcome of its counts is exactly that long (§6)."""
    bits = program.get("bits")
    return bits if isinstance(bits, int) and not isinstance(bits, bool) else None


def estimate_text(estimate: Mapping[str, Any]) -> str:
    """An estimate as shown and sealed, in words: ``free``, ``costs 2.50 EUR (billed by job)``, or that
    the cost is unknown."""
    if estimate.get("free") is True:
        return "free"
    if "amount" in estimate:
        least = "at least " if estimate.get("at_least") else ""
        unit = f" (billed by {estimate['unit']})" if estimate.get("unit") else ""
        return f"costs {least}{estimate['amount']} {estimate['currency']}{unit}"
    return f"the cost is unknown ({estimate.get('unknown', 'no price is set')})"


def _qasm3(circuit: QuantumCircuit) -> str:
    from qiskit import qasm3

    return qasm3.dumps(circuit)


def _qpy(circuit: QuantumCircuit) -> str:
    from qiskit import qpy

    buffer = io.BytesIO()
    qpy.dump(circuit, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def circuit_of(context: Mapping[str, Any]) -> QuantumCircuit:
    from qiskit import qpy

    return qpy.load(io.BytesIO(base64.b64decode(context["circuit_qpy"])))[0]


def job_text(job: Mapping[str, Any]) -> str:
    return json.dumps(job, ensure_ascii=False, separators=(",", ":"))
