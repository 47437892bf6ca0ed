"""Logging in and out of the web pages (issue 16, item 6; the accounts and sessions are
:mod:`qsolve.web.people`'s): ``GET /login`` the form, with its own token in a cookie; ``POST /login`` the
name and access token checked, a new session opened (the one the browser held before ends); ``POST
/logout`` the session closed.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from qsolve.web.database import state_db
from qsolve.web.pages import render
from qsolve.web.people import LOGIN_COOKIE, SESSION_COOKIE, check_form, safe_next, same_origin

router = APIRouter()


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


@router.get("/login")
def login_page(request: Request, next: str | None = None) -> Response:
    token = secrets.token_urlsafe(32)
    response = render(request, "login.html", next=safe_next(next), login_token=token)
    _cookie(response, request, LOGIN_COOKIE, token, 3600)
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    form = await request.form()
    name, token = form.get("name"), form.get("token")
    nxt = safe_next(form.get("next") if isinstance(form.get("next"), str) else None)
    given, cookie = form.get("_token"), request.cookies.get(LOGIN_COOKIE)
    if not same_origin(request) or not (
        isinstance(given, str) and cookie and hmac.compare_digest(given.encode(), cookie.encode())
    ):
        raise HTTPException(403, "the login form's token is missing or stale: open the login page again")
    fresh = secrets.token_urlsafe(32)

    def again(message: str, status: int) -> Response:
        response = render(
            request,
            "login.html",
            status_code=status,
            next=nxt,
            login_token=fresh,
            name=name if isinstance(name, str) else "",
            problem=message,
        )
        _cookie(response, request, LOGIN_COOKIE, fresh, 3600)
        return response

    if not isinstance(name, str) or not name.strip() or not isinstance(token, str) or not token:
        return again("give the account's name and its access token", 422)
    if len(name) > 200 or len(token) > 200:
        return again("that account name and access token do not match an account that can log in", 401)
    state = state_db(request.app)
    login = await run_in_threadpool(state.check_login, name.strip(), token.strip())
    if login is None:
        return again("that account name and access token do not match an account that can log in", 401)
    previous = request.cookies.get(SESSION_COOKIE)  # a session this browser held before: it ends now
    replaces = previous if previous and len(previous) <= 200 else None
    opened = await run_in_threadpool(state.open_session, login.name, replaces=replaces)
    response = RedirectResponse(nxt, status_code=303)
    _cookie(response, request, SESSION_COOKIE, opened.session_id, None)
    response.delete_cookie(LOGIN_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    await check_form(request)
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        await run_in_threadpool(state_db(request.app).close_session, session_id)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
