"""``qsolve calibrate`` (issue 14, item 1): calibration task results with known answers.

    qsolve calibrate [--device fake:fez[@S]] [--tasks CheckT1,CheckRabi,...] [--qubits 0-7]
                     [--faults | --held-apart N [--held-apart-seed S]] [--day YYYY-MM-DD] [--seed N]
                     [--json]
    qsolve calibrate --import DIR [--json]
    qsolve calibrate --write-examples DIR [--check]

The first form runs each task on each qubit of the fake chip, records every result (the state
database; figures as blobs) and prints one line per result (task, qubit, status, true status, its key
fitted value) and a summary. ``--faults`` adds, for each task with faults, one injected fault per
qubit in rotation (the qubits at positions 1, 2, ... of the list get the task's first, second, ...
fault; every (k+1)-th stays healthy) after its healthy result. ``--held-apart N`` records instead the
held-apart known-answer set (qsolve.calibration.held_apart): N cases of each fault kind per task,
their strengths drawn from wide, continuous ranges across the criteria's thresholds, with a fixed seed
(``--held-apart-seed`` draws another set, never tuned on). ``--import``
records the task results of a folder of JSON and figures (qsolve.calibration.importing), all or
none. ``--write-examples`` regenerates the knowledge examples' figures and labels from the runs their
frontmatter names; with ``--check`` it writes nothing and lists the stale ones.

Exit codes: 0 done; 1 a healthy run's task failed (a fit that did not converge), or with ``--check``
an example is stale; 2 misuse or input that does not read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: the tasks, as qsolve.calibration.experiments.TASKS has them (a test keeps the two equal); written
#: out so that building the parser does not import Qiskit
TASK_NAMES = ("CheckT1", "CheckRamsey", "CheckRabi", "CheckT2Echo", "ReadoutClassification")


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="run calibration tasks on a fake chip's qubits (with known faults), or import task results",
        description="Run calibration experiments as circuits on qubits of a fake device with its noise "
        "(qiskit-aer), fit them, draw their figures and record the task results with their known answers.",
    )
    p.add_argument("--device", default="fake:fez", metavar="fake:DEVICE[@S]", help="the chip (fake:fez)")
    p.add_argument("--tasks", metavar="T,T", help=f"the tasks (default all: {','.join(TASK_NAMES)})")
    p.add_argument("--qubits", default="0-7", metavar="0-7", help="qubits: ranges and numbers, 0-3,7 (0-7)")
    p.add_argument("--faults", action="store_true", help="also inject known faults (true status recorded)")
    p.add_argument(
        "--held-apart",
        type=int,
        metavar="N",
        help="instead: the held-apart known-answer set, N cases per fault kind and task, strengths drawn "
        "from wide ranges (qsolve/calibration/held_apart.py)",
    )
    p.add_argument(
        "--held-apart-seed",
        type=int,
        metavar="S",
        help="with --held-apart: the seed its strengths are drawn with (default held_apart.SEED, 20251)",
    )
    p.add_argument("--day", metavar="YYYY-MM-DD", help="the results' day (default today)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="the simulations' seed (0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--import", dest="import_dir", metavar="DIR", help="import task results from a folder")
    p.add_argument(
        "--write-examples", metavar="DIR", help="regenerate the figures and labels of DIR/<Task>/examples/"
    )
    p.add_argument("--check", action="store_true", help="with --write-examples: change nothing, list stale")
    p.set_defaults(func=cmd_calibrate)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"qsolve calibrate: {message}", file=sys.stderr)
    return code


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.write_examples:
        return _write_examples(Path(args.write_examples), check=args.check)
    if args.import_dir:
        return _import(Path(args.import_dir), as_json=args.json)
    return _calibrate(args)


def _calibrate(args: argparse.Namespace) -> int:
    from qsolve.calibration.calibrate import calibrate, parse_qubits, parse_tasks, today
    from qsolve.calibration.experiments import UnknownChip, parse_chip
    from qsolve.calibration.task_result import check_day

    started = time.perf_counter()
    try:
        tasks = parse_tasks(args.tasks)
        qubits = parse_qubits(args.qubits)
        day = check_day(args.day) if args.day else today()
        parse_chip(args.device)
    except (ValueError, UnknownChip) as e:
        return _fail(str(e))
    from qsolve.calibration.calibrate import use_device_cache
    from qsolve.home import qsolve_home
    from qsolve_pipeline.storage.calibration import open_store

    use_device_cache(qsolve_home())
    store = open_store()
    recorded = []

    def keep(done) -> None:
        result = store.record(done.result, done.figures)
        recorded.append(result)
        if not args.json:
            print(result.line(), flush=True)

    try:
        if args.held_apart:
            from qsolve.calibration.calibrate import run_task
            from qsolve.calibration.held_apart import SEED, cases

            draw = SEED if args.held_apart_seed is None else args.held_apart_seed
            for case in cases(qubits, args.held_apart, seed=draw):
                if case.task in tasks:
                    keep(run_task(args.device, case.task, case.qubit, case=case, day=day, seed=args.seed))
        else:
            calibrate(args.device, tasks, qubits, faults=args.faults, day=day, seed=args.seed, each=keep)
    except UnknownChip as e:
        return _fail(str(e))
    finally:
        store.close()
    seconds = time.perf_counter() - started
    summary = _summary(recorded, seconds)
    if args.json:
        print(json.dumps({"chip": args.device, "day": day, "results": _rows(recorded), "summary": summary}))
    else:
        print(_summary_line(summary, args.device, day))
    unexpected = [r for r in recorded if r.status == "failed" and r.true_status == "SUCCESS"]
    return EXIT_FAILED if unexpected else EXIT_OK


def _import(folder: Path, *, as_json: bool) -> int:
    from qsolve.calibration.importing import ImportInvalid, import_folder
    from qsolve_pipeline.storage.calibration import open_store

    started = time.perf_counter()
    store = open_store()
    try:
        recorded = import_folder(folder, store)
    except ImportInvalid as e:
        for issue in e.issues:
            print(f"qsolve calibrate: {issue}", file=sys.stderr)
        return _fail(f"{folder}: nothing imported ({len(e.issues)} problem(s))")
    finally:
        store.close()
    summary = _summary(recorded, time.perf_counter() - started)
    if as_json:
        print(json.dumps({"imported": str(folder), "results": _rows(recorded), "summary": summary}))
    else:
        for result in recorded:
            print(result.line())
        print(f"{len(recorded)} task result(s) imported from {folder}")
    return EXIT_OK


def _write_examples(root: Path, *, check: bool) -> int:
    from qsolve.calibration.calibrate import write_examples

    if not root.is_dir():
        return _fail(f"{root}: not a folder")
    changed = write_examples(root, check=check)
    for name in changed:
        print(("stale: " if check else "written: ") + name)
    if not changed:
        print("every example's figure and labels are up to date")
    return EXIT_FAILED if check and changed else EXIT_OK


def _rows(results) -> list[dict[str, Any]]:
    return [
        {
            "id": r.id,
            "task": r.task,
            "qid": r.qid,
            "status": r.status,
            "true_status": r.true_status,
            "fault": r.fault,
            "message": r.message,
            "outputs": {name: out.model_dump() for name, out in r.outputs.items()},
            "figures": [f.sha256 for f in r.figures],
        }
        for r in results
    ]


def _summary(results, seconds: float) -> dict[str, Any]:
    return {
        "results": len(results),
        "completed": sum(r.status == "completed" for r in results),
        "failed": sum(r.status == "failed" for r in results),
        "healthy": sum(r.true_status == "SUCCESS" for r in results),
        "faults": sum(r.fault is not None for r in results),
        "seconds": round(seconds, 2),
    }


def _summary_line(s: dict[str, Any], chip: str, day: str) -> str:
    return (
        f"{s['results']} task result(s) recorded for {chip} on {day}: {s['completed']} completed, "
        f"{s['failed']} failed; known answers: {s['healthy']} SUCCESS, {s['faults']} injected fault(s); "
        f"{s['seconds']:.1f} s"
    )
