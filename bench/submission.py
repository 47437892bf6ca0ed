"""What the Prefect flow adds: `qsolve submit` against `qsolve test` on the same workflow, with the
Prefect server `qsolve server start` keeps (issue 23's goal: the flow adds at most 3 s to `qsolve
test`'s time), and `qsolve evaluate` on that server against the evaluation run's own time.

Each command runs as a user would run it: a new process, a fresh QSOLVE_HOME (so the submission
publishes), a fresh PREFECT_HOME, `PREFECT_API_URL` naming the kept server. Rounds alternate the
commands, so that a busy machine's minutes weigh on both alike; the medians are printed, and every
round's times. The flow's cost is submit --no-history's time less test's: importing Prefect and the
flows, the flow and its four task runs on the server, publication (real work, a fraction of a second),
the process's exit.

    python bench/submission.py [DIR] [--rounds R] [--ephemeral] [--maintenance] [--history] [--evaluate]

``--ephemeral`` adds one submit on Prefect's temporary server (no kept server: its start-up, which the
command hides behind lint, the checks and the gates as far as it can: issue 39), its CPU time too, with
an empty qsolve cache (a first contact: the server builds Prefect's database), then one more on another
fresh PREFECT_HOME, whose server starts from the copy of that database the first kept,
``--maintenance`` one `qsolve maintenance` on a temporary server with nothing to file,
``--history`` one full submit (with the history stage, which re-runs every case: real work),
``--evaluate`` `qsolve evaluate` of a calibrated chip with the classical judge, on the kept server:
its wall time against the run's own (the summary's ``wall_seconds``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QSOLVE = [sys.executable, "-m", "qsolve.cli"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    LAST_CPU[0] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return took, proc.stdout


#: the CPU seconds (user and system) of the last command timed and the processes it waited for: on a
#: busy machine a command's wall time follows the others' load, its CPU time much less
LAST_CPU = [0.0]


def environment(tmp: str, name: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "QSOLVE_DATABASE_URL")}
    return env | {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_HOME": f"{tmp}/prefect-home",
        "QSOLVE_HOME": f"{tmp}/{name}",
        **more,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default="workflows/max-cut")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ephemeral", action="store_true")
    parser.add_argument("--maintenance", action="store_true")
    parser.add_argument("--history", action="store_true")
    parser.add_argument("--evaluate", action="store_true")
    args = parser.parse_args()
    folder = args.folder
    with tempfile.TemporaryDirectory() as tmp:
        server_env = environment(tmp, "server")
        started = time.perf_counter()
        timed([*QSOLVE, "server", "start"], server_env)
        ready = time.perf_counter() - started
        try:
            _, status = timed([*QSOLVE, "server", "status"], server_env)
            url = status.split(" runs on ", 1)[1].split()[0]
            tests, submits, tests_cpu, submits_cpu = [], [], [], []
            for r in range(args.rounds):
                tests.append(timed([*QSOLVE, "test", folder], environment(tmp, f"test-{r}"))[0])
                tests_cpu.append(LAST_CPU[0])
                env = environment(tmp, f"submit-{r}", PREFECT_API_URL=url)
                submits.append(timed([*QSOLVE, "submit", folder, "--no-history"], env)[0])
                submits_cpu.append(LAST_CPU[0])
            whole = None
            if args.history:
                env = environment(tmp, "whole", PREFECT_API_URL=url)
                whole = timed([*QSOLVE, "submit", folder], env)[0]
            evaluated = _evaluate(tmp, url) if args.evaluate else None
        finally:
            timed([*QSOLVE, "server", "stop"], server_env)
        eph = eph_cpu = kept = kept_cpu = maint = maint_cpu = None
        cache = {"QSOLVE_CACHE": f"{tmp}/cache"}  # empty at first: a first contact builds Prefect's database
        if args.ephemeral:
            env = environment(tmp, "ephemeral", PREFECT_HOME=f"{tmp}/prefect-home-first", **cache)
            eph = timed([*QSOLVE, "submit", folder, "--no-history"], env)[0]
            eph_cpu = LAST_CPU[0]
            # a later fresh PREFECT_HOME: its server starts from the copy the first one kept
            env = environment(tmp, "ephemeral-kept", PREFECT_HOME=f"{tmp}/prefect-home-kept", **cache)
            kept = timed([*QSOLVE, "submit", folder, "--no-history"], env)[0]
            kept_cpu = LAST_CPU[0]
        if args.maintenance:  # a PREFECT_HOME of its own
            env = environment(tmp, "maintenance", PREFECT_HOME=f"{tmp}/prefect-home-maintenance", **cache)
            maint = timed([*QSOLVE, "maintenance"], env)[0]
            maint_cpu = LAST_CPU[0]
    gates, srv = statistics.median(tests), statistics.median(submits)
    print(f"workflow: {folder}; {args.rounds} rounds, medians (each round: test, submit)")
    for t, s, tc, sc in zip(tests, submits, tests_cpu, submits_cpu, strict=True):
        cpu = f"CPU {tc:6.2f} s  {sc:6.2f} s (adds {sc - tc:5.2f} s)"
        print(f"  round: {t:6.2f} s  {s:6.2f} s  (adds {s - t:5.2f} s); {cpu}")
    cpu_t, cpu_s = statistics.median(tests_cpu), statistics.median(submits_cpu)
    print(
        f"CPU time of test, of submit (and their children)   {cpu_t:7.2f} s  {cpu_s:7.2f} s  adds "
        f"{cpu_s - cpu_t:.2f} s"
    )
    print(f"qsolve test (the gates)                            {gates:7.2f} s")
    print(f"qsolve submit --no-history, qsolve server running  {srv:7.2f} s  {srv / gates:.2f}x")
    print(f"the flow adds, with the server:                    {srv - gates:7.2f} s  (goal: at most 3 s)")
    print(f"qsolve server start until it answers              {ready:7.2f} s  (once, not in the times above)")
    if whole is not None:
        print(f"qsolve submit with its history stage, server       {whole:7.2f} s  {whole / gates:.2f}x")
    if eph is not None:
        print(f"qsolve submit --no-history, temporary server       {eph:7.2f} s  {eph / gates:.2f}x")
        print(f"the flow adds, temporary server (its start-up):    {eph - gates:7.2f} s")
        print(f"  its CPU time (and its children's)                {eph_cpu:7.2f} s")
        print(f"the same, Prefect's database from the kept copy    {kept:7.2f} s  {kept / gates:.2f}x")
        print(f"  its CPU time (and its children's)                {kept_cpu:7.2f} s")
    if maint is not None:
        print(f"qsolve maintenance, temporary server, nothing to file {maint:7.2f} s; CPU {maint_cpu:.2f} s")
    if evaluated is not None:
        wall, own, records = evaluated
        print(
            f"qsolve evaluate ({records} records, classical judge), server  {wall:7.2f} s; the run's own "
            f"{own:.2f} s; the command adds {wall - own:.2f} s"
        )


def _evaluate(tmp: str, url: str) -> tuple[float, float, int]:
    """`qsolve evaluate` of one task on a calibrated fake chip, the classical judge, on the kept server."""
    env = environment(tmp, "evaluate", PREFECT_API_URL=url)
    day = "2026-12-01"
    calibrate = ["calibrate", "--device", "fake:fez", "--tasks", "CheckT1", "--qubits", "0-3", "--day", day]
    timed([*QSOLVE, *calibrate], env)
    wall, out = timed([*QSOLVE, "evaluate", "--day", day, "--model", "classical-judge", "--json"], env)
    done = json.loads(out)
    return wall, float(done["wall_seconds"] or 0), int(done["records"])


if __name__ == "__main__":
    main()
