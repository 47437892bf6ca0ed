"""The track record at scale (issue 4, item 6): filing, compaction, the ``current`` view, a page, a batch.

For each size, in a fresh temporary QSOLVE_HOME: generates that many rows across many workflows,
versions, cases and targets (2,000 workflows at 1e7, 4 versions each published in turn, 20 cases, sim-,
fake: and ibm: targets), files them in batches of 250,000 rows, compacts, and measures

- rows filed per second (Arrow batches through ``file_table``) and bytes per row on disk;
- the compaction that merges the batches (what a maintenance pass runs);
- ``SELECT * FROM current`` materialised as an Arrow table, and ``count(*)`` over it;
- a workflow page (``page(name)``: one workflow's rows read, every view built over them);
- filing a batch of 20 runs (``TrackRecordRow.from_result`` then ``file_rows``), median of 20, and the
  same with each file recorded in a SQLite state database first, as the platform files;
- the digests a maintenance pass in a new process takes of every data file (``trackrecord.known``);
- ``qsolve trackrecord verify`` in a new process: every entry of the log and every live file checked;
- for scale, ``count(*)`` over ``rows`` (every run once, copies ranked), ``current`` before compacting,
  and a maintenance pass's compaction (the heads rewritten with 21 new batch files).

    python bench/trackrecord.py [--rows 1e6,1e7] [--storage folder,s3] [--keep] [--only filing]

``--only filing`` measures only the filings of 20 runs (no rows generated, nothing compacted): quick
enough to alternate before and after a change several times in one sitting.

``--storage s3`` files into object storage instead (QSOLVE_STORAGE_URL; issue 26): a bucket of a moto S3
server started on loopback for the run (moto[server], the test extras), each figure beside the folder's.

Targets on this machine: ``current`` over 1e7 rows under 2 s; filing 20 runs under 200 ms.
"""

from __future__ import annotations

import argparse
import binascii
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qsolve.judging.results import CaseResult, MethodOutcome  # noqa: E402
from qsolve_pipeline.storage.trackrecord import (  # noqa: E402
    SCHEMA,
    Layout,
    TrackRecordRow,
    compact,
    connect,
    file_rows,
    file_table,
    page,
)

CHUNK = 250_000
CASES, VERSIONS = 20, 4
TARGETS = np.array(["sim-cpu", "fake:fez@1.6", "ibm:ibm_fez", "ibm:ibm_torino"])
DEVICES = np.array(["aer_simulator", "fake_fez", "ibm_fez", "ibm_torino"])
TARGET_SHARE = [0.6, 0.25, 0.1, 0.05]
T0_US = 1_767_225_600_000_000  # 2026-01-01
SPAN_US = 3.0e13  # about a year
CURRENT_LIMIT_S, BATCH_LIMIT_S = 2.0, 0.2


def _numbered(prefix: str, start: int, n: int, width: int) -> pa.Array:
    digits = pc.utf8_lpad(pa.array(np.arange(start, start + n)).cast(pa.string()), width, "0")
    return pc.binary_join_element_wise(pa.scalar(prefix), digits, "")


def _hex_digests(rng: np.random.Generator, n: int) -> pa.Array:
    text = binascii.hexlify(rng.bytes(32 * n))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(64), n, [None, pa.py_buffer(text)])
    return fixed.cast(pa.binary()).cast(pa.string())


def _methods(quantum: pa.Array, baseline: pa.Array, rng: np.random.Generator) -> pa.Array:
    """Three methods a row, as a case runs them: the quantum one, the reference and a greedy heuristic."""
    n = len(quantum)
    greedy = pa.array(baseline.to_numpy() + rng.random(n))
    objective = np.stack([quantum.to_numpy(), baseline.to_numpy(), greedy.to_numpy()], axis=1).ravel()
    names = pa.array(["qaoa", "reference", "greedy"]).take(pa.array(np.tile([0, 1, 2], n)))
    kinds = pa.array(["quantum", "classical", "classical"]).take(pa.array(np.tile([0, 1, 2], n)))
    items = pa.StructArray.from_arrays(
        [names, kinds, pa.array(objective), pa.array(np.ones(3 * n, dtype=bool)), pa.nulls(3 * n, "string")],
        names=["name", "kind", "objective", "available", "reason"],
    )
    return pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3, dtype=np.int32)), items)


def synthetic(start: int, n: int, total: int, rng: np.random.Generator) -> pa.Table:
    """Rows ``start`` to ``start + n`` of ``total``, in time order; versions are published in turn."""
    workflows = max(10, total // 5000)
    frac = np.arange(start, start + n) / total
    w = rng.integers(0, workflows, n)
    v = np.minimum(VERSIONS - 1, (frac * VERSIONS + rng.random(n) * 0.2).astype(int))
    t = rng.choice(len(TARGETS), n, p=TARGET_SHARE)
    passed = rng.random(n) < 0.85
    accuracy = 1 - rng.random(n) * 0.1
    hardware = t >= 2
    columns = {
        "workflow": _numbered("wf-", 0, workflows, 5).take(pa.array(w)),
        "version": pc.binary_join_element_wise(
            pa.scalar("1."), pa.array(v).cast(pa.string()), pa.scalar(".0"), ""
        ),
        "case_name": _numbered("case-", 0, CASES, 3).take(pa.array(rng.integers(0, CASES, n))),
        "target": pa.array(TARGETS[t]),
        "device": pa.array(DEVICES[t]),
        "source": pa.array(np.where(hardware, "hardware", "history")),
        "run_id": _numbered("run-", start, n, 12),
        "recorded_at": pa.array(
            (T0_US + frac * SPAN_US + rng.integers(0, 1_000_000, n)).astype("int64"),
            pa.timestamp("us", "UTC"),
        ),
        "status": pa.array(np.where(passed, "passed", "failed")),
        "passed": pa.array(passed),
        "message": pa.array(np.where(passed, None, "fidelity 0.91 < 0.97"), pa.string()),
        "quantum": pa.array(-rng.random(n) * 10),
        "baseline": pa.array(-rng.random(n) * 10),
        "gap": pa.array(rng.random(n) * 0.05),
        "abs_error": pa.array(rng.random(n) * 0.1),
        "accuracy": pa.array(accuracy),
        "accuracy_pm": pa.nulls(n, pa.float64()),
        "verdict": pa.array(
            np.where(accuracy > 0.95, "Matches the best classical answer", "Below the best classical answer")
        ),
        "fidelity": pa.array(np.where(t == 0, np.nan, 0.9 + rng.random(n) * 0.1)),
        "coverage": pa.array(np.ones(n)),
        "postselection": pa.nulls(n, pa.float64()),
        "max_two_qubit_gates": pa.array(rng.integers(4, 60, n)),
        "circuits": pa.array(rng.integers(1, 30, n)),
        "shots": pa.array(rng.integers(1, 30, n) * 1000),
        "run_seconds": pa.array(rng.random(n) * 30),
        "credits": pa.array(np.round(rng.random(n) * 20, 3)),
        "seed": pa.array(rng.integers(0, 5, n)),
        "params": pa.array(
            np.array(['{"layers":1,"shots":4000}', '{"layers":2,"shots":4000}', '{"shots":20000}'])[
                rng.integers(0, 3, n)
            ]
        ),
        "result_hash": _hex_digests(rng, n),
        "receipt_digest": pa.array([""]).take(pa.array(np.zeros(n, dtype=np.int64))),
    }
    columns["methods"] = _methods(columns["quantum"], columns["baseline"], rng)
    columns["measured"] = pa.array(hardware)
    expect = (
        '{"max_abs_error":null,"max_gap":0.0,"max_two_qubit_gates":null,"min_fidelity":0.97,'
        '"min_postselection":null}'
    )
    columns["expect"] = pa.array([expect]).take(pa.array(np.zeros(n, dtype=np.int64)))
    columns["reason"] = columns["message"]
    no_warnings = pa.array(np.zeros(n + 1, dtype=np.int32))
    columns["warnings"] = pa.ListArray.from_arrays(no_warnings, pa.array([], pa.string()))
    table = pa.table(columns)
    fidelity = table.column("fidelity")
    table = table.set_column(
        table.schema.get_field_index("fidelity"), "fidelity", pc.if_else(pc.is_nan(fidelity), None, fidelity)
    )
    return table.cast(SCHEMA)


def _timed(fn: Callable[[], object], repeat: int = 3) -> float:
    """The median wall time of ``repeat`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _batch(i: int) -> list[TrackRecordRow]:
    rows = []
    for j in range(20):
        result = CaseResult(
            name=f"case-{j:03d}",
            target="sim-cpu",
            seed=1,
            params={"shots": 4000, "layers": 1},
            passed=True,
            message=None,
            quantum=-9.0,
            baseline=-9.0,
            gap=0.0,
            abs_error=0.0,
            accuracy=1.0,
            verdict="Matches the best classical answer",
            circuits=2,
            shots=8000,
            methods=[MethodOutcome(name="qaoa", kind="quantum", objective=-9.0, seconds=1.0)],
        ).with_hash()
        rows.append(
            TrackRecordRow.from_result(
                result,
                workflow="wf-00001",
                version="1.3.0",
                source="history",
                run_id=f"bench-{i:04d}-{j:02d}",
                device="aer_simulator",
                credits=0.4,
            )
        )
    return rows


def measure(total: int, home: Path, only: str | None = None) -> dict[str, float]:
    if only == "filing":
        return _filing(home)
    rng = np.random.default_rng(total)
    figures: dict[str, float] = {}
    filing = 0.0
    for start in range(0, total, CHUNK):
        table = synthetic(start, min(CHUNK, total - start), total, rng)
        began = time.perf_counter()
        file_table(table, home)
        filing += time.perf_counter() - began
    figures["rows filed per second"] = total / filing
    layout = Layout(home)

    def current_arrow() -> None:
        con = connect(home)
        con.sql("SELECT * FROM current").to_arrow_table()
        con.close()

    def count(view: str) -> Callable[[], None]:
        def run() -> None:
            con = connect(home)
            con.sql(f"SELECT count(*) FROM {view}").fetchall()
            con.close()

        return run

    figures["current, before compacting: count(*) s"] = _timed(count("current"), repeat=1)
    began = time.perf_counter()
    compact(home)
    figures["compaction s"] = time.perf_counter() - began
    if layout.store is not None:
        stored = sum(e.size for e in layout.store.children("trackrecord"))
    else:
        stored = sum(p.stat().st_size for p in layout.files())
    figures["bytes per row"] = stored / total
    figures["current: SELECT * as Arrow s"] = _timed(current_arrow)
    figures["current: count(*) s"] = _timed(count("current"))
    figures["workflow page s"] = _timed(lambda: page("wf-00007", home=home))
    figures["rows: count(*) s"] = _timed(count("rows"), repeat=1)
    figures.update(_filing(home))
    figures["a pass's digests, new process s"] = _digesting(layout)
    figures["trackrecord verify s"] = _verifying(home)
    figures["current after 21 more batch files: SELECT * s"] = _timed(current_arrow)
    began = time.perf_counter()
    compact(home)
    figures["compaction of those 21 batch files s"] = time.perf_counter() - began
    return figures


def _filing(home: Path) -> dict[str, float]:
    """Filing batches of 20 runs: without a state database given (the home's opened at each filing),
    then as the platform files (``_recorded_filing``)."""
    batches = [_batch(i) for i in range(21)]
    file_rows(batches[0], home)
    times = []
    for rows in batches[1:]:
        began = time.perf_counter()
        file_rows(rows, home)
        times.append(time.perf_counter() - began)
    return {
        "filing 20 runs s": statistics.median(times),
        "filing 20 runs, worst s": max(times),
        "filing 20 runs, recorded in state.db s": _recorded_filing(home),
    }


def _recorded_filing(home: Path) -> float:
    """Filing as the maintenance pass and the history stage file: each batch file recorded in the state
    database (by name and BLAKE3 of its bytes) before it takes its name; median of 20."""
    from qsolve_pipeline.storage.state import connect as connect_state

    times = []
    with connect_state(f"sqlite:///{home / 'bench-state.db'}", home=home) as db:
        for i in range(21):
            rows = _batch(100 + i)
            began = time.perf_counter()
            file_rows(rows, home, db.record_trackrecord_file)
            times.append(time.perf_counter() - began)
    return statistics.median(times[1:])


def _verifying(home: Path) -> float:
    """``qsolve trackrecord verify`` as a new process would run it: every entry's signature and chain,
    every live file's digest and run ids (no digest kept from before)."""
    from qsolve_pipeline.storage.state import connect as connect_state
    from qsolve_pipeline.storage.trackrecord import writing
    from qsolve_pipeline.storage.trackrecord.verify import file_reader, verify

    writing._digests.clear()
    began = time.perf_counter()
    with connect_state(home=home) as db:
        documents = db.trackrecord_log_documents()
        live = {f.name: f.digest for f in db.trackrecord_live_files()}
        keys = {db.signing_key(home).public_hex: None}
    found = verify(documents, file_reader(Layout(home)), keys, live=live)
    took = time.perf_counter() - began
    if not found.ok:
        raise SystemExit(f"verify failed: {found.problems[:3]}")
    return took


def _digesting(layout: Layout) -> float:
    """What a maintenance pass in a new process pays to check every data file against the state database:
    BLAKE3 of each file's bytes (kept per process after)."""
    from qsolve_pipeline.storage.trackrecord import writing

    writing._digests.clear()
    began = time.perf_counter()
    if layout.store is not None:
        for e in layout.store.children("trackrecord"):
            writing.digest_bytes(layout.store.get(e.key))
    else:
        for p in layout.files():
            writing.digest_file(p)
    return time.perf_counter() - began


@contextlib.contextmanager
def _storage(kind: str, home: Path) -> Iterator[None]:
    """The folder as it is; or a bucket of a moto S3 server on loopback, QSOLVE_STORAGE_URL pointed at it."""
    if kind == "folder":
        yield
        return
    if kind != "s3":
        raise SystemExit(f"--storage {kind}: folder or s3")
    from tests.s3server import serving

    for server in serving(home / "moto.log"):
        environment = server.environment(server.new_bucket())
        before = {k: os.environ.get(k) for k in environment}
        os.environ.update(environment)
        try:
            yield
        finally:
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e6,1e7", help="sizes, comma-separated (default 1e6,1e7)")
    parser.add_argument("--storage", default="folder", help="folder, s3 or both: folder,s3 (default folder)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    parser.add_argument(
        "--only", choices=["filing"], help="filing: only the filings of 20 runs (no rows generated)"
    )
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.rows.split(",")]
    kinds = args.storage.split(",")
    results = {}
    for kind in kinds:
        for total in sizes:
            home = Path(tempfile.mkdtemp(prefix=f"qsolve-bench-trackrecord-{total}-"))
            try:
                print(f"{total:,} rows in {home if kind == 'folder' else 'a bucket'} ...", flush=True)
                with _storage(kind, home):
                    results[kind, total] = measure(total, home, args.only)
            finally:
                if not args.keep:
                    shutil.rmtree(home, ignore_errors=True)
    names = list(next(iter(results.values())))
    print()
    print(f"{'':48}" + "".join(f"{f'{k} {n:,}':>17}" for k, n in results))
    for name in names:
        figures = (f"{r[name]:>17,.{4 if r[name] < 0.1 else 3}f}" for r in results.values())
        print(f"{name:48}" + "".join(figures))
    print()
    largest = max(sizes)
    batch = max(r["filing 20 runs s"] for r in results.values())
    if args.only is None:
        current = max(results[k, largest]["current: SELECT * as Arrow s"] for k in kinds)
        print(
            f"target: current over {largest:,} rows under {CURRENT_LIMIT_S} s: {current:.3f} s "
            f"({current / CURRENT_LIMIT_S:.0%} of the limit)"
        )
    print(
        f"target: filing 20 runs under {BATCH_LIMIT_S * 1000:.0f} ms: {batch * 1000:.1f} ms "
        f"({batch / BATCH_LIMIT_S:.0%} of the limit)"
    )


if __name__ == "__main__":
    main()
