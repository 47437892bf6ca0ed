"""``qsolve quote NAME [--target T] [--account A] [--json]``, ``qsolve confirm QUOTE_ID [--yes]`` and
``qsolve refuse QUOTE_ID``
(issue 13, items 1-2; docs/hardware.md).

A quote prices every hardware case of the workflow's highest published version (semantic versioning) and
names it on every line; nothing runs. A batch whose quotes only await confirmation blocks no request: the
new one lapses them, and says so. A confirmation covers
one quote's run only, authorises at most its price capped by the per-run limit, and, where the cost is
unknown, is given only by a person who was shown that it is unknown (``--yes``, or yes when asked).
Exit codes: 0 done, 1 refused, 2 misuse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from qsolve.hardware.shown import authorises, describe, holder_line, over_limit, provider_cost_of
from qsolve.home import ACCOUNT_VARIABLE, local_account


def add_commands(subparsers: Any) -> None:
    q = subparsers.add_parser("quote", help="price the hardware cases of a workflow's latest version")
    q.add_argument("name", metavar="NAME")
    q.add_argument("--target", metavar="T", help="run every case on this device (its family in targets.qpu)")
    q.add_argument("--account", metavar="A", help=f"the paying account (${ACCOUNT_VARIABLE}, else you)")
    q.add_argument("--json", action="store_true", help="each quote with its id, case, target and price")
    q.set_defaults(func=cmd_quote)
    c = subparsers.add_parser(
        "confirm",
        help="confirm one quote: its run only, at most its price; it can spend your money (credits, and on "
        "a provider or IBM target the device's own price)",
    )
    c.add_argument("quote", metavar="QUOTE_ID")
    c.add_argument("--yes", action="store_true", help="confirm without asking (an unknown cost included)")
    c.add_argument("--account", metavar="A", help=f"the paying account (${ACCOUNT_VARIABLE}, else you)")
    c.add_argument("--json", action="store_true", help="print the confirmed quote as one JSON object")
    c.add_argument(
        "--no-run", action="store_true", help="confirm only; its run starts later (qsolve confirm again)"
    )
    c.set_defaults(func=cmd_confirm)
    r = subparsers.add_parser("refuse", help="refuse one quote: its run never runs")
    r.add_argument("quote", metavar="QUOTE_ID")
    r.add_argument("--account", metavar="A", help=f"the paying account (${ACCOUNT_VARIABLE}, else you)")
    r.set_defaults(func=cmd_refuse)


def cmd_quote(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import BatchInProgress, NotFound, PlatformAccount, connect
    from qsolve_pipeline.tasks.hardware import HardwareRefused, request_quotes

    with connect() as db:
        try:
            batch, made = request_quotes(db, args.name, local_account(args.account), target=args.target)
        except (HardwareRefused, BatchInProgress, NotFound, PlatformAccount) as e:
            print(f"qsolve quote: {e}", file=sys.stderr)
            return 1
        limit = db.limits("hardware").credits
        version = made[0].version if made else db.get_version(args.name).version
    if batch.lapsed_batch is not None:
        print(
            f"lapsed: batch {batch.lapsed_batch} of {args.name} awaited confirmation; its "
            f"{_quotes(len(batch.lapsed))} ({', '.join(batch.lapsed) or 'none pending'}) lapsed unconfirmed "
            "and will never run",
            file=sys.stderr,
        )
    if args.json:
        listed = [q.summary() | {"provider_cost": provider_cost_of(q)} for q in made]
        shown = {"batch": batch.id, "workflow": args.name, "version": version, "quotes": listed}
        lapsed = {"lapsed": {"batch": batch.lapsed_batch, "quotes": list(batch.lapsed)}}
        print(json.dumps(shown | (lapsed if batch.lapsed_batch else {}), indent=2))
        return 0
    print(
        f"batch {batch.id} of {args.name} {version}: {_quotes(len(made))}; nothing runs until each is "
        "confirmed"
    )
    for quote in made:
        print(describe(quote))
        if assumes := quote.estimate.get("provider", {}).get("assumes"):
            print(f"  it assumes {assumes}")
        if warning := over_limit(quote, limit):
            print(f"  warning: {warning}")
        if said := holder_line(quote):
            print(f"  {said}")
        print(f"  confirm with: qsolve confirm {quote.id}   refuse with: qsolve refuse {quote.id}")
    return 0


def _quotes(n: int) -> str:
    return f"{n} quote" + ("" if n == 1 else "s")


def cmd_confirm(args: argparse.Namespace) -> int:
    """Confirm the quote, then run its run: on the Prefect server of ``PREFECT_API_URL`` as the operator's
    path (the quote flow run waiting for it resumed, or the hardware deployment run), else here, as
    ``qsolve submit`` runs its flow (the ``qsolve server`` when it runs, else a temporary server), showing
    its progress and ending with its result. ``--no-run``: confirm only. A quote confirmed already whose
    run has not started is run (``qsolve confirm ID --yes`` after ``--no-run``)."""
    from qsolve_pipeline.flows.dispatch import start_confirmed
    from qsolve_pipeline.storage.state import NotFound, QuoteRefused, QuoteStatus, RunStatus, connect

    account = local_account(args.account)
    with connect() as db:
        try:
            quote = db.get_quote(args.quote)
        except NotFound as e:
            print(f"qsolve confirm: {e}", file=sys.stderr)
            return 1
        print(describe(quote), file=sys.stderr)
        waiting = (
            quote.status is QuoteStatus.CONFIRMED
            and account in (quote.account, quote.holder)
            and db.get_run(quote.run_id).status is RunStatus.CREATED
        )
    if waiting and not args.no_run:
        print(
            f"quote {quote.id} is confirmed already and its run has not started: running it", file=sys.stderr
        )
        return _run(quote.id)[0]
    with connect() as db:
        limit = db.limits("hardware").credits
        if quote.holder is not None and account == quote.holder and account != quote.account:
            from qsolve.providers.cost import authorised_text

            money = authorised_text(quote.estimate.get("provider") or {})
            print(
                f"you hold {quote.target}: this lets {quote.account}'s run spend {money}, for this run only: "
                "it can spend your money",
                file=sys.stderr,
            )
        else:
            print(
                f"this authorises {authorises(quote, limit)}, for this run only: it can spend your money",
                file=sys.stderr,
            )
            if said := holder_line(quote):
                print(said, file=sys.stderr)
        if warning := over_limit(quote, limit):
            print(f"warning: {warning}", file=sys.stderr)
        if quote.unknown_cost:
            print(f"the cost is unknown on {quote.target}: confirm only if you accept that", file=sys.stderr)
        yes = args.yes
        if not yes and sys.stdin.isatty():
            print("Confirm this quote? [y/N] ", end="", file=sys.stderr, flush=True)
            yes = sys.stdin.readline().strip().lower() in ("y", "yes")
        if not yes:
            print("qsolve confirm: not confirmed (--yes, or yes when asked)", file=sys.stderr)
            return 1
        try:
            confirmed = db.confirm_quote(quote.id, account, seen_unknown=True)  # it was shown above
        except QuoteRefused as e:
            print(f"qsolve confirm: {e}", file=sys.stderr)
            return 1
    if confirmed.awaiting is not None:  # the other confirmation is still missing: nothing runs yet
        line = (
            f"confirmed {confirmed.id} as {account}: it awaits the confirmation of {confirmed.awaiting}; its "
            f"run starts only once both confirmed (qsolve confirm {confirmed.id} --account "
            f"{confirmed.holder if account == confirmed.account else confirmed.account})"
        )
        if getattr(args, "json", False):
            print(json.dumps({**confirmed.summary(), "started": line}, indent=2))
        else:
            print(line)
        return 0
    said = f"{confirmed.authorised} credits"
    if (cost := provider_cost_of(confirmed)) and cost != "unknown":
        said += f" and {cost['amount']} {cost['currency']} of the provider's money"
    elif cost == "unknown":
        said += " and a provider cost that is unknown"
    as_json = getattr(args, "json", False)
    runs_here = not args.no_run and not os.environ.get("PREFECT_API_URL")
    if as_json and not runs_here:
        run_said = "confirmed only (--no-run)" if args.no_run else start_confirmed(confirmed.id)
        print(json.dumps({**confirmed.summary(), "provider_cost": cost, "started": run_said}, indent=2))
        return 0
    if as_json:  # run here: its lines to standard error, the JSON object last
        code, lines = _run(confirmed.id, out=sys.stderr)
        summary = {**confirmed.summary(), "provider_cost": cost, "started": "run here", "run": lines}
        print(json.dumps(summary, indent=2))
        return code
    print(
        f"confirmed {confirmed.id} ({confirmed.workflow} {confirmed.version}, {confirmed.case_name} on "
        f"{confirmed.target}): {said} authorised for run {confirmed.run_id}"
    )
    if args.no_run:
        print(
            f"not run (--no-run): run it with qsolve confirm {confirmed.id} --yes (or, on a Prefect "
            "server serving the deployments, prefect deployment run 'hardware/hardware' --param "
            f"quote={confirmed.id})",
            file=sys.stderr,
        )
        return 0
    if not runs_here:
        print(start_confirmed(confirmed.id), file=sys.stderr)
        return 0
    return _run(confirmed.id)[0]


def _run(quote_id: str, out=None) -> tuple[int, list[str]]:
    """The confirmed quote's run, here, through the hardware flow; its result printed (to ``out``,
    standard output by default) and returned as lines. Exit 0 when it finished, 1 when it stopped or
    was not run here."""
    from qsolve_pipeline.flows.dispatch import run_hardware

    out = out or sys.stdout
    outcomes = run_hardware(quote_id)
    if isinstance(outcomes, BaseException):
        said = f"qsolve confirm: the hardware run failed: {type(outcomes).__name__}: {outcomes}"
        print(said, file=sys.stderr)
        return 1, [said]
    if not outcomes:
        said = f"quote {quote_id}: not run here (another process runs it, or it is no longer confirmed)"
        print(said, file=out)
        return 1, [said]
    lines = []
    for outcome in outcomes:
        detail = f": {outcome.detail}" if outcome.detail else ""
        lines.append(f"{outcome.line()}; {outcome.credits} credits{detail}")
        if outcome.receipts:
            verify = "(then qsolve verify DIR/DIGEST.json)"
            lines.append(f"  qsolve receipts {outcome.run_id} --out DIR   {verify}")
    print("\n".join(lines), file=out)
    return (0 if all(o.status == "finished" for o in outcomes) else 1), lines


def cmd_refuse(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NotFound, QuoteRefused, connect

    with connect() as db:
        try:
            refused = db.refuse_quote(args.quote, local_account(args.account))
        except (NotFound, QuoteRefused) as e:
            print(f"qsolve refuse: {e}", file=sys.stderr)
            return 1
    print(f"refused {refused.id}: its run {refused.run_id} never runs")
    return 0
