"""The workflow list and each workflow's page (benchmarks-and-gates.md, "What the workflow page shows").

    GET /, /workflows                     every workflow with its card: current version, passed and total
                                          cases on sim- targets, headline accuracy
    GET /workflows/{name}                 the page of the current version
    GET /workflows/{name}/versions/{v}    the page of that version

The page is :func:`storage.trackrecord.published.published_page`, the model ``qsolve page`` prints, built
by the same function: the latest published version from the state database is current, the bounds a
failing row broke come from its published case's ``expect``, and each hardware row's receipts are read
and checked now (each the row's run's, under an endorsed key, with the counts recorded); a device row's
class (measured, simulated) is what they seal, and a row whose receipts do not all verify says which
check failed and shows no class. Each case's history (its row on the page and its earlier results) is
drawn as a small SVG chart of accuracy and fidelity.
"""

from __future__ import annotations

import warnings
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from qsolve.web.charts import Point, history_chart, y_range
from qsolve.web.pages import db, home, render
from qsolve_pipeline.storage.trackrecord.published import Published, published_page
from qsolve_pipeline.storage.trackrecord.published import published as find_published

router = APIRouter()

SECTIONS = ("track_record", "noise_model_estimate", "on_hardware", "on_simulators", "unverified_devices")


def published(request: Request, name: str) -> Published:
    """The workflow's latest published version and its workflow, as ``qsolve page`` finds them."""
    with db(request) as state:
        return find_published(name, home(request), state=state)


def workflow_page(request: Request, name: str, version: str | None = None) -> tuple[Any, dict, list[str]]:
    """The page model (bounds and receipt labels filled in as ``qsolve page`` fills them), each hardware
    row's :class:`RowReceipts`, and the warnings the track record gave while it was read."""
    from qsolve_pipeline.storage.trackrecord.errors import TrackRecordWarning

    with db(request) as state, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TrackRecordWarning)
        p, checked = published_page(name, version, home(request), state=state)
    said = [str(w.message) for w in caught if issubclass(w.category, TrackRecordWarning)]
    return p, checked, said


def histories(p: Any) -> list[dict[str, Any]]:
    """One chart per case and target on the page: its rows oldest first (earlier results, then the
    latest), with the section it is shown in."""
    out: list[dict[str, Any]] = []
    for section in SECTIONS:
        for row in getattr(p, section):
            earlier = [
                r
                for r in p.earlier_results
                if r.section == section and r.case_name == row.case_name and r.target == row.target
            ]
            runs = sorted([*earlier, row], key=lambda r: (r.recorded_at, r.run_id))
            points = [
                Point(r.run_id, r.recorded_at, r.version, r.accuracy, r.fidelity, r.passed) for r in runs
            ]
            out.append(
                {
                    "case": row.case_name,
                    "target": row.target,
                    "section": section,
                    "runs": len(points),
                    "points": points,
                    "has_fidelity": any(pt.fidelity is not None for pt in points),
                }
            )
    span = y_range([pt for ch in out for pt in ch["points"]])  # one y-range: the charts are compared
    for ch in out:
        label = f"{ch['case']} on {ch['target']}: accuracy and fidelity over {ch['runs']} runs"
        ch["svg"] = history_chart(ch["points"], label=label, span=span)
    return out


def published_dates(request: Request, name: str, versions: list[str]) -> dict[str, Any]:
    """When each version was published, as the state database says (a version it does not hold, known
    only from the track record, has none)."""
    from qsolve_pipeline.storage.state import NotFound

    out: dict[str, Any] = {}
    with db(request) as state:
        for v in versions:
            try:
                out[v] = state.get_version(name, v).published_at
            except NotFound:
                continue
    return out


def card(request: Request, name: str) -> dict[str, Any]:
    """A workflow's card, from its page: the same numbers ``workflow_cards`` gives."""
    from qsolve_pipeline.storage.trackrecord.errors import UnknownWorkflow
    from qsolve_pipeline.storage.trackrecord.workflow_page import page

    found = published(request, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = page(name, None, home(request), published=found.version)
    except UnknownWorkflow:
        return {"name": name, "version": found.version, "passed": 0, "total": 0, "headline": None}
    title = found.workflow.manifest.title if found.workflow is not None else None
    return {
        "name": name,
        "title": title,
        "version": p.current_version,
        "versions": len(p.versions),
        "passed": p.passed,
        "total": p.total,
        "headline": p.headline_accuracy,
        # as the page says it: "1 row has none: the baseline is 0 in 1" (left out of the headline)
        "without": p.none_said() if p.without_accuracy else None,
        "hardware": hardware_results(request, p, found),
        "published": published_dates(request, name, [p.current_version]).get(p.current_version),
    }


def hardware_results(request: Request, p: Any, found: Published) -> int:
    """A card's results on quantum hardware: the rows whose receipts show a device measured them (never
    the row's own word; docs/receipts.md, "A receipt belongs to its row")."""
    from qsolve_pipeline.storage.trackrecord.published import measured_on_hardware

    if not p.on_hardware:
        return 0
    with db(request) as state:
        return measured_on_hardware(p, home(request), state, found.trust)


def workflow_names(request: Request) -> list[str]:
    """Every workflow published in the state database or recorded in the track record."""
    from qsolve_pipeline.storage.trackrecord.sql import run_sql

    with db(request) as state:
        names = set(state.published_workflows())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = run_sql("SELECT DISTINCT workflow FROM rows", home(request))
    names |= set(table.column("workflow").to_pylist()) if table.num_rows else set()
    return sorted(names)


@router.get("/", response_class=HTMLResponse)
@router.get("/workflows", response_class=HTMLResponse)
def workflow_list(request: Request) -> HTMLResponse:
    cards = [card(request, name) for name in workflow_names(request)]
    return render(request, "workflows.html", cards=cards)


@router.get("/workflows/{name}", response_class=HTMLResponse)
def current_page(request: Request, name: str) -> HTMLResponse:
    return _show(request, name, None)


@router.get("/workflows/{name}/versions/{version}", response_class=HTMLResponse)
def version_page(request: Request, name: str, version: str) -> HTMLResponse:
    return _show(request, name, version)


@router.get("/workflows/{name}/versions/{version}/replay.zip", response_model=None)
def replay_bundle(request: Request, name: str, version: str) -> Response | HTMLResponse:
    """The version's replay bundle (``qsolve export``; docs/replay.md): the same bytes every time for the
    same track record. A GET changes nothing: the host's key is used as it is, never made, registered
    or rotated."""
    from qsolve.web.pages import error_page
    from qsolve_pipeline.storage.trackrecord.export import ExportRefused, export

    try:
        data = export(name, version, home(request), key_as_it_is=True).to_bytes()
    except ExportRefused as e:
        return error_page(request, 404, "No replay bundle", str(e))
    filename = f"{name}-{version}.replay.zip".replace('"', "")
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def _show(request: Request, name: str, version: str | None) -> HTMLResponse:
    from qsolve.web.people import current_account
    from qsolve_pipeline.storage.trackrecord.workflow_page import warnings as page_warnings

    p, checked, said = workflow_page(request, name, version)
    account = current_account(request)
    matches = sum(1 for r in p.track_record if r.verdict and r.verdict.startswith("Matches"))
    with_accuracy = sum(1 for r in p.track_record if r.accuracy is not None)
    return render(
        request,
        "workflow.html",
        p=p,
        published=published_dates(request, name, p.versions),
        checked=checked,
        warnings=[*said, *page_warnings(p)],
        matches=matches,
        with_accuracy=with_accuracy,
        charts=histories(p),
        developer=account is not None and account.quotes(name),
    )
