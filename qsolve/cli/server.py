"""``qsolve server start|stop|status``: one local Prefect server that every later command uses (issue 23,
item 1); the server itself is :mod:`flows.server`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from qsolve.home import qsolve_home
from qsolve_pipeline.flows.server import START_TIMEOUT_S, ServerError, healthy, read_record, start, stop


def add_commands(subparsers: Any) -> None:
    s = subparsers.add_parser(
        "server",
        help="one local Prefect server (loopback) that later commands use: start, stop, status",
        description="Keep one Prefect server running on 127.0.0.1, its database under QSOLVE_HOME, so that "
        "commands that run a flow use it (when PREFECT_API_URL is not set) and only the first pays its "
        "start-up.",
    )
    sub = s.add_subparsers(dest="server_command", required=True, metavar="ACTION")
    start_p = sub.add_parser("start", help="start it (or find it running) and wait until it answers")
    start_p.add_argument(
        "--timeout",
        type=float,
        default=START_TIMEOUT_S,
        metavar="S",
        help=f"wait at most S s ({START_TIMEOUT_S})",
    )
    start_p.set_defaults(func=cmd_start)
    sub.add_parser("stop", help="stop it").set_defaults(func=cmd_stop)
    sub.add_parser(
        "status", help="whether it runs, where, and its database (exit 1 when it does not)"
    ).set_defaults(func=cmd_status)


def cmd_start(args: argparse.Namespace) -> int:
    before = read_record()
    try:
        recorded = start(timeout=args.timeout, say=lambda line: print(line, file=sys.stderr, flush=True))
    except ServerError as e:
        print(f"qsolve server start: {e}", file=sys.stderr)
        return 2
    again = before is not None and before.pid == recorded.pid
    print(
        f"the Prefect server {'already runs' if again else 'runs'} on {recorded.url} (pid {recorded.pid}; "
        f"the UI at {recorded.url.removesuffix('/api')}); commands that run a flow use it; "
        "qsolve server stop stops it"
    )
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    stopped = stop()
    if stopped is None:
        print("no Prefect server of qsolve server runs for this QSOLVE_HOME")
    else:
        print(f"stopped the Prefect server on {stopped.url} (pid {stopped.pid})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    recorded = read_record()
    if recorded is None or not recorded.alive():
        print(f"no Prefect server of qsolve server runs for {qsolve_home().resolve()} (qsolve server start)")
        return 1
    if not healthy(recorded.url):
        print(
            f"the Prefect server (pid {recorded.pid}) runs but does not answer {recorded.url}; "
            f"its log {recorded.log}"
        )
        return 1
    print(f"the Prefect server runs on {recorded.url} (pid {recorded.pid}); its database {recorded.database}")
    return 0
