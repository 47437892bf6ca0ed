"""``qsolve verify`` and ``qsolve receipt-key`` (quantum-provider-protocol §8.4, §8.8; issue 6).

    qsolve verify JOB.json [--trust KEYS.json] [--at MS|now] [--skew-ms MS] [--json]
    qsolve receipt-key [--json]

``verify`` exits 0 for a valid receipt, 1 for one that is not (an unreadable job is a reason, so 1; a
job needing rules not run here is not called valid, so 1), and 2 for a trust list refused whole or a
misused command (a job file that cannot be opened, a time that is not a whole number of milliseconds).
``receipt-key`` prints the host's public key, made on first use, and a trust list holding it.

The verifier's modules load when a command runs, not when the command line builds its parser.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qsolve.receipts.trust import HeldTo

EXIT_VALID, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_commands(subparsers: Any) -> None:
    """Add ``verify`` and ``receipt-key`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "verify",
        help="verify a job's signed receipt (exit 0 valid, 1 not valid, 2 misuse or a trust list refused)",
        description="Verify a job's receipt as quantum-provider-protocol §8.4 says, every reason reported.",
    )
    p.add_argument(
        "job", metavar="JOB.json", help="the job's text: {request, result}; - reads standard input"
    )
    p.add_argument(
        "--trust", metavar="KEYS.json", help="a trust list (wai.quantum.receipt-keys/1) to hold it to"
    )
    p.add_argument("--at", metavar="MS|now", help="a time to hold it to: milliseconds since 1970, or now")
    p.add_argument("--skew-ms", metavar="MS", help="how far the receipt's issue may pass --at (default 0)")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser(
        "receipt-key",
        help="print the host's receipt key and a trust list holding it",
        description="The host's Ed25519 public key (made on first use in QSOLVE_HOME/keys/), a trust list.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_receipt_key)


def _read_file(name: str, limit: int) -> bytes:
    from qsolve.receipts.reading import InputRefused

    try:
        if name == "-":
            return sys.stdin.buffer.read(limit + 1)
        with open(name, "rb") as f:
            return f.read(limit + 1)  # one byte past the limit is enough to find it too large
    except FileNotFoundError:
        raise InputRefused(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputRefused(f"{name}: is a folder, not a file") from None
    except OSError as e:
        raise InputRefused(f"{name}: cannot be read: {e.strerror or e}") from None


def _held(args: argparse.Namespace) -> HeldTo:
    from qsolve.receipts.reading import InputRefused, held_time
    from qsolve.receipts.trust import HeldTo, TrustList, TrustListRefused
    from qsolve.receipts.verifier import VERIFY_LIMITS

    trust = None
    if args.trust is not None:
        try:
            trust = TrustList.read(_read_file(args.trust, VERIFY_LIMITS.bytes))
        except TrustListRefused as e:
            raise InputRefused(f"{args.trust}: refused whole: {e}; nothing was judged") from None
    at_ms, skew_ms = held_time(args.at, args.skew_ms, at_name="--at", skew_name="--skew-ms")
    return HeldTo(trust=trust, at_ms=at_ms, skew_ms=skew_ms)


def cmd_verify(args: argparse.Namespace) -> int:
    from qsolve.receipts.reading import InputRefused, plain
    from qsolve.receipts.verifier import VERIFY_LIMITS, verify

    try:
        held = _held(args)
        data = _read_file(args.job, VERIFY_LIMITS.bytes)
    except InputRefused as e:
        print(f"qsolve verify: {e}", file=sys.stderr)
        return EXIT_USAGE
    verdict = verify(data, limits=VERIFY_LIMITS, held=held)
    if args.json:
        print(json.dumps(verdict.as_json(), ensure_ascii=False))
    else:
        print(plain(args.job, verdict))
    return EXIT_VALID if verdict.valid else EXIT_INVALID


def trust_list_for(public_hex: str) -> dict[str, Any]:
    """A trust list of one entry: the key, with no window and no revocation (§8.8)."""
    from qsolve.receipts.trust import FORMAT

    return {"format": FORMAT, "algorithm": "ed25519", "keys": [{"key": public_hex}]}


def cmd_receipt_key(args: argparse.Namespace) -> int:
    from qsolve.receipts.keys import KeyFileExposed, key_path, load_host_key

    try:
        key = load_host_key()
    except (KeyFileExposed, OSError) as e:
        print(f"qsolve receipt-key: {e}", file=sys.stderr)
        return EXIT_USAGE
    listing = trust_list_for(key.public_hex)
    if args.json:
        print(json.dumps({"key": key.public_hex, "entry": listing["keys"][0], "trust_list": listing}))
        return EXIT_VALID
    print(f"host receipt key (ed25519): {key.public_hex}")
    print(f"kept in {Path(key_path()).parent}, readable by its owner only")
    print("a trust list holding it (save as KEYS.json for qsolve verify --trust KEYS.json):")
    print(json.dumps(listing))
    return EXIT_VALID
