"""``qsolve credits grant ACCOUNT CREDITS [--memo M]`` and ``qsolve credits balance ACCOUNT`` (the
operator's side of the ledger, docs/storage.md "State database and credits"). A grant opens the account
when it does not exist; a balance counts what is held for running runs as spent until they settle.
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
    c = subparsers.add_parser("credits", help="grant credits to an account, or show its balance")
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
        "limit", help="set the per-run credit limit (per_run_limit in QSOLVE_HOME/credits.toml; default 50)"
    )
    lim.add_argument("credits", metavar="CREDITS", help="a number of credits, e.g. 100")
    lim.set_defaults(func=cmd_limit)


def cmd_grant(args: argparse.Namespace) -> int:
    from storage.state import connect

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
    from storage.state import NotFound, connect

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


def cmd_limit(args: argparse.Namespace) -> int:
    """Write ``per_run_limit`` into the credits file (``QSOLVE_CREDITS_FILE``, else
    ``QSOLVE_HOME/credits.toml``), keeping the rest of the file: it holds for every later confirmation
    and run of this home; a confirmed quote keeps what its confirmation authorised."""
    import os
    import re
    import tempfile
    import tomllib

    from storage.state import CreditSettings, qsolve_home
    from storage.state._config import CREDITS_FILE_VARIABLE

    try:
        amount = Decimal(args.credits)
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        print(
            f"qsolve credits limit: CREDITS {args.credits!r} is not a number of credits (0 or more)",
            file=sys.stderr,
        )
        return 2
    path = Path(os.environ.get(CREDITS_FILE_VARIABLE) or qsolve_home() / "credits.toml")
    text = path.read_text() if path.is_file() else ""
    line = f"per_run_limit = {amount:f}"
    table = re.search(r"(?m)^\s*\[", text)  # the top-level keys end where the first table begins
    head, rest = (text[: table.start()], text[table.start() :]) if table else (text, "")
    if re.search(r"(?m)^\s*per_run_limit\s*=.*$", head):
        head = re.sub(r"(?m)^\s*per_run_limit\s*=.*$", line, head, count=1)
    else:
        head = line + "\n" + head
    written = head + rest
    try:
        tomllib.loads(written)
    except tomllib.TOMLDecodeError as e:
        print(f"qsolve credits limit: {path} is not TOML ({e}): left as it was", file=sys.stderr)
        return 2
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, delete=False) as partial:
        partial.write(written)  # written whole, then renamed over the file: never half a file
    Path(partial.name).replace(path)
    now = CreditSettings.load().per_run_limit
    print(f"the per-run limit is {now} credits ({path})")
    if os.environ.get("QSOLVE_CREDITS_PER_RUN_LIMIT"):
        print("warning: QSOLVE_CREDITS_PER_RUN_LIMIT is set and wins over the file", file=sys.stderr)
    return 0
