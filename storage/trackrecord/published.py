"""What the workflow page reads beside the track record, for ``qsolve page`` and the web pages alike
(benchmarks-and-gates.md, "What the workflow page shows"; issue 11):

    published        the workflow's latest published version in the state database, and that version's
                     workflow as published (its manifest and cases: what qualifies the page's numbers)
    broken_bounds    run id -> the bound each failing row of the published version broke, from its
                     case's ``expect``
    checked_receipts run id -> what each hardware row's receipts say, read and checked now: each the
                     row's run's (as its request seals it, and as the state database recorded its
                     job), its seal held to the host keys the operator's root endorsed (as ``qsolve
                     verify --registered``; none where no root is configured on this machine, or no
                     state database), its counts those recorded (receipts_check.py)
    measured_on_hardware  a card's count of results on hardware: rows its receipts show measured
    by_receipts      the page's device rows sectioned by the class their receipts seal: on hardware
                     (measured), on simulated devices, or not verified; never by the row's own word
    published_page   the page of a workflow with all of these filled in, as both surfaces show it

Each takes the home it reads (default ``QSOLVE_HOME``, else ``./.qsolve``); ``published`` also takes a
state database already open, for a caller that holds one.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qsolve_pipeline.storage.state import StateDB

    from .receipts_check import PlatformRecord, RowReceipts
    from .workflow_page import WorkflowPage


@dataclass(frozen=True)
class Published:
    """A workflow's latest published version, as the state database says (None: none published), that
    version's workflow as published (None when there is none or it does not load), and the host keys the
    operator's root endorsed as a trust list (None without a database; empty where no root is
    configured here), to hold receipts to."""

    version: str | None
    workflow: Any
    trust: dict[str, Any] | None = None

    @property
    def metric_note(self) -> str | None:
        """The manifest's ``metric.note``, where the published workflow loads."""
        return self.workflow.manifest.metric.note if self.workflow is not None else None


def published(name: str, home: Path | str | None = None, *, state: StateDB | None = None) -> Published:
    """The workflow's latest published version and its workflow. Read from ``state`` when given, else
    from the state database of ``home``, where there is one: a home with no state database (and no
    ``QSOLVE_DATABASE_URL``) is not given one by reading it."""
    from qsolve.home import qsolve_home
    from qsolve_pipeline.storage.state import NotFound, connect
    from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE

    where = qsolve_home(home)
    if state is None:
        if not os.environ.get(DATABASE_URL_VARIABLE) and not (where / "state.db").exists():
            return Published(None, None)
        with connect(home=where) as opened:
            return published(name, where, state=opened)
    trust, _ = state.page_trust_list()
    try:
        version = state.get_version(name)
    except NotFound:
        return Published(None, None, trust)
    from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES

    limit = state.blob_limit(version.digest, ARCHIVE_BYTES)
    return Published(version.version, published_workflow(version.digest, where, limit), trust)


def published_workflow(digest: str, home: Path | str | None = None, limit: int | None = None) -> Any:
    """The workflow published as blob ``digest`` of ``home``, loaded; None when it does not load or is
    larger than ``limit`` (the page shows without it rather than not at all)."""
    from qsolve.home import qsolve_home
    from qsolve.workflow.folder import load_workflow
    from qsolve.workflow.publication import unpack
    from qsolve_pipeline.storage.blobs import BlobStore

    try:
        with tempfile.TemporaryDirectory(prefix="qsolve-page-") as tmp:
            return load_workflow(
                unpack(BlobStore(qsolve_home(home)).get(digest, limit=limit), Path(tmp) / "workflow")
            )
    except Exception:  # noqa: BLE001 - the page shows without it rather than not at all
        return None


def broken_bounds(p: WorkflowPage, workflow: Any) -> dict[str, str]:
    """Run id -> the bound each failing row of the published version broke, from its case's expect
    (none without the published ``workflow``; none for a row whose message says why it failed)."""
    from qsolve.judging.deciding import broken_bound
    from qsolve.validation.checks import DEFAULT_TARGET

    if workflow is None:
        return {}
    expects = {(c.name, c.target or DEFAULT_TARGET): c.expect for c in workflow.cases.cases}
    out = {}
    for r in [*p.track_record, *p.noise_model_estimate]:
        expect = expects.get((r.case_name, r.target))
        if r.passed or r.message or expect is None or r.quantum is None or r.baseline is None:
            continue
        if r.version == p.current_version and (bound := broken_bound(expect, r.quantum, r.baseline)):
            out[r.run_id] = bound
    return out


DEVICE_SECTIONS = ("on_hardware", "on_simulators", "unverified_devices")
_SECTION_OF = {"measured": "on_hardware", "simulated": "on_simulators", None: "unverified_devices"}


def device_rows(p: WorkflowPage) -> list:
    """The page's rows on device targets: its hardware sections' and their earlier results."""
    latest = [*p.on_hardware, *p.on_simulators, *p.unverified_devices]
    return latest + [r for r in p.earlier_results if r.section in DEVICE_SECTIONS]


def checked_receipts(
    p: WorkflowPage,
    home: Path | str | None = None,
    trust: dict[str, Any] | None = None,
    record: PlatformRecord | None = None,
) -> dict[str, RowReceipts]:
    """Run id -> what each hardware row's receipts say (the page's and its earlier results'), read
    from ``home``'s blobs and checked now, held to ``trust`` (the endorsed keys) where given, and to
    ``record``, what the state database recorded of their jobs and runs."""
    from qsolve.home import qsolve_home

    from .receipts_check import check_row

    where = qsolve_home(home)
    out: dict[str, RowReceipts] = {}
    for r in device_rows(p):
        c = check_row(r, where, trust, record)
        if r.run_id not in out or (out[r.run_id].ok and not c.ok):
            out[r.run_id] = c  # a run in two rows (a copy planted beside it) is shown as the worse of them
    return out


def recorded_receipts(
    rows: list, home: Path | str | None = None, state: StateDB | None = None
) -> PlatformRecord:
    """What the state database (``state``, else ``home``'s where it has one) recorded of ``rows``'
    receipts' jobs and of their runs; nothing without a database or a receipt."""
    from qsolve.home import qsolve_home
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE

    from .receipts_check import PlatformRecord, platform_record

    if not any(r.receipt_digest for r in rows):
        return PlatformRecord()
    if state is not None:
        return platform_record(state, rows)
    where = qsolve_home(home)
    if not os.environ.get(DATABASE_URL_VARIABLE) and not (where / "state.db").exists():
        return PlatformRecord()
    with connect(home=where) as opened:
        return platform_record(opened, rows)


def measured_on_hardware(
    p: WorkflowPage, home: Path | str | None = None, state: StateDB | None = None, trust: Any = None
) -> int:
    """How many of the page's latest rows said measured (``on_hardware`` as :func:`page` sections them,
    by the row's word) their receipts show measured: a workflow card's count of results on hardware."""
    from qsolve.home import qsolve_home
    from qsolve.receipts.endorsement import endorsed_list

    from .receipts_check import check_row

    if not p.on_hardware:
        return 0
    record = recorded_receipts(p.on_hardware, home, state)
    trust = trust if trust is not None else endorsed_list([])
    where = qsolve_home(home)
    return sum(check_row(r, where, trust, record).kind == "measured" for r in p.on_hardware)


def by_receipts(p: WorkflowPage, checked: dict[str, RowReceipts]) -> WorkflowPage:
    """``p`` with its device rows sectioned by the class their receipts seal (``measured``: on hardware;
    ``simulated``: on simulated devices; neither, their receipts not all verified for the row, or none:
    not verified), each earlier result by its own receipts; never by the row's ``measured`` alone."""
    latest = [*p.on_hardware, *p.on_simulators, *p.unverified_devices]

    def section(r) -> str:
        c = checked.get(r.run_id)
        return _SECTION_OF[c.kind if c is not None else None]

    def of(name: str) -> list:
        return sorted((r for r in latest if section(r) == name), key=lambda r: (r.case_name, r.target))

    earlier = [
        r.model_copy(update={"section": section(r)}) if r.section in DEVICE_SECTIONS else r
        for r in p.earlier_results
    ]
    return p.model_copy(
        update={
            "on_hardware": of("on_hardware"),
            "on_simulators": of("on_simulators"),
            "unverified_devices": of("unverified_devices"),
            "earlier_results": earlier,
        }
    )


def published_page(
    name: str,
    version: str | None = None,
    home: Path | str | None = None,
    *,
    state: StateDB | None = None,
) -> tuple[WorkflowPage, dict[str, RowReceipts]]:
    """The page of workflow ``name`` (:func:`storage.trackrecord.workflow_page.page`) with the latest
    published version current, the published metric note, each failing row's broken bound and each
    hardware row's receipt label filled in; and each hardware row's receipts, checked. Raises
    :class:`UnknownWorkflow` as ``page`` does; the track record's warnings are given as ``page`` gives
    them."""
    from qsolve.receipts.endorsement import endorsed_list

    from .workflow_page import page

    found = published(name, home, state=state)
    p = page(name, version, home, published=found.version, metric_note=found.metric_note)
    record = recorded_receipts(device_rows(p), home, state)
    trust = found.trust if found.trust is not None else endorsed_list([])  # no database: none endorsed
    checked = checked_receipts(p, home, trust, record)
    labels = {run: c.label for run, c in checked.items()}
    p = by_receipts(p, checked)
    return p.model_copy(update={"bounds": broken_bounds(p, found.workflow), "receipts": labels}), checked
