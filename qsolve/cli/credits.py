"""``qsolve credits grant ACCOUNT CREDITS [--memo M]``, ``qsolve credits balance ACCOUNT`` (the operator's
side of the ledger, docs/storage.md "State database and credits"), and the settings every machine reads
from the state database: ``qsolve credits limit``, ``price``, ``show`` and ``import`` (a credits.toml, once).
A grant opens the account when it does not exist; a balance counts what is held for running runs as spent
until they settle.
Exit codes: 0 done, 1 refused (an unknown account), 2 misuse (a credit amount that does not read).
Outside ``storage.state``, so that building the command line imports no database code."""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any


def add_commands(subparsers: Any) -> None:
    c = subparsers.add_parser(
        "credits", help="grant credits, show a balance; set the prices and limits every machine reads"
    )
    sub = c.add_subparsers(dest="credits_command", required=True, metavar="ACTION")
    g = sub.add_parser("grant", help="give an account credits (opening it if new)")
    g.add_argument("account", metavar="ACCOUNT")
    g.add_argument("credits", metavar="CREDITS", help="a positive number, e.g. 100 or 2.5")
    g.add_argument("--memo", metavar="M", help="why, kept with the grant in the ledger")
    g.add_argument("--json", action="store_true", help='print {"account", "granted", "balance"}')
    g.set_defaults(func=cmd_grant)
    b = sub.add_parser("balance", help="an account's credits (held ones not counted)")
    b.add_argument("account", metavar="ACCOUNT")
    b.add_argument("--json", action="store_true", help='print {"account", "balance"}')
    b.set_defaults(func=cmd_balance)
    lim = sub.add_parser(
        "limit",
        help="set the per-run credit limit for every machine (the state database; default 50)",
        description="Set the credit limits in the state database: every machine's confirmations and runs "
        "read them. CREDITS is the per-run limit of a confirmed run (default 50).",
    )
    lim.add_argument("credits", metavar="CREDITS", nargs="?", help="a number of credits, e.g. 100")
    lim.add_argument("--history", metavar="CREDITS", help="a history case's limit (default 20)")
    lim.add_argument("--history-seconds", metavar="S", help="a history case's time limit (default 900)")
    lim.set_defaults(func=cmd_limit)
    pr = sub.add_parser(
        "price",
        help="set a target's price for every machine (the state database)",
        description="Set the credits per circuit and per shot of a target (sim-cpu, ibm:ibm_fez) or a family "
        "of targets (ibm:, provider:, fake:) in the state database: every quote on every machine reads it.",
    )
    pr.add_argument("target", metavar="TARGET", help="a target, or a family ending in ':'")
    pr.add_argument(
        "--per-circuit", metavar="CREDITS", help="credits per circuit sent (default: as it is priced now)"
    )
    pr.add_argument(
        "--per-shot", metavar="CREDITS", help="credits per shot taken (default: as it is priced now)"
    )
    pr.add_argument("--remove", action="store_true", help="take the target's own price off")
    pr.set_defaults(func=cmd_price)
    sh = sub.add_parser("show", help="the prices and limits every machine reads (the state database)")
    sh.add_argument("--json", action="store_true", help='print {"limits", "prices"}')
    sh.set_defaults(func=cmd_show)
    im = sub.add_parser(
        "import",
        help="take a credits.toml into the state database, once (then it is set aside)",
        description="Read a credits.toml (per_run_limit, history_run_limit, history_run_seconds, "
        "[prices.TARGET] per_circuit, per_shot), set what it sets in the state database where the database "
        "holds no value of its own, and rename the file FILE.imported: credit settings are kept in the "
        "database, alike for every machine. A file that would change a value the database holds (set since "
        "with `credits limit`/`price`, or by another machine's import) imports nothing and names each, "
        "unless --replace is given; a file whose values the database holds already is only set aside.",
    )
    im.add_argument(
        "file", metavar="FILE", nargs="?", help="default: QSOLVE_CREDITS_FILE, else QSOLVE_HOME/credits.toml"
    )
    im.add_argument(
        "--replace",
        action="store_true",
        help="set the file's values over those the database holds (for every machine)",
    )
    im.set_defaults(func=cmd_import)


def cmd_grant(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import connect

    try:
        amount = Decimal(args.credits)
    except InvalidOperation:
        print(f"qsolve credits grant: CREDITS {args.credits!r} is not a number", file=sys.stderr)
        return 2
    with connect() as db:
        try:
            transfer = db.grant(args.account, amount, memo=args.memo)
        except ValueError as e:
            print(f"qsolve credits grant: {e}", file=sys.stderr)
            return 2
        balance = db.balance(args.account)
    if args.json:
        print(json.dumps({"account": args.account, "granted": str(transfer.amount), "balance": str(balance)}))
        return 0
    print(f"granted {transfer.amount} credits to {args.account}: its balance is {balance}")
    return 0


def cmd_balance(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NotFound, connect

    with connect() as db:
        try:
            balance = db.balance(args.account)
        except NotFound as e:
            print(f"qsolve credits balance: {e}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps({"account": args.account, "balance": str(balance)}))
        return 0
    print(f"{args.account}: {balance} credits")
    return 0


def _amount(text: str | None, what: str, command: str) -> Decimal | None:
    """``text`` as a number of credits (0 or more); a line naming it and None when it is not one."""
    try:
        amount = Decimal(text)
    except (InvalidOperation, TypeError):
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        print(
            f"qsolve credits {command}: {what} {text!r} is not a number of credits (0 or more)",
            file=sys.stderr,
        )
        return None
    return amount


def cmd_limit(args: argparse.Namespace) -> int:
    """Set the limits in the state database: they hold for every later confirmation and run on every
    machine; a confirmed quote keeps what its confirmation authorised."""
    from qsolve_pipeline.storage.state import connect

    given: dict[str, Any] = {}
    for name, text, what in (
        ("per_run_limit", args.credits, "CREDITS"),
        ("history_run_limit", args.history, "--history"),
    ):
        if text is not None:
            if (amount := _amount(text, what, "limit")) is None:
                return 2
            given[name] = amount
    if args.history_seconds is not None:
        if not args.history_seconds.isdigit() or int(args.history_seconds) <= 0:
            print(
                f"qsolve credits limit: --history-seconds {args.history_seconds!r} is not a whole number of "
                "seconds above 0",
                file=sys.stderr,
            )
            return 2
        given["history_run_seconds"] = int(args.history_seconds)
    if not given:
        print("qsolve credits limit: give CREDITS, --history or --history-seconds", file=sys.stderr)
        return 2
    with connect() as db:
        try:
            now = db.set_limits(**given)
        except ValueError as e:
            print(f"qsolve credits limit: {e}", file=sys.stderr)
            return 2
    print(
        f"the per-run limit is {now.per_run_limit} credits; a history case's {now.history_run_limit} credits "
        f"and {now.history_run_seconds} s (the state database: every machine)"
    )
    return 0


def cmd_price(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import Price, UnpricedTarget, connect

    if args.remove:
        with connect() as db:
            had = db.remove_price(args.target)
            try:
                now = db.settings.price(args.target)
                said = (
                    f"it is priced as its family or the default: {now.per_circuit} a circuit, "
                    f"{now.per_shot} a shot"
                )
            except UnpricedTarget:
                said = "it has no price now: quotes on it are refused"
        print(f"{args.target}: {'its own price taken off' if had else 'had no price of its own'}; {said}")
        return 0
    if args.per_circuit is None and args.per_shot is None:
        print("qsolve credits price: give --per-circuit, --per-shot (or --remove)", file=sys.stderr)
        return 2
    values = {}
    for name, text in (("per_circuit", args.per_circuit), ("per_shot", args.per_shot)):
        if text is not None:
            if (amount := _amount(text, f"--{name.replace('_', '-')}", "price")) is None:
                return 2
            values[name] = amount
    with connect() as db:
        try:
            now = db.settings.price(args.target)  # what is not given stays as it is priced now
        except UnpricedTarget:
            now = Price()
        try:
            price = db.set_price(args.target, now.model_copy(update=values), only=tuple(values))
        except ValueError as e:
            print(f"qsolve credits price: {e}", file=sys.stderr)
            return 2
    print(f"{args.target}: {price.per_circuit} credits a circuit, {price.per_shot} a shot (every machine)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        settings = db.credit_settings()
    limits = {
        name: str(getattr(settings, name))
        for name in ("per_run_limit", "history_run_limit", "history_run_seconds")
    }
    prices = {
        target: {
            "per_circuit": str(p.per_circuit),
            "per_shot": str(p.per_shot),
            "set": target in settings.prices,
        }
        for target, p in sorted(settings.price_table.items())
    }
    if args.json:
        print(json.dumps({"limits": limits, "prices": prices}))
        return 0
    for name, value in limits.items():
        print(f"{name} = {value}")
    for target, p in prices.items():
        print(
            f"{target:24} {p['per_circuit']} a circuit, {p['per_shot']} a shot"
            + ("" if p["set"] else "  (default)")
        )
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Take a credits.toml into the database once; the file is renamed ``.imported`` so that nothing reads
    it again (and every command stops refusing to start). Where the database holds other values than the
    file (a second machine's stale file), nothing is imported and the file stays (exit 1), unless
    ``--replace``."""
    import tomllib

    from pydantic import ValidationError

    from qsolve_pipeline.storage.state import CreditSettings, SettingsDiffer, connect
    from qsolve_pipeline.storage.state._config import credits_file

    path = Path(args.file) if args.file else credits_file()
    try:
        given = CreditSettings.model_validate(tomllib.loads(path.read_text()))
    except FileNotFoundError:
        print(f"qsolve credits import: {path}: no such file", file=sys.stderr)
        return 2
    except tomllib.TOMLDecodeError as e:
        print(f"qsolve credits import: {path} is not TOML ({e}): nothing imported", file=sys.stderr)
        return 2
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        print(f"qsolve credits import: {path}: {where}: {first['msg']}: nothing imported", file=sys.stderr)
        return 2
    with connect(refuse_credits_file=False) as db:
        try:
            done = db.import_credits(given, replace=args.replace)
        except SettingsDiffer as e:
            print(
                f"qsolve credits import: {path}: {e}: nothing imported; to keep the database's values remove "
                f"the file (or rename it {path.name}.imported), to set the file's on every machine run "
                "again with --replace",
                file=sys.stderr,
            )
            return 1
        except ValueError as e:
            print(f"qsolve credits import: {path}: {e}: nothing imported", file=sys.stderr)
            return 2
    aside = path.with_name(path.name + ".imported")
    path.replace(aside)
    if not done.set and not done.differ:
        print(
            f"{path}: the state database holds every value it sets already ({_counted(done.held)}): nothing "
            f"to import; the file is now {aside}"
        )
        return 0
    held = f", {len(done.held)} held already" if done.held else ""
    replaced = ""
    if done.differ:
        replaced = "; replaced: " + "; ".join(f"{name} {was} by {new}" for name, was, new in done.differ)
    print(
        f"imported {path} into the state database ({_counted(done.set + [d[0] for d in done.differ])}{held}; "
        f"the per-run limit is {done.settings.per_run_limit} credits{replaced}); the file is now {aside}"
    )
    return 0


def _counted(names: list[str]) -> str:
    """``2 limits, 1 price`` of setting names (a price's ends in `` price``)."""
    prices = sum(1 for n in names if n.endswith(" price"))
    limits = len(names) - prices
    return f"{limits} limit{'' if limits == 1 else 's'}, {prices} price{'' if prices == 1 else 's'}"
