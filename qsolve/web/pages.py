"""Rendering pages and reaching the state database, for every router of the web pages.

- :func:`render` renders a template of ``templates/`` with ``account`` (the logged-in
  :class:`qsolve.web.people.Account` or None) and ``form_token`` (the session's form token, which every
  form that changes something sends as its hidden ``_token`` field) added to its context.
- :func:`error_page` is the page that says what is wrong, with its status code.
- :func:`db` gives the app's :class:`storage.state.StateDB` (one per app, its connections pooled): as a
  context manager (``with db(request) as state:``) or as a FastAPI dependency (``Depends(db)``).

Pages are served with a Content-Security-Policy that allows scripts and styles from ``/static`` only:
no inline ``<script>``, no ``style=`` attribute, no ``on...=`` handler. Put a page's script in
``static/`` (``static/drop.js`` makes any ``<div class="drop" data-for="INPUT_ID">`` a drop zone for
that file input) and its look in ``static/style.css``. Inline SVG with presentation attributes
(``stroke=``, ``fill=``) is fine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from qsolve.web.database import state_db
from qsolve_pipeline.storage.state import StateDB

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

templates = Jinja2Templates(directory=str(TEMPLATES))


def _credits(value: Any) -> str:
    """A number of credits as people read it: ``12.5``, never ``12.500000``."""
    if value is None:
        return "unknown"
    text = f"{value:f}" if not isinstance(value, str) else value
    return text.rstrip("0").rstrip(".") if "." in text else text


def _percent(value: Any, pm: Any = None) -> str:
    if value is None:
        return ""
    shown = pm is not None and pm >= 0  # a negative one (a row filed before stderr < 0 was refused): none
    return f"{100 * value:.1f}%" + (f" ± {100 * pm:.1f}%" if shown else "")


templates.env.filters["credits"] = _credits
templates.env.filters["percent"] = _percent


class db:  # noqa: N801 - used as a function: ``with db(request) as state`` or ``Depends(db)``
    """The app's StateDB for a request: a context manager, or (as a FastAPI dependency) the StateDB's
    own methods through this object."""

    def __init__(self, request: Request) -> None:
        self._db = state_db(request.app)

    def __enter__(self) -> StateDB:
        return self._db

    def __exit__(self, *exc: object) -> None:
        return None  # the app's database stays open for the next request

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def home(request: Request) -> Path:
    """The app's QSOLVE_HOME."""
    return request.app.state.home


def render(request: Request, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context``, ``account`` and ``form_token``; ``status_code`` as given."""
    from qsolve.web.people import current_account, form_token

    context.setdefault("account", current_account(request))
    context.setdefault("form_token", form_token(request))
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def error_page(
    request: Request, status_code: int, message: str, detail: str | list[str] | None = None
) -> HTMLResponse:
    """The page that says what is wrong (``message``, and ``detail`` lines when there are some)."""
    from qsolve.web.people import login_url

    lines = [detail] if isinstance(detail, str) else list(detail or [])
    login = login_url(request.url.path) if status_code == 401 else None
    return render(
        request,
        "error.html",
        status_code=status_code,
        status=status_code,
        message=message,
        detail=lines,
        login=login,
    )
