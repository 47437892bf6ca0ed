"""The command line, a front door at the edge (DESIGN.md §2, §5): the parser, and the workflow commands
(lint, check, test, submit, history, maintenance) here; each other area in a module of its own:

run_case     qsolve run: one case on any target         providers   qsolve providers ...
hardware     qsolve quote, confirm, refuse               credits     qsolve credits ...
calibration  qsolve calibrate                           evaluation  qsolve evaluate, evaluations ...
knowledge    qsolve knowledge ...                       receipts    qsolve verify, receipt-key
trackrecord  qsolve page, query, views-sql, ...         web         qsolve serve, accounts
replay       qsolve export, replay
server       qsolve server start|stop|status            worker      qsolve worker
ibm          python -m qsolve.targets.ibm               report_view how qsolve test shows a report

Exit codes: 0 everything passed, 1 something failed, 2 the input could not be read or the command
was misused. Commands that need Prefect or storage import them inside the command, so ``qsolve lint``
and ``qsolve test`` never load Prefect; a command line builds the parser of its command's area alone
(``AREA_OF``), so that a command imports no other area's module, and the read commands (``READS``:
page, query, views-sql, verify, receipts) load no pandas, Prefect or Qiskit (issue 39, item 4;
``python bench/imports.py --reads``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qsolve.sandbox.process import JobProcess

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """The command was misused or its input could not be read: exit 2."""


def _folder(path: str) -> Path:
    root = Path(path)
    if root.is_file():
        raise UsageError(f"{path}: is a file; give the workflow's folder (the one holding manifest.yaml)")
    if not root.is_dir():
        raise UsageError(f"{path}: not a workflow folder (no such directory)")
    return root


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cmd_lint(args: argparse.Namespace) -> int:
    from qsolve.errors import format_loc
    from qsolve.lint import lint

    root = _folder(args.dir)
    report = lint(root)
    errors = len(report.errors)
    warnings = len(report.issues) - errors
    if args.json:
        import json

        issues = [
            {"code": i.code, "severity": i.severity, "file": i.file, "key": format_loc(i.loc) or None,
             "message": i.message, "text": i.format()}
            for i in report.issues
        ]  # fmt: skip
        print(json.dumps({"folder": str(root), "ok": report.ok, "errors": errors, "warnings": warnings,
                          "issues": issues}, indent=2))  # fmt: skip
        return EXIT_OK if report.ok else EXIT_FAILED
    for issue in report.issues:
        print(issue.format(str(root)))
    print(f"{root}: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_check(args: argparse.Namespace) -> int:
    from qsolve.validation.checks import check_submission

    root = _folder(args.dir)
    report = check_submission(root)
    if args.json:
        import json

        print(json.dumps({
            "folder": str(root), "ok": report.ok, "errors": report.errors, "warnings": report.warnings,
            "cases": [c.case.name for c in report.cases],
            "hardware_cases": [c.case.name for c in report.hardware_cases],
        }, indent=2))  # fmt: skip
        return EXIT_OK if report.ok else EXIT_FAILED
    for line in report.errors:
        print(f"error: {line}")
    for line in report.warnings:
        print(f"warning: {line}")
    if report.ok:
        print(
            f"{root}: {_plural(len(report.cases), 'case')} and "
            f"{_plural(len(report.hardware_cases), 'hardware case')} pass the submission checks"
        )
    else:
        print(f"{root}: rejected, {_plural(len(report.errors), 'error')}")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_test(args: argparse.Namespace) -> int:
    from qsolve.sandbox.process import JobProcess

    process = JobProcess()  # the sandbox's child starts importing while the workflow is read
    try:
        root = _folder(args.dir)
        return _test(args, root, process)
    finally:
        process.close()


def _test(args: argparse.Namespace, root: Path, process: JobProcess) -> int:
    import json

    from rich.console import Console

    from qsolve.targets import UnknownTarget, check_device
    from qsolve.validation.pipeline import validate
    from qsolve.workflow.folder import load_cases

    try:
        check_device(args.target)
    except UnknownTarget as e:
        raise UsageError(str(e)) from None
    if args.case is not None:
        try:
            names = [c.name for c in load_cases(root).cases]
        except Exception:
            names = None  # the checks will say what is wrong with the file
        if names is not None and args.case not in names:
            raise UsageError(f"no case named {args.case!r} in {root}/benchmarks/cases.yaml")
    err = Console(stderr=True)
    report = validate(
        root,
        args.target,
        args.case,
        on_event=_progress(err) if not args.json else lambda e: None,
        process=process,
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        from qsolve.cli.report_view import show

        show(report, Console(width=None if sys.stdout.isatty() else 140))
    return EXIT_OK if report.passed else EXIT_FAILED


def _progress(console):
    from qsolve.cli.report_view import Progress  # rich's tables: only for a report that shows them

    return Progress(console)


def cmd_submit(args: argparse.Namespace) -> int:
    from qsolve.sandbox.process import JobProcess

    root = _folder(args.dir)
    from qsolve_pipeline.flows.dispatch import begin_server, compute_ahead, forget_ahead

    server = begin_server()  # a temporary server starts now, and lint, the checks, the gates meanwhile
    # none for a version already published, which the flow sends to publication without the gates
    published = _published_already(root)
    process = None if published else JobProcess()
    try:
        if server.temporary is None:  # no start to hide: Prefect loads while the workflow process starts
            _load_submission_flow()
        try:
            compute_ahead(root, gates=not published, process=process, stop=server.failed)
        finally:
            if process is not None:
                process.close()
        if server.failed():
            server.wait()  # one line, at once; nothing was recorded
        # while the server starts: Prefect, the flow and its engine load, the state database is made ready
        _load_submission_flow()
        from qsolve.home import local_account
        from qsolve_pipeline.flows.submission import report_of, submission_flow
        from qsolve_pipeline.storage.state import connect

        if not published:
            with connect():
                pass  # created and migrated now (a fresh home), not inside the flow's stages
        server.wait()  # one line if it does not start; nothing was recorded

        state = submission_flow(
            str(root), run_history=not args.no_history, account=local_account(args.account), return_state=True
        )
    finally:
        forget_ahead()
    return _submitted(args, report_of(state))


def _load_submission_flow() -> None:
    """Prefect, the submission flow and Prefect's engine, imported (once)."""
    import qsolve_pipeline.flows.submission  # noqa: F401
    from qsolve_pipeline.flows.dispatch import load_engine

    load_engine()


def _published_already(root: Path) -> bool:
    """Whether ``root``'s manifest names a name and version the state database holds: what the
    submission flow then judges without the gates. Read as the platform reads a submitted folder
    (``qsolve.workflow.reading``); anything unread or unsure is False, for the flow to say. A home with no
    state database of its own and no ``QSOLVE_DATABASE_URL`` has published nothing: not even opened."""
    from qsolve.home import qsolve_home

    if "QSOLVE_DATABASE_URL" not in os.environ and not (qsolve_home() / "state.db").is_file():
        return False
    try:
        from qsolve.workflow.reading import read_yaml

        manifest = read_yaml(root, "manifest.yaml")
        name, version = manifest["name"], manifest["version"]
        if not (isinstance(name, str) and isinstance(version, str)):
            return False
        from qsolve_pipeline.storage.state import connect

        with connect() as db:
            db.get_version(name, version)
    except Exception:  # noqa: BLE001 - not published, or not known here: the flow says which
        return False
    return True


def _submitted(args: argparse.Namespace, report) -> int:
    from qsolve_pipeline.storage.state import qsolve_home

    if isinstance(report, BaseException):  # the flow itself crashed
        print(f"qsolve: the submission flow failed: {type(report).__name__}: {report}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        import json

        print(json.dumps(report.model_dump(mode="json"), indent=2))
        return EXIT_OK if report.accepted else EXIT_FAILED
    print(report.markdown(escape=False))
    if report.published:
        home = qsolve_home().resolve()
        name = report.published.name
        url = os.environ.get("QSOLVE_DATABASE_URL")
        from qsolve_pipeline.storage.objects import shared_store

        store = shared_store()
        where = f"in {store.address('trackrecord/')}" if store is not None else f"under {home}"
        if url:
            from sqlalchemy.engine import make_url

            shown = make_url(url).render_as_string(hide_password=True)
            print(f"Results: the state database is {shown}; the track record is {where}")
        elif store is not None:
            print(f"Results: the state database is under {home}; the track record is {where}")
        else:
            print(f"Results: the state database and the track record are under {home}")
        print(f"  qsolve page {name}")
        print(
            f'  qsolve query "select case_name, target, passed, gap, accuracy, verdict from current '
            f"where workflow = '{name}'\""
        )
        if store is None:
            sql = f"select * from track_record where workflow = '{name}'"
            print(f'  duckdb -readonly {home / "trackrecord.duckdb"} "{sql}"')
        else:
            print("  qsolve views-sql > views.sql   (the views for your own DuckDB, with httpfs)")
    return EXIT_OK if report.accepted else EXIT_FAILED


def cmd_run(args: argparse.Namespace) -> int:
    from qsolve.cli.run_case import run_case_here
    from qsolve.providers.registry import RegistryError
    from qsolve.targets import UnknownTarget, check_device

    root = _folder(args.dir)
    try:
        check_device(args.target)
        return run_case_here(root, args.case, args.target, yes=args.yes, as_json=args.json)
    except (UnknownTarget, LookupError, RegistryError) as e:
        raise UsageError(str(e)) from None


def cmd_history(args: argparse.Namespace) -> int:
    """The history deployment's twin: finish a version's history stage, or run it ``--again``."""
    import json

    from qsolve_pipeline.storage.state import NotFound, connect

    with connect() as db:  # a version that was never published is a usage error, before any flow
        try:
            db.get_version(args.name, args.version)
        except NotFound as e:
            raise UsageError(str(e)) from None
    from qsolve_pipeline.flows.dispatch import begin_server

    server = begin_server()  # a temporary server starts; the flow loads meanwhile
    from qsolve_pipeline.flows.dispatch import load_engine
    from qsolve_pipeline.flows.history import history_flow

    load_engine()
    server.wait()
    state = history_flow(args.name, args.version, again=args.again, return_state=True)
    outcome = state.result(raise_on_failure=False, _sync=True)
    if isinstance(outcome, BaseException):
        print(f"qsolve: the history stage failed: {type(outcome).__name__}: {outcome}", file=sys.stderr)
        return EXIT_FAILED
    if outcome.status == "skipped" and not args.json:  # its archive did not read: one line, nothing run
        print(f"qsolve: the history stage failed: {outcome.message}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(outcome.model_dump(mode="json")))
    else:
        print("\n".join(outcome.lines()))
    return EXIT_FAILED if outcome.status in ("in progress", "skipped") else EXIT_OK


def cmd_maintenance(args: argparse.Namespace) -> int:
    import json

    if args.rebuild:
        return _rebuild_track_record(args)
    _home_writable()  # a read-only home, a damaged database: one line (main's handler), before a flow
    from qsolve_pipeline.flows.dispatch import begin_server

    # a temporary server starts first (its line said once the pass waits for it, none for a home
    # refused meanwhile); the state database is opened and the flow loads while it starts
    server = begin_server(announce=False)
    from qsolve_pipeline.storage.state import connect  # logs a traceback of each task it fails

    with connect() as db:
        db.count_unfiled()
    from qsolve_pipeline.flows.dispatch import load_engine
    from qsolve_pipeline.flows.maintenance import maintenance_flow

    load_engine()

    server.wait()
    state = maintenance_flow(return_state=True)
    report = state.result(raise_on_failure=False, _sync=True)
    if isinstance(report, BaseException):
        from qsolve_pipeline.storage.state._faults import fault_line

        if (line := fault_line(report, "maintenance")) is not None:
            print(f"qsolve: {line}", file=sys.stderr)
            return EXIT_USAGE
        print(f"qsolve: the maintenance pass failed: {type(report).__name__}: {report}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(report.model_dump(mode="json")) if args.json else report.summary())
    return EXIT_OK


def _home_writable() -> None:
    """Raise the OSError of a home (and its track record's folder) qsolve may not write."""
    import os
    import tempfile

    from qsolve.home import qsolve_home

    home = qsolve_home()
    for folder in (home, home / "trackrecord"):
        if folder.is_dir():
            try:
                fd, name = tempfile.mkstemp(prefix=".tmp-probe-", dir=folder)
            except OSError as e:
                raise OSError(e.errno, e.strerror, str(folder)) from None
            os.close(fd)
            os.unlink(name)


def _rebuild_track_record(args: argparse.Namespace) -> int:
    """``qsolve maintenance --rebuild``: the track record written again from the state database, here
    (no flow: an operator's repair, which needs no Prefect)."""
    import json

    from qsolve_pipeline.storage.maintenance import rebuild_track_record
    from qsolve_pipeline.storage.state import connect, qsolve_home

    home = qsolve_home().resolve()
    with connect(home=home) as db:
        runs = rebuild_track_record(db, home)
    said = {"rebuilt": runs}
    print(json.dumps(said) if args.json else f"rebuilt the track record from the state database: {runs} runs")
    return EXIT_OK


#: the modules of the command line's areas, in the order the help lists their commands
AREAS = (
    "trackrecord", "receipts", "providers", "worker", "hardware", "credits", "knowledge", "calibration",
    "evaluation", "web", "server", "replay",
)  # fmt: skip

#: the commands of this module
WORKFLOW_COMMANDS = ("lint", "test", "submit", "run", "history", "maintenance", "check")

#: each area's commands: a command line naming one builds that area's parser alone, so that a command
#: imports no other area's module (``qsolve page`` loads neither the providers' options nor the Prefect
#: server's module); a test holds this table to what each area's ``add_commands`` adds
AREA_OF = {
    "query": "trackrecord", "page": "trackrecord", "views-sql": "trackrecord", "receipts": "trackrecord",
    "trackrecord": "trackrecord", "verify": "receipts", "receipt-key": "receipts", "providers": "providers",
    "worker": "worker",
    "quote": "hardware", "confirm": "hardware", "refuse": "hardware", "credits": "credits",
    "knowledge": "knowledge", "calibrate": "calibration", "evaluate": "evaluation",
    "evaluations": "evaluation", "serve": "web", "accounts": "web", "server": "server",
    "export": "replay", "replay": "replay",
}  # fmt: skip


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or, given the ``command`` a command line names, only
    what it needs (the workflow commands' and, for an area's command, that area's)."""
    if command in AREA_OF:
        areas: tuple[str, ...] = (AREA_OF[command],)
    elif command in WORKFLOW_COMMANDS:
        areas = ()
    else:  # none named, or not a command (a misspelling, --help): every one, for argparse to list
        areas = AREAS
    parser = argparse.ArgumentParser(
        prog="qsolve", description="Publish quantum workflows with an honest track record."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("lint", help="lint a workflow folder (codes: docs/lint-codes.md)")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object: the issues, with their codes")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("test", help="the submission checks, then the eight gates in the sandbox")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--target", default="sim-cpu", help="the run's target (default sim-cpu)")
    p.add_argument("--case", metavar="NAME", help="run only this case")
    p.add_argument("--json", action="store_true", help="print one JSON object (DESIGN.md §5)")
    p.set_defaults(func=cmd_test)

    p = sub.add_parser(
        "submit", help="the submission flow on Prefect: lint, checks, gates, publication, history"
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--no-history", action="store_true", help="publish without running the history stage")
    p.add_argument(
        "--account",
        metavar="A",
        help="the account it publishes for ($QSOLVE_ACCOUNT, else you): a new name becomes its; a later "
        "version only for the name's developers or an admin",
    )
    p.add_argument("--json", action="store_true", help="print the submission report as one JSON object")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser(
        "run",
        help="one case on any target, provider:<name> included, outside validation; on a provider it "
        "can spend money on the provider's account (a job that is not free needs --yes or a yes)",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--case", required=True, metavar="NAME", help="the case to run")
    p.add_argument("--target", required=True, metavar="T", help="sim-cpu, fake:<device>, provider:<name>")
    p.add_argument("--yes", action="store_true", help="confirm the spend of this run's provider jobs")
    p.add_argument("--json", action="store_true", help='print {"case": ..., "receipts": [...]}')
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "history",
        help="finish a published version's history stage (its cases with no recorded run), or --again",
        description="Run the cases of a published version that have no recorded run, as the history "
        "deployment does: after a submission that was interrupted, say. One history stage of a version "
        "runs at a time; another in progress is reported and nothing runs twice.",
    )
    p.add_argument("name", metavar="NAME", help="the workflow's name")
    p.add_argument("--version", metavar="V", help="the published version (default: the latest)")
    p.add_argument("--again", action="store_true", help="a new round of every case: its rows become current")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "maintenance",
        help="one maintenance pass: abandoned runs ended, stale holds released, ended runs filed, compaction",
    )
    p.add_argument("--json", action="store_true", help="print the pass's report as one JSON object")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="instead of a pass: write the whole track record again from the state database",
    )
    p.set_defaults(func=cmd_maintenance)

    import importlib

    for area in areas:
        importlib.import_module(f"qsolve.cli.{area}").add_commands(sub)

    p = sub.add_parser("check", help="the submission checks of every case, as the platform runs them")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object: ok, errors, warnings, cases")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    # what follows ``--`` is a program and its arguments (providers add NAME --process -- CMD ARG...):
    # argparse's nested subcommands do not pass ``--`` through, so it is taken off here
    after = argv[argv.index("--") + 1 :] if "--" in argv else None
    try:
        args = parser.parse_args(argv if after is None else argv[: argv.index("--")])
        if after is not None:
            if not isinstance(getattr(args, "command", None), list):
                parser.error(f"unrecognized arguments: -- {' '.join(after)}")
            args.command = after
    except SystemExit as e:  # argparse exits 2 on misuse, 0 on --help
        return int(e.code or 0)
    try:
        return args.func(args)
    except UsageError as e:
        print(f"qsolve: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:  # Ctrl-C while a provider job was waited on (providers.jobs.Interrupted)
        if getattr(e, "record", None) is None:
            raise
        print(f"qsolve: {e}", file=sys.stderr)
        return e.code  # 130: 128 + SIGINT; the job stays recorded, and the line says how to follow it
    except Exception as e:  # a read-only home, a full disk, a corrupt database: one line, exit 2
        from qsolve_pipeline.storage.state._faults import fault_line

        if getattr(e, "usage", False):  # an error that says what to run instead (CreditsMoved)
            print(f"qsolve: {e}", file=sys.stderr)
            return EXIT_USAGE

        line = fault_line(e, argv[0] if argv else "")
        if line is None:
            raise
        print(f"qsolve: {line}", file=sys.stderr)
        return EXIT_USAGE


#: commands whose process may end without tearing down what it loaded: everything they write is
#: flushed and closed before they return, and no atexit handler of theirs matters (qsolve test: its
#: interpreter's teardown of Qiskit and Aer's objects costs a third of a second)
ENDS_AT_ONCE = {"test", "lint", "check"}

#: the read commands (issue 39, item 4): they load only what they read (a test holds them to no pandas,
#: Prefect or Qiskit), and end as those above, once their exit functions have run: what they wrote is
#: closed before they return, and the teardown of DuckDB's, Arrow's and pydantic's objects costs a
#: tenth of a second of ``qsolve page``
READS = {"page", "query", "views-sql", "verify", "receipts"}


#: commands whose flow run's final state is recorded before they return (issue 39, item 2): they end as
#: the read commands do, once the interpreter's exit steps have run (threads joined, Prefect's logs and
#: events sent, the temporary server stopped), without its teardown of Prefect's, Qiskit's and Aer's
#: objects
FLOWS_END = {"submit", "history", "maintenance"}


#: commands that start helpers of their own (Prefect's temporary server, a provider's process, sandbox
#: folders): run as a command, each gets a janitor, so that even SIGKILL leaves nothing behind
GUARDED = {
    "submit", "history", "maintenance", "run", "evaluate", "evaluations", "calibrate", "quote", "serve",
    "confirm", "worker", "replay",
}  # fmt: skip


def run() -> None:
    """The console script: :func:`main`, then the end of the process."""
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in GUARDED:
        from qsolve.runtime.janitor import guard

        guard()
    code = main(argv)
    if argv[:1] and argv[0] in ENDS_AT_ONCE | READS | FLOWS_END:
        if argv[0] in FLOWS_END:
            import threading

            # what the interpreter's exit does first: threads joined, and the exit calls of threading's
            # own registry run, where Prefect drains its log and event services to the server
            threading._shutdown()
        if argv[0] in READS | FLOWS_END:
            import atexit

            atexit._run_exitfuncs()  # a reading's temporary schema file removed, logging flushed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
