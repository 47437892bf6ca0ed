"""People and roles of the web pages (issue 16, item 6): who is logged in, and the dependencies that
keep every change behind a login, a role and the form token its page issued.

- An account (``qsolve accounts add NAME --role R``) logs in at ``/login`` with its name and the access
  token printed once when it was added. The session is a random id in an HttpOnly, SameSite=Strict cookie
  (``Secure`` over HTTPS), kept in the state database only as its SHA-256; it lapses after twelve hours,
  at logout, when the account's token is reissued, or when the browser logs in again (the session it
  held before ends; a login never keeps a session id the browser brought with it).
- Roles: ``developer`` of named workflows (asks for their quotes, confirms them: the quotes are paid from
  the account of the same name), ``editor`` of task knowledge (uploads drafts), ``reviewer`` (adds
  verdicts).
- Every state-changing route is a POST behind :func:`require` and :func:`check_form`: the hidden
  ``_token`` field must be the session's form token (the one :func:`qsolve.web.pages.render` gives every
  template as ``form_token``), and a browser's ``Origin``, when it sends one, must be this server's. No GET
  and no link changes anything.
- Nothing secret is put in a page, a log or a URL: the access token travels only in the login form's POST
  body, the session id only in its cookie; neither is logged or shown.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from urllib.parse import quote, urlsplit

from fastapi import HTTPException, Request
from pydantic import BaseModel, ConfigDict

from qsolve_pipeline.storage.roles import ROLES
from qsolve_pipeline.storage.state import LoginAccount

SESSION_COOKIE = "qsolve_session"
LOGIN_COOKIE = "qsolve_login"  # the login form's own token, before there is a session


class Account(BaseModel):
    """The logged-in person: name, roles, and the workflows they are the developer of."""

    model_config = ConfigDict(frozen=True)

    name: str
    roles: frozenset[str]
    workflows: frozenset[str] = frozenset()

    def has(self, role: str) -> bool:
        return role in self.roles

    def develops(self, workflow: str) -> bool:
        """Whether this account is ``workflow``'s developer."""
        return "developer" in self.roles and workflow in self.workflows

    def quotes(self, workflow: str) -> bool:
        """Whether this account may ask for ``workflow``'s quotes: its developer, or an admin (the quotes
        are then the admin's, paid from the admin's own credits)."""
        return "admin" in self.roles or self.develops(workflow)

    @classmethod
    def of(cls, login: LoginAccount) -> Account:
        return cls(name=login.name, roles=login.roles, workflows=login.workflows)


def _session(request: Request) -> tuple[Account, str] | None:
    """The request's live session: its account and form token (looked up once per request)."""
    if not hasattr(request.state, "qsolve_session"):
        found = None
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id and len(session_id) <= 200:
            from qsolve.web.database import state_db

            hit = state_db(request.app).session_of(session_id)
            if hit is not None:
                found = (Account.of(hit[0]), hit[1])
        request.state.qsolve_session = found
    return request.state.qsolve_session


def current_account(request: Request) -> Account | None:
    """The logged-in account, or None."""
    found = _session(request)
    return found[0] if found else None


def form_token(request: Request) -> str | None:
    """The session's form token: what every form that changes something carries as ``_token``."""
    found = _session(request)
    return found[1] if found else None


def require(role: str) -> Callable[[Request], Account]:
    """A dependency: the logged-in account when it has ``role``; 401 when nobody is logged in (the page
    links to the login), 403 when the account lacks the role."""
    if role not in ROLES:
        raise ValueError(f"role {role!r}: one of {', '.join(ROLES)}")

    def dependency(request: Request) -> Account:
        return need(request, role)

    dependency.__name__ = f"require_{role}"
    return dependency


def need(request: Request, role: str | None = None) -> Account:
    """The logged-in account (with ``role``, when given), or the 401 / 403 that says what is missing."""
    account = current_account(request)
    if account is None:
        raise HTTPException(401, "you are not logged in: log in to do this")
    if role is not None and not account.has(role):
        raise HTTPException(403, f"account {account.name} is not a {role}: only a {role} may do this")
    return account


def same_origin(request: Request) -> bool:
    """Whether the request's ``Origin`` (when the browser sent one) is this server's."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    mine = f"{request.url.scheme}://{request.url.netloc}"
    return origin == mine


async def check_form(request: Request) -> None:
    """A dependency for a POST that changes something: its ``_token`` field must be the session's form
    token and its ``Origin`` this server's (403 otherwise). Use it with :func:`require`."""
    if not same_origin(request):
        raise HTTPException(403, "the form came from another site: nothing was done")
    expected = form_token(request)
    if expected is None:
        raise HTTPException(401, "you are not logged in: log in to do this")
    form = await request.form()
    given = form.get("_token")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            403, "the form's token is missing or is not this session's: reload the page and try again"
        )


def safe_next(target: str | None) -> str:
    """Where to go after login: a path on this site only (never another host)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target


def login_url(path: str) -> str:
    return "/login?next=" + quote(safe_next(path), safe="/")
