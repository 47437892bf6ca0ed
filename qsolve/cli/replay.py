"""``qsolve export`` and ``qsolve replay`` (issue 40; docs/replay.md).

    qsolve export NAME[@VERSION] --out FILE     a version's replay bundle: the same bytes every time
                                                for the same track record
    qsolve replay FILE [--trust FILE] [--json]  the bundle checked offline and its rows run again, in
                                                any QSOLVE_HOME, with no state database and no network

Exit codes: 0 every row reproduced or recomputed and everything verified; 1 anything else, the reason
named; 2 a file that does not read, an unknown version, or a misused command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
BUNDLE_READ_BYTES = 1024 * 2**20 + 1  # the bundle's bound (qsolve.replay.bundle.MAX_ZIP_BYTES), and one


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "export",
        help="a version's replay bundle: archive, cases, rows, receipts, log entries, checkpoint, trust list",
        description="Write one zip anyone can replay with `qsolve replay`, offline (docs/replay.md).",
    )
    p.add_argument("name", metavar="NAME[@VERSION]", help="the workflow, and its version (default: latest)")
    p.add_argument("--out", required=True, metavar="FILE", help="the zip to write")
    p.set_defaults(func=cmd_export)

    p = subparsers.add_parser(
        "replay",
        help="check a replay bundle offline and run its rows again: sim and fake rows re-run, hardware "
        "rows recomputed from their sealed counts",
        description="Replay a bundle written by `qsolve export`, with no state database and no network.",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--trust",
        metavar="FILE",
        help="a trust list (wai.quantum.receipt-keys/1) to hold receipts and log entries to, instead of "
        "the bundle's own",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=cmd_replay)


def _fail(command: str, message: str, code: int = EXIT_USAGE, as_json: bool = False) -> int:
    line = " ".join(f"qsolve {command}: {message}".split())
    print(line, file=sys.stderr)
    if as_json:
        import json

        print(json.dumps({"ok": False, "error": line, "exit": code}))
    return code


def cmd_export(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import StateError
    from qsolve_pipeline.storage.trackrecord.export import ExportRefused, export

    name, _, version = args.name.partition("@")
    try:
        bundle = export(name, version or None)
    except (ExportRefused, StateError) as e:
        return _fail("export", str(e))
    data = bundle.to_bytes()
    out = Path(args.out)
    try:
        tmp = out.with_name(f".{out.name}.part")
        tmp.write_bytes(data)
        tmp.replace(out)
    except OSError as e:
        return _fail("export", f"{out}: {e.strerror or e}")
    index = bundle.index
    print(
        f"{out}: {index.workflow} {index.version}: {len(bundle.rows)} rows, {len(bundle.receipts)} receipts, "
        f"{index.log_size} log entries, {len(data):,} bytes"
    )
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    import json

    import qiskit_aer  # noqa: F401 - first in the main thread (Aer in a later thread otherwise crashes)

    from qsolve.replay.bundle import BundleRefused, read_bundle
    from qsolve.replay.replaying import replay, report_json, table

    try:
        with open(args.file, "rb") as f:
            data = f.read(BUNDLE_READ_BYTES)
    except OSError as e:
        return _fail("replay", f"{args.file}: {e.strerror or e}", as_json=args.json)
    trust = None
    if args.trust is not None:
        try:
            trust = json.loads(Path(args.trust).read_text())
        except (OSError, ValueError) as e:
            return _fail("replay", f"{args.trust}: not a trust list that reads ({e})", as_json=args.json)
    try:
        bundle = read_bundle(data)
    except BundleRefused as e:
        return _fail("replay", f"{args.file}: {e}", as_json=args.json)
    try:
        report = replay(bundle, trust, tell=lambda line: print(line, file=sys.stderr))
    except (TypeError, KeyError, ValueError, AttributeError, RecursionError) as e:
        # a member the boundary's models do not cover, not of the form the exporter writes: one line
        why = f"{type(e).__name__}: {str(e)[:200]}"
        return _fail("replay", f"{args.file}: the bundle is not of its form ({why})", as_json=args.json)
    print(report_json(report) if args.json else table(report))
    return EXIT_OK if report.ok else EXIT_FAILED
