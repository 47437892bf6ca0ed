"""``qsolve query`` and ``qsolve page`` (DESIGN.md §5; issue 4, item 5).

    qsolve query SQL [--format table|csv|json|parquet] [--output PATH] [--timeout S]
    qsolve page NAME [--version V] [--json]
    qsolve views-sql [--credentials] [--output PATH]
    qsolve trackrecord verify [--checkpoint FILE] [--trust FILE]
    qsolve trackrecord checkpoint

Both read ``QSOLVE_HOME`` (default ``./.qsolve``). Exit 0 when the command did what was asked; 2 for SQL
DuckDB refused, an unknown workflow or version, or an output that cannot be written, with the reason on
standard error; 1 for a query stopped by a limit (its time-out, default 60 s; its memory limit,
``QSOLVE_QUERY_MEMORY``, default a quarter of the machine's memory), the message naming the limit. A
file of the track record's folder left out of the views (qsolve did not write it, or it is damaged) is
named on standard error, ``qsolve query: warning: PATH: why``, and the command goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from qsolve_pipeline.storage.trackrecord.errors import (
    QueryFailed,
    QueryLimit,
    TrackRecordWarning,
    UnknownWorkflow,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
FORMATS = ("table", "csv", "json", "parquet")  # sql.FORMATS, here so the parser loads no DuckDB
TIMEOUT_SECONDS = 60.0  # sql.TIMEOUT_SECONDS, likewise


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds, a number 0 or more (0: no limit)")
    return value


def add_commands(subparsers: Any) -> None:
    """Add ``query`` and ``page`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "query",
        help="DuckDB SQL over the track record's views (docs/trackrecord.md)",
        description="Run DuckDB SQL over the track record: rows, current, history, track_record, "
        "noise_model_estimate, on_hardware, on_simulators, on_devices, earlier_results, method_objectives, "
        "workflow_cards, versions.",
    )
    p.add_argument("sql", metavar="SQL", help="for example: SELECT * FROM workflow_cards")
    p.add_argument("--format", choices=FORMATS, default="table", help="default: a table on the terminal")
    p.add_argument("--output", metavar="PATH", help="write to this file instead of standard output")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=TIMEOUT_SECONDS,
        metavar="S",
        help=f"stop the query after S seconds (default {TIMEOUT_SECONDS:g}; 0: no limit). Its memory limit "
        "is QSOLVE_QUERY_MEMORY (default 25%%, a quarter of the machine's memory)",
    )
    p.set_defaults(func=cmd_query)

    p = subparsers.add_parser(
        "page",
        help="the workflow page: track record, noise-model estimate, hardware, earlier results",
        description="A workflow's page: headline accuracy (median over the track record), then the four "
        "sections with each row's verdict.",
    )
    p.add_argument("name", metavar="NAME", help="the workflow's name")
    p.add_argument("--version", metavar="V", help="show this version (default: the current one)")
    p.add_argument("--json", action="store_true", help="print the page as one JSON object")
    p.set_defaults(func=cmd_page)

    p = subparsers.add_parser(
        "views-sql",
        help="the track record's views as SQL for your own DuckDB (object storage: with its CREATE SECRET)",
        description="Print the track record's views as DuckDB SQL. With QSOLVE_STORAGE_URL: over s3:// "
        "globs, after the CREATE SECRET the endpoint needs (key and secret as placeholders unless "
        "--credentials); otherwise QSOLVE_HOME/trackrecord.sql's views, by absolute path.",
    )
    p.add_argument(
        "--credentials",
        action="store_true",
        help="write AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY into the secret (then the output holds them)",
    )
    p.add_argument("--output", metavar="PATH", help="write to this file (owner-only), not standard output")
    p.set_defaults(func=cmd_views_sql)

    p = subparsers.add_parser(
        "receipts", help="write a run's device-job receipts as files anyone can check with qsolve verify"
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write <digest>.json into")
    p.set_defaults(func=cmd_receipts)

    p = subparsers.add_parser(
        "trackrecord",
        help="the track record's signed log: verify it, print its checkpoint (docs/trackrecord.md)",
        description="The track record's signed append-only log.",
    )
    sub = p.add_subparsers(dest="trackrecord_command", metavar="COMMAND", required=True)
    v = sub.add_parser(
        "verify",
        help="check the log's signatures and chain, every file against its entry, every row's run "
        "(exit 0: all holds, 1: something does not, named; 2: a file given is not a JSON object, or no "
        "state database is found)",
    )
    v.add_argument(
        "--checkpoint", metavar="FILE", help="a checkpoint saved earlier: today's log must extend it"
    )
    v.add_argument(
        "--trust",
        metavar="FILE",
        help="a trust list (wai.quantum.receipt-keys/1: qsolve receipt-key --trust-list) whose keys "
        "may sign entries; default: the keys the configured root (QSOLVE_RECEIPT_ROOT) endorsed",
    )
    v.set_defaults(func=cmd_trackrecord_verify)
    c = sub.add_parser("checkpoint", help="print the log's head, signed by this host, as JSON to publish")
    c.set_defaults(func=cmd_trackrecord_checkpoint)


def _fail(command: str, message: str) -> int:
    print(f"qsolve {command}: {message}", file=sys.stderr)
    return EXIT_USAGE


@contextlib.contextmanager
def _warnings_on_stderr(command: str) -> Iterator[None]:
    """Each :class:`TrackRecordWarning` printed as it comes, ``qsolve COMMAND: warning: ...``; others as
    Python prints them."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, TrackRecordWarning):
                print(f"qsolve {command}: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.simplefilter("always", TrackRecordWarning)
        yield


def arrow_without_pandas() -> None:
    """Have pyarrow take pandas for absent when it only asks whether pandas is there. pyarrow asks the
    first time it builds an array or gives Python a time with a zone (``to_pylist``), importing pandas to
    find out (a second of CPU, more than the rest of ``qsolve page``), though it hands pandas nothing
    there; it keeps the answer for the process. Asked here while ``import pandas`` fails, the answer it
    keeps is no: such times come as ``datetime`` (as they do for microseconds whatever the answer), and
    what truly needs pandas (``to_pandas``) imports it then. Nothing where pandas is loaded already."""
    if "pandas" in sys.modules:
        return
    import pyarrow

    shim = getattr(pyarrow.lib, "_pandas_api", None)
    if shim is None:
        return
    refusal = _NoPandas()
    sys.meta_path.insert(0, refusal)
    try:
        shim.have_pandas  # noqa: B018 - the question asked, and its answer kept
    except Exception:  # noqa: BLE001 - another pyarrow: it asks when it asks
        pass
    finally:
        sys.meta_path.remove(refusal)


class _NoPandas:
    """A finder that has ``import pandas`` fail, for as long as it is on ``sys.meta_path``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas: not for a read command", name=name)


def cmd_query(args: argparse.Namespace) -> int:
    arrow_without_pandas()
    with _warnings_on_stderr("query"):
        return _query(args)


def _query(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.trackrecord.sql import query

    if args.format == "parquet" and args.output is None and sys.stdout.isatty():
        return _fail("query", "--format parquet writes binary: give --output PATH or pipe it")
    try:
        query(args.sql, fmt=args.format, output=args.output, timeout=args.timeout)
    except QueryLimit as e:
        print(f"qsolve query: {e}", file=sys.stderr)
        return EXIT_FAILED
    except QueryFailed as e:
        return _fail("query", str(e))
    except OSError as e:
        return _fail("query", f"{args.output}: {e.strerror or e}")
    return EXIT_OK


def cmd_views_sql(args: argparse.Namespace) -> int:
    arrow_without_pandas()  # the views name the recorded files, each verified (pyarrow reads their footers)
    with _warnings_on_stderr("views-sql"):
        return _views_sql(args)


def _views_sql(args: argparse.Namespace) -> int:
    import os

    from qsolve_pipeline.storage.trackrecord.layout import Layout
    from qsolve_pipeline.storage.trackrecord.views import Sources, definitions

    layout = Layout()
    if layout.store is not None:
        from qsolve_pipeline.storage.trackrecord.analyst import analyst_sql

        text = analyst_sql(layout.store, credentials=args.credentials)
    else:  # the recorded files, checked now, by absolute path (no glob: docs/trackrecord.md)
        from dataclasses import replace

        from qsolve_pipeline.storage.trackrecord.views import reading

        files = replace(reading(layout), schema_file=layout.schema_file)
        views = definitions(Sources.of(files))
        text = "".join(f"CREATE OR REPLACE VIEW {name} AS {select};\n" for name, select in views)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        return _fail("views-sql", f"{args.output}: {e.strerror or e}")
    return EXIT_OK


def cmd_receipts(args: argparse.Namespace) -> int:
    from pathlib import Path

    from qsolve.home import qsolve_home
    from qsolve_pipeline.storage.state import NotFound, connect
    from qsolve_pipeline.storage.trackrecord.receipts_check import write_receipts

    with connect() as db:
        try:
            run = db.get_run(args.run_id)
        except NotFound as e:
            return _fail("receipts", str(e))
        digests = db.run_receipts(args.run_id)
    what = f"run {args.run_id} ({run.workflow} {run.version}: {run.case_name} on {run.target})"
    if not digests:
        return _fail("receipts", f"{what} sealed no device job (it ran on no device)")
    for path in write_receipts(digests, qsolve_home(), Path(args.out)):
        print(path)
    print(f"{len(digests)} receipts of {what}; check each with: qsolve verify FILE", file=sys.stderr)
    return EXIT_OK


class _FileRefused(ValueError):
    """A file given on the command line that is not what it must be: one line naming it and why."""


def _json_file(name: str) -> dict[str, Any]:
    """The JSON object in file ``name`` (read to 1 MiB); :class:`_FileRefused` where it does not read or
    is not an object."""
    from pathlib import Path

    try:
        with open(Path(name), "rb") as f:
            data = f.read(1 << 20)
        value = json.loads(data)
    except (OSError, ValueError) as e:
        raise _FileRefused(f"{name}: does not read as JSON ({getattr(e, 'strerror', None) or e})") from None
    if type(value) is not dict:
        shown = "null" if value is None else type(value).__name__
        raise _FileRefused(f"{name}: not a JSON object (it is {shown})")
    return value


def cmd_trackrecord_verify(args: argparse.Namespace) -> int:
    import os

    from qsolve.receipts.root import NoReceiptRoot
    from qsolve.receipts.trust import TrustListRefused
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE
    from qsolve_pipeline.storage.trackrecord.layout import Layout
    from qsolve_pipeline.storage.trackrecord.live import saw_log_started
    from qsolve_pipeline.storage.trackrecord.verify import file_reader, trusted_keys, verify

    command = "trackrecord verify"
    try:
        checkpoint = None if args.checkpoint is None else _json_file(args.checkpoint)
        given_trust = None if args.trust is None else _json_file(args.trust)
    except _FileRefused as e:
        return _fail(command, str(e))
    layout = Layout()
    if not os.environ.get(DATABASE_URL_VARIABLE) and not (layout.home / "state.db").exists():
        # the log is the state database's: without one there is nothing to verify, and none is made
        return _fail(
            command,
            f"{layout.home / 'state.db'}: no state database (and no {DATABASE_URL_VARIABLE}): the track "
            "record's log is kept there; nothing verified",
        )
    database_problems = []
    with connect() as db:
        try:
            trust = given_trust if given_trust is not None else db.trust_list()
            trusted = trusted_keys(trust)
        except (NoReceiptRoot, TrustListRefused) as e:
            return _fail(command, f"{args.trust or 'the trust list'}: {e}")
        documents = db.trackrecord_log_documents()
        files, outside = db.trackrecord_live_checked()
        live = {f.name: f.digest for f in files}
        database_problems += [f"{name}: {why}" for name, why in outside]
        if not documents and saw_log_started(db, layout):
            database = db.engine.url.render_as_string(hide_password=True)
            database_problems.append(
                f"{database}: its track-record log is empty, yet this home saw it hold entries: they were "
                "removed (a checkpoint saved earlier, --checkpoint, says how many)"
            )
    found = verify(documents, file_reader(layout), trusted, live=live, checkpoint=checkpoint)
    found.problems[:0] = database_problems
    for line in found.said:
        print(line)
    for line in found.problems:
        print(f"qsolve {command}: {line}", file=sys.stderr)
    if not found.ok:
        print(
            f"qsolve {command}: {len(found.problems)} problems: the track record does not verify",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print("the track record verifies")
    return EXIT_OK


def cmd_trackrecord_checkpoint(args: argparse.Namespace) -> int:
    from qsolve.receipts.trackrecord_log import LogRefused
    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        try:
            checkpoint = db.trackrecord_checkpoint()
        except LogRefused as e:
            print(f"qsolve trackrecord checkpoint: {e}", file=sys.stderr)
            return EXIT_FAILED
    print(json.dumps(checkpoint, indent=2))
    return EXIT_OK


def cmd_page(args: argparse.Namespace) -> int:
    arrow_without_pandas()
    with _warnings_on_stderr("page"):
        return _page(args)


def _page(args: argparse.Namespace) -> int:
    from rich.console import Console

    from qsolve_pipeline.storage.trackrecord.published import published_page
    from qsolve_pipeline.storage.trackrecord.workflow_page import render_page

    try:
        p, _checked = published_page(args.name, args.version)
    except UnknownWorkflow as e:
        return _fail("page", str(e))
    if args.json:
        print(json.dumps(p.model_dump(mode="json"), indent=2))
    else:
        render_page(p, Console(width=None if sys.stdout.isatty() else 160))
    return EXIT_OK
