"""The application: every error through the error page with its status, the headers every page carries,
bodies past the limit refused before they are read, the static files and templates installed."""

from __future__ import annotations

import re

import pytest

from qsolve.web.app import MAX_BODY


def test_an_unknown_page_and_a_wrong_method_say_so(client):
    page = client.get("/no/such/page")
    assert page.status_code == 404 and "404: no page at /no/such/page" in page.text
    assert page.headers["content-type"].startswith("text/html")
    page = client.put("/verify")
    assert page.status_code == 405 and "PUT is not how /verify is used" in page.text


def test_every_page_carries_the_security_headers(client):
    for path in ("/workflows", "/login", "/no-such", "/static/style.css"):
        headers = client.get(path).headers
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
    assert client.get("/workflows").headers["cache-control"] == "no-store"


def test_a_body_past_the_limit_is_refused_before_it_is_read(client):
    response = client.post("/verify", content=b"x", headers={"content-length": str(MAX_BODY + 1)})
    assert response.status_code == 413 and "larger than this server reads" in response.text

    def chunks():  # no content-length: counted as it comes
        for _ in range(MAX_BODY // (1024 * 1024) + 2):
            yield b"x" * (1024 * 1024)

    response = client.post(
        "/verify", content=chunks(), headers={"content-type": "multipart/form-data; boundary=b"}
    )
    assert response.status_code == 413 and "larger than this server reads" in response.text


def test_the_pages_assets_are_served_and_scripts_are_never_inline(client):
    assert "drop" in client.get("/static/drop.js").text
    assert client.get("/static/style.css").status_code == 200
    for path in ("/workflows", "/login", "/verify"):
        html = client.get(path).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), path
        assert not re.search(r"\son[a-z]+=", html) and " style=" not in html, path


def test_the_home_is_the_one_given(tmp_path):
    from qsolve.web.app import create_app

    assert create_app(tmp_path / "h").state.home == (tmp_path / "h").resolve()


@pytest.mark.parametrize("path", ["/login?token=abc&name=alice", "/workflows?token=abc"])
def test_a_token_in_a_url_logs_nobody_in(client, make_account, path):
    make_account("alice", "reviewer")
    assert "Log out" not in client.get(path).text


def test_a_failure_inside_a_page_is_a_500_page_that_names_no_detail(home):
    from fastapi import APIRouter
    from fastapi.testclient import TestClient

    from qsolve.web.app import create_app

    app = create_app(home)
    router = APIRouter()

    @router.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret-detail")

    app.include_router(router)
    with TestClient(app, raise_server_exceptions=False) as client:
        page = client.get("/boom")
    assert page.status_code == 500 and "RuntimeError" in page.text and "secret-detail" not in page.text
