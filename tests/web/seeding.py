"""A home the workflow pages are tested on, built once per test session and copied for each test.

``max-cut`` is published twice (0.9.0, then 1.0.0) with two hardware cases and ``targets.qpu`` of ibm and
provider; the reference provider is added as ``provider:ref`` (free) and as ``provider:lab`` (its cost
unknown). Its track record holds hand-built rows
(several runs of a case, so earlier results and charts; a failing case whose bound is shown; a
noise-model case with fidelities; an ibm: row of 0.9.0 with no receipt) and one real hardware run of
1.0.0 on the reference provider, quoted, confirmed, run and filed with its sealed receipts, as
``tests/flows/test_hardware.py`` does it. Building it takes about five seconds; copying it, milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from qsolve.cli import main
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordRow, file_rows
from tests.flows.hardware_setup import HARDWARE, REFERENCE, TRIANGLE, publish
from tests.storage.trackrecord import builders

WORKFLOW = "max-cut"
CASES = [HARDWARE, TRIANGLE]  # the hardware cases of every version


@dataclass(frozen=True)
class Seeded:
    home: Path
    workflow: str
    hardware_run: str  # the real hardware run on provider:ref, with its receipts
    receipts: list[str]  # its receipts' blob digests
    developer: str  # the credit account that paid for it (give it a login to use it on the pages)


@contextlib.contextmanager
def home_set(home: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("QSOLVE_HOME", "QSOLVE_DATABASE_URL", "PYTHON_KEYRING_BACKEND")}
    os.environ["QSOLVE_HOME"] = str(home)
    os.environ.pop("QSOLVE_DATABASE_URL", None)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def row(run_id: str, version: str, case: str, target: str, when: datetime, **fields) -> TrackRecordRow:
    """A row of max-cut recorded ``when``; its gap and quantum answer follow its accuracy."""
    accuracy = fields.get("accuracy", 1.0)
    derived = dict(
        recorded_at=when,
        message=None,
        quantum=-9.0 if accuracy == 1.0 else -9.0 * (accuracy or 0),
        baseline=-9.0,
        gap=0.0 if accuracy == 1.0 else 1 - (accuracy or 0),
        abs_error=0.0,
    )
    return builders.row(
        run_id, version=version, case=case, target=target, **({"workflow": WORKFLOW} | derived | fields)
    )


def rows(now: datetime) -> list[TrackRecordRow]:
    def ago(hours: float) -> datetime:
        return now - timedelta(hours=hours)

    old, new = "0.9.0", "1.0.0"
    return [
        row("a0000000000000000000000000000001", old, "ring-6-with-chord", "sim-cpu", ago(72), accuracy=0.9),
        row(
            "a0000000000000000000000000000002",
            old,
            "hardware-triangle",
            "ibm:ibm_fez",
            ago(70),
            accuracy=0.8,
            fidelity=0.71,
            postselection=0.93,
        ),
        row("b0000000000000000000000000000001", new, "ring-6-with-chord", "sim-cpu", ago(30), accuracy=0.96),
        row("b0000000000000000000000000000002", new, "ring-6-with-chord", "sim-cpu", ago(20), accuracy=0.98),
        row("b0000000000000000000000000000003", new, "ring-6-with-chord", "sim-cpu", ago(10)),
        row("b0000000000000000000000000000004", new, "complete-5", "sim-cpu", ago(10)),
        row(
            "b0000000000000000000000000000005",
            new,
            "complete-8-weighted",
            "sim-cpu",
            ago(10),
            passed=False,
            accuracy=0.9,
            quantum=-9.0,
            baseline=-10.0,
            gap=0.1,
        ),
        row(
            "b0000000000000000000000000000006",
            new,
            "noise-model-ring-6",
            "fake:fez@1.6",
            ago(25),
            fidelity=0.965,
            coverage=1.0,
            accuracy=1.0,
        ),
        row(
            "b0000000000000000000000000000007",
            new,
            "noise-model-ring-6",
            "fake:fez@1.6",
            ago(9),
            fidelity=0.981,
            coverage=1.0,
            accuracy=1.0,
        ),
    ]


def build(home: Path, work: Path) -> Seeded:
    """The seeded home (see the module's docstring)."""
    from qsolve_pipeline.tasks.hardware import request_quotes, run_quote
    from tests.qsolve.receipts.roots import endorse_all

    home.mkdir(parents=True, exist_ok=True)
    with home_set(home):
        assert main(["providers", "add", "ref", "--holder", "dev", "--process", "--", *REFERENCE]) == 0
        assert (
            main(["providers", "add", "lab", "--holder", "dev", "--process", "--", *REFERENCE, "--unpriced"])
            == 0
        )
        publish(home, work, name=WORKFLOW, version="0.9.0", cases=CASES)
        publish(home, work, name=WORKFLOW, version="1.0.0", cases=CASES)
        file_rows(rows(datetime.now(UTC)), home)
        with connect(home=home) as db:
            db.grant("dev", 100)
            batch, (first, second) = request_quotes(db, WORKFLOW, "dev", target="provider:ref", home=home)
            db.confirm_quote(first.id, "dev")
            outcome = run_quote(db, first.id, home=home)
            assert outcome.recorded and outcome.receipts, outcome
            db.refuse_quote(second.id, "dev")
            db.batch_status(batch.id)  # the batch ends: a test may ask for a new one
            endorse_all(db)  # the operator's root endorses the host's key (tests/qsolve/receipts/roots.py)
    return Seeded(home, WORKFLOW, first.run_id, list(outcome.receipts), "dev")


def copy(seeded: Seeded, home: Path) -> Seeded:
    """The seeded home copied to ``home`` (an empty folder, or none yet)."""
    if home.exists():
        home.rmdir()
    shutil.copytree(seeded.home, home, symlinks=True)
    return Seeded(home, seeded.workflow, seeded.hardware_run, seeded.receipts, seeded.developer)
