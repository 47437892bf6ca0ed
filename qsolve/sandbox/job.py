"""The sandbox job's entry point: ``python -m qsolve.sandbox.job`` in the child process.

Reads its job (one JSON line) on standard input and writes events and its report, one JSON object a
line, to the file descriptor in ``QSOLVE_RESULT_FD``; what the workflow prints goes to the job's log.
A ``gates`` job runs the gates; a ``case`` job sends its case's estimate, waits for ``go`` (or
``stop``) on standard input, then runs the one case.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path


def main() -> None:
    gc.disable()  # while the platform imports (~10% faster); on again, frozen, before workflow code runs
    import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)

    from qsolve.gate_run import gate_report, run_gates, run_one
    from qsolve.sandbox import guard
    from qsolve.targets import devices, warm

    job = json.loads(sys.stdin.readline())
    channel = os.fdopen(int(os.environ["QSOLVE_RESULT_FD"]), "w", buffering=1)

    def emit(event: dict) -> None:
        channel.write(json.dumps(event) + "\n")
        channel.flush()

    if job.get("cache"):
        devices.use_cache(Path(job["cache"]) / "devices")
    warm(job["targets"])  # fake devices loaded, their cache written: before the guard
    gc.freeze()  # what the platform loaded is never collected: later collections skip it
    gc.enable()
    sys.dont_write_bytecode = True  # the platform's modules were cached as they loaded; nothing else is
    guard.install(
        write_roots=[job["root"], os.environ["TMPDIR"]], block_network=job["network"] != "namespace"
    )
    if job["mode"] == "case":
        result = run_one(
            Path(job["root"]),
            job["case"],
            job["target"],
            emit,
            proceed=lambda: sys.stdin.readline().strip() == "go",
        )
        if result is not None:
            emit({"event": "report", "result": result.model_dump(mode="json")})
    else:
        inputs = run_gates(Path(job["root"]), job["target"], job.get("case"), emit)
        emit({"event": "report", **gate_report(inputs)})
    channel.close()


if __name__ == "__main__":
    main()
