"""Receipts anyone can check (quantum-provider-protocol §8.4, §8.8; issue 16, item 4).

    GET  /runs/{run_id}/receipts                  a run's receipts, each verified now, each downloadable
    GET  /runs/{run_id}/receipts/{digest}.json    one of them, byte for byte as ``qsolve receipts`` writes it
    GET  /verify                                  drop a job file (and a trust list, a time if you like)
    POST /verify                                  ``qsolve verify``'s verdict, every reason named

Verifying reads and changes nothing, so it needs no login. It is the verifier ``qsolve verify`` runs
(:func:`qsolve.receipts.verifier.verify`; this surface reads 8 MiB of a job, the command's count of
values), held to the same trust list and time,
read by the same rules (``--at`` and ``--skew-ms`` as whole milliseconds, a trust list refused whole);
the page also shows the verdict as the command prints it. A job that does not read is a verdict with its
reason (``unreadable``, ``not_a_job``, ``too_large``), shown with 422; a trust list or a time that does
not read is refused before anything is judged (422), as the command exits 2.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import HTMLResponse, Response

from qsolve.web.pages import db, home, render
from qsolve_pipeline.storage.bounds import RECEIPT_BYTES, RECEIPT_PAGE_BYTES, bound
from qsolve_pipeline.storage.objects import ObjectTooLarge

router = APIRouter()

#: what this surface reads of a job (§8.4 lets each surface say): 8 MiB, and the command's count of values;
#: a longer job is ``too_large``. (``qsolve verify`` reads up to ``VERIFY_LIMITS.bytes`` from a file.) A
#: run's stored receipts are read to this bound too, or to their recorded size (``storage.bounds``).
PAGE_READS_BYTES = RECEIPT_PAGE_BYTES


def page_limits():
    from qsolve.receipts.verdict import ReadAtMost
    from qsolve.receipts.verifier import VERIFY_LIMITS

    return ReadAtMost(bytes=min(PAGE_READS_BYTES, VERIFY_LIMITS.bytes), values=VERIFY_LIMITS.values)


def _checked(data: bytes, held: Any, standings: dict[str, Any]) -> dict[str, Any]:
    """The receipt verified, held to the host keys the operator's root endorsed (as ``qsolve verify
    --registered``), so that a key the root did not endorse, or one revoked, does not pass; its key's
    standing (endorsed, or not and why; a key no host registered is not endorsed either); and the run
    its request seals."""
    import json

    from qsolve.receipts import verify

    verdict = verify(data, held=held)
    from qsolve.providers.sealing import RUN

    try:
        job = json.loads(data)
        result = job.get("result", {})
        accuracy, key = result.get("accuracy", {}), result.get("receipt", {}).get("key")
        sealed_run = job.get("request", {}).get(RUN)
    except (ValueError, AttributeError):
        accuracy, key, sealed_run = {}, None, None
    standing = standings.get(key) if isinstance(key, str) else None
    return {
        "valid": verdict.valid,
        "reasons": verdict.reasons,
        "class": accuracy.get("class") if isinstance(accuracy, dict) else None,
        "key_id": key[:16] if isinstance(key, str) else None,
        "endorsed": bool(standing and standing.endorsed),
        "standing": standing.status if standing else "not endorsed: no host registered it",
        #: the run its request seals (``sealing.run_member``); None for one sealed before requests named it
        "sealed_run": sealed_run if isinstance(sealed_run, dict) else None,
    }


@router.get("/runs/{run_id}/receipts", response_class=HTMLResponse)
def run_receipts(request: Request, run_id: str) -> HTMLResponse:
    from qsolve.receipts.trust import HeldTo, TrustList
    from qsolve_pipeline.storage.blobs import BlobStore

    with db(request) as state:
        run = state.get_run(run_id)  # NotFound: 404 naming it
        digests = state.run_receipts(run_id)
        sizes = state.blob_sizes(digests)
        trust, no_root = state.page_trust_list()
        standings = {} if no_root else {r.key: s for r, s in state.key_standings()}
    held = HeldTo(trust=TrustList.from_value(trust))
    blobs = BlobStore(home(request))
    listed = []
    for digest in digests:
        try:
            data = blobs.get(digest, limit=_page_limit(sizes.get(digest)))
        except ObjectTooLarge as e:
            listed.append({"digest": digest, "missing": True, "too_large": _too_large(e)})
            continue
        except (OSError, ValueError, KeyError):
            listed.append({"digest": digest, "missing": True})
            continue
        listed.append(
            {"digest": digest, "missing": False, "bytes": len(data)} | _checked(data, held, standings)
        )
    return render(request, "receipts.html", run=run, receipts=listed, no_root=no_root)


@router.get("/runs/{run_id}/receipts/{digest}.json")
def receipt_file(request: Request, run_id: str, digest: str) -> Response:
    from qsolve_pipeline.storage.blobs import BlobStore

    with db(request) as state:
        state.get_run(run_id)  # NotFound: 404 naming it
        digests = state.run_receipts(run_id)
        recorded = state.blob_size(digest) if digest in digests else None
    if digest not in digests:
        raise HTTPException(404, f"run {run_id} has no receipt {digest[:80]}")
    try:
        data = BlobStore(home(request)).get(digest, limit=_page_limit(recorded))
    except ObjectTooLarge as e:
        raise HTTPException(413, f"receipt {digest}: {_too_large(e)}") from None
    return Response(
        bytes(data),
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{digest}.json"'},
    )


def _page_limit(recorded: int | None) -> int:
    """What a page reads of a stored receipt for anyone: its recorded size, never past this surface's
    bound (a longer one is not read at all)."""
    return min(bound(recorded, RECEIPT_BYTES), PAGE_READS_BYTES)


def _too_large(e: ObjectTooLarge) -> str:
    """The refusal as a page says it: the bound, never the store's address (a path of the server's)."""
    found = f"{e.size} bytes" if e.size is not None else "longer"
    return f"{found}, more than the {e.limit} bytes this page reads"


@router.get("/verify", response_class=HTMLResponse)
def verify_page(request: Request) -> HTMLResponse:
    return render(request, "verify.html", verdict=None)


async def _read(upload: UploadFile, limit: int) -> bytes:
    """At most one byte past ``limit``: enough for the verifier to find the file too large."""
    data = await upload.read(limit + 1)
    await upload.close()
    return data


@router.post("/verify", response_class=HTMLResponse)
async def verify_job(
    request: Request,
    job: Annotated[UploadFile | None, File()] = None,
    trust: Annotated[UploadFile | None, File()] = None,
    at: Annotated[str, Form(max_length=40)] = "",
    skew_ms: Annotated[str, Form(max_length=40)] = "",
) -> HTMLResponse:
    from qsolve.receipts.reading import InputRefused, held_time, plain
    from qsolve.receipts.reasons import ALONE, BY_CODE
    from qsolve.receipts.trust import HeldTo, TrustList, TrustListRefused
    from qsolve.receipts.verifier import verify

    limits = page_limits()
    given = {"at": at, "skew_ms": skew_ms}

    def refused(message: str, status: int = 422) -> HTMLResponse:
        return render(request, "verify.html", status_code=status, verdict=None, problem=message, given=given)

    if job is None or not job.filename:
        return refused("drop a job file (the {request, result} JSON of one device job) to verify it")
    name = _shown_name(job.filename)
    held_trust = None
    if trust is not None and trust.filename:
        try:
            held_trust = TrustList.read(await _read(trust, limits.bytes))
        except TrustListRefused as e:
            return refused(f"{_shown_name(trust.filename)}: refused whole: {e}; nothing was judged")
    try:
        at_ms, skew = held_time(
            at.strip() or None, skew_ms.strip() or None, at_name="the time", skew_name="the allowance"
        )
    except InputRefused as e:
        return refused(f"{e}; nothing was judged")
    data = await _read(job, limits.bytes)
    verdict = verify(data, limits=limits, held=HeldTo(trust=held_trust, at_ms=at_ms, skew_ms=skew))
    reasons = [
        {
            "code": code,
            "section": BY_CODE[code].section if code in BY_CODE else "",
            "when": BY_CODE[code].when if code in BY_CODE else "",
        }
        for code in verdict.reasons
    ]
    unread = any(code in ALONE and code != "no_receipt" for code in verdict.reasons)
    return render(
        request,
        "verify.html",
        status_code=422 if unread else 200,
        verdict=verdict,
        reasons=reasons,
        plain=plain(name, verdict),
        name=name,
        given=given,
        trusted=held_trust is not None,
    )


def _shown_name(filename: str) -> str:
    """A dropped file's name as the page shows it: its last part, at most 120 characters."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return base[:120] or "the file"
