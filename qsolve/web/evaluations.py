"""The evaluation pages (issue 16, item 5; the calibration-evaluation seed, "Entry points and runs",
"The record", "Comparing runs"), over the core ``qsolve evaluations`` uses:

    GET  /evaluations                              the run list: state, model, counts, wall and model time
    GET  /evaluations/compare?a=RUN&b=RUN          two runs side by side (without both: a form to pick them)
    GET  /evaluations/{run}                        a run's detail: every record, its six answers as
                                                   returned and as parsed, figures, tokens, verdicts
    GET  /evaluations/{run}/score                  the run against the known answers and the verdicts
    GET  /evaluations/records/{record}/figures/{sha256}   a figure the record's judge was shown
    POST /evaluations/records/{record}/verdicts    a reviewer's verdict (reviewers only, with the form
                                                   token); the record's history keeps every one

Reading is open to anyone; the one change (a verdict) needs a logged-in reviewer and the page's form
token. A wrong id is a 404 naming it; a verdict that does not read a 422 saying which field, with
nothing written.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, ValidationError, field_validator

from qsolve.evaluation.verdicts import AREAS, VERDICTS
from qsolve.web import evaluation_views as views
from qsolve.web.evaluation_style import STYLESHEET
from qsolve.web.pages import db, error_page, home, render, state_db
from qsolve.web.people import Account, check_form, require
from qsolve_pipeline.storage.bounds import FIGURE_BYTES

router = APIRouter()

_SHA256 = re.compile(r"^[0-9a-f]{64}$")

MAX_COMMENT = 4000


def _calibration_store(request: Request):
    """The calibration store over the app's own state database and blobs (never closed here: the
    database is the app's)."""
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.calibration import CalibrationStore

    return CalibrationStore(state_db(request.app), BlobStore(home(request)))


@router.get("/evaluations/style.css", include_in_schema=False)
def stylesheet() -> Response:
    return Response(STYLESHEET, media_type="text/css")


@router.get("/evaluations")
def run_list(request: Request) -> Response:
    from qsolve.evaluation.runs import stale_after, summary

    with db(request) as state:
        every = state.list_evaluation_runs(stale_after=stale_after(reading=True))
        runs = [summary(state, r.id) for r in every]
    runs.reverse()  # newest first
    return render(request, "evaluation/runs.html", runs=runs, views=views)


@router.get("/evaluations/compare")
def compare_page(request: Request, a: str | None = None, b: str | None = None) -> Response:
    from qsolve.evaluation.compare import compare
    from qsolve.evaluation.runs import stale_after, summary

    with db(request) as state:
        if not a and not b:
            every = state.list_evaluation_runs(stale_after=stale_after(reading=True))
            runs = [summary(state, r.id) for r in every]
            runs.reverse()
            return render(request, "evaluation/pick.html", runs=runs, views=views)
        if not a or not b:
            return error_page(
                request, 422, "compare needs two runs", [f"{'a' if not a else 'b'}: give the run's id"]
            )
        c = compare(state, a, b)  # an unknown run: NotFound, a 404 naming it
        summaries = {"a": summary(state, a), "b": summary(state, b)}
        wanted = [side["record"] for row in c["rows"] for side in (row["a"], row["b"]) if side]
        records = {rid: state.get_evaluation_record(rid) for rid in wanted}
    return render(
        request,
        "evaluation/compare.html",
        c=c,
        runs=summaries,
        rows=views.compare_rows(c, records),
        views=views,
    )


@router.get("/evaluations/{run_id}")
def run_page(request: Request, run_id: str) -> Response:
    from qsolve.evaluation.runs import summary

    with db(request) as state:
        s = summary(state, run_id)
        store = _calibration_store(request)
        records = []
        for r in state.evaluation_records(run_id):
            view = views.record_view(r, state.verdict_history(r.id))
            _inline_judged(state, store, r, view)
            records.append(view)
    return render(
        request,
        "evaluation/run.html",
        run=s,
        records=records,
        views=views,
        verdicts=VERDICTS,
        areas=AREAS,
    )


@router.get("/evaluations/{run_id}/score")
def score_page(request: Request, run_id: str) -> Response:
    from qsolve.evaluation.compare import score
    from qsolve.evaluation.runs import summary

    with db(request) as state:
        s = summary(state, run_id)  # an unknown run: a 404 naming it
        scored = score(state, _calibration_store(request), run_id)
    rows = [(name, scored["per_task"][name]) for name in sorted(scored["per_task"])]
    return render(
        request,
        "evaluation/score.html",
        run=s,
        rows=rows,
        total=scored["total"],
        per_set=scored["per_set"],
        sets=[("standard", "standard"), ("held_apart", "held apart")],
        views=views,
    )


def _figure_data(state, store, record, sha256: str) -> tuple[bytes, str] | str:
    """(bytes, media type) of a figure the record shows: the asset kept when it was judged, else the
    task result's own figure; or why it cannot be read (its path stays out of it)."""
    from qsolve_pipeline.storage.calibration import FigureMissing

    record_id = record.id
    kept = state.asset_for(record_id, sha256)
    try:
        if kept is not None:
            blob, media_type = kept
            data = store.blobs.get(blob, limit=state.blob_limit(blob, FIGURE_BYTES))
        else:
            result = store.get(record.task_result_id)
            ref = next((f for f in result.figures if f.sha256 == sha256), None)
            if ref is None:
                raise FigureMissing(f"its task result {record.task_result_id} no longer has it")
            data, media_type = store.figure_bytes(ref), ref.media_type
    except FigureMissing as e:
        return f"figure {sha256} of record {record_id} cannot be read: {e}"
    except (OSError, ValueError):  # a blob gone or damaged
        return f"figure {sha256} of record {record_id}: its stored bytes do not read"
    except Exception as e:  # noqa: BLE001 - NotFound of a task result gone, say
        return f"figure {sha256} of record {record_id} cannot be read: {type(e).__name__}"
    return data, media_type


def _inline_judged(state, store, record, view: dict) -> None:
    """The judged figure's bytes as a ``data:`` URL in the record's view, so the page shows the figure
    the judge saw inline (at most :data:`views.INLINE_FIGURE_BYTES`; a larger one is linked)."""
    for f in view["figures"]:
        if f["role"] != "judged" or not f["image"] or (f.get("bytes") or 0) > views.INLINE_FIGURE_BYTES:
            continue
        found = _figure_data(state, store, record, f["sha256"])
        if isinstance(found, tuple) and hashlib.sha256(found[0]).hexdigest() == f["sha256"]:
            data, media_type = found
            if media_type in views.IMAGE_TYPES:
                f["data_url"] = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


@router.get("/evaluations/records/{record_id}/figures/{sha256}")
def figure(request: Request, record_id: str, sha256: str) -> Response:
    """A figure, only when this record references its hash: the asset kept when it was judged, else
    the task result's own figure, its bytes checked against the hash."""
    if not _SHA256.match(sha256):
        return error_page(request, 404, f"{sha256!r} is not a figure's SHA-256 (64 lower-case hex digits)")
    with db(request) as state:
        record = state.get_evaluation_record(record_id)
        shown = {f["sha256"]: f for f in views.figures(record)}
        if sha256 not in shown:
            return error_page(request, 404, f"evaluation record {record_id} shows no figure {sha256}")
        found = _figure_data(state, _calibration_store(request), record, sha256)
    if isinstance(found, str):
        return error_page(request, 404, found)
    data, media_type = found
    if hashlib.sha256(data).hexdigest() != sha256:
        return error_page(request, 404, f"figure {sha256} of record {record_id}: its bytes are not its hash")
    headers = {"cache-control": "private, max-age=3600"}
    if media_type not in views.IMAGE_TYPES:  # never rendered as a page
        media_type = "application/octet-stream"
        headers["content-disposition"] = f'attachment; filename="{sha256}"'
    return Response(data, media_type=media_type, headers=headers)


class VerdictForm(BaseModel):
    verdict: Literal[VERDICTS]
    area: Literal[AREAS] | None = None
    comment: str | None = None

    @field_validator("area", "comment", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("comment")
    @classmethod
    def _short(cls, value: str | None) -> str | None:
        if value is not None and len(value) > MAX_COMMENT:
            raise ValueError(f"at most {MAX_COMMENT} characters")
        return None if value is None else value.strip()


@router.post("/evaluations/records/{record_id}/verdicts", dependencies=[Depends(check_form)])
def add_verdict(
    request: Request,
    record_id: str,
    account: Annotated[Account, Depends(require("reviewer"))],
    verdict: Annotated[str, Form()] = "",
    area: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    with db(request) as state:
        record = state.get_evaluation_record(record_id)  # a wrong id: a 404, nothing written
        try:
            form = VerdictForm(verdict=verdict, area=area, comment=comment)
        except ValidationError as e:
            lines = [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
            return error_page(request, 422, "the verdict does not read; nothing was recorded", lines)
        state.add_verdict(record.id, account.name, form.verdict, area=form.area, comment=form.comment)
    return RedirectResponse(f"/evaluations/{record.run_id}#record-{record.id}", status_code=303)
