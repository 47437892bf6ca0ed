"""A home whose max-cut version has a real track record to replay: its cases (at cheaper QAOA params)
run as history runs through the platform's pipeline, one of them twice (an earlier row and a current
one), a noise-model case on ``fake:``, and one hardware case on the reference provider, quoted,
confirmed, run and filed with its sealed receipts; the host's key endorsed by the tests' root."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from qsolve.cli import main
from qsolve.workflow.publication import digest_of, pack
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import SYSTEM_ACCOUNT, Source, connect
from tests.flows.cheap_max_cut import copy_cheap_max_cut
from tests.flows.hardware_setup import HARDWARE, REFERENCE

WORKFLOW, VERSION = "max-cut", "1.0.0"
#: the cases run: two on sim-cpu (one of them twice), the noise-model case on its fake: target
CASES = ("complete-5", "single-edge", "noise-model-ring-6")
TWICE = "single-edge"


@dataclass(frozen=True)
class Built:
    home: Path
    rows: int  # the version's rows
    hardware_run: str
    receipts: list[str]


def build(home: Path, work: Path) -> Built:
    """The home (see the module's docstring); QSOLVE_HOME must name ``home`` already."""
    from qsolve.workflow.folder import load_workflow
    from qsolve_pipeline.storage.maintenance import file_runs
    from qsolve_pipeline.tasks.hardware import request_quotes, run_quote
    from qsolve_pipeline.tasks.runs import run_case
    from tests.qsolve.receipts.roots import endorse_all

    home.mkdir(parents=True, exist_ok=True)
    folder = copy_cheap_max_cut(work / "max-cut", CASES)
    manifest = folder / "manifest.yaml"
    manifest.write_text(
        manifest.read_text().replace("targets: {qpu: [ibm]}", "targets: {qpu: [ibm, provider]}")
    )
    packed = pack(folder)
    BlobStore(home).put(packed)
    assert main(["providers", "add", "ref", "--holder", "dev", "--process", "--", *REFERENCE]) == 0
    wf = load_workflow(folder)
    with connect(home=home) as db:
        version, _ = db.publish_version(WORKFLOW, VERSION, digest_of(packed), [HARDWARE])
        order = list(enumerate(wf.cases.cases)) + [
            (i, c) for i, c in enumerate(wf.cases.cases) if c.name == TWICE
        ]
        for i, case in order:
            outcome = run_case(
                db, folder, version, i, case, Source.HISTORY, SYSTEM_ACCOUNT, wf.manifest.resources
            )
            assert outcome.recorded, outcome
            file_runs(db, [db.get_run(outcome.run_id)], home)
        db.grant("dev", 100)
        batch, (quote,) = request_quotes(db, WORKFLOW, "dev", target="provider:ref", home=home)
        db.confirm_quote(quote.id, "dev")
        hardware = run_quote(db, quote.id, home=home)
        assert hardware.recorded and hardware.receipts, hardware
        db.batch_status(batch.id)
        endorse_all(db)
    return Built(home, len(order) + 1, hardware.run_id, list(hardware.receipts))


def copy(built: Built, home: Path) -> Built:
    shutil.copytree(built.home, home, symlinks=True)
    return Built(home, built.rows, built.hardware_run, built.receipts)


def cases_of(folder: Path) -> list[str]:
    return [c["name"] for c in yaml.safe_load((folder / "benchmarks" / "cases.yaml").read_text())["cases"]]
