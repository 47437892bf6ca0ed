"""``qsolve serve`` and ``qsolve accounts`` (issue 16; docs/web.md).

    qsolve serve [--host 127.0.0.1] [--port 8000]
    qsolve accounts add NAME --role R [--role R...] [--workflow W...]
    qsolve accounts list
    qsolve accounts token NAME
    qsolve accounts developer add W ACCOUNT [--by A]
    qsolve accounts developer list W

``serve`` runs the web pages on loopback unless told otherwise. ``accounts add`` gives an account a login
and prints its access token once (it is kept only as a hash); ``accounts token`` issues a new one (the old
one stops working and its sessions end). ``accounts developer add`` makes an account a developer of a
workflow name (a co-developer: it may publish its versions and ask for its quotes); with ``--by`` the
account asking must be one of the name's developers or an admin, without it the operator acts. The
ledger's own accounts (``system``, ``ledger:*``) are given no login and no role. Exit codes: 0 done,
1 refused, 2 misuse.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any

from qsolve_pipeline.storage.roles import ROLES


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="the web pages: workflow pages, quotes, receipts, evaluation runs (docs/web.md)",
        description="Serve the web pages over QSOLVE_HOME, on loopback unless --host says otherwise.",
    )
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="the port (default 8000; 0 picks a free one)")
    p.set_defaults(func=cmd_serve)

    a = subparsers.add_parser("accounts", help="who may log in to the web pages, and in which roles")
    sub = a.add_subparsers(dest="accounts_command", required=True, metavar="COMMAND")
    add = sub.add_parser("add", help="give an account a login; its access token is printed once")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--role", action="append", required=True, choices=ROLES, help="repeat for several")
    add.add_argument(
        "--workflow", action="append", default=[], metavar="W", help="a workflow a developer develops"
    )
    add.add_argument("--json", action="store_true", help='print {"name", "roles", "workflows", "token"}')
    add.set_defaults(func=cmd_accounts_add)
    ls = sub.add_parser("list", help="the accounts that can log in, with their roles")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_accounts_list)
    tok = sub.add_parser("token", help="issue a new access token (the old one stops working)")
    tok.add_argument("name", metavar="NAME")
    tok.set_defaults(func=cmd_accounts_token)
    dev = sub.add_parser("developer", help="a workflow name's developers: those it belongs to")
    dev_sub = dev.add_subparsers(dest="developer_command", required=True, metavar="COMMAND")
    d_add = dev_sub.add_parser("add", help="make an account a developer of a workflow name")
    d_add.add_argument("workflow", metavar="W")
    d_add.add_argument("account", metavar="ACCOUNT")
    d_add.add_argument(
        "--by",
        metavar="A",
        help="the account asking: one of W's developers or an admin (default: the operator)",
    )
    d_add.set_defaults(func=cmd_developer_add)
    d_ls = dev_sub.add_parser("list", help="the developers of a workflow name")
    d_ls.add_argument("workflow", metavar="W")
    d_ls.set_defaults(func=cmd_developer_list)


def _check_storage(home) -> None:
    """A home whose storage is not its database's refuses to start (issue 26: no silent split), before the
    pages listen: ``StorageMismatch``, one line on the command line. A home with no database yet is left."""
    import os

    from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE

    if os.environ.get(DATABASE_URL_VARIABLE) or (home / "state.db").exists():
        from qsolve_pipeline.storage.state import connect

        connect(home=home).close()


def cmd_serve(args: argparse.Namespace) -> int:
    import socket

    import uvicorn

    from qsolve.home import qsolve_home
    from qsolve.web.app import create_app

    if not 0 <= args.port <= 65535:
        print(f"qsolve serve: --port {args.port}: not a port (0 to 65535)", file=sys.stderr)
        return 2
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback:
        print(
            f"qsolve serve: warning: listening on {args.host}, not loopback: anyone who reaches it sees the "
            "pages; put it behind HTTPS so that logins and their cookies are not sent in the clear",
            file=sys.stderr,
        )
    _check_storage(qsolve_home().resolve())
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
    except OSError as e:
        print(f"qsolve serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    home = qsolve_home().resolve()
    host, port = sock.getsockname()[:2]
    # on loopback, only this machine's own names for it: a page that rebinds its DNS name to 127.0.0.1
    # reaches the server with its own Host header, and is refused
    names = ["127.0.0.1", "localhost", "::1", "[::1]", args.host, host]
    app = create_app(home, hosts=sorted(set(names)) if loopback else None)
    shown = f"[{host}]" if ":" in host else host
    print(f"qsolve serve: the pages of {home} at http://{shown}:{port}/", file=sys.stderr, flush=True)
    # the access log names methods and paths only: no URL of these pages carries a token or a session,
    # and a query string someone typed (or a link gave) is left out of the log too
    config = uvicorn.Config(app, log_level="info", proxy_headers=False, server_header=False)
    access_log_paths_only()
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


class PathsOnly(logging.Filter):
    """Drops the query string from uvicorn's access log lines: the log names a method and a path."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


def access_log_paths_only(logger: logging.Logger | None = None) -> None:
    """Put :class:`PathsOnly` on uvicorn's access logger (once); call it after ``uvicorn.Config``, which
    configures that logger."""
    logger = logger or logging.getLogger("uvicorn.access")
    if not any(isinstance(f, PathsOnly) for f in logger.filters):
        logger.addFilter(PathsOnly())


def cmd_accounts_add(args: argparse.Namespace) -> int:
    import json

    from qsolve_pipeline.storage.state import AccountExists, PlatformAccount, connect

    with connect() as db:
        try:
            token = db.add_login(args.name, args.role, args.workflow)
        except ValueError as e:
            print(f"qsolve accounts add: {e}", file=sys.stderr)
            return 2
        except (AccountExists, PlatformAccount) as e:
            print(f"qsolve accounts add: {e}", file=sys.stderr)
            return 1
        login = db.get_login(args.name)
    if args.json:
        print(json.dumps(_listed(login) | {"token": token}))
        return 0
    print(f"account {login.name}: {_roles(login)}")
    print(f"access token (shown once; it is kept only as a hash): {token}")
    return 0


def cmd_accounts_list(args: argparse.Namespace) -> int:
    import json

    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        logins = db.list_logins()
    if args.json:
        print(json.dumps([_listed(login) for login in logins]))
        return 0
    if not logins:
        print("no account can log in yet: qsolve accounts add NAME --role ROLE")
    for login in logins:
        print(f"{login.name}: {_roles(login)}")
    return 0


def cmd_accounts_token(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NotFound, connect

    with connect() as db:
        try:
            token = db.reissue_token(args.name)
        except NotFound as e:
            print(f"qsolve accounts token: {e}", file=sys.stderr)
            return 1
    print(f"new access token of {args.name} (shown once; the old one no longer works): {token}")
    return 0


def cmd_developer_add(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NameOwned, PlatformAccount, connect

    with connect() as db:
        try:
            developers = db.add_developer(args.workflow, args.account, by=args.by)
        except ValueError as e:
            print(f"qsolve accounts developer add: {e}", file=sys.stderr)
            return 2
        except (NameOwned, PlatformAccount) as e:
            print(f"qsolve accounts developer add: {e}", file=sys.stderr)
            return 1
    print(f"{args.workflow} belongs to its developers: {', '.join(developers)}")
    return 0


def cmd_developer_list(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        developers = db.workflow_developers(args.workflow)
    if not developers:
        print(f"{args.workflow} has no developer: only an admin publishes it (qsolve accounts developer add)")
        return 0
    print(f"{args.workflow} belongs to its developers: {', '.join(developers)}")
    return 0


def _listed(login: Any) -> dict[str, Any]:
    return {"name": login.name, "roles": sorted(login.roles), "workflows": sorted(login.workflows)}


def _roles(login: Any) -> str:
    said = []
    for role in sorted(login.roles):
        if role == "developer":
            of = ", ".join(sorted(login.workflows))
            said.append(f"developer of {of}" if of else "developer")
        else:
            said.append(role)
    return "; ".join(said) or "no role"
