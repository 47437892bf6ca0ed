"""What a command costs in imports before it does anything: ``python -X importtime`` over ``qsolve lint``
and ``qsolve test`` (issue 27: moving the core by role must not make them grow).

    python bench/imports.py [--repeat 5] [--workflow workflows/max-cut]

Prints, per command, the modules imported and the import time (the sum of the top-level imports'
cumulative times), the least of the repeats: the figure least disturbed by a busy machine.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workflow", default="workflows/max-cut")
    args = parser.parse_args()
    for command in (["lint", args.workflow], ["test", args.workflow, "--case", "complete-5"]):
        runs = [measure(command) for _ in range(args.repeat)]
        modules = max(m for m, _ in runs)
        ms = min(t for _, t in runs)
        shown = " ".join(command)
        print(f"qsolve {shown}: {modules} modules, {ms:.0f} ms of imports (least of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
