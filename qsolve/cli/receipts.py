"""``qsolve verify`` and ``qsolve receipt-key`` (quantum-provider-protocol §8.4, §8.8; issue 6).

    qsolve verify JOB.json [--trust KEYS.json | --registered] [--at MS|now] [--skew-ms MS] [--json]
    qsolve receipt-key [--json | --trust-list]
    qsolve receipt-key retire KEY [--note N]
    qsolve receipt-key revoke KEY [--from MS] [--note N]

``verify`` exits 0 for a valid receipt, 1 for one that is not (an unreadable job is a reason, so 1; a
job needing rules not run here is not called valid, so 1), and 2 for a trust list refused whole or a
misused command (a job file that cannot be opened, a time that is not a whole number of milliseconds).
``receipt-key`` prints the host's public key, made on first use and registered in the state database,
and every host's registered key as a trust list (``--registered`` holds a receipt to that list);
``retire`` and ``revoke`` change a key's entry for every machine (``storage.state._host_keys``).

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
    p.add_argument(
        "--registered",
        action="store_true",
        help="hold it to every host's key registered in the state database (qsolve receipt-key)",
    )
    p.add_argument("--at", metavar="MS|now", help="a time to hold it to: milliseconds since 1970, or now")
    p.add_argument("--skew-ms", metavar="MS", help="how far the receipt's issue may pass --at (default 0)")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser(
        "receipt-key",
        help="print the host's receipt key and every host's registered key as a trust list",
        description="The host's Ed25519 public key (made on first use in QSOLVE_HOME/keys/, registered in "
        "the state database), and every registered key as a trust list (host, key id, key, first seen).",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--trust-list", action="store_true", help="print the trust list alone (save it as KEYS.json)"
    )
    p.set_defaults(func=cmd_receipt_key)
    actions = p.add_subparsers(dest="key_action", metavar="ACTION")
    r = actions.add_parser(
        "retire",
        help="retire a key for every machine: its host signs no more with it; what it signed stands",
    )
    r.add_argument("key", metavar="KEY", help="the key, or its id (its first 16 hex digits)")
    r.add_argument("--note", metavar="N", help="why, kept with the key")
    r.set_defaults(func=cmd_retire)
    v = actions.add_parser(
        "revoke",
        help="revoke a key for every machine: every receipt it sealed from --from (default 0) is refused",
    )
    v.add_argument("key", metavar="KEY", help="the key, or its id (its first 16 hex digits)")
    v.add_argument(
        "--from",
        dest="from_ms",
        metavar="MS",
        default="0",
        help="the moment from which it is no longer vouched for, in ms since 1970 (default 0: always)",
    )
    v.add_argument("--note", metavar="N", help="why, kept with the key")
    v.set_defaults(func=cmd_revoke)


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
    if getattr(args, "registered", False):
        if args.trust is not None:
            raise InputRefused("give --trust KEYS.json or --registered, not both")
        from storage.state import connect

        with connect() as db:
            trust = TrustList.from_value(db.trust_list())
    elif args.trust is not None:
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


def cmd_receipt_key(args: argparse.Namespace) -> int:
    from qsolve.home import host_name
    from qsolve.receipts.keys import KeyFileExposed, key_path
    from storage.state import connect

    try:
        with connect() as db:
            key = db.signing_key(tell=lambda line: print(line, file=sys.stderr))
            records = db.host_keys()
            listing = db.trust_list()
    except (KeyFileExposed, OSError) as e:
        print(f"qsolve receipt-key: {e}", file=sys.stderr)
        return EXIT_USAGE
    entry = next(e for e in listing["keys"] if e["key"] == key.public_hex)
    if args.trust_list:
        print(json.dumps(listing))
        return EXIT_VALID
    if args.json:
        print(json.dumps({"key": key.public_hex, "host": host_name(), "entry": entry, "trust_list": listing}))
        return EXIT_VALID
    print(f"host receipt key (ed25519): {key.public_hex}")
    print(f"kept in {Path(key_path()).parent}, readable by its owner only; registered as {entry['host']}")
    print(f"every host's registered key ({len(records)}):")
    for r in records:
        print(
            f"  {r.host:20} {r.key_id}  {r.key}  first seen {r.first_seen_at:%Y-%m-%d %H:%M:%S} UTC  "
            f"{r.status}"
        )
    print("the trust list (save as KEYS.json for qsolve verify --trust KEYS.json, or use --registered):")
    print(json.dumps(listing))
    return EXIT_VALID


def cmd_retire(args: argparse.Namespace) -> int:
    from storage.state import NotFound, connect

    with connect() as db:
        try:
            record = db.retire_host_key(args.key, note=args.note)
        except NotFound as e:
            print(f"qsolve receipt-key retire: {e}", file=sys.stderr)
            return EXIT_INVALID
    print(
        f"retired {record.key_id} ({record.host}): its host signs with a new key from its next receipt; "
        "what it sealed still verifies"
    )
    return EXIT_VALID


def cmd_revoke(args: argparse.Namespace) -> int:
    from qsolve.receipts.reading import InputRefused, milliseconds
    from storage.state import NotFound, connect

    try:
        from_ms = milliseconds(args.from_ms, "--from")
    except InputRefused as e:
        print(f"qsolve receipt-key revoke: {e}", file=sys.stderr)
        return EXIT_USAGE
    with connect() as db:
        try:
            record = db.revoke_host_key(args.key, from_ms=from_ms, note=args.note)
        except NotFound as e:
            print(f"qsolve receipt-key revoke: {e}", file=sys.stderr)
            return EXIT_INVALID
    print(
        f"revoked {record.key_id} ({record.host}) from {record.revoked_from_ms} ms: every receipt it sealed "
        "from then, and every one that seals no time, is refused key_revoked held to the registered keys"
    )
    return EXIT_VALID
