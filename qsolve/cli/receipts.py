"""``qsolve verify`` and ``qsolve receipt-key`` (quantum-provider-protocol §8.4, §8.8; issue 6).

    qsolve verify JOB.json [--trust KEYS.json | --registered] [--at MS|now] [--skew-ms MS] [--json]
    qsolve receipt-key [--json | --trust-list [--root FILE]]
    qsolve receipt-key root init [--out FILE]
    qsolve receipt-key root show [--root FILE]
    qsolve receipt-key endorse KEY --root FILE
    qsolve receipt-key retire KEY --root FILE [--note N]
    qsolve receipt-key revoke KEY --root FILE [--from MS] [--note N]

``verify`` exits 0 for a valid receipt, 1 for one that is not (an unreadable job is a reason, so 1; a
job needing rules not run here is not called valid, so 1), and 2 for a trust list refused whole or a
misused command (a job file that cannot be opened, a time that is not a whole number of milliseconds).
``receipt-key`` prints the host's public key, made on first use and registered in the state database
with its proof of possession, every host's key with its standing, and the keys the operator's root
endorsed as a trust list (``--registered`` holds a receipt to that list, checked against the root
configured on this machine, ``QSOLVE_RECEIPT_ROOT``; none configured: exit 2). ``endorse``, ``retire``
and ``revoke`` are statements the root key signs (``--root FILE``, kept by the operator off the
workers; ``root init`` makes it), for every machine (``storage.state._host_keys``).

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
        help="hold it to the host keys the operator's root endorsed (qsolve receipt-key)",
    )
    p.add_argument("--at", metavar="MS|now", help="a time to hold it to: milliseconds since 1970, or now")
    p.add_argument("--skew-ms", metavar="MS", help="how far the receipt's issue may pass --at (default 0)")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser(
        "receipt-key",
        help="print the host's receipt key, every host's key and the endorsed keys as a trust list",
        description="The host's Ed25519 public key (made on first use in QSOLVE_HOME/keys/, registered in "
        "the state database with its proof of possession), every registered key with its standing "
        "(endorsed by the operator's root key or not), and the endorsed keys as a trust list.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--trust-list",
        action="store_true",
        help="print the endorsed keys as a trust list alone (save it as KEYS.json); with --root FILE, "
        "signed whole by the root",
    )
    p.add_argument("--root", metavar="FILE", help="the root key's file, to sign the trust list with")
    p.set_defaults(func=cmd_receipt_key)
    actions = p.add_subparsers(dest="key_action", metavar="ACTION")
    root = actions.add_parser("root", help="the operator's root key: make it, show its public half")
    root_actions = root.add_subparsers(dest="root_action", metavar="ACTION", required=True)
    i = root_actions.add_parser(
        "init", help="make the root key in a file the operator keeps, off the workers (never overwritten)"
    )
    i.add_argument(
        "--out", metavar="FILE", help="where (default ~/.config/qsolve-root/receipt-root-ed25519.seed)"
    )
    i.set_defaults(func=cmd_root_init)
    w = root_actions.add_parser("show", help="the root's public key: configured here, or of --root FILE")
    w.add_argument("--root", metavar="FILE", help="the root key's file")
    w.set_defaults(func=cmd_root_show)
    e = actions.add_parser(
        "endorse", help="endorse a host's key with the root key, on the key's proof of possession"
    )
    e.add_argument("key", metavar="KEY", help="the key, or its id (its first 16 hex digits)")
    e.add_argument("--root", metavar="FILE", required=True, help="the root key's file")
    e.set_defaults(func=cmd_endorse)
    r = actions.add_parser(
        "retire",
        help="retire a key for every machine: its host signs no more with it; what it signed stands",
    )
    r.add_argument("key", metavar="KEY", help="the key, or its id (its first 16 hex digits)")
    r.add_argument("--root", metavar="FILE", required=True, help="the root key's file")
    r.add_argument("--note", metavar="N", help="why, kept with the key")
    r.set_defaults(func=cmd_retire)
    v = actions.add_parser(
        "revoke",
        help="revoke a key for every machine: every receipt it sealed from --from (default 0) is refused",
    )
    v.add_argument("key", metavar="KEY", help="the key, or its id (its first 16 hex digits)")
    v.add_argument("--root", metavar="FILE", required=True, help="the root key's file")
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


def _receipt_key(name: str) -> list[str] | None:
    """The key the job in file ``name`` names in its receipt (the one entry a verifier looks up), so
    that no other key's endorsement is checked; None where it does not read plainly (standard input, a
    file that does not open or parse): then every key is. The verifier reads the job strictly, after."""
    from qsolve.receipts.reading import InputRefused
    from qsolve.receipts.verifier import VERIFY_LIMITS

    if name == "-":
        return None
    try:
        key = json.loads(_read_file(name, VERIFY_LIMITS.bytes))["result"]["receipt"]["key"]
    except (InputRefused, TypeError, ValueError, KeyError, RecursionError):
        return None
    return [key] if isinstance(key, str) else None


def _held(args: argparse.Namespace) -> HeldTo:
    from qsolve.receipts.reading import InputRefused, held_time
    from qsolve.receipts.trust import HeldTo, TrustList, TrustListRefused
    from qsolve.receipts.verifier import VERIFY_LIMITS

    trust = None
    if getattr(args, "registered", False):
        if args.trust is not None:
            raise InputRefused("give --trust KEYS.json or --registered, not both")
        from qsolve.receipts.root import NoReceiptRoot, configured_root
        from qsolve_pipeline.storage.state import connect

        try:
            root = configured_root()
        except NoReceiptRoot as e:
            raise InputRefused(f"--registered: {e}") from None
        with connect() as db:
            trust = TrustList.from_value(db.trust_list(root, only=_receipt_key(args.job)))
    elif args.trust is not None:
        try:
            trust = _trust_file(args.trust, _read_file(args.trust, VERIFY_LIMITS.bytes))
        except TrustListRefused as e:
            raise InputRefused(f"{args.trust}: refused whole: {e}; nothing was judged") from None
    at_ms, skew_ms = held_time(args.at, args.skew_ms, at_name="--at", skew_name="--skew-ms")
    return HeldTo(trust=trust, at_ms=at_ms, skew_ms=skew_ms)


def _trust_file(name: str, data: bytes) -> Any:
    """A plain trust list (§8.8), or the operator's list signed whole by the root, whose signature is
    checked against the root configured here (``QSOLVE_RECEIPT_ROOT``) before its list is read."""
    from qsolve.receipts.endorsement import StatementRefused, is_signed_list, read_signed_list
    from qsolve.receipts.reading import InputRefused
    from qsolve.receipts.root import NoReceiptRoot, configured_root
    from qsolve.receipts.strict_json import Unreadable, read_value
    from qsolve.receipts.trust import TrustList

    try:
        value = read_value(data)
    except Unreadable:
        return TrustList.read(data)  # refused whole, saying why, as a list is
    if not is_signed_list(value):
        return TrustList.from_value(value)
    try:
        return TrustList.from_value(read_signed_list(value, configured_root()))
    except (StatementRefused, NoReceiptRoot) as e:
        raise InputRefused(
            f"{name}: the signed trust list is refused whole: {e}; nothing was judged"
        ) from None


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


def _root_key(name: str, command: str) -> Any:
    """The root key in file ``name``, or None after one line on standard error."""
    from qsolve.receipts.keys import KeyFileExposed
    from qsolve.receipts.root import load_root

    try:
        return load_root(Path(name))
    except FileNotFoundError:
        print(
            f"qsolve receipt-key {command}: {name}: no such file (qsolve receipt-key root init)",
            file=sys.stderr,
        )
    except (KeyFileExposed, OSError) as e:
        print(f"qsolve receipt-key {command}: {e}", file=sys.stderr)
    return None


def _endorse_line(key_id: str) -> str:
    return f"qsolve receipt-key endorse {key_id} --root FILE"


def cmd_receipt_key(args: argparse.Namespace) -> int:
    from qsolve.home import host_name
    from qsolve.receipts.endorsement import endorsed_list, sign_list
    from qsolve.receipts.keys import KeyFileExposed, key_path
    from qsolve.receipts.root import NoReceiptRoot, configured_root
    from qsolve_pipeline.storage.state import connect

    signer = None
    if args.root is not None:
        if not args.trust_list:
            print(
                "qsolve receipt-key: --root signs the trust list: give it with --trust-list", file=sys.stderr
            )
            return EXIT_USAGE
        if (signer := _root_key(args.root, "--trust-list")) is None:
            return EXIT_USAGE
    try:
        root = configured_root()
    except NoReceiptRoot as e:
        root, no_root = None, str(e)
    if signer is not None:
        if root is not None and root != signer.public_hex:
            print(
                f"qsolve receipt-key: {args.root} is not the root configured here (QSOLVE_RECEIPT_ROOT "
                f"{root[:16]}): its list would not check",
                file=sys.stderr,
            )
            return EXIT_USAGE
        root = signer.public_hex
    try:
        with connect() as db:
            key = db.signing_key(tell=lambda line: print(line, file=sys.stderr))
            standings = db.key_standings(root) if root is not None else None
            records = db.host_keys()
    except (KeyFileExposed, OSError) as e:
        print(f"qsolve receipt-key: {e}", file=sys.stderr)
        return EXIT_USAGE
    if standings is None:
        if args.trust_list:
            print(f"qsolve receipt-key: {no_root}", file=sys.stderr)
            return EXIT_USAGE
        standing_of = {}
        listing = None
    else:
        standing_of = {r.key: s for r, s in standings}
        listing = endorsed_list([s for _, s in standings])
    mine = standing_of.get(key.public_hex)
    if args.trust_list:
        print(json.dumps(sign_list(listing, signer) if signer is not None else listing))
        return EXIT_VALID
    if args.json:
        shown = {
            "key": key.public_hex,
            "host": host_name(),
            "root": root,
            "endorsed": bool(mine and mine.endorsed),
            "entry": mine.entry() if mine and mine.endorsed else None,
            "status": mine.status if mine else None,
            "keys": [
                {"key": r.key, "host": r.host, "key_id": r.key_id}
                | (
                    {"status": standing_of[r.key].status, "why": standing_of[r.key].why}
                    if standing_of
                    else {}
                )
                for r in records
            ],
            "trust_list": listing,
        }
        print(json.dumps(shown))
        return EXIT_VALID
    print(f"host receipt key (ed25519): {key.public_hex}")
    print(f"kept in {Path(key_path()).parent}, readable by its owner only; registered as {host_name()}")
    if mine is None:
        print(no_root)
    elif not mine.endorsed:
        print(f"not endorsed by the root ({mine.why}): its receipts verify as registered once it is:")
        print(f"  {_endorse_line(key.public_hex[:16])}")
    print(
        f"every host's key ({len(records)}), as the root {root[:16] if root else '(none configured)'} says:"
    )
    for r in records:
        said = standing_of[r.key].status if standing_of else "not checked: no root configured"
        print(
            f"  {r.host:20} {r.key_id}  {r.key}  first seen {r.first_seen_at:%Y-%m-%d %H:%M:%S} UTC  {said}"
        )
    if listing is not None:
        print("the endorsed keys as a trust list (save as KEYS.json for qsolve verify --trust KEYS.json,")
        print("or use --registered; --trust-list --root FILE signs it whole):")
        print(json.dumps(listing))
    return EXIT_VALID


def cmd_root_init(args: argparse.Namespace) -> int:
    from qsolve.receipts.root import ROOT_VARIABLE, default_root_path, init_root

    path = Path(args.out) if args.out else default_root_path()
    try:
        root = init_root(path)
    except FileExistsError:
        print(
            f"qsolve receipt-key root init: {path}: a file is there already; it is never overwritten",
            file=sys.stderr,
        )
        return EXIT_INVALID
    except (ValueError, OSError) as e:
        print(f"qsolve receipt-key root init: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"root key made in {path} (mode 0600): keep it off the workers; it endorses every host's key")
    print(f"its public key, to configure on every machine: {ROOT_VARIABLE}={root.public_hex}")
    return EXIT_VALID


def cmd_root_show(args: argparse.Namespace) -> int:
    from qsolve.receipts.root import ROOT_VARIABLE, NoReceiptRoot, configured_root

    if args.root is not None:
        if (root := _root_key(args.root, "root show")) is None:
            return EXIT_USAGE
        print(f"{ROOT_VARIABLE}={root.public_hex}")
        return EXIT_VALID
    try:
        print(f"{ROOT_VARIABLE}={configured_root()}")
    except NoReceiptRoot as e:
        print(f"qsolve receipt-key root show: {e}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_VALID


def _key_action(args: argparse.Namespace, command: str, act) -> int:
    from qsolve.receipts.endorsement import StatementRefused
    from qsolve.receipts.root import ROOT_VARIABLE, NoReceiptRoot, configured_root
    from qsolve_pipeline.storage.state import NotFound, connect

    if (root := _root_key(args.root, command)) is None:
        return EXIT_USAGE
    try:  # a statement by any other root endorses nothing anywhere: never written, never said done
        configured = configured_root()
    except NoReceiptRoot as e:
        print(f"qsolve receipt-key {command}: {e}; the root signs where it is configured", file=sys.stderr)
        return EXIT_USAGE
    if root.public_hex != configured:
        print(
            f"qsolve receipt-key {command}: {args.root} holds root {root.public_hex[:16]}, not the "
            f"configured root ({ROOT_VARIABLE} {configured[:16]}): nothing was signed or written",
            file=sys.stderr,
        )
        return EXIT_USAGE
    with connect() as db:
        try:
            record = act(db, root)
        except (NotFound, StatementRefused) as e:
            print(f"qsolve receipt-key {command}: {e}", file=sys.stderr)
            return EXIT_INVALID
        standing = record.standing(root.public_hex)
    return _said(command, record, standing)


def _said(command: str, record: Any, standing: Any) -> int:
    name = f"{record.key_id} ({standing.host or record.host})"
    if command == "endorse":
        print(f"endorsed {name}: its receipts verify as registered on every machine that trusts this root")
    elif not standing.endorsed:
        print(
            f"{command}d {name} for its host, which signs with a new key from its next receipt; the root "
            "never endorsed it, so nothing it sealed verifies as registered"
        )
    elif command == "retire":
        print(
            f"retired {name}: its host signs with a new key from its next receipt; "
            "what it sealed still verifies"
        )
    else:
        print(
            f"revoked {name} from {standing.revoked_from_ms} ms: every receipt it sealed from then, and "
            "every one that seals no time, is refused key_revoked held to the endorsed keys"
        )
    return EXIT_VALID


def cmd_endorse(args: argparse.Namespace) -> int:
    return _key_action(args, "endorse", lambda db, root: db.endorse_host_key(args.key, root))


def cmd_retire(args: argparse.Namespace) -> int:
    return _key_action(args, "retire", lambda db, root: db.retire_host_key(args.key, root, note=args.note))


def cmd_revoke(args: argparse.Namespace) -> int:
    from qsolve.receipts.reading import InputRefused, milliseconds

    try:
        from_ms = milliseconds(args.from_ms, "--from")
    except InputRefused as e:
        print(f"qsolve receipt-key revoke: {e}", file=sys.stderr)
        return EXIT_USAGE
    return _key_action(
        args, "revoke", lambda db, root: db.revoke_host_key(args.key, root, from_ms=from_ms, note=args.note)
    )
