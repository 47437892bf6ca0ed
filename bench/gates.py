"""How much of `qsolve test` is the platform's own time.

For each example workflow, runs `qsolve test DIR --json` as a user would (a new process) and prints
the whole command's wall time, the time inside the workflow's own code (its methods, as the sandbox
job measured them, the re-run of the first case included and circuit scoring excluded, plus importing
its module, whose top-level code is the workflow's), and the platform's share: everything else
(start-up and the platform's imports, the sandbox, the targets, scoring, the gates' bookkeeping).

    python bench/gates.py [--repeat N] [WORKFLOW ...]    target: max-cut's platform share at most 20%

With ``--repeat N`` each workflow runs N times and the line shows the run of median share, then the
lowest and highest share seen (a 2-core machine's timings vary by 10-20% from run to run).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(folder: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "test", str(folder), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - start
    report = json.loads(proc.stdout)
    sandbox = report["sandbox"] or {}
    methods = (sandbox.get("methods_s") or 0.0) + (sandbox.get("module_s") or 0.0)
    return {
        "workflow": folder.name,
        "exit": proc.returncode,
        "wall_s": wall,
        "methods_s": methods,
        "scoring_s": sandbox.get("scoring_s") or 0.0,
        "sandbox_s": sandbox.get("seconds") or 0.0,
        "platform_s": wall - methods,
        "share": (wall - methods) / wall,
        "gates": sum(g["passed"] for g in report["gates"]),
        "of": len(report["gates"]),
    }


def main(argv: list[str]) -> None:
    repeat = 1
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    folders = (
        [REPO / "workflows" / n for n in argv]
        if argv
        else sorted(p for p in (REPO / "workflows").iterdir() if (p / "manifest.yaml").is_file())
    )
    print(
        f"{'workflow':28} {'gates':>5} {'wall s':>7} {'workflow s':>10} {'scoring s':>9} {'platform s':>10} "
        f"{'share':>6}" + ("  (lowest-highest share)" if repeat > 1 else "")
    )
    for folder in folders:
        runs = sorted((measure(folder) for _ in range(repeat)), key=lambda m: m["share"])
        m = runs[(len(runs) - 1) // 2]
        spread = f"  ({runs[0]['share']:.1%}-{runs[-1]['share']:.1%})" if repeat > 1 else ""
        print(
            f"{m['workflow']:28} {m['gates']}/{m['of']:<3} {m['wall_s']:7.2f} {m['methods_s']:10.2f} "
            f"{m['scoring_s']:9.2f} {m['platform_s']:10.2f} {m['share']:6.1%}{spread}"
        )
        if repeat > 1:
            platform = [r["platform_s"] for r in runs]
            print(f"{'':28} platform s median {statistics.median(platform):.2f} over {repeat} runs")


if __name__ == "__main__":
    main(sys.argv[1:])
