"""Hardware cases as quoted, confirmed, developer-paid platform runs (issue 13, items 1-3, 6;
benchmarks-and-gates.md, "Hardware cases", "How they run"). Plain functions; ``flows/hardware.py`` and
``qsolve quote`` / ``qsolve confirm`` stay thin over them.

Pricing (:func:`request_quotes`): for the latest published version of a workflow, every hardware case,
on its own target or on ``target``, is checked against the manifest's ``targets.qpu``
(``target_not_supported``) and its device reached (an availability error), then its workflow's
``estimate()`` is asked in the sandbox's workflow process, which is never approved to run: nothing of
the case runs. Its price in credits comes from the price table; for a provider, the device's own billing
is shown beside it, or that its cost is unknown. One quote and one ``created`` run per case, in the
developer's own account, in a batch the database keeps to one at a time per workflow.

A provider's money (issue 33, item 3): a quote on ``provider:NAME`` is refused (``provider_not_allowed``)
before the provider is asked anything, unless the paying account is its holder or one the holder allows
(:meth:`StateDB.check_provider_use`); a quote whose job on another account's provider is not free names
that holder, whose confirmation it needs besides the payer's before its run starts.

Running (:func:`run_quote`): a confirmed quote becomes an ordinary platform run
(:func:`tasks.runs.run_case`, ``Source.HARDWARE``): its hold capped at what the confirmation authorised,
a provider target opened with the quote's confirmation for this run only, every device job sealed and
recorded under the run's id. A device job that would take the run past what was authorised is not sent:
the run stops with ``run_too_large`` (a platform reason, never recorded). An ended run the track record
keeps is filed at once, its row's ``receipt_digest`` naming its receipts.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from qsolve.errors import QsolveError
from qsolve_pipeline.storage.state import (
    FailureReason,
    Quote,
    QuoteBatch,
    QuoteStatus,
    RunStatus,
    Source,
    StateDB,
    Version,
    qsolve_home,
)

CASES = Path("benchmarks") / "cases.yaml"


class HardwareRefused(QsolveError):
    """A quote request or a run the platform refuses: ``reason`` says why (``target_not_supported``,
    ``backend_unavailable``, ``no_hardware_cases``, ``not_confirmed``, ``taken``: another process runs it)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


# the folder a hardware case runs in


@contextmanager
def run_folder(version: Version, target: str | None = None, home: Path | None = None) -> Iterator[Path]:
    """The version's published folder, its ``cases`` the version's hardware cases (inputs inline, each
    on ``target`` when given): so the sandbox runs ``hardware_cases[i]`` as ``cases[i]``."""
    from qsolve.workflow.publication import unpack
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES

    home = home or qsolve_home()
    with tempfile.TemporaryDirectory(prefix="qsolve-hardware-") as tmp:
        folder = unpack(BlobStore(home).get(version.digest, limit=ARCHIVE_BYTES), Path(tmp) / "workflow")
        cases = [dict(c) | ({"target": target} if target else {}) for c in version.hardware_cases]
        (folder / CASES).write_text(json.dumps({"cases": cases, "hardware_cases": []}, indent=1))
        yield folder


def case_targets(version: Version, target: str | None) -> list[str]:
    return [target or c["target"] for c in version.hardware_cases]


# pricing


def device_billing(target: str, home: Path | None = None) -> dict[str, Any]:
    """What the device says of its cost, as a quote shows it: ``{"cost": "free" | "priced" | "unknown",
    ...}``; a device that cannot be reached raises HardwareRefused(backend_unavailable)."""
    if target.startswith("ibm:"):
        return ibm_availability(target, home) | {
            "cost": "unknown",
            "note": "IBM Quantum states no price: each job's cost is unknown",
        }
    if not target.startswith("provider:"):
        return {"cost": "free", "note": "a simulator: only credits"}
    from qsolve.providers.connect import open_client
    from qsolve.providers.messages import read_billing

    name = target.split(":", 1)[1]
    try:
        client, _ = open_client(name, home)
    except Exception as e:  # not in providers.yaml, its credential missing
        raise HardwareRefused("backend_unavailable", f"{target}: {e}") from None
    try:
        described = client.describe().answer
    except Exception as e:
        raise HardwareRefused("backend_unavailable", f"{target} did not answer describe: {e}") from None
    finally:
        client.close()
    if described.get("status", "online") not in ("online", "available"):
        raise HardwareRefused("backend_unavailable", f"{target} is {described.get('status')}")
    billing = read_billing(described.get("billing"))
    shown: dict[str, Any] = {"billing": billing.wire(), "provenance": described.get("provenance")}
    if billing.kind == "free":
        return shown | {"cost": "free"}
    if billing.kind == "priced":
        return shown | {"cost": "priced", "rate": f"{billing.price} {billing.currency} per {billing.unit}"}
    return shown | {"cost": "unknown", "note": billing.reason or "the provider sets no price it states"}


def provider_quote(target: str, circuits: int | None, shots: int | None, home: Path | None = None) -> dict:
    """The provider's own price of a case's jobs, asked of its ``estimate`` (qsolve.providers.cost)."""
    from qsolve.providers.connect import open_client
    from qsolve.providers.cost import quote_cost

    name = target.split(":", 1)[1]
    try:
        client, _ = open_client(name, home)
    except Exception as e:  # noqa: BLE001 - not in providers.yaml, its credential missing
        raise HardwareRefused("backend_unavailable", f"{target}: {e}") from None
    try:
        return quote_cost(client, client.describe().answer, circuits=circuits, shots=shots)
    except Exception as e:  # noqa: BLE001 - it stopped answering: no price is known
        return {"cost": "unknown", "jobs": circuits, "note": f"{target} could not be asked its estimate: {e}"}
    finally:
        client.close()


def provider_log(target: str, home: Path | None = None) -> str:
    """Where a provider target's log is, for an operator: a process provider's standard error, kept in
    ``QSOLVE_HOME/providers/logs/NAME.log``; an HTTP provider's is its own, at its endpoint."""
    from qsolve.providers.registry import Registry

    name = target.split(":", 1)[1]
    try:
        entry = Registry(home or qsolve_home()).get(name)
    except Exception:  # noqa: BLE001 - removed since: say where it would be
        entry = None
    if entry is not None and entry.transport == "http":
        return f"the provider's own, at {entry.url} (an HTTP provider keeps its log itself)"
    return str((home or qsolve_home()) / "providers" / "logs" / f"{name}.log")


def ibm_availability(target: str, home: Path | None = None) -> dict[str, Any]:
    """An ``ibm:`` device reached with the person's key and asked its status; HardwareRefused
    (backend_unavailable) when it cannot be reached, refuses the key, or is not operational."""
    from qsolve.targets.ibm import IbmSettings, connect, ibm_key, unavailable

    try:  # connect's messages are scrubbed of the key
        secret, where = ibm_key(home)
        _, backend = connect(target.removeprefix("ibm:"), IbmSettings.from_environment(), secret, where)
    except Exception as e:
        raise HardwareRefused("backend_unavailable", str(e)) from None
    if why := unavailable(backend, secret):
        raise HardwareRefused("backend_unavailable", f"{target}: {why}")
    return {}


def provider_holders(db: StateDB, targets: list[str], account: str, workflow: str) -> dict[str, str]:
    """Each ``provider:NAME`` target's holder, once ``account`` is found allowed to spend on it for
    ``workflow``'s quotes; HardwareRefused (``provider_not_allowed``), naming the rule and the holder,
    for the first it is not (nothing is asked of any provider before)."""
    from qsolve_pipeline.storage.state import ProviderNotAllowed

    holders = {}
    for t in dict.fromkeys(targets):
        if t.startswith("provider:"):
            try:
                holders[t] = db.check_provider_use(t.split(":", 1)[1], account, workflow)
            except ProviderNotAllowed as e:
                raise HardwareRefused("provider_not_allowed", str(e)) from None
    return holders


def request_quotes(
    db: StateDB, workflow: str, account: str, *, target: str | None = None, home: Path | None = None
) -> tuple[QuoteBatch, list[Quote]]:
    """Price every hardware case of ``workflow``'s latest published version (its highest): a batch of
    quotes. An earlier batch whose quotes only awaited confirmation lapsed (the batch's ``lapsed``)."""
    from qsolve.validation.jobs import Limits, run_case_job
    from qsolve.workflow.folder import load_workflow

    version = db.get_version(workflow)
    if not version.hardware_cases:
        raise HardwareRefused("no_hardware_cases", f"{workflow} {version.version} has no hardware_cases")
    targets = case_targets(version, target)
    holders = provider_holders(db, targets, account, workflow)
    with run_folder(version, target, home) as folder:
        wf = load_workflow(folder)
        for t in dict.fromkeys(targets):
            family = t.split(":", 1)[0]
            if family not in wf.manifest.targets.qpu:
                raise HardwareRefused(
                    "target_not_supported",
                    f"{t}: the manifest of {workflow} lists {wf.manifest.targets.qpu or 'no family'} under "
                    f"targets.qpu, not {family}",
                )
        billing = {t: device_billing(t, home) for t in dict.fromkeys(targets)}
        batch = db.request_batch(version, account, target=target)
        made = []
        try:
            limits = Limits.of(wf.manifest.resources)
            for index, t in enumerate(targets):
                said: dict[str, Any] = {}

                def price_only(event: dict[str, Any], said: dict[str, Any] = said) -> bool:
                    said.update(event)
                    return False  # priced, never run

                run_case_job(folder, index, t, limits, price_only)
                estimate = said.get("estimate") or {}
                if "circuits" in estimate and "shots" in estimate:
                    circuits, shots = int(estimate["circuits"]), int(estimate["shots"])
                    price = db.estimate_price(t, circuits, shots)
                    shown = {"circuits": circuits, "shots": shots}
                else:  # no estimate: the most a run may cost
                    price = db.limits(Source.HARDWARE).credits
                    shown = {"circuits": None, "shots": None, "note": said.get("error") or "no estimate"}
                case = version.hardware_cases[index]
                device = dict(billing[t])
                if t.startswith("provider:"):  # the provider's own price of the jobs the run will send
                    shown["provider"] = provider_quote(t, shown["circuits"], shown["shots"], home)
                    device["cost"] = shown["provider"]["cost"]
                holder = holders.get(t)
                made.append(
                    db.add_quote(
                        batch.id,
                        index,
                        case["name"],
                        t,
                        price,
                        shown | {"device": device},
                        unknown_cost=device["cost"] == "unknown",
                        holder=holder if holder != account and device["cost"] != "free" else None,
                    )
                )
        except BaseException as e:
            db.abandon_batch(batch.id, f"pricing failed: {e}")
            raise
        priced = db.batch_priced(batch.id)
        return replace(priced, lapsed_batch=batch.lapsed_batch, lapsed=batch.lapsed), made


# running


@dataclass
class _Spend:
    """What the run's device jobs have cost in credits so far, against what was authorised."""

    db: StateDB
    run_id: str
    target: str
    authorised: Decimal
    circuits: int = 0
    shots: int = 0
    stopped: list[str] = field(default_factory=list)
    progress: Callable[[int], None] | None = None  # told the number of jobs the device has run

    def take(self, shots: int) -> None:
        """Allow one more job, or stop the run before it: past what was authorised."""
        from qsolve.providers.jobs import JobStopped

        after = self.db.estimate_price(self.target, self.circuits + 1, self.shots + shots)
        if after > self.authorised:
            why = (
                f"the next job on {self.target} would bring run {self.run_id} to {after} credits, past the "
                f"{self.authorised} its confirmation authorised: it was not sent, and the run stopped"
            )
            self.stop(FailureReason.RUN_TOO_LARGE, why)
            raise JobStopped(why)

    def sent(self, shots: int) -> None:
        """Count a job the device ran."""
        self.circuits += 1
        self.shots += shots
        if self.progress is not None:
            self.progress(self.circuits)

    def stop(self, reason: FailureReason, why: str) -> None:
        """End the run for a platform reason (never recorded), whatever its workflow does next."""
        if not self.stopped:
            self.db.finish_run(self.run_id, RunStatus.FAILED, reason=reason, detail=why)
        self.stopped.append(why)

    def failed(self, e: Exception) -> None:
        """A device job that gave no counts: the device became unavailable (its own reason, or it stopped
        answering), or its job failed there; either way not the workflow's doing."""
        from qsolve.providers.jobs import StillRunning, SubmitIncomplete

        said = getattr(e, "reason", None)
        if said in {r.value for r in FailureReason}:
            reason = FailureReason(said)
        elif isinstance(e, StillRunning | SubmitIncomplete):
            reason = FailureReason.BACKEND_UNAVAILABLE
        else:
            reason = FailureReason.PLATFORM_ERROR
        self.stop(reason, str(e))

    def spent(self) -> Decimal:
        return self.db.estimate_price(self.target, self.circuits, self.shots)


def metered(backend, spend: _Spend):
    """``backend`` (a provider's or IBM's), its circuits sent one job at a time, each allowed first: the
    job that would take the run past what was authorised is never sent, and a job that stops (the device
    went down, its job failed) ends the run there for a platform reason."""
    from qsolve.targets.base import Backend

    class Metered(Backend):
        name, device, ideal = backend.name, backend.device, False
        inner = backend

        def pass_manager(self, seed):  # pragma: no cover - transpile is the device's own
            return backend.pass_manager(seed)

        def transpile(self, circuits, seed):
            return backend.transpile(circuits, seed)

        def confusion(self, qubit):
            return backend.confusion(qubit)

        def execute(self, transpiled, shots, seed):
            from qsolve.providers.jobs import JobStopped

            counts = []
            for sent in transpiled:
                spend.take(shots)
                try:
                    counts.extend(backend.execute([sent], shots, seed))
                except JobStopped as e:
                    spend.failed(e)
                    raise
                spend.sent(shots)
            return counts

    return Metered()


def open_device(target: str, run_id: str, home: Path, quote: Quote | None = None):
    """The quote's device opened for its run, with the quote's confirmation standing for this run only
    (its cost was shown, and confirmed, in the quote): on a provider, each job is held to what the quote
    authorised of the provider's money (``qsolve.providers.cost.Authority``), never to a blanket yes."""
    from qsolve.providers.jobs import Confirmation
    from qsolve.providers.sealing import run_member

    run = None  # the run each job's request seals, so that its receipts belong to its row alone
    if quote is not None:
        run = run_member(run_id, quote.workflow, quote.version, quote.case_name, target)
    if target.startswith("provider:"):
        from qsolve.providers.cost import Authority
        from qsolve.targets.provider import ProviderBackend
        from qsolve_pipeline.storage.sessions import provider_session

        s = provider_session(target.split(":", 1)[1], yes=False, run_id=run_id, home=home, run=run)
        shown = (quote.estimate if quote is not None else {}).get("provider") or {}
        s.authority = Authority(quote.id if quote is not None else run_id, shown)
        return ProviderBackend(s)
    from qsolve_pipeline.storage.sessions import ibm_backend

    return ibm_backend(
        target, home=home, confirmation=Confirmation(yes=True), run_id=run_id, tell=_log, run=run
    )


def _log(line: str) -> None:
    import logging

    logging.getLogger("qsolve.hardware").info(line)


@dataclass(frozen=True)
class HardwareOutcome:
    quote: str
    run_id: str
    case: str
    target: str
    status: str
    reason: str | None
    detail: str | None
    recorded: bool
    receipts: list[str]  # blob digests of the sealed device jobs, in order
    credits: Decimal

    def line(self) -> str:
        got = f"{self.status}" + (f" ({self.reason})" if self.reason else "")
        return f"quote {self.quote}: {self.case} on {self.target}: {got}, {len(self.receipts)} receipts"


def run_quote(
    db: StateDB,
    quote_id: str,
    *,
    home: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> HardwareOutcome:
    """Run one confirmed quote as its run; an unconfirmed, lapsed or already taken one never runs. The
    run is taken in the database for this process's lease: of two processes asked to run it, one does.
    ``progress`` is told how many device jobs have run, after each."""
    from qsolve.runtime.stopping import why_of
    from qsolve.targets import use
    from qsolve.validation.jobs import held_from_admission
    from qsolve.workflow.cases import Case
    from qsolve.workflow.folder import load_workflow
    from qsolve_pipeline.storage.state import Lease
    from qsolve_pipeline.tasks.runs import run_case

    home = home or qsolve_home()
    db.expire_quotes()
    quote = db.get_quote(quote_id)
    if quote.status is not QuoteStatus.CONFIRMED or quote.authorised is None:
        raise HardwareRefused("not_confirmed", f"quote {quote_id} is {quote.status.value}: nothing runs")
    with Lease(db) as lease:
        if not db.claim_quote_run(quote.id, lease.owner, lease.seconds):
            run = db.get_run(quote.run_id)
            raise HardwareRefused(
                "taken", f"run {run.id} of quote {quote_id} is {run.status.value} and taken already"
            )
        run = db.get_run(quote.run_id)
        version = db.get_version(quote.workflow, quote.version)
        spend = _Spend(db, run.id, quote.target, quote.authorised, progress=progress)
        with run_folder(version, None, home) as folder:
            cases = json.loads((folder / CASES).read_text())["cases"]
            cases[quote.case_index]["target"] = quote.target
            (folder / CASES).write_text(json.dumps({"cases": cases, "hardware_cases": []}, indent=1))
            wf = load_workflow(folder)
            case = Case.model_validate(cases[quote.case_index])
            try:
                device = open_device(quote.target, run.id, home, quote)
            except Exception as e:  # unreachable, not available, its key refused: before anything runs
                db.finish_run(
                    run.id, RunStatus.FAILED, reason=FailureReason.BACKEND_UNAVAILABLE, detail=str(e)
                )
                return _outcome(db, quote, home)
            use(metered(device, spend))
            try:
                # a device job's wait is the job's time, counted once it is admitted (issue 35)
                with held_from_admission(device):
                    run_case(
                        db, folder, version, quote.case_index, case, Source.HARDWARE, quote.account,
                        wf.manifest.resources, run=run, cap=quote.authorised, tell=_log,
                    )  # fmt: skip
            except BaseException as e:  # a platform stop (SIGTERM, SIGINT, a cancellation): never a crash
                db.end_stopped_runs(lease.owner, f"{why_of(e)}: the run did not end", run_id=run.id)
                raise
            finally:
                device.close()
    if spend.stopped:  # ended by the meter: charge what the device ran, release the rest
        hold = db.get_hold(run.id)
        if hold is not None and not hold.closed:
            db.settle(run.id, spend.spent())
    return _outcome(db, quote, home)


def _outcome(db: StateDB, quote: Quote, home: Path) -> HardwareOutcome:
    from qsolve_pipeline.storage.maintenance import file_runs

    run = db.get_run(quote.run_id)
    receipts = db.run_receipts(run.id)
    if run.recordable and run.filed_at is None:
        file_runs(db, [run], home)
    return HardwareOutcome(
        quote=quote.id,
        run_id=run.id,
        case=quote.case_name,
        target=quote.target,
        status=run.status.value,
        reason=None if run.reason is None else run.reason.value,
        detail=run.detail,
        recorded=run.recordable,
        receipts=receipts,
        credits=run.actual_credits or Decimal(0),
    )
