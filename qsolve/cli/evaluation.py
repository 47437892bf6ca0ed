"""``qsolve evaluate`` and ``qsolve evaluations ...`` (issue 14, item 12).

    qsolve evaluate (--task T --chip C | --day D | --ids ID,ID | --result ID) [--model M]
                    [--with-examples] [--max-figures N] [--draft ID] [--question TEXT] [--json]
    qsolve evaluations list [--json]
    qsolve evaluations show RUN [--json]
    qsolve evaluations retry RUN [--json] | cancel RUN [--json]
    qsolve evaluations compare A B [--json]
    qsolve evaluations score RUN [--json]
    qsolve evaluations verdict RECORD --reviewer NAME --verdict agree|disagree|unsure [--area A] [--comment C]
                               [--json]

``evaluate`` and ``retry`` run the ``evaluation`` flow on Prefect (no server needed, as for ``submit``).
``show RUN --json`` prints the run's summary with ``records``, each with its ``state`` (how the record
ended), ``status`` and ``success`` (its diagnosis's; null when unread or absent) and ``answers`` (each
as returned, with its state and reading). Output piped into a reader that stops early (``| head``) ends
quietly. Exit codes: 0 done, 1 a run that did not complete, 2 misuse (an undeclared model, an unknown
run, an ``EVALUATION_*`` setting that is not a number of its kind: refused before a run is stored; a
command that only reads runs says so on one line and reads them with the default).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from qsolve.evaluation.verdicts import AREAS, VERDICTS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "evaluate", help="judge calibration figures with the evaluation model (docs/calibration.md)"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--task", metavar="T", help="with --chip: the latest evaluable result per qubit")
    which.add_argument("--day", metavar="YYYY-MM-DD", help="every evaluable result of the day")
    which.add_argument("--ids", metavar="ID,ID", help="exact task results, taken as they are")
    which.add_argument("--result", metavar="ID", help="one task result (a single run)")
    p.add_argument("--chip", metavar="C", help="the chip, e.g. fake:fez")
    p.add_argument("--model", metavar="M", help="a declared model (config/evaluation.yaml)")
    p.add_argument("--with-examples", action="store_true", help="show the task's labeled examples")
    p.add_argument(
        "--max-figures",
        metavar="N",
        type=int,
        default=1,
        help="show the last N figures of each result, the last judged (1 to 4; default 1)",
    )
    p.add_argument("--draft", metavar="ID", help="read this knowledge draft in place of the published task")
    p.add_argument(
        "--question",
        metavar="TEXT",
        help="the optional question: one more point for the significance question",
    )
    p.add_argument("--json", action="store_true", help="print the run's summary as one JSON object")
    p.set_defaults(func=_quiet_pipe(cmd_evaluate))

    e = subparsers.add_parser(
        "evaluations", help="evaluation runs: list, show, retry, cancel, compare, score"
    )
    sub = e.add_subparsers(dest="evaluations_command", required=True, metavar="COMMAND")
    x = sub.add_parser("list", help="every run: state, model, counts, wall time and model time")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_list))
    x = sub.add_parser("show", help="a run and its records: the six answers as returned and as parsed")
    x.add_argument("run", metavar="RUN")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_show))
    x = sub.add_parser("retry", help="run again the failed, interrupted and cancelled records only")
    x.add_argument("run", metavar="RUN")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_retry))
    x = sub.add_parser("cancel", help="cancel a run: its unfinished records are marked cancelled")
    x.add_argument("run", metavar="RUN")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_cancel))
    x = sub.add_parser("compare", help="two runs side by side: settings, totals, one row per entity")
    x.add_argument("a", metavar="A")
    x.add_argument("b", metavar="B")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_compare))
    x = sub.add_parser("score", help="a run against the known answers and the reviewers' verdicts")
    x.add_argument("run", metavar="RUN")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_score))
    x = sub.add_parser("verdict", help="add a reviewer's verdict to a record (its history is kept)")
    x.add_argument("record", metavar="RECORD")
    x.add_argument("--reviewer", required=True)
    x.add_argument("--verdict", required=True, choices=VERDICTS)
    x.add_argument("--area", choices=AREAS)
    x.add_argument("--comment")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=_quiet_pipe(cmd_verdict))


def _quiet_pipe(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` whose output may go into a reader that stops early (``| head``): a closed pipe ends
    it quietly, exit 0, instead of a BrokenPipeError traceback (stdout is pointed at /dev/null so the
    interpreter's last flush does not raise again)."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            code = command(args)
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            finally:
                os.close(devnull)
            return EXIT_OK

    return run


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"qsolve: {message}", file=sys.stderr)
    return code


def _store():
    from qsolve_pipeline.storage.calibration import open_store

    return open_store()


def _flow(**parameters: Any) -> dict[str, Any] | BaseException:
    from qsolve_pipeline.flows.dispatch import run_evaluation

    return run_evaluation(**parameters)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from qsolve.evaluation.models import ConfigError, ModelUnavailable, UnknownModel
    from qsolve.evaluation.runs import RunRefused, RunRequest, check_request, request_run

    if args.task and not args.chip:
        return _fail("--task needs --chip (the latest evaluable result per qubit of that chip)")
    if not 1 <= args.max_figures <= 4:
        return _fail(f"--max-figures {args.max_figures}: 1 to 4 figures of a result are shown")
    ids = [args.result] if args.result else (args.ids.split(",") if args.ids else None)
    try:
        check_request(args.model)  # a bad setting, an undeclared model or a missing key: nothing stored
        request = RunRequest(
            task=args.task, chip=args.chip, day=args.day, task_ids=ids, model=args.model,
            with_examples=args.with_examples, knowledge_draft_id=args.draft, question=args.question,
            max_figures=args.max_figures,
        )  # fmt: skip
        with _store() as store:
            run = request_run(store.db, store, request)
    # a draft of another task is a ValueError too
    except (UnknownModel, ConfigError, ModelUnavailable, RunRefused) as e:
        return _fail(str(e))
    except ValidationError as e:  # the request's own rule, one line
        return _fail("; ".join(i["msg"].removeprefix("Value error, ") for i in e.errors()))
    except ValueError as e:
        return _fail(str(e))
    print(f"evaluation run {run.id}: {len(run.skipped)} skipped", file=sys.stderr)
    done = _flow(run_id=run.id)
    return _finish(done, args.json)


def _finish(done: dict[str, Any] | BaseException, as_json: bool) -> int:
    if isinstance(done, BaseException):
        return _fail(f"the evaluation flow failed: {type(done).__name__}: {done}", EXIT_FAILED)
    if as_json:
        print(json.dumps(done, indent=2, default=str))
    else:
        print(_line(done))
        for line in skipped_lines(done["skipped"]):
            print(line)
    return EXIT_OK if done["status"] == "completed" else EXIT_FAILED


def skipped_lines(skipped: list[dict[str, Any]], most: int = 8) -> list[str]:
    """The skipped entities, one line each with why; the chip's entities with no result at all on one
    line, the first ``most`` named and how many."""
    from qsolve.evaluation.runs import NO_RESULT

    lines = [
        f"  skipped {s.get('qid') or s.get('task_result_id')}: {s['why']}"
        for s in skipped
        if s.get("why") != NO_RESULT
    ]
    none = [s.get("qid") or "" for s in skipped if s.get("why") == NO_RESULT]
    if none:
        more = f", … ({len(none)} in all)" if len(none) > most else ""
        lines.append(f"  skipped, {NO_RESULT}: {', '.join(none[:most])}{more}")
    return lines


def _reading() -> None:
    """A command that reads runs says, on one line, which EVALUATION_* value it read past."""
    from qsolve.evaluation.runs import settings_problems

    for problem in settings_problems():
        print(f"qsolve: {problem}; runs are read with the default", file=sys.stderr)


def _line(s: dict[str, Any]) -> str:
    from qsolve.evaluation.runs import summary_line

    return summary_line(s)


def cmd_list(args: argparse.Namespace) -> int:
    from qsolve.evaluation.runs import stale_after, summary

    _reading()
    with _store() as store:
        every = store.db.list_evaluation_runs(stale_after=stale_after(reading=True))
        runs = [summary(store.db, r.id) for r in every]
    if args.json:
        print(json.dumps(runs, indent=2, default=str))
    else:
        for s in runs:
            print(_line(s))
        if not runs:
            print("no evaluation runs yet: qsolve evaluate --task T --chip C")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from qsolve.evaluation.evaluate import loaded_output
    from qsolve.evaluation.runs import summary
    from qsolve_pipeline.storage.state import NotFound

    _reading()
    with _store() as store:
        try:
            s = summary(store.db, args.run)
        except NotFound as e:
            return _fail(str(e))
        records = store.db.evaluation_records(args.run)
        shown = []
        for r in records:
            verdicts = store.db.verdict_history(r.id)
            out = loaded_output(r.output) or {}  # success, complete, missing_keys derived, never read
            diagnosis = out.get("diagnosis") or {}
            shown.append(
                {
                    "id": r.id,
                    "record": r.id,
                    "state": r.status.value,
                    "status": diagnosis.get("status"),
                    "success": diagnosis.get("success") if r.output else None,
                    "answers": out.get("answers") or {},
                    "task_result_id": r.task_result_id,
                    "task": r.task,
                    "chip": r.chip,
                    "qid": r.qid,
                    "error": r.error,
                    "input": r.input,
                    "output": loaded_output(r.output),
                    "evaluator": r.evaluator,
                    "verdicts": [v.__dict__ | {"created_at": v.created_at.isoformat()} for v in verdicts],
                }
            )
    if args.json:
        print(json.dumps({**s, "records": shown}, indent=2, default=str))
        return EXIT_OK
    print(_line(s))
    for r in shown:
        out = r["output"] or {}
        d = out.get("diagnosis") or {}
        peak = out.get("peak") or {}
        flag = " (90% of its window)" if out.get("context_warning") else ""
        tokens = f", largest call {peak.get('total_tokens')} tokens{flag}" if peak else ""
        print(
            f"  {r['task']} {r['qid']} [{r['state']}] {r['record']}: status {d.get('status')}, outcome "
            f"{d.get('outcome')}, fit {d.get('fit_assessment')}, success {d.get('success')}"
            f"{', complete' if out.get('complete') else ', missing ' + ','.join(out.get('missing_keys', []))}"
            f"{tokens}" + (f"  error: {r['error']}" if r["error"] else "")
        )
        for key, answer in (out.get("answers") or {}).items():
            text = (answer.get("answer") or "").strip().replace("\n", " ")
            print(f"      {key}: {text[:100]}{'…' if len(text) > 100 else ''}")
    return EXIT_OK


def cmd_retry(args: argparse.Namespace) -> int:
    from qsolve.evaluation.runs import RunRefused, check_settings
    from qsolve_pipeline.storage.state import NotFound

    try:
        check_settings()  # before a record is reset: a bad value never leaves the run half retried
    except RunRefused as e:
        return _fail(str(e))
    with _store() as store:
        try:
            run, reset = store.db.retry_evaluation_run(args.run)
        except NotFound as e:
            return _fail(str(e))
    if reset == 0:
        if args.json:
            print(json.dumps({"id": run.id, "status": run.status.value, "reset": 0}))
        return _fail(f"evaluation run {run.id} is {run.status.value}: nothing to retry", EXIT_FAILED)
    print(f"evaluation run {run.id}: {reset} records to run again", file=sys.stderr)
    return _finish(_flow(run_id=run.id), args.json)


def cmd_cancel(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NotFound

    with _store() as store:
        try:
            run = store.db.cancel_evaluation_run(args.run)
        except NotFound as e:
            return _fail(str(e))
    if args.json:
        print(json.dumps({"id": run.id, "status": run.status.value}))
        return EXIT_OK
    print(f"evaluation run {run.id}: {run.status.value}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from qsolve.evaluation.compare import compare
    from qsolve_pipeline.storage.state import NotFound

    _reading()
    with _store() as store:
        try:
            c = compare(store.db, args.a, args.b)
        except NotFound as e:
            return _fail(str(e))
    if args.json:
        print(json.dumps(c, indent=2, default=str))
        return EXIT_OK
    for s in c["settings"]:
        print(f"{'*' if s['differs'] else ' '} {s['setting']:<18} {s['a']!s:<28} {s['b']!s}")
    ta, tb = c["totals"]["a"], c["totals"]["b"]
    print(f"  {'completed':<18} {ta['completed']}/{ta['records']:<26} {tb['completed']}/{tb['records']}")
    print(f"  {'success':<18} {ta['success']:<28} {tb['success']}")
    ra, rb = (sum(r[side] is not None for r in c["rows"]) for side in ("a", "b"))
    print(f"  {'rows':<18} {ra:<28} {rb}")
    peak = {k: (v or {}).get("total_tokens") for k, v in c["tokens"].items()}
    print(f"  {'largest call':<18} {peak['a']!s:<28} {peak['b']!s}")
    for row in c["rows"]:
        a, b = row["a"] or {}, row["b"] or {}
        if row["a"] is None or row["b"] is None:
            kind = f"only in {'b' if row['a'] is None else 'a'}"
        elif row["decision_differences"]:
            kind = "decision: " + ", ".join(row["decision_differences"])
        elif row["content_differences"]:
            kind = "content: " + ", ".join(row["content_differences"])
        else:
            kind = "same"
        if row["same_result"]:
            same = f"same result {a['task_result_id'][:8]}"
        elif row.get("results_differ"):
            same = f"results differ: {a['task_result_id'][:8]} vs {b['task_result_id'][:8]}"
        else:
            same = f"result {(a or b)['task_result_id'][:8]}"
        print(f"  {row['task']} {row['qid']} ({same}): {_side(a)} vs {_side(b)}  [{kind}]")
    return EXIT_OK


def _side(side: dict[str, Any]) -> str:
    """One side of a compared row: its diagnosis's status, success and fit quality, or how its record
    ended; and each reviewer's verdict (``ann agree``), when there is one."""
    ended = side.get("record_status")
    verdicts = ", ".join(f"{who} {v['verdict']}" for who, v in (side.get("verdicts") or {}).items())
    said = f" [{verdicts}]" if verdicts else ""
    if ended is not None and ended != "completed":
        return f"record {ended}{said}"
    return f"{side.get('status')}/{side.get('success')}/fit {side.get('fit_assessment')}{said}"


def cmd_score(args: argparse.Namespace) -> int:
    from qsolve.evaluation.compare import score
    from qsolve_pipeline.storage.state import NotFound

    with _store() as store:
        try:
            s = score(store.db, store, args.run)
        except NotFound as e:
            return _fail(str(e))
    if args.json:
        print(json.dumps(s, indent=2))
        return EXIT_OK
    per_set = s["per_set"]  # the known-answer sets apart (docs/calibration.md, "Two sets")
    sets = [("standard set", per_set["standard"]), ("held-apart set", per_set["held_apart"])]
    for name, t in [*sorted(s["per_task"].items()), *sets, ("total", s["total"])]:
        fit = (
            f", fit {t['fit_assessment']}/{t['fit_known']} ({t.get('fit_unread', 0)} unread)"
            if t["fit_known"]
            else ""
        )
        print(
            f"{name:<22} judged {t['judged']}: status {t['status']}/{t['known']} "
            f"({t.get('status_unread', 0)} unread; QCalEval's reading "
            f"{t.get('qcaleval_status', 0)}/{t['known']}), "
            f"outcome {t['outcome']}/{t['known']} ({t.get('outcome_unread', 0)} unread){fit}; "
            f"reviewers agree {t['agreed']}, disagree {t['disagreed']}"
        )
    return EXIT_OK


def cmd_verdict(args: argparse.Namespace) -> int:
    from qsolve_pipeline.storage.state import NotFound

    with _store() as store:
        try:
            v = store.db.add_verdict(
                args.record, args.reviewer, args.verdict, area=args.area, comment=args.comment
            )
        except NotFound as e:
            return _fail(str(e))
    if args.json:
        print(json.dumps(v.__dict__ | {"created_at": v.created_at.isoformat()}))
        return EXIT_OK
    print(f"record {v.record_id}: {v.reviewer} {v.verdict}" + (f" ({v.area})" if v.area else ""))
    return EXIT_OK
