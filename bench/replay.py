"""`qsolve replay` of max-cut's bundle against `qsolve test` on the same cases (issue 40, "Performance":
at most 1.5 times `qsolve test` plus 1 s per hundred receipts).

Builds a home as tests/replay/building.py does (max-cut's cases at cheaper params run as history runs,
one twice, the noise-model case on fake:, a hardware case on the reference provider with its receipts),
exports the version, then times, each a new process as a user runs it, `qsolve replay BUNDLE` in a fresh
home and `qsolve test FOLDER` on the folder those cases came from; prints each median and the ratio of
replay's to its limit.

    python bench/replay.py [--repeat N]            N runs of each (default 3); the limit holds at <= 1.0
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[2:4])} exited {proc.returncode}: {proc.stdout[-800:]}{proc.stderr[-800:]}"
        )
    return seconds


def main(argv: list[str]) -> None:
    repeat = int(argv[1]) if argv[:1] == ["--repeat"] else 3
    from tests.qsolve.receipts.roots import ROOT
    from tests.web.seeding import home_set

    with tempfile.TemporaryDirectory(prefix="qsolve-bench-replay-") as tmp:
        root = Path(tmp)
        os.environ["QSOLVE_RECEIPT_ROOT"] = ROOT.public_hex
        with home_set(root / "home"):
            from qsolve.cli import main as qsolve
            from tests.replay.building import WORKFLOW, build

            built = build(root / "home", root / "work")
            assert qsolve(["export", WORKFLOW, "--out", str(root / "bundle.zip")]) == 0
        base = {k: v for k, v in os.environ.items() if not k.startswith("QSOLVE_")}
        base["PYTHONPATH"] = str(REPO)
        replays, tests = [], []
        for i in range(repeat):
            env = base | {"QSOLVE_HOME": str(root / f"reader-{i}")}
            replays.append(
                timed([sys.executable, "-m", "qsolve.cli", "replay", str(root / "bundle.zip")], env)
            )
            env = base | {"QSOLVE_HOME": str(root / f"tester-{i}")}
            tests.append(
                timed([sys.executable, "-m", "qsolve.cli", "test", str(root / "work" / "max-cut")], env)
            )
    replay_s, test_s = statistics.median(replays), statistics.median(tests)
    receipts = len(built.receipts)
    limit = 1.5 * test_s + receipts / 100
    print(f"rows {built.rows}, receipts {receipts}, {repeat} runs each")
    print(f"qsolve replay: median {replay_s:.1f} s  (runs: {', '.join(f'{s:.1f}' for s in replays)})")
    print(f"qsolve test:   median {test_s:.1f} s  (runs: {', '.join(f'{s:.1f}' for s in tests)})")
    print(
        f"replay / test {replay_s / test_s:.2f}; replay / limit (1.5 x test + {receipts / 100:g} s) "
        f"{replay_s / limit:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
