"""``qsolve worker [--pool P] [--print] [--run-once]``: a Prefect process worker on the queues of the
providers this machine holds (issue 26, item 3; docs/deploy.md).

It works out the queues (``default``, and ``provider-NAME`` / ``ibm`` for each provider whose credential
is here: :func:`qsolve.targets.routing.held_queues`), registers them in the state database under this
host's name (so that a run waiting for a provider can say whether any host holds it), and runs
``prefect worker start --pool P --work-queue default --work-queue provider-NAME ...`` as its child,
registering again every ``QSOLVE_WORKER_RENEW_S`` (60 s) while it lives: a host whose worker stopped is
not seen any more, and after ``storage.state._holders.STALE_AFTER`` (10 minutes) is not counted as
holding its providers. SIGTERM and SIGINT are passed on to the worker; this command then exits 128 + the
signal (143 for SIGTERM, as a shell says it), whether the worker died of it or ended cleanly. ``--print``
prints that command instead of running it.

Beside it runs ``python -m qsolve_pipeline.flows.maintenance_runner --pool P``, which serves the pool's
``maintenance`` work queue (the scheduled maintenance passes) in one long-lived process instead of a new
interpreter a minute (issue 39, item 3: :mod:`flows.maintenance_runner`); Prefect's worker does not poll that
queue. It is stopped with the worker, and started again (said) if it dies while the worker lives.

Exit codes: 0 done, 2 misuse (a providers.yaml that does not read), 128 + N stopped by signal N, else
the worker's.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
from typing import Any

DEFAULT_POOL = "qsolve"
DEFAULT_QUEUE = "default"
RENEW_VARIABLE = "QSOLVE_WORKER_RENEW_S"
RENEW_S = 60.0

log = logging.getLogger(__name__)


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


def runner_command(pool: str, args: argparse.Namespace) -> list[str]:
    """The maintenance runner's command: the pool's scheduled passes, served in one process."""
    command = [sys.executable, "-m", "qsolve_pipeline.flows.maintenance_runner", "--pool", pool]
    return command + (["--run-once"] if args.run_once else [])


def cmd_worker(args: argparse.Namespace) -> int:
    from qsolve.home import host_name
    from qsolve.providers.registry import RegistryError
    from qsolve.targets.routing import held_queues, provider_of
    from qsolve_pipeline.storage.state import connect

    try:
        queues = held_queues()
    except RegistryError as e:
        print(f"qsolve worker: {e}", file=sys.stderr)
        return 2
    try:
        every = renew_seconds()
    except ValueError as e:
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
    polled = [DEFAULT_QUEUE, *queues]
    try:
        from qsolve_pipeline.flows.queues import MAINTENANCE_QUEUE, ensure_queues

        # a queue the pool lacks: Prefect's worker would take nothing
        ensure_queues(args.pool, [*polled, MAINTENANCE_QUEUE], _say)
    except Exception as e:  # noqa: BLE001 - the Prefect server does not answer: one line
        print(
            f"qsolve worker: the work queues of pool {args.pool} were not made: {_one_line(e)}",
            file=sys.stderr,
        )
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    return run_registered(
        command, host, queues, every, pool=args.pool, runner=runner_command(args.pool, args)
    )


def _say(line: str) -> None:
    print(f"qsolve worker: {line}", file=sys.stderr, flush=True)


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


def _check_queues(pool: str, polled: list[str]) -> None:
    """Say, at the default level, a poll that cannot succeed (a queue of ``polled`` missing from the
    pool: Prefect answers every poll "not found" and its worker takes nothing, logging it only at debug
    level), and make the queue again; the maintenance runner's queue too."""
    try:
        from qsolve_pipeline.flows.queues import MAINTENANCE_QUEUE, ensure_queues, missing_queues

        missing = missing_queues(pool, [*polled, MAINTENANCE_QUEUE])
        if missing:
            _say(
                f"the work pool {pool} lacks the queues {', '.join(missing)}: Prefect's worker takes "
                "nothing while one it polls is missing"
            )
            ensure_queues(pool, missing, _say)
    except Exception as e:  # noqa: BLE001 - the server does not answer now: said, tried again next time
        _say(f"could not read the work queues of pool {pool}: {_one_line(e)}")


def _stop_runner(process: subprocess.Popen | None) -> None:
    """The maintenance runner stopped: SIGTERM (a pass it runs ends first, or is Crashed by Prefect's
    engine), then SIGKILL after 60 s."""
    if process is None:
        return
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def renew_seconds() -> float:
    """How often a running worker registers again: ``QSOLVE_WORKER_RENEW_S``, else 60 s."""
    text = os.environ.get(RENEW_VARIABLE, "").strip()
    if not text:
        return RENEW_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.5 <= value <= 300:  # well inside the 10 minutes after which a holder is not counted
        raise ValueError(f"{RENEW_VARIABLE}={text!r}: a number of seconds from 0.5 to 300")
    return value


def run_registered(
    command: list[str],
    host: str,
    queues: list[str],
    every: float,
    pool: str | None = None,
    runner: list[str] | None = None,
) -> int:
    """Run the worker ``command`` as a child, registering ``host``'s ``queues`` every ``every`` seconds
    while it lives; its exit code (128 + the signal's number after a stop passed on, as a shell says it,
    whether Prefect's worker dies of it or ends cleanly). A database that does not answer a renewal is
    tried again next time. With ``pool``, each renewal also checks that the queues it polls exist: one
    deleted meanwhile (Prefect's worker then takes nothing, and says nothing) is said and made again.
    ``runner`` (the maintenance runner's command) runs beside the worker: signals are passed on to it too,
    it is stopped when the worker ends, and one that died while the worker lives is said and started
    again at the next renewal."""
    from qsolve_pipeline.storage.state import connect

    stop = threading.Event()
    child: subprocess.Popen | None = None
    beside: list[subprocess.Popen] = []  # the maintenance runner, the latest last
    caught: list[int] = []

    def pass_on(signum: int, _frame: object) -> None:
        caught.append(signum)
        for process in [child, *beside[-1:]]:
            if process is not None and process.poll() is None:
                process.send_signal(signum)

    def start_runner() -> None:
        if runner is not None and not caught and not stop.is_set():
            beside.append(subprocess.Popen(runner, process_group=0))

    def renew() -> None:
        while not stop.wait(every):
            try:
                with connect() as db:
                    db.register_holder(host, queues)
            except Exception as e:  # noqa: BLE001 - a busy or lost database: next time
                log.warning("qsolve worker: could not renew %s's registration: %s", host, e)
            if pool is not None:
                _check_queues(pool, [DEFAULT_QUEUE, *queues])
            if beside and (code := beside[-1].poll()) is not None and not caught and not stop.is_set():
                if runner is not None and "--run-once" in runner:
                    continue
                _say(f"the maintenance runner ended ({code}): started again")
                start_runner()

    before = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGTERM, signal.SIGINT)}
    renewing = threading.Thread(target=renew, name="qsolve-worker-renew", daemon=True)
    try:
        child = subprocess.Popen(command, process_group=0)  # a signal reaches it once: passed on from here
        start_runner()
        if caught:  # a stop that came while it started
            child.send_signal(caught[0])
        renewing.start()
        code = child.wait()
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        stop.set()
        if renewing.is_alive():
            renewing.join(timeout=5)
        if beside and not caught and runner is not None and "--run-once" in runner:
            with contextlib.suppress(subprocess.TimeoutExpired):  # its one poll's passes, finished
                beside[-1].wait(timeout=600)
        _stop_runner(beside[-1] if beside else None)
    if caught and code == 0:  # a worker that stops cleanly on the signal passed on: stopped all the same
        return 128 + caught[0]
    return code if code >= 0 else 128 - code
