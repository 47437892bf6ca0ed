"""The web application (issue 16): ``create_app(home)``, one FastAPI app over the same core functions the
command line uses. ``qsolve serve`` runs it on loopback (``qsolve.cli.web``).

Every error renders through the error page with its status code: a wrong id is a 404 naming it, a form or a
file that does not read a 400 or 422 saying why, a missing login a 401 linking to the login, a missing role
or form token a 403. A request body past :data:`MAX_BODY` is refused (413) before it is read, or as soon as
it passes the bound while it is read; a path of :data:`PATH_LIMITS` has its own bound (a workflow's zip on
``/submit``: 16 MiB). Pages carry a Content-Security-Policy (scripts and styles from ``/static`` only),
``nosniff``, a same-origin referrer policy (no URL of ours reaches another site), no framing, and are not
cached.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from qsolve.home import qsolve_home
from qsolve.workflow.upload import MAX_ZIP_BYTES

MAX_BODY = 25 * 1024 * 1024  # a knowledge draft is at most 20 MiB zipped; a job file far less
#: the paths whose request body has a bound of its own: a workflow's zip and its form (16 MiB and 64 KiB)
PATH_LIMITS = {"/submit": MAX_ZIP_BYTES + 64 * 1024}

log = logging.getLogger("qsolve.web")

HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a browser send Origin: null
    (b"x-frame-options", b"DENY"),
]


class _TooLarge(StarletteHTTPException):
    """Raised from ``receive`` when a body passes the limit: an HTTP error, so that FastAPI's body parsing
    passes it on (it turns other errors into a 400) and the error page says 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request is larger than this server reads ({limit // (1024 * 1024)} MiB)")


class Guard:
    """Security headers on every response; a request body past ``limit`` bytes (``limits[path]`` on
    those paths) refused with 413."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY, limits: dict[str, int] | None = None) -> None:
        self.app, self.default = app, limit
        self.limits = dict(PATH_LIMITS if limits is None else limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(scope.get("path", ""), self.default)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _refuse_large(scope, send, limit)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(limit)
            return message

        async def headed(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers") or [])
                names = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in HEADERS if k not in names]
                if b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, counted, headed)
        except _TooLarge:
            if not started:
                await _refuse_large(scope, send, limit)


async def _refuse_large(scope: Scope, send: Send, limit: int) -> None:
    body = f"the request is larger than this server reads ({limit // (1024 * 1024)} MiB)".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                *HEADERS,
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(home: Path | str | None = None, *, hosts: list[str] | None = None) -> FastAPI:
    """The web pages over ``home`` (default: ``QSOLVE_HOME``, else ``./.qsolve``). ``hosts``: the only
    ``Host`` headers answered (``qsolve serve`` on loopback gives its own names, so that a page of another
    site reaching it through DNS rebinding gets 400); None answers any."""
    from qsolve.web import evaluations, knowledge, login, quotes, receipts, submissions, workflows
    from qsolve.web.pages import STATIC, error_page

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        found = getattr(app.state, "db", None)
        if found is not None:
            found.close()

    app = FastAPI(title="qsolve", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.add_middleware(Guard)
    if hosts is not None:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)
    app.state.home = qsolve_home(home).resolve()
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for module in (workflows, quotes, receipts, login, evaluations, knowledge, submissions):
        app.include_router(module.router)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no page at {request.url.path}"
        if exc.status_code == 405:
            message = f"{request.method} is not how {request.url.path} is used"
        response = error_page(request, exc.status_code, message)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        lines = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
            lines.append(f"{where}: {error.get('msg', 'invalid')}")
        return error_page(request, 422, "the request does not read", lines)

    from qsolve_pipeline.storage.state import NotFound
    from qsolve_pipeline.storage.trackrecord.errors import UnknownWorkflow

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        return error_page(request, 404, str(exc))

    @app.exception_handler(UnknownWorkflow)
    async def unknown_workflow(request: Request, exc: UnknownWorkflow) -> Response:
        return error_page(request, 404, str(exc))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return error_page(
            request, 500, f"the server failed on this page ({type(exc).__name__}); the log says more"
        )

    return app
