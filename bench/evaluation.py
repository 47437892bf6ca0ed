"""The platform's overhead per evaluation record, beyond the model's own time (issue 14).

Runs an evaluation run of N task results against a local OpenAI-compatible server that answers at
once (a zero-latency model), and prints the wall time per record less the model's time per record
(the six calls' durations, as the record states them, made at once: the longest of them counts): what
qsolve itself spends on a record (reading the result and its figure, the knowledge and prompts, the
state database's claims and heartbeat, parsing, the record). Also the same with the classical judge.

    python bench/evaluation.py [--records N] [--repeat R]        target: under 50 ms a record
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qsolve.evaluation.runs import RunRequest, execute_run, request_run  # noqa: E402
from qsolve_pipeline.storage.calibration import open_store  # noqa: E402
from tests.qsolve.calibration.calibration_runs import made  # noqa: E402
from tests.qsolve.evaluation.model_server import ModelServer, answer  # noqa: E402

ANSWERS = {
    "technical_description": answer('{"plot_type": "scatter"}'),
    "experimental_conclusion": answer("Classification: Expected behavior\nReason: clean"),
    "experimental_significance": answer("Usable."),
    "fit_reliability": answer("Assessment: Reliable\nReason: good"),
    "parameter_extraction": answer('{"t1": 215.0}'),
    "calibration_diagnosis": answer("Status: SUCCESS\nSuggested range: none"),
}


def one(records: int, server: ModelServer | None) -> tuple[float, float]:
    """(overhead per record, model time per record) in seconds, of one run."""
    import yaml

    home = Path(tempfile.mkdtemp(prefix="qsolve-bench-evaluation-"))
    os.environ["QSOLVE_HOME"] = str(home)
    os.environ["QSOLVE_EVALUATION_CONFIG"] = str(home / "evaluation.yaml")
    models = [server.spec().model_dump(mode="json", exclude_none=True, exclude={"kind"})] if server else []
    (home / "evaluation.yaml").write_text(yaml.safe_dump({"version": 1, "models": models}))
    with open_store(home) as store:
        store.record_all([made(f"Q{i:03d}") for i in range(records)])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
        start = time.perf_counter()
        execute_run(store.db, store, run.id, workers=1)
        wall = time.perf_counter() - start
        done = store.db.evaluation_records(run.id)
    model = sum(max((c["duration_seconds"] for c in r.output.get("calls", [])), default=0.0) for r in done)
    return (wall - model) / records, model / records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ModelServer(ANSWERS) as server:
        one(4, server)  # warm: imports, the first connection
        runs = [one(args.records, server) for _ in range(args.repeat)]
    overhead = statistics.median(o for o, _ in runs)
    model = statistics.median(m for _, m in runs)
    print(f"model over HTTP: {overhead * 1000:.1f} ms a record beyond the model's {model * 1000:.1f} ms")
    judge = statistics.median(one(args.records, None)[0] for _ in range(args.repeat))
    print(f"classical judge: {judge * 1000:.1f} ms a record")
    print(f"target: under 50 ms a record: {'met' if overhead < 0.05 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
