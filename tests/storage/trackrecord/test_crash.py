"""Crash injection: a process filing batches in a loop (and compacting now and then) is killed with SIGKILL
at several points. Every batch it reported filed is there exactly once, no run shows twice, no batch shows
in part, and no half-written file is visible to a query."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from qsolve_pipeline.storage.trackrecord import connect, ensure_views

REPO = Path(__file__).resolve().parents[3]
ROWS = 20

FILER = """
import datetime as dt, sys
import pyarrow
from qsolve_pipeline.storage.trackrecord import TrackRecordRow, compact, file_rows

pyarrow.array([0])  # pyarrow imports pandas on its first array: before "ready", so kills land in filing

home, first, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

def run(b, j):
    return TrackRecordRow(
        workflow=f"w{j % 2}", version="1", case_name=f"c{j % 7}", target="sim-cpu" if j % 3 else "fake:fez",
        device="d", source="history", run_id=f"b{b:04d}-{j:02d}",
        recorded_at=T0 + dt.timedelta(seconds=b * 100 + j), status="passed", passed=True, accuracy=0.9,
    )

print("ready", flush=True)
for b in range(first, first + 100000):
    batch = [run(b, j) for j in range(rows)]
    if b > 0:
        batch.append(run(b - 1, 0))  # batches overlap: each files the previous batch's first run again
    file_rows(batch, home)
    print(b, flush=True)
    if b % 7 == 6:
        compact(home)
"""


def test_killed_filing_loses_and_doubles_nothing(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "filer.py"
    script.write_text(FILER)
    rng = random.Random(20261130)
    reported: set[int] = set()
    next_batch = 0

    def killed(delay: float, lines: int = 0) -> None:
        """A filer started, killed ``delay`` seconds after it reported ``lines`` batches filed."""
        nonlocal next_batch
        start = max(0, next_batch - 2)  # file the last two batches again: reported or not
        proc = subprocess.Popen(
            [sys.executable, str(script), str(home), str(start), str(ROWS)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout.readline() == "ready\n"
        early = [proc.stdout.readline() for _ in range(lines)]
        time.sleep(delay + rng.uniform(0, 0.01))
        proc.kill()
        proc.wait()
        filed = [int(line) for line in "".join(early).split() + proc.stdout.read().split()]
        proc.stdout.close()
        reported.update(filed)
        next_batch = max(filed, default=next_batch - 1) + 1

    # A filing takes about 0.1 s (most of it rebuilding trackrecord.duckdb): kills land in every part of it.
    for delay in [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, rng.uniform(0, 0.8), rng.uniform(0, 0.8), 1.0]:
        killed(delay)
    for _ in range(5):  # a busy machine files slowly: rounds that file at least three new batches first
        if len(reported) > 10:
            break
        killed(rng.uniform(0, 0.2), lines=5)
    assert len(reported) > 10

    con = connect(home)  # every file the views glob reads whole, or this fails
    run_ids = [r[0] for r in con.sql("SELECT run_id FROM rows").fetchall()]
    assert len(run_ids) == len(set(run_ids)), "a run shows twice"
    present = set(run_ids)
    for b in reported:
        assert all(f"b{b:04d}-{j:02d}" in present for j in range(ROWS)), f"batch {b} reported, not there"
    batches = {int(r[1:5]) for r in present}
    for b in batches:
        n = sum(1 for j in range(ROWS) if f"b{b:04d}-{j:02d}" in present)
        assert n in (ROWS, ROWS - 1) if b + 1 in batches else n == ROWS, f"batch {b} shows in part ({n})"
    brute = con.sql(
        "SELECT run_id FROM rows QUALIFY row_number() OVER"
        " (PARTITION BY workflow, version, case_name, target ORDER BY recorded_at DESC, run_id DESC) = 1"
    ).fetchall()
    current = con.sql("SELECT run_id FROM current").fetchall()
    assert sorted(current) == sorted(brute)
    con.close()

    for path in (home / "trackrecord").glob("*.parquet"):
        pq.read_table(path)  # no half-written file under a name the views read
    ensure_views(home)
    analyst = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    assert analyst.sql("SELECT count(*) FROM rows").fetchall() == [(len(run_ids),)]
    analyst.close()


TWO_FILERS = """
import sys
from qsolve_pipeline.storage.trackrecord import compact, file_rows
sys.path.insert(0, ".")
from tests.storage.trackrecord.builders import row

home, who = sys.argv[1], sys.argv[2]
for b in range(8):
    file_rows([row(f"{who}-{b}-{j}", case=f"{who}{j}", minute=b) for j in range(3)], home)
    if b % 3 == 2:
        compact(home)
"""


def test_two_processes_filing_at_once_leave_a_database_naming_every_file(tmp_path):
    """Each files and compacts while the other does: every run shows once, none lost. A filing leaves
    trackrecord.duckdb as it is (issue 34: it stays quick); the next reading command rebuilds it over
    exactly the files the state database's log holds, so it names them all."""
    home = tmp_path / "home"
    procs = [
        subprocess.Popen([sys.executable, "-c", TWO_FILERS, str(home), who], cwd=REPO, stderr=subprocess.PIPE)
        for who in ("x", "y")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    with connect(home) as con:  # what qsolve query reads
        assert con.sql("SELECT count(*), count(DISTINCT run_id) FROM rows").fetchall() == [(48, 48)]
    analyst = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    try:
        assert analyst.sql("SELECT count(*) FROM rows").fetchall() == [(2 * 8 * 3,)]
    finally:
        analyst.close()
