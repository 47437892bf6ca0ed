"""The web pages attacked: each test is an attack and shows what the attacker gets (nothing).

- logins and sessions: an open redirect through ``next``, a session id planted before login, a session
  replayed after logout, after a new login or after ``qsolve accounts token``, an account's existence
  told apart from a wrong token;
- forged changes: another session's form token, a forged ``Origin``, a GET to a POST route, a role or a
  workflow the account does not have;
- markup through every string a person controls (workflow and case names, evaluation answers, verdict
  comments, draft and job file names, query parameters, error messages), and the headers of every kind of
  response;
- files: path traversal and content sniffing on every route that serves bytes;
- uploads: an oversized body (declared or chunked), a zip bomb and a zip of too many entries, job files
  of deep nesting, huge numbers, NaN and duplicate keys (the strict JSON of tests/vectors/README.md);
- secrets: the access token, the session id or the form token in a page, a URL or the log of a real
  ``qsolve serve``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from qsolve.evaluation.drafts import MAX_ENTRIES, DraftStore
from qsolve_pipeline.storage.state import QuoteStatus, connect
from tests.qsolve.evaluation.test_drafts import TASK_MD, info
from tests.web.test_evaluations import seeded as evaluation_runs

XSS = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
ORIGIN = "http://127.0.0.1:8000"
LOGIN_TOKEN = re.compile(r'action="/login"[^>]*>\s*<input type="hidden" name="_token" value="([^"]+)"')
LOGIN_FAILED = "that account name and access token do not match an account that can log in"


def no_markup(page: str, *hostile: str) -> None:
    """None of ``hostile`` reaches the page as markup (each is shown, if at all, escaped)."""
    for text in hostile:
        assert text not in page, f"{text!r} reached the page unescaped"
    assert "<script>alert" not in page and "<img src=x" not in page


def login_form(client) -> str:
    page = client.get("/login")
    assert page.status_code == 200
    return LOGIN_TOKEN.search(page.text).group(1)


def post_login(client, name: str, token: str, nxt: str = "/"):
    return client.post(
        "/login", data={"name": name, "token": token, "_token": login_form(client), "next": nxt}
    )


def plant(client, session_id: str) -> None:
    """The browser's session cookie set to ``session_id`` (as a script, a proxy or a shared machine could)."""
    for cookie in list(client.cookies.jar):
        if cookie.name == "qsolve_session":
            client.cookies.jar.clear(cookie.domain, cookie.path, cookie.name)
    client.cookies.set("qsolve_session", session_id, domain="127.0.0.1")


def logged_in_as(client) -> str | None:
    found = re.search(r'<span class="account"[^>]*>([^<]+)</span>', client.get("/verify").text)
    return found.group(1) if found else None


# --- logins and sessions -------------------------------------------------------------------------------

REDIRECTS = [
    "//evil.example",
    "//evil.example/path",
    "///evil.example",
    "////evil.example",
    "https://evil.example",
    "http:evil.example",
    "http:/evil.example",
    "HTTPS://evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "\\/evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r/evil.example",
    " //evil.example",
    "\x00//evil.example",
    "%2F%2Fevil.example",
    "%2f%5cevil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "/login?next=//evil.example",
    "/x\r\nLocation: https://evil.example",
    "/x\r\nSet-Cookie: qsolve_session=planted",
    "evil.example",
    "@evil.example",
    "/\u2215evil.example",
    "/\uff0fevil.example",
]


@pytest.mark.parametrize("target", REDIRECTS)
def test_the_login_never_redirects_to_another_site(client, make_account, target) -> None:
    token = make_account("alice", "reviewer")
    page = client.get("/login", params={"next": target})
    no_markup(page.text)
    shown = re.search(r'name="next" value="([^"]*)"', page.text).group(1)
    assert shown == "/" or (shown.startswith("/") and not shown.startswith("//"))
    got = post_login(client, "alice", token, target)
    assert got.status_code == 303
    location = got.headers["location"]
    assert "\r" not in location and "\n" not in location and "\\" not in location
    resolved = urlsplit(urljoin(ORIGIN + "/", location))
    assert (resolved.scheme, resolved.netloc) == ("http", "127.0.0.1:8000"), location
    assert got.headers.get_list("set-cookie") and all(
        "planted" not in c for c in got.headers.get_list("set-cookie")
    )


def test_a_session_id_planted_before_login_is_not_kept_and_the_replaced_session_ends(
    client, make_account
) -> None:
    mallory, alice = make_account("mallory", "reviewer"), make_account("alice", "developer", workflows=["w"])
    # a cookie the attacker chose: never adopted, the login issues its own id
    plant(client, "attacker-chosen-session-id")
    assert post_login(client, "alice", alice).status_code == 303
    own = client.cookies["qsolve_session"]
    assert own != "attacker-chosen-session-id" and len(own) >= 40
    # the attacker's own live session planted in the victim's browser: the victim's login replaces it,
    # and the replaced session no longer works for anyone (not the attacker's copy either)
    attacker = type(client)(client.app, base_url=ORIGIN, follow_redirects=False)
    assert post_login(attacker, "mallory", mallory).status_code == 303
    planted = attacker.cookies["qsolve_session"]
    plant(client, planted)
    assert logged_in_as(client) == "mallory"
    assert post_login(client, "alice", alice).status_code == 303
    assert client.cookies["qsolve_session"] not in (planted, own)
    assert logged_in_as(client) == "alice"
    assert logged_in_as(attacker) is None
    # logging in again ends the session it replaces
    before = client.cookies["qsolve_session"]
    assert post_login(client, "alice", alice).status_code == 303
    plant(client, before)
    assert logged_in_as(client) is None


def test_no_session_survives_logout_or_a_reissued_token(client, home, make_account, login, form_token):
    token = make_account("rita", "editor")
    login(client, "rita", token)
    session, form = client.cookies["qsolve_session"], form_token(client)
    assert client.post("/logout", data={"_token": form}).status_code == 303
    plant(client, session)  # the old cookie and its form token, replayed
    assert logged_in_as(client) is None
    replay = client.post("/knowledge/drafts", data={"_token": form}, files={"file": ("a.zip", b"PK")})
    assert replay.status_code == 401
    assert client.post("/logout", data={"_token": form}).status_code == 401

    client.cookies.clear()
    login(client, "rita", token)
    session, form = client.cookies["qsolve_session"], form_token(client)
    with connect(home=home) as db:
        fresh = db.reissue_token("rita")  # what ``qsolve accounts token rita`` does
    assert logged_in_as(client) is None
    assert client.post("/logout", data={"_token": form}).status_code == 401
    assert post_login(client, "rita", token).status_code == 401  # the old token is gone too
    assert post_login(client, "rita", fresh).status_code == 303


def test_an_unknown_account_and_a_wrong_token_get_the_same_answer(client, make_account) -> None:
    real = make_account("alice", "reviewer")
    wrong = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    answers, times = {}, {"unknown": [], "wrong": []}
    for _ in range(15):
        for kind, name, token in (("unknown", "nobody", real), ("wrong", "alice", wrong)):
            form = login_form(client)
            start = time.perf_counter()
            got = client.post("/login", data={"name": name, "token": token, "_token": form, "next": "/"})
            times[kind].append(time.perf_counter() - start)
            problem = re.search(r'<p class="problem" role="alert">([^<]*)</p>', got.text).group(1)
            answers[kind] = (got.status_code, problem, "qsolve_session" in got.headers.get("set-cookie", ""))
    assert answers["unknown"] == answers["wrong"] == (401, LOGIN_FAILED, False)
    # the same work either way: no difference a stopwatch over loopback could lean on (a loose bound,
    # wider on a loaded machine, where every request is slow)
    medians = [statistics.median(times["unknown"]), statistics.median(times["wrong"])]
    assert abs(medians[0] - medians[1]) < max(0.02, 0.5 * max(medians))


# --- forged changes ------------------------------------------------------------------------------------


@pytest.fixture
def quote(seeded):
    """A pending quote of max-cut on provider:ref, paid by the seeded developer (added to the state
    database as pricing adds it, without running the estimate)."""
    with connect(home=seeded.home) as db:
        batch = db.request_batch(db.get_version(seeded.workflow), seeded.developer, target="provider:ref")
        made = db.add_quote(
            batch.id, 0, "hardware-single-edge", "provider:ref", "1.5", {"circuits": 3, "shots": 600},
            unknown_cost=False,
        )  # fmt: skip
        db.batch_priced(batch.id)
    return made


def status_of(seeded, quote_id: str) -> QuoteStatus:
    with connect(home=seeded.home) as db:
        return db.get_quote(quote_id).status


def test_a_quote_is_never_confirmed_by_a_forged_form(client, seeded, quote, make_account, login, form_token):
    dev = make_account(seeded.developer, "developer", workflows=[seeded.workflow])
    other = type(client)(client.app, base_url=ORIGIN, follow_redirects=False)
    login(other, "mallory", make_account("mallory", "developer", workflows=[seeded.workflow]))
    stolen = form_token(other)  # another session's token (of a developer of the same workflow, even)
    login(client, seeded.developer, dev)
    own = form_token(client)
    confirm, refuse = f"/quotes/{quote.id}/confirm", f"/quotes/{quote.id}/refuse"
    for path in (confirm, refuse):
        assert client.post(path, data={"_token": stolen}).status_code == 403
        assert client.post(path, data={"_token": own + "x"}).status_code == 403
        assert client.post(path, data={"_token": own[:-1]}).status_code == 403
        assert client.post(path, data={}).status_code == 403
        assert client.post(path, params={"_token": own}).status_code == 403  # in the URL: not a form
        assert client.post(path, json={"_token": own}).status_code == 403
        for origin in ("http://evil.example", "null", "http://127.0.0.1:8001", "https://127.0.0.1:8000"):
            assert client.post(path, data={"_token": own}, headers={"origin": origin}).status_code == 403
        for method in ("GET", "HEAD", "PUT", "DELETE", "PATCH"):
            assert client.request(method, path, params={"_token": own}).status_code == 405
    for link in (
        f"/workflows/{seeded.workflow}/quotes?confirm={quote.id}&_token={own}",
        f"{confirm}?_token={own}",
    ):
        client.get(link)
    assert status_of(seeded, quote.id) is QuoteStatus.PENDING
    # without Origin and Referer (a script-less client), the session's own token is what counts
    assert client.post(confirm, data={"_token": own}).status_code == 303
    assert status_of(seeded, quote.id) is QuoteStatus.CONFIRMED


@pytest.mark.parametrize(
    ("roles", "workflows", "status"),
    [
        (("reviewer",), (), 403),
        (("editor",), (), 403),
        (("reviewer", "editor"), (), 403),
        (("developer",), ("another-flow",), 403),  # the developer of workflow B
        (None, (), 401),  # nobody
    ],
)
def test_only_the_workflows_developer_asks_confirms_or_refuses(
    client, seeded, quote, make_account, login, form_token, roles, workflows, status
):
    data = {}
    if roles is not None:
        login(client, "mallory", make_account("mallory", *roles, workflows=workflows))
        data["_token"] = form_token(client)
    for path in (
        f"/quotes/{quote.id}/confirm",
        f"/quotes/{quote.id}/refuse",
        f"/workflows/{seeded.workflow}/quotes",
    ):
        got = client.post(path, data=data | {"target": "provider:ref"})
        assert got.status_code == status, path
        no_markup(got.text)
    assert client.get(f"/workflows/{seeded.workflow}/quotes").status_code == status
    assert status_of(seeded, quote.id) is QuoteStatus.PENDING
    with connect(home=seeded.home) as db:
        assert len(db.list_quotes(workflow=seeded.workflow)) == 3  # two seeded, this one: none priced


@pytest.fixture
def runs(home: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    for name in ("QSOLVE_EVALUATION_CONFIG", "QCALEVAL_MODEL", "QSOLVE_TASK_KNOWLEDGE"):
        monkeypatch.delenv(name, raising=False)
    return evaluation_runs(home, tmp_path_factory)


def test_no_verdict_from_an_editor_a_developer_or_another_sessions_token(
    client, runs, home, make_account, login, form_token
) -> None:
    record = runs.records[runs.model]["Q00"]
    path = f"/evaluations/records/{record}/verdicts"
    reviewer = type(client)(client.app, base_url=ORIGIN, follow_redirects=False)
    login(reviewer, "rita", make_account("rita", "reviewer"))
    stolen = form_token(reviewer)
    for name, roles in (("eddie", ("editor",)), ("dev", ("developer",))):
        client.cookies.clear()
        login(client, name, make_account(name, *roles, workflows=["max-cut"] if "developer" in roles else ()))
        for token in (form_token(client), stolen):
            assert client.post(path, data={"_token": token, "verdict": "agree"}).status_code == 403
    client.cookies.clear()
    assert client.post(path, data={"_token": stolen, "verdict": "agree"}).status_code == 401  # anonymous
    assert client.get(path, params={"verdict": "agree", "_token": stolen}).status_code == 405
    with connect(home=home) as db:
        assert db.verdict_history(record) == []


# --- markup ---------------------------------------------------------------------------------------------


def test_workflow_and_case_names_are_shown_as_text(client, seeded) -> None:
    from qsolve_pipeline.storage.trackrecord import file_rows
    from tests.web.seeding import home_set, row

    when = datetime.now(UTC)
    with home_set(seeded.home):
        file_rows(
            [
                row("c" * 32, "1.0.0", "case" + XSS + IMG, "sim-cpu", when, message=XSS),
                row("d" * 32, "1.0.0", "c2", "sim-cpu" + IMG, when, workflow="wf" + IMG),
            ],
            seeded.home,
        )
    for path in (
        "/",
        "/workflows",
        f"/workflows/{seeded.workflow}",
        f"/workflows/{seeded.workflow}/versions/1.0.0",
    ):
        got = client.get(path)
        assert got.status_code == 200, path
        no_markup(got.text, XSS, IMG)
    assert "case&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/workflows/{seeded.workflow}").text


def test_query_parameters_and_error_messages_are_shown_as_text(client, seeded) -> None:
    for path, params in [
        ("/login", {"next": "/" + IMG}),
        (f"/workflows/{IMG}", None),
        (f"/workflows/{seeded.workflow}/versions/{IMG}", None),
        (f"/runs/{IMG}/receipts", None),
        (f"/runs/{seeded.hardware_run}/receipts/{IMG}.json", None),
        (f"/workflows/{seeded.workflow}/quotes", {"confirmed": XSS}),
        ("/evaluations/compare", {"a": XSS, "b": IMG}),
        ("/evaluations/compare", {"a": XSS}),
        (f"/evaluations/{IMG}", None),
        (f"/evaluations/{IMG}/score", None),
        (f"/evaluations/records/{IMG}/figures/{'0' * 64}", None),
        (f"/evaluations/records/x/figures/{IMG}", None),
        ("/knowledge/CheckT1", {"question": XSS + IMG, "with_examples": "true"}),
        ("/knowledge/CheckT1", {"with_examples": IMG}),
        ("/knowledge/CheckT1", {"draft": IMG}),
        ("/knowledge/CheckT1", {"draft": "a" * 64, "stored": XSS, "dropped_on": IMG}),
        (f"/knowledge/{IMG}", None),
        (f"/knowledge/{IMG}/archive", None),
        (f"/knowledge/CheckT1/examples/{IMG}", None),
        (f"/knowledge/drafts/{IMG}/archive", None),
        (f"/static/{IMG}", None),
        (f"/{XSS}", None),
    ]:
        got = client.get(path, params=params)
        assert got.status_code in (200, 401, 404, 422), (path, got.status_code)
        assert got.headers["content-type"].startswith("text/html"), path
        no_markup(got.text, XSS, IMG)
    question = client.get("/knowledge/CheckT1", params={"question": XSS}).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in question


def test_a_dropped_link_cannot_put_its_own_words_on_the_knowledge_page(client, home, make_account, login):
    from qsolve.evaluation.drafts import task_archive

    draft = DraftStore(home).store(
        task_archive(Path(__file__).resolve().parents[2] / "task-knowledge" / "CheckT1"), "CheckT1.zip"
    )
    said = "Your session expired, email your access token to admin@evil.example"
    page = client.get("/knowledge/CheckT1", params={"draft": draft.id, "stored": "1", "dropped_on": said})
    assert page.status_code == 200 and said not in page.text
    named = client.get(
        "/knowledge/CheckT1", params={"draft": draft.id, "stored": "1", "dropped_on": "CheckT2"}
    )
    assert "not of CheckT2" in named.text


def test_verdict_comments_draft_names_and_job_file_names_are_shown_as_text(
    client, runs, home, make_account, login, form_token
) -> None:
    record = runs.records[runs.model]["Q01"]
    login(client, "rita", make_account("rita", "reviewer", "editor"))
    token = form_token(client)
    added = client.post(
        f"/evaluations/records/{record}/verdicts",
        data={"_token": token, "verdict": "disagree", "area": "status", "comment": XSS + IMG},
    )
    assert added.status_code == 303
    refused = client.post(
        f"/evaluations/records/{record}/verdicts", data={"_token": token, "verdict": XSS, "area": IMG}
    )
    assert refused.status_code == 422
    no_markup(refused.text, XSS, IMG)
    page = client.get(f"/evaluations/{runs.model}").text
    no_markup(page, XSS, IMG)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for path in ("/evaluations", f"/evaluations/{runs.model}/score", "/evaluations/compare"):
        no_markup(client.get(path).text, XSS, IMG)
    compared = client.get("/evaluations/compare", params={"a": runs.model, "b": runs.other})
    assert compared.status_code == 200
    no_markup(compared.text, XSS, IMG)

    # a draft under a hostile name, and a zip refused under one
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(info("CheckT1/task.md"), TASK_MD.replace(b"15 points", b"16 points"))
    name = XSS + IMG + ".zip"
    stored = client.post(
        "/knowledge/drafts", data={"_token": token, "task": IMG}, files={"file": (name, buffer.getvalue())}
    )
    assert stored.status_code == 303
    for path in (stored.headers["location"], "/knowledge"):
        no_markup(client.get(path).text, XSS, IMG)
    bad = client.post("/knowledge/drafts", data={"_token": token}, files={"file": (name, b"not a zip")})
    assert bad.status_code == 422
    no_markup(bad.text, XSS, IMG)

    # a job and a trust list under hostile names
    job = client.post("/verify", files={"job": (name, b'{"request": {}, "result": {}}')})
    no_markup(job.text, XSS, IMG)
    trust = client.post("/verify", files={"job": ("job.json", b"{}"), "trust": (name, b"[")})
    assert trust.status_code == 422
    no_markup(trust.text, XSS, IMG)
    times = client.post("/verify", files={"job": ("job.json", b"{}")}, data={"at": XSS, "skew_ms": IMG})
    assert times.status_code == 422
    no_markup(times.text, XSS, IMG)


def assert_guarded(response, path: str) -> None:
    """The headers every response carries (docs/web.md, "Bad input")."""
    h = response.headers
    csp = h.get("content-security-policy", "")
    for part in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'",
                 "base-uri 'none'", "frame-ancestors 'none'"):  # fmt: skip
        assert part in csp, (path, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert h.get("x-content-type-options") == "nosniff", path
    assert h.get("x-frame-options") == "DENY", path
    assert h.get("referrer-policy") == "same-origin", path
    assert "no-store" in h.get("cache-control", "") or "private" in h.get("cache-control", ""), path


def test_every_kind_of_response_carries_the_security_headers(client, seeded, make_account, login) -> None:
    responses = {
        "page": client.get(f"/workflows/{seeded.workflow}"),
        "404": client.get("/runs/nope/receipts"),
        "405": client.get("/logout"),
        "401": client.post("/knowledge/drafts"),
        "422": client.post("/verify"),
        "413 declared": client.post(
            "/verify", headers={"content-length": str(26 * 1024 * 1024)}, content=b""
        ),
        "413 not a number": client.post("/verify", headers={"content-length": "-1"}, content=b""),
        "static": client.get("/static/style.css"),
        "script": client.get("/static/drop.js"),
        "stylesheet": client.get("/evaluations/style.css"),
        "receipt": client.get(f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json"),
        "login": client.get("/login"),
        "redirect": post_login(client, "alice", make_account("alice", "reviewer")),
    }
    for what, response in responses.items():
        assert_guarded(response, what)
        if response.status_code >= 400:
            assert response.headers["cache-control"] == "no-store", what
    assert responses["413 declared"].status_code == responses["413 not a number"].status_code == 413


# --- files ----------------------------------------------------------------------------------------------

TRAVERSALS = [
    "../../../../etc/passwd",
    "..%2f..%2f..%2f..%2fetc%2fpasswd",
    "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "..%5c..%5c..%5cetc%5cpasswd",
    "%252e%252e%252fetc%252fpasswd",
    "....//....//etc/passwd",
    "%2fetc%2fpasswd",
    "/etc/passwd",
    "..%00/etc/passwd",
]


def _leaked(response) -> bool:
    body = response.content
    return b"root:" in body or b"def create_app" in body or b"[project]" in body or b"sqlite" in body.lower()


@pytest.mark.parametrize("bad", TRAVERSALS)
def test_no_route_that_serves_files_serves_one_outside_its_own(client, seeded, bad) -> None:
    run, digest = seeded.hardware_run, seeded.receipts[0]
    sha = "0" * 64
    for path in (
        f"/static/{bad}",
        f"/static/{bad}/qsolve/web/app.py",
        f"/runs/{run}/receipts/{bad}.json",
        f"/runs/{bad}/receipts/{digest}.json",
        f"/knowledge/{bad}/archive",
        f"/knowledge/CheckT1/examples/{bad}",
        f"/knowledge/CheckT1/examples/{sha}?draft={bad}",
        f"/knowledge/drafts/{bad}/archive",
        f"/evaluations/records/{bad}/figures/{sha}",
        f"/evaluations/records/x/figures/{bad}",
    ):
        got = client.get(path)
        assert got.status_code in (404, 405, 422), (path, got.status_code)
        assert not _leaked(got), path
        assert got.headers["content-type"].startswith("text/html")  # the error page, never a file


def test_a_receipt_is_served_only_by_its_run_as_a_download_never_as_a_page(client, seeded) -> None:
    from qsolve_pipeline.storage.blobs import BlobStore

    good = client.get(f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json")
    assert good.status_code == 200 and good.headers["content-type"] == "application/json"
    assert good.headers["content-disposition"].startswith("attachment;")
    assert good.headers["x-content-type-options"] == "nosniff"
    # any other blob of the store (a packed workflow, say) is not a receipt of the run
    other = BlobStore(seeded.home).put(b"<html><script>alert(1)</script></html>")
    got = client.get(f"/runs/{seeded.hardware_run}/receipts/{other}.json")
    assert got.status_code == 404 and b"<script>alert" not in got.content


# --- uploads --------------------------------------------------------------------------------------------


@pytest.fixture
def editor(client, make_account, login, form_token, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("QSOLVE_TASK_KNOWLEDGE", raising=False)
    login(client, "eddie", make_account("eddie", "editor"))
    return form_token(client)


def _nothing_stored(home: Path) -> bool:
    store = DraftStore(home)
    return not store.root.exists() or not any(store.root.iterdir())


def test_an_oversized_body_is_refused_before_it_is_read_declared_or_chunked(client, home, editor) -> None:
    chunk = b"\0" * (1024 * 1024)

    def body() -> Iterator[bytes]:
        yield b'--b\r\nContent-Disposition: form-data; name="_token"\r\n\r\n' + editor.encode() + b"\r\n"
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.zip"\r\n\r\n'
        for _ in range(40):
            yield chunk

    got = client.post(
        "/knowledge/drafts", content=body(), headers={"content-type": "multipart/form-data; boundary=b"}
    )
    assert got.status_code == 413 and "25 MiB" in got.text
    declared = client.post(
        "/knowledge/drafts",
        content=b"x",
        headers={"content-type": "multipart/form-data; boundary=b", "content-length": str(10**12)},
    )
    assert declared.status_code == 413
    assert _nothing_stored(home)


def test_a_zip_bomb_and_a_zip_of_too_many_entries_are_refused_and_nothing_is_stored(
    client, home, editor
) -> None:
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(info("CheckT1/task.md"), TASK_MD)
        zf.writestr(info("CheckT1/examples/zeros.md"), b"\0" * (60 * 1024 * 1024))
    assert len(bomb.getvalue()) < 200 * 1024  # 60 MiB in less than 200 KiB
    many = io.BytesIO()
    with zipfile.ZipFile(many, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(info("CheckT1/task.md"), TASK_MD)
        for i in range(MAX_ENTRIES * 20):
            zf.writestr(info(f"CheckT1/notes/{i}.md"), b"")
    for data, said in ((bomb.getvalue(), "MAX_EXTRACTED_BYTES"), (many.getvalue(), "MAX_ENTRIES")):
        start = time.perf_counter()
        got = client.post("/knowledge/drafts", data={"_token": editor}, files={"file": ("bomb.zip", data)})
        assert got.status_code == 422 and said in got.text and "nothing was stored" in got.text
        assert time.perf_counter() - start < 10
        assert _nothing_stored(home)


@pytest.mark.parametrize(
    "job",
    [
        b"[" * 200_000 + b"]" * 200_000,
        b'{"request":' * 100_000 + b"{}" + b"}" * 100_000,
        b'{"request": {}, "result": {}, "request": {}}',
        b'{"request": {"shots": 1' + b"0" * 100_000 + b"}, \"result\": {}}",
        b'{"request": {"shots": 1e999999}, "result": {}}',
        b'{"request": {"shots": NaN}, "result": {}}',
        b'{"request": {"shots": Infinity}, "result": {}}',
        b"\xef\xbb\xbf{}",
        b'{"request": "\\ud800", "result": {}}',
        b"\xff\xfe{}",
        b"{" * 8 * 1024 * 1024,
    ],
    ids=["deep-arrays", "deep-objects", "duplicate-keys", "huge-integer", "huge-exponent", "nan", "infinity",
         "bom", "lone-surrogate", "not-utf8", "past-8-MiB"],
)  # fmt: skip
def test_a_job_file_built_to_hurt_the_reader_is_a_verdict_not_a_crash(client, job) -> None:
    start = time.perf_counter()
    got = client.post("/verify", files={"job": ("job.json", job)})
    assert time.perf_counter() - start < 5
    assert got.status_code == 422, got.text[:500]
    reasons = re.findall(r'data-reason="([^"]+)"', got.text)
    assert reasons and set(reasons) <= {"unreadable", "not_a_job", "too_large"}, reasons
    assert "valid" in got.text and "500" not in re.search(r"<title>(.*?)</title>", got.text).group(1)


@pytest.mark.parametrize(
    "trust",
    [b"[" * 200_000, b'{"keys": [], "keys": []}', b'{"keys": [' + b"1" * 100_000 + b"]}", b"\0" * 1000],
)
def test_a_trust_list_built_to_hurt_the_reader_is_refused_whole(client, trust) -> None:
    got = client.post("/verify", files={"job": ("job.json", b"{}"), "trust": ("trust.json", trust)})
    assert got.status_code == 422 and "refused whole" in got.text and "nothing was judged" in got.text


# --- secrets --------------------------------------------------------------------------------------------


def test_no_page_or_url_carries_the_access_token_or_the_session_id(
    client, seeded, quote, make_account, form_token
) -> None:
    token = make_account(seeded.developer, "developer", "editor", "reviewer", workflows=[seeded.workflow])
    got = post_login(client, seeded.developer, token, "/verify")
    session = client.cookies["qsolve_session"]
    assert token not in got.headers["location"] and session not in got.headers["location"]
    form = form_token(client)
    assert form != session
    seen = [got]
    for path in (
        "/", "/workflows", f"/workflows/{seeded.workflow}", f"/workflows/{seeded.workflow}/quotes",
        f"/runs/{seeded.hardware_run}/receipts", "/verify", "/login", "/evaluations", "/knowledge",
        "/knowledge/CheckT1", "/nope", f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json",
    ):  # fmt: skip
        seen.append(client.get(path))
    seen.append(client.post(f"/quotes/{quote.id}/confirm", data={"_token": form}))
    seen.append(client.get(seen[-1].headers["location"]))
    seen.append(client.post("/verify", files={"job": ("j.json", b"{}")}))
    for response in seen:
        text = response.text
        assert token not in text and session not in text, response.request.url
        assert token_hash_of(session) not in text and token_hash_of(token) not in text
        for name, value in response.headers.items():
            if name != "set-cookie":
                assert token not in value and session not in value and form not in value, name
        assert form not in str(response.request.url)


def token_hash_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@pytest.fixture
def served(seeded, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``qsolve serve --port 0`` over the seeded home, as a person runs it: its base URL and its log."""
    log = tmp_path / "serve.log"
    env = {**os.environ, "QSOLVE_HOME": str(seeded.home)}
    env.pop("QSOLVE_DATABASE_URL", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "qsolve.cli", "serve", "--port", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
        )
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(rb"at (http://127\.0\.0\.1:\d+)/", log.read_bytes())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "qsolve serve did not start"
            time.sleep(0.05)
        base = found.group(1).decode()
        while True:  # the socket is bound before the banner; wait until uvicorn answers
            try:
                httpx.get(base + "/static/style.css", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "qsolve serve did not answer"
                time.sleep(0.05)
        yield base, log
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_a_real_server_logs_no_secret_and_refuses_a_huge_chunked_body(served, seeded, make_account) -> None:
    base, log = served
    token = make_account("alice", "reviewer", "editor")
    with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as c:
        # someone pastes the token into a URL: the server neither uses it nor writes it down
        assert c.get("/login", params={"name": "alice", "token": token}).status_code == 200
        page = c.get("/login", params={"next": "/verify"})
        login_token = LOGIN_TOKEN.search(page.text).group(1)
        wrong = c.post("/login", data={"name": "alice", "token": token[::-1], "_token": login_token})
        assert wrong.status_code == 401
        login_token = LOGIN_TOKEN.search(wrong.text).group(1)
        got = c.post(
            "/login", data={"name": "alice", "token": token, "_token": login_token, "next": "/verify"}
        )
        assert got.status_code == 303 and got.headers["location"] == "/verify"
        cookie = got.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        session = c.cookies["qsolve_session"]
        form = re.search(r'action="/logout"[^>]*>\s*<input type="hidden" name="_token" value="([^"]+)"',
                         c.get("/workflows").text).group(1)  # fmt: skip
        for path in ("/", f"/workflows/{seeded.workflow}", f"/runs/{seeded.hardware_run}/receipts", "/nope"):
            assert token not in c.get(path).text
        assert c.post("/knowledge/drafts", data={"_token": "forged"}).status_code == 403

        def chunks() -> Iterator[bytes]:
            yield b'--b\r\nContent-Disposition: form-data; name="job"; filename="job.json"\r\n\r\n'
            for _ in range(40):
                yield b"\0" * (1024 * 1024)

        huge = c.post(
            "/verify", content=chunks(), headers={"content-type": "multipart/form-data; boundary=b"}
        )
        assert huge.status_code == 413
        assert c.post("/logout", data={"_token": form}).status_code == 303
    deadline = time.monotonic() + 5
    while "POST /logout" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = log.read_text()
    assert "GET /workflows" in text and "POST /login" in text and "POST /logout" in text, text
    for secret in (token, session, form, token_hash_of(token), token_hash_of(session), token[::-1]):
        assert secret not in text, "a secret reached the log"
    assert "?" not in "".join(line for line in text.splitlines() if '"GET ' in line)  # paths only
