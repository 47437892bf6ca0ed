"""What a confined process provider adds to a provider job (issue 35): the reference provider as a local
process, unconfined (as before) and confined (:mod:`qsolve.providers.confined`), one job each way in turn:
start, ``describe``, ``estimate``, ``submit``, ``status``, ``result``, close. ``qsolve run`` on a process
provider starts its program once, so the difference of the medians is what confinement adds per run.

    python bench/provider_confinement.py [--rounds N]        target: at most 0.5 s more per qsolve run
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

from qsolve.providers.client import ProviderClient  # noqa: E402
from qsolve.providers.confined import Confinement  # noqa: E402
from qsolve.providers.over_process import ProcessTransport  # noqa: E402

REFERENCE = [sys.executable, "-m", "qsolve.providers.reference", "--stdio"]
PROBE = {
    "format": "wai.native/1",
    "basis": "rzsxxcz",
    "bits": 1,
    "gates": [{"gate": "x", "qubits": [0]}],
    "measure": [{"qubit": 0, "bit": 0}],
}


def one_job(confined: bool, home: Path) -> float:
    began = time.perf_counter()
    transport = ProcessTransport(REFERENCE, confinement=Confinement() if confined else None, home=home)
    with ProviderClient("ref", transport, timeout=120) as client:
        client.describe()
        client.estimate(PROBE, 100)
        job = client.submit(PROBE, 100, seed=1)
        assert client.status(job).status == "done"
        assert client.result(job, 100).counts == {"1": 100}
        if confined:
            assert transport.confined is not None and transport.confined["missing"] == []
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="qsolve-bench-home-"))
    os.environ["QSOLVE_HOME"] = str(home)
    times: dict[bool, list[float]] = {False: [], True: []}
    one_job(False, home)  # the page cache warmed for both
    for _ in range(args.rounds):
        for confined in (False, True):
            times[confined].append(one_job(confined, home))
    plain, confined = statistics.median(times[False]), statistics.median(times[True])
    print(f"unconfined: median {plain:.3f} s  ({', '.join(f'{t:.2f}' for t in times[False])})")
    print(f"confined:   median {confined:.3f} s  ({', '.join(f'{t:.2f}' for t in times[True])})")
    print(f"confinement adds {confined - plain:+.3f} s a job (target: at most +0.5 s a qsolve run)")
    home.rmdir()


if __name__ == "__main__":
    main()
