"""What a command costs in imports before it does anything: ``python -X importtime`` over ``qsolve lint``
and ``qsolve test`` (issue 27: moving the core by role must not make them grow); and what the read
commands cost whole (issue 39, item 4: ``qsolve page``, ``query``, ``views-sql``, ``verify``, ``receipts``
import what they read).

    python bench/imports.py [--repeat 5] [--workflow workflows/max-cut]
    python bench/imports.py --reads --home HOME [--name max-cut] [--repeat 5]

Prints, per command, the modules imported and the import time (the sum of the top-level imports'
cumulative times), the least of the repeats: the figure least disturbed by a busy machine.

``--reads`` runs each read command whole over ``HOME`` (a ``QSOLVE_HOME`` where ``--name`` is published,
as ``qsolve submit workflows/max-cut`` leaves it): its CPU time (user and system, the child's own, from
``getrusage(RUSAGE_CHILDREN)`` around it) and its wall time, each the least of the repeats, the modules
it loaded and which heavy packages among them (pandas, Prefect, Qiskit, SQLAlchemy, ...). ``qsolve
verify`` checks a receipt sealed here by a key made for the bench; ``qsolve receipts`` writes the
receipts of the home's first current run (none when it ran on no device: it still reads the state
database, and exits 2).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")

#: the packages a read command should load only when it truly needs them
HEAVY = (
    "pandas", "prefect", "qiskit", "qiskit_aer", "qiskit_ibm_runtime", "sqlalchemy", "alembic", "pyarrow",
    "numpy", "duckdb", "pydantic", "rich", "httpx", "boto3", "cryptography",
)  # fmt: skip

#: runs ``qsolve ARGV`` as the console script does, then writes the modules it loaded to a file
LISTING = (
    "import sys, atexit\n"
    "out, sys.argv = sys.argv[1], ['qsolve', *sys.argv[2:]]\n"
    "def listed():\n"
    "    with open(out, 'w') as f:\n"
    "        f.write('\\n'.join(sorted(sys.modules)))\n"
    "atexit.register(listed)\n"
    "from qsolve.cli import run\n"
    "run()\n"
)


def measure(argv: list[str]) -> tuple[int, float]:
    """The number of modules a run of ``qsolve ARGV`` imports, and their import time in ms."""
    code = f"import sys; sys.argv = {['qsolve', *argv]!r}; from qsolve.cli import run; run()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    modules, total_us = 0, 0
    for line in done.stderr.splitlines():
        found = LINE.match(line)
        if not found:
            continue
        modules += 1
        if len(found.group(3)) == 1:  # a top-level import: its cumulative time holds its children's
            total_us += int(found.group(2))
    return modules, total_us / 1000


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """One run of ``python -m qsolve.cli ARGV`` (the console script's entry): its CPU seconds, its wall
    seconds and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", *argv], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


def loaded(argv: list[str], env: dict[str, str]) -> list[str]:
    """The modules a run of ``qsolve ARGV`` holds when it ends."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "modules.txt"
        subprocess.run(
            [sys.executable, "-c", LISTING, str(out), *argv], cwd=ROOT, env=env, capture_output=True
        )
        return out.read_text().split("\n") if out.exists() else []


def _first_run(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "query", "select run_id from current order by run_id limit 1",
         "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = json.loads(done.stdout)
    if not rows:
        raise SystemExit("bench/imports.py: the home holds no current run (qsolve submit a workflow first)")
    return rows[0]["run_id"]


def _receipt(folder: Path) -> Path:
    """A job sealed by a key made for the bench (the tests' typical provider result)."""
    sys.path.insert(0, str(ROOT))
    from qsolve.receipts.keys import HostKey
    from qsolve.receipts.seal import seal
    from tests.qsolve.receipts.builders import request, result

    path = folder / "job.json"
    path.write_text(json.dumps(seal(request(), result(), HostKey(bytes(range(32))))))
    return path


def reads(home: Path, name: str, repeat: int) -> None:
    env = {**os.environ, "QSOLVE_HOME": str(home)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        commands = [
            ["page", name],
            ["query", "select count(*) from current"],
            ["views-sql"],
            ["verify", str(_receipt(folder))],
            ["receipts", _first_run(env), "--out", str(folder / "receipts")],
        ]
        for argv in commands:
            runs = [timed(argv, env) for _ in range(repeat)]
            cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
            modules = loaded(argv, env)
            heavy = [m for m in HEAVY if m in modules]
            shown = " ".join(a if " " not in a else repr(a) for a in argv).replace(scratch, "TMP")
            print(
                f"qsolve {shown}: {cpu:.2f} s of CPU, {wall:.2f} s wall (least of {repeat}; exit "
                f"{runs[0][2]}); {len(modules)} modules; heavy: {', '.join(heavy) or 'none'}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workflow", default="workflows/max-cut")
    parser.add_argument("--reads", action="store_true", help="the read commands, whole, over --home")
    parser.add_argument("--home", type=Path, help="a QSOLVE_HOME where --name is published")
    parser.add_argument("--name", default="max-cut", help="the published workflow qsolve page shows")
    args = parser.parse_args()
    if args.reads:
        if args.home is None:
            parser.error("--reads needs --home HOME, a QSOLVE_HOME where --name is published")
        reads(args.home.resolve(), args.name, args.repeat)
        return 0
    for command in (["lint", args.workflow], ["test", args.workflow, "--case", "complete-5"]):
        runs = [measure(command) for _ in range(args.repeat)]
        modules = max(m for m, _ in runs)
        ms = min(t for _, t in runs)
        shown = " ".join(command)
        print(f"qsolve {shown}: {modules} modules, {ms:.0f} ms of imports (least of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
