"""Submitting a workflow from the pages (issue 33, item 2), over the same submission flow as ``qsolve
submit``:

    GET  /submit                  the form: a workflow folder's zip (developers and admins)
    POST /submit                  the zip, with the page's form token: unpacked by the safe zip reader and
                                  submitted as the logged-in account (``flows.dispatch.start_submission``);
                                  a zip that breaks a rule is a 422 naming it, and nothing is kept
    GET  /submissions/{id}        its progress, then its report: lint, checks, the eight gates, each case's
                                  verdict, publication (or the refusal) and history; a link to the
                                  workflow's page once published (the account that submitted it, or an
                                  admin)

Any logged-in account with the ``developer`` role (of any workflow, or of none yet) or ``admin`` may
submit: who may publish a name is the publication stage's rule, not this page's. The request body is
refused past the zip's bound and 64 KiB while it is read (``qsolve.web.app.PATH_LIMITS``), the zip past
``qsolve.workflow.upload.MAX_ZIP_BYTES`` (16 MiB).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, HTTPException, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from qsolve.web.pages import error_page, home, render
from qsolve.web.people import Account, check_form, need
from qsolve.workflow.upload import MAX_ZIP_BYTES

router = APIRouter()

#: how often a running submission's page reloads itself, in seconds
REFRESH_S = 3


def submitter(request: Request) -> Account:
    """The logged-in account when it may submit (a developer or an admin): 401 / 403 otherwise."""
    account = need(request)
    if not (account.has("developer") or account.has("admin")):
        raise HTTPException(
            403,
            f"account {account.name} is not a developer: only a developer (or an admin) submits workflows",
        )
    return account


@router.get("/submit")
def submit_page(request: Request) -> Response:
    submitter(request)
    return render(request, "submit.html", max_zip_bytes=MAX_ZIP_BYTES)


@router.post("/submit", dependencies=[Depends(check_form)])
def submit(request: Request, file: Annotated[UploadFile | None, File()] = None) -> Response:
    """The dropped zip submitted as the logged-in account; its page follows the run."""
    from qsolve.workflow.upload import UploadRefused
    from qsolve_pipeline.flows.dispatch import start_submission

    account = submitter(request)
    if file is None or not file.filename:
        return error_page(request, 422, "no zip was chosen", ["file: choose a workflow folder's zip"])
    data = file.file.read(MAX_ZIP_BYTES + 1)  # the body was bounded while it was read
    try:
        submission_id = start_submission(home(request), data, file.filename, account.name)
    except UploadRefused as e:
        return error_page(request, 422, str(e), ["nothing was kept; nothing was submitted"])
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


@router.get("/submissions/{submission_id}")
def submission_page(request: Request, submission_id: str) -> Response:
    from qsolve_pipeline.storage.submissions import SubmissionNotFound, Submissions

    account = need(request)
    try:
        submission = Submissions(home(request)).get(submission_id)
    except SubmissionNotFound as e:
        return error_page(request, 404, str(e))
    if submission.request.account != account.name and not account.has("admin"):
        raise HTTPException(403, f"submission {submission.id} is not account {account.name}'s")
    status = submission.status
    return render(
        request,
        "submission.html",
        submission=submission,
        status=status,
        report=submission.report,
        refresh=REFRESH_S if status in ("starting", "running") else None,
    )
