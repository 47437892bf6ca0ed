"""``qsolve worker [--pool P] [--print] [--run-once]``: a Prefect process worker on the queues of the
providers this machine holds (issue 26, item 3; docs/deploy.md).

It works out the queues (``default``, and ``provider-NAME`` / ``ibm`` for each provider whose credential
is here: :func:`qsolve.targets.routing.held_queues`), registers them in the state database under this
host's name (so that a run waiting for a provider can say whether any host holds it), and becomes
``prefect worker start --pool P --work-queue default --work-queue provider-NAME ...``. ``--print`` prints
that command instead of running it. Exit codes: 0 done, 2 misuse (a providers.yaml that does not read).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

DEFAULT_POOL = "qsolve"
DEFAULT_QUEUE = "default"


def add_commands(subparsers: Any) -> None:
    w = subparsers.add_parser(
        "worker",
        help="start a Prefect worker on the work queues of the providers this machine holds",
        description="Register in the state database which providers this machine holds, then run "
        "`prefect worker start` on the pool's default queue and each held provider's queue "
        "(provider-NAME, ibm): hardware runs for a provider go to a machine that holds it.",
    )
    w.add_argument("--pool", default=DEFAULT_POOL, help=f"the process work pool (default {DEFAULT_POOL})")
    w.add_argument("--name", help="the worker's name in Prefect (default: Prefect's)")
    w.add_argument("--print", action="store_true", help="print the worker's command instead of running it")
    w.add_argument("--run-once", action="store_true", help="poll once, run what is there, then stop")
    w.add_argument("--limit", type=int, help="at most this many flow runs at a time")
    w.set_defaults(func=cmd_worker)


def worker_command(pool: str, queues: list[str], args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool]
    for queue in [DEFAULT_QUEUE, *queues]:
        command += ["--work-queue", queue]
    if args.name:
        command += ["--name", args.name]
    if args.run_once:
        command.append("--run-once")
    if args.limit:
        command += ["--limit", str(args.limit)]
    return command


def cmd_worker(args: argparse.Namespace) -> int:
    from qsolve.home import host_name
    from qsolve.providers.registry import RegistryError
    from qsolve.targets.routing import held_queues, provider_of
    from storage.state import connect

    try:
        queues = held_queues()
    except RegistryError as e:
        print(f"qsolve worker: {e}", file=sys.stderr)
        return 2
    host = host_name()
    with connect() as db:
        db.register_holder(host, queues)
    held = ", ".join(provider_of(q) for q in queues) or "no provider"
    print(f"{host} holds {held}: registered in the state database", file=sys.stderr)
    command = worker_command(args.pool, queues, args)
    if args.print:
        print(shlex.join(command))
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)  # the worker is this process from here on
    return 0  # pragma: no cover - execv does not return
