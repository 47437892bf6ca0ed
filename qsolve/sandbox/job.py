"""The sandbox job's entry point: ``python -m qsolve.sandbox.job`` in the child process.

Reads its job (JSON) on standard input and writes events and its report, one JSON object a line, to
the file descriptor in ``QSOLVE_RESULT_FD``; what the workflow prints goes to the job's log instead.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)

from qsolve.gate_run import gate_report, run_gates
from qsolve.sandbox import guard


def main() -> None:
    job = json.loads(sys.stdin.read())
    channel = os.fdopen(int(os.environ["QSOLVE_RESULT_FD"]), "w", buffering=1)

    def emit(event: dict) -> None:
        channel.write(json.dumps(event) + "\n")
        channel.flush()

    guard.install(
        write_roots=[job["root"], os.environ["TMPDIR"]], block_network=job["network"] != "namespace"
    )
    inputs = run_gates(Path(job["root"]), job["target"], job.get("case"), emit)
    emit({"event": "report", **gate_report(inputs)})
    channel.close()


if __name__ == "__main__":
    main()
