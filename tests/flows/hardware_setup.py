"""What the hardware tests (tests/flows, tests/web) set up: a copy of max-cut published with hardware
cases, the reference provider as `provider:ref`, and a quote flow run on a thread, waited for at its
pauses."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qsolve.cli import main
from qsolve.workflow.publication import digest_of, pack
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect

REPO = Path(__file__).resolve().parents[2]
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference", "--stdio"]
HARDWARE = {
    "name": "hardware-single-edge",
    "input": {"nodes": 2, "edges": [[0, 1, 1.0]]},
    "params": {"grid": 3, "maxiter": 0, "shots": 200},
    "seed": 1,
    "target": "ibm:ibm_fez",
    "expect": {"max_gap": 0.0},
}
TRIANGLE = HARDWARE | {
    "name": "hardware-triangle",
    "input": {"nodes": 3, "edges": [[0, 1, 1.0], [1, 2, 1.0], [0, 2, 1.0]]},
    "seed": 2,
}


def publish(
    home: Path,
    work: Path,
    *,
    name: str = "hw-max-cut",
    version: str = "1.0.0",
    qpu: str = "[ibm, provider]",
    cases: list[dict[str, Any]] | None = None,
    crash: bool = False,
) -> None:
    """A copy of max-cut as ``name`` ``version``, ``targets.qpu`` as given, published with ``cases`` as its
    hardware cases (HARDWARE alone by default). ``crash``: its method dies once the device gave it counts."""
    folder = work / f"{name}-{version}"
    shutil.copytree(REPO / "workflows" / "max-cut", folder)
    if crash:
        code = folder / "workflow.py"
        marker = '    final = ctx.sample([circuit(x_best)], params["shots"])[0]\n'
        assert marker in code.read_text()
        code.write_text(code.read_text().replace(marker, marker + '    raise RuntimeError("crashed")\n'))
    manifest = folder / "manifest.yaml"
    text = manifest.read_text().replace("name: max-cut", f"name: {name}")
    text = text.replace("version: 1.0.0", f"version: {version}")
    manifest.write_text(text.replace("targets: {qpu: [ibm]}", f"targets: {{qpu: {qpu}}}"))
    packed = pack(folder)
    BlobStore(home).put(packed)
    with connect(home=home) as db:
        db.publish_version(name, version, digest_of(packed), cases if cases is not None else [HARDWARE])


def add_reference(*flags: str, name: str = "ref", holder: str = "dev") -> None:
    """The reference provider as ``provider:NAME``, held by ``holder`` (the account the tests quote as)."""
    assert main(["providers", "add", name, "--holder", holder, "--process", "--", *REFERENCE, *flags]) == 0


class QuoteFlowRun:
    """``quote_flow(*args)`` on a thread: :meth:`paused` waits for its next pause, :meth:`outcomes` for
    its end. Their deadlines only bound a wait for an event (at load 35 on 2 cores the first pause took
    over 90 s: the flow prices its quotes first)."""

    def __init__(self, *args: Any) -> None:
        from qsolve_pipeline.flows.hardware import quote_flow

        self.since = datetime.now(UTC)
        self.result: dict[str, Any] = {}
        self.thread = threading.Thread(
            target=lambda: self.result.update(outcomes=quote_flow(*args)), daemon=True
        )
        self.thread.start()

    def paused(self, after_key: str | None = None, timeout_s: float = 600.0):
        """The flow run once paused for its next input (one whose pause key is not ``after_key``)."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import (
            FlowFilter,
            FlowFilterName,
            FlowRunFilter,
            FlowRunFilterStartTime,
        )
        from prefect.client.schemas.sorting import FlowRunSort

        deadline = time.monotonic() + timeout_s
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline:
                (run, *_) = client.read_flow_runs(
                    flow_filter=FlowFilter(name=FlowFilterName(any_=["quote"])),
                    flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=self.since)),
                    sort=FlowRunSort.START_TIME_DESC,
                    limit=1,
                ) or [None]
                state = run.state if run is not None else None
                if state is not None and state.is_paused() and state.state_details.pause_key != after_key:
                    return run
                time.sleep(0.3)
        raise AssertionError("the quote flow run never paused for its input")

    def shown(self, run) -> str:
        """What the paused run's form shows."""
        from prefect.input.run_input import keyset_from_paused_state, read_flow_run_input

        return read_flow_run_input(keyset_from_paused_state(run.state)["description"], run.id, _sync=True)

    def outcomes(self, timeout_s: float = 600.0) -> list:
        self.thread.join(timeout_s)
        return self.result["outcomes"]
