"""The reference provider's command-line options, shared by ``python -m qsolve.providers.reference``
and ``qsolve providers reference`` (kept apart so that building qsolve's parser loads no provider)."""

from __future__ import annotations

import argparse
from pathlib import Path

from qsolve.providers.device import BASES
from qsolve.providers.program_env import CREDENTIAL_ENV


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The reference provider's options (``python -m qsolve.providers.reference`` and ``qsolve
    providers reference`` take the same)."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="one JSON line each way on standard input/output")
    where.add_argument(
        "--http", type=_address, metavar="HOST:PORT", help="serve on this machine (port 0: any)"
    )
    parser.add_argument(
        "--unpriced", action="store_true", help="set no price: billing and estimates unpriced"
    )
    parser.add_argument("--qubits", type=int, default=8)
    parser.add_argument("--basis", choices=list(BASES), default="rzsxxcz")
    parser.add_argument("--connectivity", choices=["all", "line", "star"], default="all")
    parser.add_argument("--jobs", type=Path, metavar="DIR", help="keep jobs in DIR, for any later process")
    parser.add_argument("--max-shots", type=int, default=100_000)
    parser.add_argument(
        "--require-credential",
        action="store_true",
        help=f"answer only messages with the credential in {CREDENTIAL_ENV} (over HTTP, as a Bearer token)",
    )
    parser.add_argument(
        "--credential-file",
        type=Path,
        metavar="PATH",
        help="with --require-credential: the credential it accepts, read from PATH (over standard input "
        f"the {CREDENTIAL_ENV} a client sets is held to it; without it, that one is taken as its own)",
    )
    parser.add_argument("--quiet", action="store_true", help="no request log on standard error")
