"""Hardware quotes and runs on Prefect (issue 13, items 1-3, 8), thin over ``tasks.hardware``.

``quote`` (the operator's and the developer's path in the UI): price every hardware case of a workflow's
latest version (``request_quotes``), publish the quote table as an artifact, then wait for each quote's
confirmation as a run input: the paused run shows a form with the quote (its price, what it authorises,
whether its cost is unknown); resumed with ``confirm`` ticked, the quote is confirmed for its run only and
the run starts (on a provider another account holds, once its holder confirmed too: ``qsolve confirm ID
--account HOLDER`` or the web pages, which start it); left, the quote lapses
at the end of its validity; resumed unticked, it is refused. A quote
confirmed meanwhile elsewhere (``qsolve confirm``) is run all the same; one run by another process is not
run again (the database gives each quote's run to one process).

``hardware``: run the confirmed quotes of a batch (or one quote), as ``qsolve confirm`` leaves them.

A quote's run goes where its provider is (issue 26, item 3; ``qsolve.targets.routing``): a flow run on
a machine that does not hold the provider (``provider:NAME``'s entry and credential, an IBM Quantum key)
does not run it there, but creates a ``hardware`` flow run for it in the provider's work queue
(``provider-NAME``, ``ibm``) of the deployment's work pool, Scheduled with a message naming the provider
it waits for; a worker that holds it (``qsolve worker``) takes it. Where the deployment has no work pool
(``deployments/serve.py``: one process serves everything) or there is no deployment, it runs here.

Every hardware run holds a slot of its device family's Prefect concurrency limit (``hardware-ibm``,
``hardware-provider``): the serve script and ``prefect.yaml``'s build step (at ``prefect deploy``) create them
(``python -m qsolve_pipeline.deployments.limits``), and each flow run creates any that is missing before it
runs anything, saying so, so that no limit is silently missing. An operator changes a limit's size with
``prefect gcl update NAME --limit N``; qsolve never resets it.
"""

from __future__ import annotations

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
from prefect import flow, get_run_logger, task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.input import RunInput
from pydantic import ConfigDict

from qsolve_pipeline.flows.endings import Ended, install, record
from qsolve_pipeline.storage.state import HOLDER_STALE_AFTER, Quote, QuoteRefused, QuoteStatus, connect
from qsolve_pipeline.tasks.hardware import HardwareOutcome, HardwareRefused, request_quotes, run_quote

#: each device family's Prefect concurrency limit, and the size it is created with
LIMITS = {"hardware-ibm": 1, "hardware-provider": 2}
HARDWARE_DEPLOYMENT = "hardware/hardware"


class HardwareStopped(Ended):
    """A quote or hardware flow run that ended Failed for a platform reason: a device's or a provider's,
    or a refused request. Its message, one line, is the run's state message; ``outcomes`` the runs it
    ran. It is the Failed state's data: Prefect raises it at the run's end, and it is logged as that one
    line, with no engine traceback (:mod:`flows.endings`)."""

    def __init__(self, message: str, outcomes: list | None = None) -> None:
        super().__init__(message, list(outcomes or []))
        self.outcomes = list(outcomes or [])


install()


def limit_of(target: str) -> str:
    return f"hardware-{target.split(':', 1)[0]}"


def ensure_limits(log=None) -> list[str]:
    """Create each family's concurrency limit that does not exist (never resizing one that does); the
    names created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    made = []
    with get_client(sync_client=True) as client:
        for name, size in LIMITS.items():
            try:
                client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=size))
                made.append(name)
                if log is not None:
                    log(f"created the concurrency limit {name} ({size} at a time): it was missing")
    return made


class QuoteConfirmation(RunInput):
    """The form the paused quote run shows for a quote whose cost is known: *confirm* only."""

    model_config = ConfigDict(extra="ignore")  # qsolve confirm resumes any quote's form the same way
    confirm: bool = False


class UnknownCostConfirmation(QuoteConfirmation):
    """The form for a quote whose cost is unknown: *seen unknown cost* must be ticked as well."""

    seen_unknown_cost: bool = False


def confirmation_form(quote: Quote) -> type[QuoteConfirmation]:
    return UnknownCostConfirmation if quote.unknown_cost else QuoteConfirmation


@task(name="hardware run", cache_policy=NO_CACHE, task_run_name="hardware run {quote_id}")
def hardware_run(quote_id: str, target: str) -> HardwareOutcome | None:
    """One confirmed quote's run, in a slot of its family's limit; None when another process has it, or
    when it was sent to a machine that holds its provider (:func:`send_away`)."""
    logger = get_run_logger()
    if (sent := send_away(quote_id, target)) is not None:
        logger.info(sent)
        return None
    with concurrency(limit_of(target), occupy=1, strict=True), connect() as db:
        planned = db.get_quote(quote_id).estimate.get("circuits") or 0
        bar = create_progress_artifact(
            0.0, key=f"hardware-run-{quote_id[:12]}", description=f"Device jobs of quote {quote_id}"
        )

        def progress(jobs: int) -> None:
            update_progress_artifact(bar, 100.0 * min(jobs / planned, 1.0) if planned else 100.0)
            if planned and jobs * 10 // planned != (jobs - 1) * 10 // planned:  # a line a tenth of the way
                logger.info(f"quote {quote_id}: {jobs} of {planned} device jobs done")

        try:
            outcome = run_quote(db, quote_id, progress=progress)
        except HardwareRefused as e:
            logger.info(f"quote {quote_id}: not run here: {e}")
            return None
    update_progress_artifact(bar, 100.0)
    logger.info(outcome.line())
    if outcome.receipts:
        logger.info(f"receipts of run {outcome.run_id}: " + ", ".join(outcome.receipts))
    return outcome


@task(name="price hardware cases", cache_policy=NO_CACHE)
def price(workflow: str, account: str, target: str | None) -> list[Quote] | str:
    """The quotes made, or why the request was refused (one line: an expected ending, not a task that
    failed with a traceback)."""
    from qsolve_pipeline.storage.state import BatchInProgress

    with connect() as db:
        try:
            batch, made = request_quotes(db, workflow, account, target=target)
        except (BatchInProgress, HardwareRefused) as e:
            return f"refused: {e}"
    n = f"{len(made)} quote" + ("" if len(made) == 1 else "s")
    get_run_logger().info(f"batch {batch.id} of {workflow}: {n}; nothing runs until each is confirmed")
    return made


def _shown(quote: Quote, limit) -> str:
    """The quote as the confirmation form shows it (markdown)."""
    from qsolve.hardware.shown import authorises, describe, heading, holder_line, over_limit

    warning = over_limit(quote, limit)
    holder = holder_line(quote)
    unknown = (
        f"\n\n**The cost on {quote.target} is unknown.** Tick *seen unknown cost* as well to confirm it."
        if quote.unknown_cost
        else ""
    )
    assumes = quote.estimate.get("provider", {}).get("assumes")
    return (
        f"### Quote `{quote.id}`: {quote.workflow} {quote.version}, {quote.case_name} on {quote.target}\n\n"
        f"{describe(quote).removeprefix(heading(quote) + ': ')}\n\n"
        + (f"It assumes {assumes}.\n\n" if assumes else "")
        + f"Confirming authorises {authorises(quote, limit)}, for this run only, paid by "
        f"`{quote.account}`. Tick *confirm* and submit to run it; submit unticked to refuse it. Valid until "
        f"{quote.valid_until:%Y-%m-%d %H:%M:%S} UTC.{unknown}"
        + (f"\n\n**Warning:** {warning}." if warning else "")
        + (f"\n\n**Its holder confirms too:** {holder}." if holder else "")
    )


def _publish(made: list[Quote], key: str = "hardware-quotes") -> None:
    from qsolve.hardware.shown import describe

    create_table_artifact(
        key=key,
        table=[
            {
                "quote": q.id,
                "version": q.version,
                "case": q.case_name,
                "target": q.target,
                "credits": str(q.price),
                "cost": q.estimate.get("device", {}).get("cost", ""),
                "status": q.status.value,
                "shown": describe(q),
            }
            for q in made
        ],
        description="Each hardware case's quote: confirm each on its own (this run's input, qsolve confirm)",
    )


def _cancelled(flow, flow_run, state) -> list[str]:
    """Prefect's cancellation of a hardware or quote flow run, passed on to the provider jobs its quotes'
    runs may still have at their devices (qsolve.targets.cancel; a device that cannot cancel is said
    so): the quotes its parameters name and those it recorded as it ran (the ``qsolve.quotes`` label),
    whatever parameters requested it. The lines logged."""
    import logging

    from qsolve.targets.cancel import cancel_run
    from qsolve_pipeline.flows.endings import recorded

    log = logging.getLogger("qsolve.hardware")
    named, said = flow_run.parameters or {}, []
    labelled = [q for q in (recorded(flow_run, "quotes") or "").split(",") if q]
    with connect() as db:
        quotes = [
            db.get_quote(q)
            for q in dict.fromkeys([*([named["quote"]] if named.get("quote") else []), *labelled])
        ]
        quotes += db.list_quotes(batch_id=named["batch"]) if named.get("batch") else []
        for run_id in dict.fromkeys(q.run_id for q in quotes if q.run_id):
            for done in cancel_run(db, run_id):
                said.append(f"run {run_id}: {done.line}")
                (log.info if done.stopped else log.warning)(said[-1])
    return said


@flow(name="quote", log_prints=True, on_cancellation=[_cancelled])
def quote_flow(workflow: str, account: str, target: str | None = None, wait_s: int | None = None):
    """Price ``workflow``'s hardware cases for ``account``, then wait for each quote's confirmation as
    this run's input and run the confirmed ones. ``wait_s``: wait at most this long per quote (its
    validity by default); one left unanswered is not run here, and stays pending until it lapses. A
    refused request (in progress, target_not_supported, a device unavailable) ends the run Failed with
    the reason, as does a hardware run that a platform reason stopped. It can spend the developer's
    money: credits, and on a provider or IBM target the device's own price, within what each quote's
    confirmation authorised."""
    from datetime import UTC, datetime

    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import pause_flow_run
    from prefect.states import Failed

    logger = get_run_logger()
    ensure_limits(logger.warning)
    if (sent := send_quote(workflow, account, target)) is not None:
        logger.info(sent)
        return sent
    made = price(workflow, account, target)
    if isinstance(made, str):  # refused: the state's one line says why
        return Failed(message=made, data=HardwareStopped(made))
    record(quotes=",".join(q.id for q in made))
    _publish(made)
    outcomes: list[HardwareOutcome] = []
    for quote in made:
        note = ""
        for attempt in range(3):  # asked again if an unknown cost was confirmed without being ticked as seen
            with connect() as db:
                limit = db.limits("hardware").credits
                quote = db.get_quote(quote.id)
            if quote.status is not QuoteStatus.PENDING:
                break
            left = (quote.valid_until - datetime.now(UTC)).total_seconds() if quote.valid_until else 3600
            if left <= 0:
                break
            try:
                said = pause_flow_run(
                    wait_for_input=confirmation_form(quote).with_initial_data(
                        description=note + _shown(quote, limit)
                    ),
                    timeout=max(1, int(min(left, wait_s or left))),
                    poll_interval=2,
                    key=f"quote-{quote.id}-{attempt}",
                )
            except FlowPauseTimeout:  # left unanswered: this run goes on (Prefect would leave it Paused)
                said = None
                _running_again()
            quote = _answered(quote, said, logger)
            if said is None or quote.status is not QuoteStatus.PENDING or quote.confirmed_by is not None:
                break  # (a payer's confirmation awaiting the provider's holder's: its run starts at that)
            note = (
                "**Not confirmed: the cost is unknown and *seen unknown cost* was not ticked.** "
                "Tick both to confirm, or neither to refuse.\n\n"
            )
        if quote.status is QuoteStatus.CONFIRMED:
            outcome = hardware_run(quote.id, quote.target)
            if outcome is not None:
                outcomes.append(outcome)
    with connect() as db:
        _publish([db.get_quote(q.id) for q in made])
    _summary(outcomes)
    return _ended(outcomes)


def _running_again() -> None:
    """This flow run back to Running after a pause nobody answered, so that it can go on to its next quote
    and end as it ends (a run still Paused when it ends is Failed by the server, "never resumed")."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext
    from prefect.states import Running

    context = FlowRunContext.get()
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(context.flow_run.id, Running(), force=True)


def _ended(outcomes: list[HardwareOutcome]):
    """The outcomes, or a Failed state naming each run a platform reason stopped (never recorded)."""
    from prefect.states import Failed

    from qsolve_pipeline.storage.state import PLATFORM_REASONS
    from qsolve_pipeline.tasks.hardware import provider_log

    stopped = [o for o in outcomes if o.reason in {r.value for r in PLATFORM_REASONS}]
    if not stopped:
        return outcomes

    def said(o: HardwareOutcome) -> str:
        line = f"{o.case} on {o.target}: {o.reason}: {' '.join(str(o.detail).split())}"
        if o.target.startswith("provider:"):
            line += f" (run {o.run_id}; the provider's log: {provider_log(o.target)})"
        return line

    message = "; ".join(said(o) for o in stopped)
    return Failed(message=message, data=HardwareStopped(message, outcomes))


def _answered(quote: Quote, said: QuoteConfirmation | None, logger) -> Quote:
    """The quote after its form was answered (or left): confirmed, refused, lapsed, or still pending (an
    unknown cost confirmed without being ticked as seen)."""
    with connect() as db:
        try:
            if said is None:
                db.expire_quotes()
            elif said.confirm:
                seen = getattr(said, "seen_unknown_cost", False)
                db.confirm_quote(quote.id, quote.account, seen_unknown=seen)
            else:
                db.refuse_quote(quote.id, quote.account)
        except QuoteRefused as e:  # confirmed or ended meanwhile elsewhere, lapsed, or an unseen unknown cost
            logger.warning(str(e))
        quote = db.get_quote(quote.id)
    awaits = (
        f", awaiting the confirmation of {quote.awaiting}" if quote.confirmed_by and quote.awaiting else ""
    )
    logger.info(f"quote {quote.id}: {quote.status.value}{awaits}")
    return quote


@flow(name="hardware", log_prints=True, on_cancellation=[_cancelled])
def hardware_flow(batch: str | None = None, quote: str | None = None):
    """Run the confirmed quotes of ``batch`` (or the one ``quote``), one at a time. It can spend the
    developer's money: credits, and on a provider or IBM target the device's own price, within what each
    quote's confirmation authorised."""
    ensure_limits(get_run_logger().warning)
    with connect() as db:
        db.expire_quotes()
        chosen = [db.get_quote(quote)] if quote else db.quotes_to_run(batch)
    record(quotes=",".join(q.id for q in chosen))
    outcomes = [o for q in chosen if (o := hardware_run(q.id, q.target)) is not None]
    _summary(outcomes)
    return _ended(outcomes)


def _summary(outcomes: list[HardwareOutcome]) -> None:
    rows = "\n".join(
        f"| `{o.quote}` | {o.case} | {o.target} | `{o.run_id}` | {o.status} | {o.reason or ''} | "
        f"{'yes' if o.recorded else 'no'} | {o.credits} | {len(o.receipts)} |"
        for o in outcomes
    )
    listed = "".join(
        f"\n\n**Receipts of run `{o.run_id}`** ({o.case} on {o.target}):\n\n"
        + "\n".join(f"- `{r}`" for r in o.receipts)
        for o in outcomes
        if o.receipts
    )
    create_markdown_artifact(
        key="hardware-runs",
        markdown=(
            "| quote | case | target | run | status | reason | recorded | credits | receipts |\n"
            "|---|---|---|---|---|---|---|---|---|\n"
            + rows
            + "\n\nEach receipt: `qsolve receipts RUN_ID --out DIR`, then `qsolve verify DIR/DIGEST.json`."
            + listed
        ),
        description="Hardware quotes run by this flow run, with their receipts",
    )


QUOTE_DEPLOYMENT = "quote/quote"


def send_quote(workflow: str, account: str, target: str | None) -> str | None:
    """A quote flow run of a deployment taken by a worker that cannot price its target (the IBM key's,
    a provider's, held elsewhere): a quote flow run with the same parameters made in the work queue of
    that target, Scheduled with a message naming what it waits for, and what was done, said; None when
    it prices here (this machine holds what it needs, it is on that queue already, it is no deployment's
    run, or its cases need several providers: pricing then says which it lacks)."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext
    from prefect.states import Scheduled

    from qsolve.targets.routing import held_queues, provider_of, queue_for
    from qsolve_pipeline.tasks.hardware import case_targets

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow_run.deployment_id is None:
        return None
    try:
        with connect() as db:
            targets = case_targets(db.get_version(workflow), target)
    except Exception:  # noqa: BLE001 - an unknown workflow: pricing says so
        return None
    try:
        held = held_queues()
    except Exception:  # noqa: BLE001 - a providers.yaml that does not read: pricing says so
        return None
    needed = sorted({q for t in targets if (q := queue_for(t)) is not None and q not in held})
    if len(needed) != 1 or context.flow_run.work_queue_name == needed[0]:
        return None
    queue = needed[0]
    waits = f"waits for a worker that holds {provider_of(queue)} (work queue {queue})"
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment(context.flow_run.deployment_id)
        if deployment.work_pool_name is None:
            return None
        run = client.create_flow_run_from_deployment(
            deployment.id,
            parameters={"workflow": workflow, "account": account, "target": target},
            state=Scheduled(
                message=f"quote of {workflow} for {account} on {', '.join(dict.fromkeys(targets))}: {waits}"
            ),
            name=f"quote-{workflow[:24]}-{queue}",
            tags=[queue],
            idempotency_key=f"quote-{context.flow_run.id}",
            work_queue_name=queue,
        )
    return (
        f"this machine cannot price {', '.join(dict.fromkeys(targets))}: sent to the quote flow run "
        f"{run.name} in work queue {queue} of pool {deployment.work_pool_name}; it {waits}"
    )


def send_away(quote_id: str, target: str) -> str | None:
    """When this machine does not hold ``target``'s provider: the quote's run sent to its provider's work
    queue, and what was done, said; None when it runs here (this machine holds it, it needs none, this
    flow run is on that queue already, or there is no work pool to send it through)."""
    from prefect.context import FlowRunContext

    from qsolve.targets.routing import holds, queue_for

    queue = queue_for(target)
    if queue is None or holds(target):
        return None
    context = FlowRunContext.get()
    if context is not None and context.flow_run.work_queue_name == queue:
        return None  # on the provider's own queue: run here, and fail naming what this machine lacks
    return send(quote_id, target)


def send(quote_id: str, target: str) -> str | None:
    """A ``hardware`` flow run for the quote in its provider's work queue (the pool's default queue for a
    target any machine runs), Scheduled with a message naming the provider it waits for; what was done,
    said. None when the deployment is missing or has no work pool (served by one process)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Scheduled

    from qsolve.targets.routing import provider_of, queue_for

    queue = queue_for(target)
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(HARDWARE_DEPLOYMENT)
        except ObjectNotFound:
            return None
        if deployment.work_pool_name is None:
            return None
        needs = provider_of(queue) if queue else None
        waits = (
            f"waits for a worker that holds {needs} (work queue {queue})" if needs else "waits for a worker"
        )
        run = client.create_flow_run_from_deployment(
            deployment.id,
            parameters={"quote": quote_id},
            state=Scheduled(message=f"quote {quote_id} on {target}: {waits}"),
            name=f"quote-{quote_id[:12]}-{queue or 'any'}",
            tags=[queue] if queue else None,
            idempotency_key=f"hardware-{quote_id}",  # sent twice (a flow run, a confirmation): one run
            work_queue_name=queue,
        )
    said = f"started the hardware flow run {run.name} for {quote_id}"
    if not needs:
        return said
    with connect() as db:
        live, stale = db.live_holders(queue)
    minutes = f"{HOLDER_STALE_AFTER.total_seconds() / 60:g} minutes"
    gone = ", ".join(f"{host} last seen {seen:%Y-%m-%d %H:%M} UTC" for host, seen in stale)
    start = f"`qsolve worker --pool {deployment.work_pool_name}`"
    if live:
        where = f"registered by {', '.join(host for host, _ in live)}"
        where += f"; not counted, not seen for {minutes}: {gone}" if stale else ""
    elif stale:
        where = (
            f"no host holding {needs} has been seen for {minutes} ({gone}: its worker stopped?): "
            f"it waits until {start} runs on a machine that holds it"
        )
    else:
        where = (
            f"no host has registered {needs} yet: it waits until {start} starts on a machine that holds it"
        )
    return f"{said} in work queue {queue} of pool {deployment.work_pool_name}: it {waits}; {where}"


def start_confirmed(quote_id: str) -> str:
    """Start a quote confirmed outside its flow run (``qsolve confirm``, the web page), on the Prefect
    server of ``PREFECT_API_URL``: the quote flow run paused for it is resumed (and runs it, or sends it
    where its provider is), else a ``hardware/hardware`` flow run is made for it in its provider's work
    queue (:func:`send`). What was done, said for the person."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound
    from prefect.flow_runs import resume_flow_run

    with get_client(sync_client=True) as client:
        paused = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["quote"])),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED]))
            ),
        )
    for run in paused:
        key = run.state.state_details.pause_key if run.state and run.state.state_details else None
        if key and key.startswith(f"quote-{quote_id}-"):
            resume_flow_run(run.id, run_input={"confirm": True, "seen_unknown_cost": True}, _sync=True)
            return f"resumed the quote flow run {run.name} waiting for {quote_id}: it runs it now"
    with connect() as db:
        target = db.get_quote(quote_id).target
    if (said := send(quote_id, target)) is not None:
        return said
    try:  # a deployment served by one process has no work queues: run it there
        started = run_deployment(HARDWARE_DEPLOYMENT, parameters={"quote": quote_id}, timeout=0, _sync=True)
    except ObjectNotFound:
        return (
            f"no hardware deployment on this Prefect server: run it with `prefect deployment run "
            f"'hardware/hardware' --param quote={quote_id}` once one is served"
        )
    return f"started the hardware flow run {started.name} for {quote_id}"
