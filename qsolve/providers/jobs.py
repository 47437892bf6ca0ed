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
   wait, or on Ctrl-C while it waits (:class:`Interrupted`), the person is told how to follow it later);
7. its answer is checked (an outcome not of exactly the program's ``bits`` characters of 0 and 1, or
   counts that sum to neither the shots nor ``accepted_shots``, are refused naming the provider and the
   operation, and nothing is sealed), sealed with the host's key (the calibration snapshot the result
   names, as the provider named it), kept, and the record marked done.

Held to a job's limit (:meth:`HeldToLimit.hold_until`, from the job's admission), every exchange of it
with the provider (describe, estimate, submit, status, result) is given no more than what is left of
the limit; past it no further job is begun (:class:`TimeLimitReached`, naming the limit).
"""

from __future__ import annotations

import base64
import functools
import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from qiskit import QuantumCircuit

from qsolve.errors import QsolveError, shown
from qsolve.providers.errors import SAID_CHARS, ProviderError, bounded, job_shown
from qsolve.providers.sealing import (
    compiled_member,
    describe_digest,
    provider_request,
    provider_result,
)
from qsolve.runtime.heartbeat import beat

WAIT_S = 600.0  # how long one command follows a job before it says how to follow it later
POLL_S = 0.2  # the first wait between two polls of a job's status; each next one twice as long
POLL_MAX_S = 10.0  # the longest wait between two polls
FIRST_POLL_S = 2.0  # a job whose time is up when it is submitted is asked once, given this long at most


class JobBook(Protocol):
    """Where provider jobs are recorded (the state database's ``ProviderJobs``)."""

    def record_provider_job(self, provider, program, description, shots, *, seed, context, run_id): ...
    def get_provider_job(self, job_id): ...
    def provider_job_submitting(self, job_id): ...
    def provider_job_resubmitting(self, job_id): ...
    def provider_job_submitted(self, job_id, job): ...
    def provider_job_polled(self, job_id, count=1): ...
    def provider_job_done(self, job_id, answer, receipt): ...
    def provider_job_ended(self, job_id, status, error): ...


class JobStopped(QsolveError):
    """A provider job that did not give counts; the message says why and what to do, on one line (what
    the provider said in it, a job's id or a status's reason, its control characters escaped)."""

    def __init__(self, message: str, *, record: str | None = None) -> None:
        super().__init__(shown(message))
        self.record = record


class CostRefused(JobStopped):
    """A job not sent: its estimate is past what the person confirmed (a platform reason;
    ``qsolve.providers.cost`` holds the confirmation, :class:`~qsolve.providers.cost.Authority`)."""

    reason = "run_too_large"


class NotConfirmed(JobStopped):
    """A job that is not free, and no confirmation for this run: nothing was submitted."""


class StillRunning(JobStopped):
    """A job past this command's wait: recorded, and followed later (never cancelled for it)."""


class TimeLimitReached(JobStopped):
    """The job's own time limit reached before an exchange with the provider ended, or before one began:
    nothing further of it is sent, and no further job (issue 35, round 2)."""


class SubmitIncomplete(JobStopped):
    """A submit whose answer never came: the provider may have taken it."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT), or SIGTERM where a command turns it into a ``KeyboardInterrupt`` of
    :data:`SIGTERM` (``qsolve run``), while a command waited on a provider job: still a
    ``KeyboardInterrupt`` (the command stops, every ``finally`` runs), never a cancel. The job stays
    recorded as it was (``record``, its state-database id); the message says so and how to follow it
    later, as a time-out's does. ``code`` is the exit code a shell gives that signal (130, 143)."""

    def __init__(self, message: str, *, record: str, how: str = "Ctrl-C") -> None:
        super().__init__(message)
        self.record = record
        self.how = how
        self.code = 143 if how == SIGTERM else 130

    def __str__(self) -> str:
        return str(self.args[0])


#: the ``KeyboardInterrupt`` argument of a SIGTERM a command turned into one (``qsolve run``)
SIGTERM = "SIGTERM"


def how_stopped(e: BaseException) -> str:
    """``SIGTERM`` for the ``KeyboardInterrupt`` a command raised for it, else ``Ctrl-C``."""
    if isinstance(e, Interrupted):
        return e.how
    return SIGTERM if e.args[:1] == (SIGTERM,) else "Ctrl-C"


def _interruptible(step: Callable[..., Sealed]) -> Callable[..., Sealed]:
    """A step of :class:`ProviderSession` that waits on the provider for the job recorded as its first
    argument: Ctrl-C there becomes :class:`Interrupted`, naming the record and the follow command."""

    @functools.wraps(step)
    def waits(self: ProviderSession, record: str, *args: Any, **kwargs: Any) -> Sealed:
        try:
            return step(self, record, *args, **kwargs)
        except Interrupted:
            raise
        except KeyboardInterrupt as e:
            how = how_stopped(e)
            raise Interrupted(self.interrupted(record, how), record=record, how=how) from None

    return waits


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


class HeldToLimit:
    """A device job's wait held to the job's own limit (issue 35), for a class keeping ``wait_s``,
    ``limit_s`` and ``deadline``: a provider's session and an IBM backend."""

    wait_s: float
    limit_s: float | None
    deadline: float | None

    def hold_to(self, limit_s: float) -> None:
        """Wait on a device job no longer than the job's own limit, ``limit_s`` seconds from now."""
        self.hold_until(time.monotonic() + float(limit_s), limit_s)

    def hold_until(self, deadline: float, limit_s: float) -> None:
        """Wait on a device job no later than the job's ``deadline`` (``time.monotonic()``), that of its
        limit of ``limit_s`` seconds counted from the job's admission, never from before its wait for
        memory: ``qsolve run`` and a hardware run set it so
        (:func:`qsolve.validation.jobs.held_from_admission`)."""
        self.limit_s, self.deadline = float(limit_s), float(deadline)

    def _wait_until(self) -> tuple[float, str]:
        """When following a job stops, and the limit that says so, as the person is told it."""
        until, said = time.monotonic() + self.wait_s, f"{self.wait_s:g} s"
        if self.deadline is not None and self.deadline <= until:
            until, said = self.deadline, f"the job's time limit of {self.limit_s:g} s"
        return until, said


@dataclass
class ProviderSession(HeldToLimit):
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
    #: the job's own time limit, when the session runs for one (:meth:`hold_to`): no wait goes past it
    limit_s: float | None = None
    deadline: float | None = None  # time.monotonic() at which the job's limit is reached
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
        self._time_left("describe")
        described = self._held("describe", self.description)
        compiled = compiled or self.compile(circuit, seed or 0)
        program = compiled.program.model_dump(mode="json", exclude_none=True)
        self._time_left("estimate")
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
        self._time_left("describe")
        again = self._held("describe", self.client.describe).answer
        if describe_digest(again) != describe_digest(described):
            raise JobStopped(
                f"provider {self.name}: describe changed between estimate and submit (the program was "
                "compiled against the earlier description): nothing was submitted"
            )
        self._time_left("submit")  # a person's yes may have taken the rest of the job's time
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

    @_interruptible
    def submit(self, record: str, program: dict[str, Any], shots: int, seed: int | None) -> Sealed:
        self.book.provider_job_submitting(record)
        return self._send(record, program, shots, seed)

    @_interruptible
    def submit_again(self, record: str) -> Sealed:
        """Send again a job whose submit did not complete: only on the person's word (the caller's)."""
        job = self.book.provider_job_resubmitting(record)
        return self._send(record, job.program, job.shots, job.seed)

    def _send(self, record: str, program: dict[str, Any], shots: int, seed: int | None) -> Sealed:
        try:
            job = self._held("submit", self.client.submit, program, shots, seed=seed, stop=False)
        except ProviderError as e:
            if e.code in ("transport", "timeout", "protocol"):
                held = (
                    f" (held to the time left of {self._limit_said()})" if self.deadline is not None else ""
                )
                raise SubmitIncomplete(
                    f"{e}{held}; the submit did not complete and the provider may have taken it: recorded as "
                    f"{record}; `qsolve providers follow {record}` says what is known, and only "
                    f"`qsolve providers follow {record} --resubmit --yes` sends it again",
                    record=record,
                ) from None
            self.book.provider_job_ended(record, "failed", bounded(str(e), 4 * SAID_CHARS))
            raise JobStopped(str(e), record=record) from None
        self.book.provider_job_submitted(record, job)
        return self.follow(record)

    @_interruptible
    def follow(self, record: str) -> Sealed:
        """Follow a submitted job to its end, then read, check, seal and keep its counts."""
        from qsolve.receipts.seal import seal

        job = self.book.get_provider_job(record)
        if job.status != "submitted":
            raise JobStopped(f"provider job {record} is {job.status}: there is nothing to follow")
        if why := other_device(self.name, self.description(), job.description):
            raise JobStopped(f"{why}: job {record} was not asked of it", record=record)
        deadline, limit = self._wait_until()
        polls, pause = job.polls, POLL_S
        status = None
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 and status is None:  # asked once, however short the time: it may be done
                    left = FIRST_POLL_S
                elif left <= 0:
                    still = status.status
                    raise StillRunning(
                        f"provider {self.name}: job {job.job} is still {still} after {limit}; it was not "
                        f"cancelled: `qsolve providers follow {record}` reads it later",
                        record=record,
                    )
                status = self._status(job.job, left, record)
                polls += 1
                if status.status == "done":
                    break
                if status.status in ("failed", "cancelled"):
                    why = f"provider {self.name}: job {job.job} {status.status}" + (
                        f": {shown(bounded(status.reason))}" if status.reason else ""
                    )
                    self.book.provider_job_ended(record, status.status, bounded(why, 4 * SAID_CHARS))
                    raise JobStopped(why + ": nothing was sealed", record=record)
                beat()  # a poll, bounded by its deadline: progress that keeps the run's lease
                # backoff: 0.2 s, then twice as long each time up to POLL_MAX_S, never past the limit
                time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
                pause = min(pause * 2, POLL_MAX_S)
        finally:
            if polls > job.polls:  # one write for the whole wait, not one a poll
                self.book.provider_job_polled(record, polls - job.polls)
        try:
            answer = self._result(job, record)
        except ProviderError as e:
            if e.code in ("transport", "timeout"):
                raise StillRunning(
                    f"{e}; the job is recorded as {record}: `qsolve providers follow {record}`",
                    record=record,
                ) from None
            self.book.provider_job_ended(
                record, "failed", bounded(f"{e}: nothing was sealed", 4 * SAID_CHARS)
            )
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

    def interrupted(self, record: str, how: str = "Ctrl-C") -> str:
        """What Ctrl-C (or ``how``) while waiting on the job ``record`` leaves, in one line: as its record
        says it is (never cancelled for it), and the command that reads it later."""
        try:
            job = self.book.get_provider_job(record)
        except Exception:  # noqa: BLE001 - the line names the record whatever the book says
            status, given = "unknown", None
        else:
            status, given = str(getattr(job.status, "value", job.status)), job_shown(job.job)
        follow = f"`qsolve providers follow {record}`"
        if status == "submitting":
            return (
                f"provider {self.name}: interrupted ({how}) before its submit's answer came; the provider "
                f"may have taken it: recorded as {record}; {follow} says what is known, and only "
                f"`qsolve providers follow {record} --resubmit --yes` sends it again"
            )
        if status == "submitted":
            return (
                f"provider {self.name}: interrupted ({how}) while waiting on job {given}; it was not "
                f"cancelled and is recorded as {record}: {follow} reads it later"
            )
        return f"provider {self.name}: interrupted ({how}); job record {record} is {status}: {follow}"

    def _limit_said(self) -> str:
        return f"the job's time limit of {self.limit_s:g} s"

    def _time_left(self, op: str) -> float | None:
        """The seconds left of the job's limit before ``op`` (None when the session is held to none);
        :class:`TimeLimitReached` naming the limit when none is left: nothing further is sent."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeLimitReached(
                f"provider {self.name}: stopped at {self._limit_said()} before its {op}: no further job "
                "was sent"
            )
        return left

    def _held(self, op: str, call: Callable[..., Any], *args: Any, stop: bool = True, **kwargs: Any) -> Any:
        """``call`` (an exchange with the provider), given no longer than what is left of the job's limit,
        nor its own time-out. An exchange that runs out of the job's time is :class:`TimeLimitReached`
        naming the limit (``stop``; a submit's is the caller's to say, since the provider may have taken
        it); with no time left it is not begun."""
        left = self._time_left(op)
        if left is None:
            return call(*args, **kwargs)
        timeout = self.client.timeout
        self.client.timeout = max(0.05, min(timeout, left))
        try:
            return call(*args, **kwargs)
        except ProviderError as e:
            if stop and e.code == "timeout" and left < timeout:
                raise TimeLimitReached(
                    f"provider {self.name}: {op}: no answer within the time left of {self._limit_said()}: "
                    "no further job was sent"
                ) from None
            raise
        finally:
            self.client.timeout = timeout

    def _status(self, job: str, left: float, record: str):
        """The job's status, its exchange given no longer than ``left`` seconds (nor its own time-out)."""
        timeout = self.client.timeout
        self.client.timeout = max(0.05, min(timeout, left))
        try:
            return self.client.status(job)
        except ProviderError as e:
            if e.code == "timeout" and left < timeout:
                raise StillRunning(
                    f"provider {self.name}: no status of job {job} within the time left of "
                    f"{self._wait_until()[1]}; it was not cancelled: `qsolve providers follow {record}` "
                    "reads it later",
                    record=record,
                ) from None
            raise
        finally:
            self.client.timeout = timeout

    def _result(self, job: Any, record: str):
        """The job's counts, its exchange given no longer than what is left of the job's limit (issue 35)
        (:data:`FIRST_POLL_S` when none is left: the job is done), nor its own time-out; past it,
        :class:`StillRunning` naming the limit."""
        timeout = self.client.timeout
        if self.deadline is None:
            return self.client.result(job.job, job.shots, bits=_bits(job.program))
        left = self.deadline - time.monotonic()
        limit = f"the job's time limit of {self.limit_s:g} s"
        if left <= 0:  # done within the limit: its counts are asked once, given this long at most
            left = FIRST_POLL_S
        self.client.timeout = max(0.05, min(timeout, left))
        try:
            return self.client.result(job.job, job.shots, bits=_bits(job.program))
        except ProviderError as e:
            if e.code == "timeout" and left < timeout:
                raise StillRunning(
                    f"provider {self.name}: no counts of job {job.job} within the time left of {limit}; "
                    f"it was not cancelled: `qsolve providers follow {record}` reads it later",
                    record=record,
                ) from None
            raise
        finally:
            self.client.timeout = timeout

    def _estimate(
        self, program: dict[str, Any], shots: int, described: Mapping[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """The estimate as it is shown and sealed, and whether the job is free (§7)."""
        from qsolve.providers.messages import read_billing

        try:
            estimate = self._held("estimate", self.client.estimate, program, shots)
        except ProviderError as e:
            if e.code != "unsupported":
                raise
            billing = read_billing(described.get("billing"))
            if billing.kind == "free":
                shown = {"free": True, "note": "no estimate: the device's billing says it is free"}
                self.tell(f"provider {self.name}: free (its billing says so; it gives no estimate)")
                return shown, True
            shown = {"unknown": billing.without_estimate()}
            self.tell(f"provider {self.name}: the cost is unknown ({shown['unknown']})")
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
