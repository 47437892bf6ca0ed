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
