"""People and roles: logins with an access token kept only as a hash, sessions in an HttpOnly SameSite
cookie, the form token every change needs, and the 401 / 403 that say what is missing."""

from __future__ import annotations

import hashlib
import re

import pytest
import sqlalchemy as sa
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

from qsolve.web.people import Account, check_form, require, safe_next
from qsolve_pipeline.storage.state import AccountExists, connect
from tests.web.conftest import HIDDEN_TOKEN


def test_a_login_opens_a_session_in_an_httponly_strict_cookie(client, make_account, login):
    token = make_account("alice", "reviewer")
    page = client.get("/login")
    login_token = HIDDEN_TOKEN.search(page.text).group(1)
    response = client.post(
        "/login", data={"name": "alice", "token": token, "_token": login_token, "next": "/verify"}
    )
    assert response.status_code == 303 and response.headers["location"] == "/verify"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("qsolve_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # plain HTTP on loopback: a Secure cookie would never come back
    page = client.get("/workflows")
    assert 'class="account"' in page.text and "alice" in page.text and "Log out" in page.text
    assert token not in page.text and client.cookies["qsolve_session"] not in page.text


def test_the_token_and_the_session_are_kept_only_as_hashes(home, client, make_account, login):
    token = make_account("alice", "editor")
    login(client, "alice", token)
    session = client.cookies["qsolve_session"]
    with connect(home=home) as db, db.engine.connect() as c:
        dumped = "\n".join(
            str(tuple(r))
            for t in ("account_logins", "account_sessions")
            for r in c.execute(sa.text(f"SELECT * FROM {t}"))
        )
    assert token not in dumped and session not in dumped
    assert hashlib.sha256(token.encode()).hexdigest() in dumped
    assert hashlib.sha256(session.encode()).hexdigest() in dumped


@pytest.mark.parametrize(
    "name, token, status",
    [("alice", "wrong", 401), ("nobody", "x", 401), ("", "", 422), ("alice", "", 422)],
)
def test_a_wrong_login_says_so_and_opens_nothing(client, make_account, name, token, status):
    make_account("alice", "reviewer")
    page = client.get("/login")
    login_token = HIDDEN_TOKEN.search(page.text).group(1)
    response = client.post("/login", data={"name": name, "token": token, "_token": login_token})
    assert response.status_code == status
    assert 'role="alert"' in response.text and "qsolve_session" not in client.cookies
    if token:
        assert f'value="{token}"' not in response.text  # the token typed is never put back in the page


def test_a_login_without_its_forms_token_or_from_another_site_is_refused(client, make_account):
    token = make_account("alice", "reviewer")
    client.get("/login")
    assert client.post("/login", data={"name": "alice", "token": token}).status_code == 403
    page = client.get("/login")
    login_token = HIDDEN_TOKEN.search(page.text).group(1)
    response = client.post(
        "/login",
        data={"name": "alice", "token": token, "_token": login_token},
        headers={"origin": "http://evil.example"},
    )
    assert response.status_code == 403 and "qsolve_session" not in client.cookies


@pytest.mark.parametrize(
    "target, where",
    [("/verify", "/verify"), ("//evil.example/x", "/"), ("https://evil.example", "/"), ("/\\evil", "/")],
)
def test_after_login_it_goes_to_a_path_of_this_site_only(target, where):
    assert safe_next(target) == where


def test_logout_needs_the_form_token_and_ends_the_session(client, make_account, login, form_token):
    login(client, "alice", make_account("alice", "reviewer"))
    session = client.cookies["qsolve_session"]
    assert client.post("/logout", data={"_token": "forged"}).status_code == 403
    assert "Log out" in client.get("/workflows").text
    assert client.post("/logout", data={"_token": form_token(client)}).status_code == 303
    client.cookies.set("qsolve_session", session)  # the old cookie, replayed: the session is gone
    assert "Log out" not in client.get("/workflows").text


def test_a_reissued_token_ends_the_old_one_and_its_sessions(home, client, make_account, login):
    token = make_account("alice", "reviewer")
    login(client, "alice", token)
    with connect(home=home) as db:
        fresh = db.reissue_token("alice")
        assert db.check_login("alice", token) is None and db.check_login("alice", fresh).name == "alice"
    assert "Log out" not in client.get("/workflows").text


def test_accounts_and_their_roles(home):
    with connect(home=home) as db:
        db.add_login("dev", ["developer"], ["max-cut"])
        with pytest.raises(AccountExists):
            db.add_login("dev", ["reviewer"])
        with pytest.raises(ValueError, match="--role developer"):
            db.add_login("bob", ["reviewer"], ["max-cut"])
        with pytest.raises(ValueError, match="roles"):
            db.add_login("bob", ["owner"])
        with pytest.raises(ValueError, match="not an account name"):
            db.add_login("ledger:revenue", ["reviewer"])
        login = db.get_login("dev")
        assert login.roles == {"developer"} and login.workflows == {"max-cut"}
        assert db.workflow_developers("max-cut") == ["dev"]


REVIEWER = Depends(require("reviewer"))


def _guarded_app() -> FastAPI:
    app = FastAPI()

    @app.post("/change", dependencies=[Depends(check_form)])
    def change(account: Account = REVIEWER) -> dict:
        return {"by": account.name}

    return app


def test_require_and_check_form_say_401_then_403(home, make_account):
    from qsolve.web.app import create_app

    app = create_app(home)
    app.include_router(_guarded_app().router)
    with TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False) as client:
        assert client.post("/change", data={"_token": "x"}).status_code == 401
        page = client.post("/change")
        assert page.status_code == 401 and 'href="/login?next=/change"' in page.text
        from tests.web.conftest import form_token_of, log_in

        log_in(client, "ed", make_account("ed", "editor"))
        token = form_token_of(client)
        assert client.post("/change", data={"_token": token}).status_code == 403  # not a reviewer
        client.post("/logout", data={"_token": token})
        log_in(client, "rev", make_account("rev", "reviewer"))
        assert client.post("/change", data={"_token": "forged"}).status_code == 403
        assert client.post("/change", data={}).status_code == 403
        token = form_token_of(client)
        assert client.post("/change", data={"_token": token}).json() == {"by": "rev"}
        evil = client.post("/change", data={"_token": token}, headers={"origin": "http://evil.example"})
        assert evil.status_code == 403


def test_a_forged_session_cookie_is_nobody(client, make_account):
    make_account("alice", "reviewer")
    client.cookies.set("qsolve_session", "x" * 43)
    assert "Log out" not in client.get("/workflows").text
    client.cookies.set("qsolve_session", "x" * 5000)
    assert client.get("/workflows").status_code == 200


def test_the_login_page_carries_no_secret(client, make_account):
    make_account("alice", "reviewer")
    page = client.get("/login?next=/verify")
    assert page.status_code == 200
    assert re.search(r'name="token" type="password"', page.text)
    assert 'value="/verify"' in page.text


def test_a_lapsed_session_is_nobody(home, make_account):
    make_account("alice", "reviewer")
    with connect(home=home) as db:
        lapsed = db.open_session("alice", seconds=-1)
        live = db.open_session("alice")
        assert db.session_of(lapsed.session_id) is None
        assert db.session_of(live.session_id)[0].name == "alice"
