"""Quotes in the page (benchmarks-and-gates.md, "How they run"; issue 16, item 3): the workflow's developer
asks for a quote, sees each case's price (or that the device's cost is unknown), and confirms each quote
on its own, the amount it authorises shown beside the button.

    GET  /workflows/{name}/quotes       the hardware cases, "Get a quote", and the workflow's quotes
    POST /workflows/{name}/quotes       price every hardware case of the highest version (a new batch; an
                                        earlier one only awaiting confirmation lapses, and the page says so)
    POST /quotes/{quote_id}/confirm     confirm this one quote, for its run only
    POST /quotes/{quote_id}/refuse      refuse it: its run never runs
    GET  /providers/quotes              the quotes on providers the logged-in account holds, awaiting it

A provider's money is its holder's (issue 33, item 3; docs/providers.md): the form offers only the
providers the logged-in account may use (its holder's, or one that allows the account or the workflow's
quotes), and a request naming another is refused (``provider_not_allowed``, 403) before the provider is
asked anything. A quote on a provider another account holds, for a job that is not free, runs only once
its holder confirmed it too: the holder, logged in, confirms (or refuses) it here, whether or not it
develops the workflow; the run starts at the second confirmation, whichever comes last.

Both POSTs need the workflow's developer logged in and the page's form token; nothing is confirmed by
loading a page or following a link. They call what ``qsolve quote`` and ``qsolve confirm`` call:
:func:`tasks.hardware.request_quotes` and :meth:`StateDB.confirm_quote`. A request while a batch is in
progress is refused as such (409), a device outside the manifest's ``targets.qpu`` as
``target_not_supported`` (422), an unreachable one as ``backend_unavailable`` (503). A quote whose cost is
unknown is confirmed only with the box "I have seen that the cost is unknown" ticked.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from qsolve.web.pages import db, home, render
from qsolve.web.people import Account, check_form, need

router = APIRouter()

#: the status each refusal of a quote request is shown with
REFUSAL_STATUS = {
    "target_not_supported": 422,
    "no_hardware_cases": 409,
    "backend_unavailable": 503,
    "in_progress": 409,
    "provider_not_allowed": 403,
}


def developer_of(request: Request, workflow: str) -> Account:
    """The logged-in account when it is ``workflow``'s developer or an admin (401 / 403 otherwise)."""
    from fastapi import HTTPException

    account = need(request)
    if not account.quotes(workflow):
        raise HTTPException(
            403,
            f"account {account.name} is not a developer of {workflow}: only its developer (or an admin) may "
            "do this",
        )
    return account


def shown(quote: Any, limit: Decimal) -> dict[str, Any]:
    """What a person is shown of a quote before confirming it (as ``qsolve confirm`` shows it)."""
    from qsolve.hardware.shown import describe, device_cost, over_limit

    e = quote.estimate
    return {
        "q": quote,
        "line": describe(quote),
        "warning": over_limit(quote, limit),
        "work": f"{e['circuits']} circuits, {e['shots']} shots"
        if e.get("circuits") is not None
        else e.get("note", "no estimate"),
        "cost": device_cost(quote),
        "authorises": min(quote.price, limit),
        "provider_money": _provider_money(quote),
        "assumes": e.get("provider", {}).get("assumes"),
    }


def _provider_money(quote: Any) -> str | None:
    """What confirming authorises of the provider's money, beside the credits (None off a provider)."""
    if "provider" not in quote.estimate:
        return "and a cost on the device that is unknown" if quote.unknown_cost else None
    from qsolve.providers.cost import authorised_text

    return f"and {authorised_text(quote.estimate['provider'])}"


def _page(
    request: Request,
    name: str,
    *,
    status_code: int = 200,
    refusal: dict[str, str] | None = None,
    target: str = "",
) -> HTMLResponse:
    from qsolve.providers.registry import Registry

    with db(request) as state:
        version = state.get_version(name)  # NotFound: 404 naming it
        limit = state.limits("hardware").credits
        quotes = state.list_quotes(workflow=name)
        runs = {q.run_id: state.get_run(q.run_id) for q in quotes if q.run_id}
        account = need(request)
    batches: dict[str, list[dict[str, Any]]] = {}
    for quote in reversed(quotes):  # newest batch first
        batches.setdefault(quote.batch_id, []).append(shown(quote, limit))
    for listed in batches.values():
        listed.sort(key=lambda s: s["q"].case_index if s["q"].case_index is not None else 0)
    try:
        configured = sorted(Registry(home(request)).load())
    except Exception:  # noqa: BLE001 - a broken providers.yaml: the form still takes a target typed in
        configured = []
    with db(request) as state:  # only those the account may spend on
        providers = [p for p in configured if state.may_use_provider(p, account.name, name)]
    import os

    confirmed = request.query_params.get("confirmed")
    lapsed = request.query_params.get("lapsed", "")[:32] or None
    return render(
        request,
        "quotes.html",
        status_code=status_code,
        name=name,
        version=version,
        limit=limit,
        batches=list(batches.items()),
        runs=runs,
        providers=providers,
        refusal=refusal,
        target=target,
        confirmed=confirmed,
        lapsed=lapsed,
        on_prefect=bool(os.environ.get("PREFECT_API_URL")),
    )


@router.get("/workflows/{name}/quotes", response_class=HTMLResponse)
def quotes_page(request: Request, name: str) -> HTMLResponse:
    with db(request) as state:
        state.get_version(name)  # NotFound: 404 naming it
    developer_of(request, name)
    return _page(request, name)


@router.post("/workflows/{name}/quotes", dependencies=[Depends(check_form)])
def ask_for_quotes(
    request: Request, name: str, target: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    from qsolve_pipeline.storage.state import BatchInProgress
    from qsolve_pipeline.tasks.hardware import HardwareRefused, request_quotes

    with db(request) as state:
        state.get_version(name)  # NotFound: 404 naming it
    account = developer_of(request, name)
    target = target.strip()
    with db(request) as state:
        try:
            batch, _ = request_quotes(state, name, account.name, target=target or None, home=home(request))
        except BatchInProgress as e:
            refusal = {"reason": "in_progress", "message": str(e)}
            return _page(request, name, status_code=409, refusal=refusal, target=target)
        except HardwareRefused as e:  # provider_not_allowed among them: the provider was asked nothing
            refusal = {"reason": e.reason, "message": str(e)}
            status = REFUSAL_STATUS.get(e.reason, 422)
            return _page(request, name, status_code=status, refusal=refusal, target=target)
    said = f"?lapsed={batch.lapsed_batch}" if batch.lapsed_batch else ""
    return RedirectResponse(f"/workflows/{name}/quotes{said}#batch-{batch.id}", status_code=303)


@router.post("/quotes/{quote_id}/confirm", dependencies=[Depends(check_form)])
def confirm(
    request: Request, quote_id: str, seen_unknown: Annotated[str, Form(max_length=10)] = ""
) -> Response:
    from qsolve_pipeline.storage.state import QuoteRefused

    with db(request) as state:
        quote = state.get_quote(quote_id)  # NotFound: 404 naming it
    account = _payer_or_holder(request, quote)
    seen = seen_unknown == "yes"
    if quote.unknown_cost and not seen:
        refusal = {
            "reason": "unknown_cost_unseen",
            "message": f"quote {quote.id}: the cost on {quote.target} is unknown; tick "
            "\u201cI have seen that the cost is unknown\u201d to confirm it. Nothing was confirmed.",
        }
        return _back(request, quote, account, status_code=422, refusal=refusal)
    with db(request) as state:
        try:
            confirmed = state.confirm_quote(quote.id, account.name, seen_unknown=seen)
        except QuoteRefused as e:
            refusal = {"reason": "refused", "message": str(e)}
            return _back(request, quote, account, status_code=409, refusal=refusal)
    if confirmed.status.value == "confirmed":  # both confirmations given: the run starts
        import logging

        from qsolve_pipeline.flows.dispatch import start_confirmed

        logging.getLogger("qsolve.web").info(start_confirmed(quote.id))  # on the Prefect server, if any
    if _as_holder(quote, account):
        return RedirectResponse(f"/providers/quotes?confirmed={quote.id}#quote-{quote.id}", 303)
    return RedirectResponse(f"/workflows/{quote.workflow}/quotes?confirmed={quote.id}#quote-{quote.id}", 303)


@router.post("/quotes/{quote_id}/refuse", dependencies=[Depends(check_form)])
def refuse(request: Request, quote_id: str) -> Response:
    from qsolve_pipeline.storage.state import QuoteRefused

    with db(request) as state:
        quote = state.get_quote(quote_id)  # NotFound: 404 naming it
    account = _payer_or_holder(request, quote)
    with db(request) as state:
        try:
            state.refuse_quote(quote.id, account.name)
        except QuoteRefused as e:
            refusal = {"reason": "refused", "message": str(e)}
            return _back(request, quote, account, status_code=409, refusal=refusal)
    if _as_holder(quote, account):
        return RedirectResponse(f"/providers/quotes#quote-{quote.id}", 303)
    return RedirectResponse(f"/workflows/{quote.workflow}/quotes#quote-{quote.id}", 303)


def _as_holder(quote: Any, account: Account) -> bool:
    """Whether ``account`` acts on ``quote`` as its provider's holder (not as its payer)."""
    return quote.holder is not None and account.name == quote.holder and account.name != quote.account


def _payer_or_holder(request: Request, quote: Any) -> Account:
    """The logged-in account when it is the quote's provider's holder (whose confirmation it needs), or
    the workflow's developer or an admin (401 / 403 otherwise)."""
    account = need(request)
    return account if _as_holder(quote, account) else developer_of(request, quote.workflow)


def _back(request: Request, quote: Any, account: Account, **kwargs: Any) -> HTMLResponse:
    if _as_holder(quote, account):
        return _holder_page(request, account, **kwargs)
    return _page(request, quote.workflow, **kwargs)


def _holder_page(
    request: Request, account: Account, *, status_code: int = 200, refusal: dict[str, str] | None = None
) -> HTMLResponse:
    with db(request) as state:
        limit = state.limits("hardware").credits
        awaiting = [
            shown(q, limit)
            for q in state.list_quotes(status="pending")
            if _as_holder(q, account) and q.holder_confirmed_by is None
        ]
    return render(
        request,
        "holder_quotes.html",
        status_code=status_code,
        awaiting=awaiting,
        refusal=refusal,
        confirmed=request.query_params.get("confirmed"),
    )


@router.get("/providers/quotes", response_class=HTMLResponse)
def holder_quotes(request: Request) -> HTMLResponse:
    return _holder_page(request, need(request))
