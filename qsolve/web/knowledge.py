"""The Knowledge page (issue 16, item 5; the calibration-evaluation seed, "Previewing the prompts",
"Knowledge drafts"), over the core ``qsolve knowledge`` uses:

    GET  /knowledge                                the tasks of the task knowledge, and the stored drafts
    GET  /knowledge/{task}?with_examples=&draft=&question=
                                                   the task's reference and the six prompts it turns into
                                                   (or a draft's), built without a figure or a model call
    GET  /knowledge/{task}/archive                 the published task directory as a draft's zip
    GET  /knowledge/{task}/examples/{sha256}?draft=    a labeled example's figure
    POST /knowledge/drafts                         store a zip as a knowledge draft (editors only, with
                                                   the page's form token); a zip that breaks a draft rule
                                                   is a 422 naming the rule, and nothing is stored
    GET  /knowledge/drafts/{id}/archive            a draft's zip, byte for byte, under its uploaded name

The page does not write task knowledge: a draft is stored beside it and read in its place only by a
preview or a run that names it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from qsolve.web.pages import error_page, home, render
from qsolve.web.people import Account, check_form, require

router = APIRouter()

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")  # as a draft's task folder is named
MAX_QUESTION = 1000


def _drafts(request: Request):
    from qsolve.evaluation.drafts import DraftStore

    return DraftStore(home(request))


def _quiet(message: str, request: Request) -> str:
    """A core message without this server's own folders in it."""
    from qsolve.evaluation.runs import knowledge_root

    for root, label in ((_drafts(request).root, "the drafts"), (knowledge_root(), "task-knowledge")):
        message = message.replace(str(root), label)
    return message


def published_tasks() -> list[str]:
    """The task directories of the task knowledge runs read (``QSOLVE_TASK_KNOWLEDGE``, else the
    repository's ``task-knowledge/``), by name."""
    from qsolve.evaluation.runs import knowledge_root

    root = knowledge_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "task.md").is_file())


def _published(task: str) -> Path | None:
    """The task's published directory, only when ``task`` is one of :func:`published_tasks`."""
    from qsolve.evaluation.runs import knowledge_root

    return knowledge_root() / task if task in published_tasks() else None


def _directory(
    request: Request, task: str, draft: str | None
) -> tuple[Path | None, object | None, Response | None]:
    """(the directory read, the draft, or the error page): a draft of ``task``, or its published one."""
    from qsolve.evaluation.drafts import DraftError, DraftNotFound, DraftOfAnotherTask

    if draft:
        try:
            found = _drafts(request).for_task(draft, task)
        except DraftNotFound as e:
            return None, None, error_page(request, 404, _quiet(str(e), request))
        except DraftOfAnotherTask as e:
            return None, None, error_page(request, 409, str(e))
        except DraftError as e:
            return None, None, error_page(request, 500, _quiet(str(e), request))
        return found.directory, found, None
    directory = _published(task)
    if directory is None:
        return None, None, error_page(request, 404, f"no task {task!r} in the task knowledge")
    return directory, None, None


def _environ(request: Request) -> dict[str, str]:
    """The environment the model is chosen in, with this app's QSOLVE_HOME (its evaluation.yaml)."""
    return {**os.environ, "QSOLVE_HOME": str(home(request))}


@router.get("/knowledge")
def knowledge_list(request: Request) -> Response:
    from qsolve.evaluation.knowledge import KnowledgeError, read_task
    from qsolve.evaluation.runs import knowledge_root

    tasks = []
    for name in published_tasks():
        try:
            ref = read_task(knowledge_root() / name).reference
            tasks.append({"name": name, "reference": ref, "problem": None})
        except KnowledgeError as e:
            tasks.append({"name": name, "reference": None, "problem": _quiet(str(e), request)})
    drafts = _drafts(request).list()
    drafts.reverse()  # newest first
    return render(request, "evaluation/knowledge_list.html", tasks=tasks, drafts=drafts)


@router.get("/knowledge/drafts/{draft_id}/archive")
def draft_archive(request: Request, draft_id: str) -> Response:
    from qsolve.evaluation.drafts import DraftError, DraftNotFound

    store = _drafts(request)
    try:
        draft = store.get(draft_id)
        data = store.archive(draft.id)
    except DraftNotFound as e:
        return error_page(request, 404, _quiet(str(e), request))
    except DraftError as e:
        return error_page(request, 500, _quiet(str(e), request))
    return _zip(data, draft.file_name)


@router.post("/knowledge/drafts", dependencies=[Depends(check_form)])
def upload_draft(
    request: Request,
    account: Annotated[Account, Depends(require("editor"))],
    file: Annotated[UploadFile | None, File()] = None,
    task: Annotated[str, Form()] = "",
) -> Response:
    """Store the dropped zip as a draft (the same ``DraftStore.store`` as ``qsolve knowledge draft``),
    then show its preview; a refused zip leaves nothing behind and the page names the rule."""
    from qsolve.evaluation.drafts import DraftError, DraftRefused, draft_id_of

    if file is None or not file.filename:
        return error_page(request, 422, "no zip was dropped", ["file: choose a task directory's zip"])
    data = file.file.read()  # the app refuses a body past its limit before it is read
    store = _drafts(request)
    stored = not store.exists(draft_id_of(data))
    try:
        draft = store.store(data, file.filename, uploader=account.name)
    except DraftRefused as e:
        detail = [f"entry: {e.entry}"] if e.entry is not None else []
        again = f"{file.filename}: nothing was stored; fix the zip and drop it again"
        return error_page(request, 422, str(e), [*detail, again])
    except DraftError as e:
        return error_page(request, 422, _quiet(str(e), request), ["nothing was stored"])
    query = {"draft": draft.id, "stored": "1" if stored else "0"}
    if task and task != draft.task:
        query["dropped_on"] = task
    return RedirectResponse(f"/knowledge/{quote(draft.task)}?{urlencode(query)}", status_code=303)


@router.get("/knowledge/{task}")
def preview_page(
    request: Request,
    task: str,
    with_examples: bool = False,
    draft: str | None = None,
    question: str | None = None,
    stored: str | None = None,
    dropped_on: str | None = None,
) -> Response:
    """The preview ``qsolve knowledge preview`` prints, for the published task or a draft of it."""
    from qsolve.evaluation.knowledge import KnowledgeError
    from qsolve.evaluation.models import ConfigError, ModelUnavailable, UnknownModel, choose_model
    from qsolve.evaluation.prompts import preview_task

    if question is not None and len(question) > MAX_QUESTION:
        return error_page(request, 422, f"question: at most {MAX_QUESTION} characters")
    directory, found, problem = _directory(request, task, draft)
    if problem is not None:
        return problem
    model_problem = None
    try:  # the model that would judge, chosen as an evaluation chooses it; the page shows a problem
        choice = choose_model(None, environ=_environ(request))
        model = choice.id + (" (fallback)" if choice.fallback else "")
    except (ConfigError, UnknownModel, ModelUnavailable) as e:
        model, model_problem = None, str(e)
    try:
        previewed = preview_task(
            directory, with_examples=with_examples, question=question or None, model=model
        )
    except KnowledgeError as e:
        return error_page(request, 422, _quiet(str(e), request))
    drafts = [d for d in _drafts(request).list() if d.task == task]
    drafts.reverse()
    if dropped_on is not None and not _TASK_NAME.match(dropped_on):
        dropped_on = None  # only a task's name is said back: a link cannot put its own words on the page
    return render(
        request,
        "evaluation/knowledge.html",
        task=task,
        published=_published(task) is not None,
        reference=previewed.reference,
        shown=previewed.preview,
        warnings=previewed.warnings,
        model_problem=model_problem,
        draft=found,
        drafts=drafts,
        stored=stored,
        dropped_on=dropped_on,
        with_examples=with_examples,
        question=question or "",
    )


@router.get("/knowledge/{task}/archive")
def task_archive_page(request: Request, task: str) -> Response:
    from qsolve.evaluation.drafts import DraftError, task_archive

    directory = _published(task)
    if directory is None:
        return error_page(request, 404, f"no task {task!r} in the task knowledge")
    try:
        data = task_archive(directory)
    except DraftError as e:
        return error_page(request, 500, _quiet(str(e), request))
    return _zip(data, f"{task}.zip")


@router.get("/knowledge/{task}/examples/{sha256}")
def example_figure(request: Request, task: str, sha256: str, draft: str | None = None) -> Response:
    """A labeled example's figure, found by its hash among the examples the task (or draft) shows."""
    from qsolve.evaluation.examples import select_examples

    if not _SHA256.match(sha256):
        return error_page(request, 404, f"{sha256!r} is not a figure's SHA-256 (64 lower-case hex digits)")
    directory, _found, problem = _directory(request, task, draft)
    if problem is not None:
        return problem
    example = next((e for e in select_examples(directory).examples if e.figure_sha256 == sha256), None)
    if example is None:
        return error_page(request, 404, f"no example of {task} has the figure {sha256}")
    try:
        data = example.figure.read_bytes()
    except OSError:
        return error_page(request, 404, f"the figure of example {example.id} cannot be read")
    if hashlib.sha256(data).hexdigest() != sha256:
        return error_page(request, 404, f"the figure of example {example.id} changed since it was read")
    return Response(data, media_type=example.media_type, headers={"cache-control": "private, max-age=600"})


def _zip(data: bytes, name: str) -> Response:
    """A zip as a download under ``name``; the name is never allowed to break out of its header."""
    ascii_name = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "draft.zip"
    disposition = f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"
    return Response(data, media_type="application/zip", headers={"content-disposition": disposition})
