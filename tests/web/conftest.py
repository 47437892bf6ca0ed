"""The web pages' fixtures: a fresh QSOLVE_HOME, the app over it, a test client, accounts and logins.

home                   a tmp QSOLVE_HOME, set in the environment (and no QSOLVE_DATABASE_URL)
app                    create_app(home)
client                 a fastapi TestClient of app (its cookies kept between requests)
make_account(name, *roles, workflows=())  -> the account's access token
login(client, name, token)                -> the logged-in client (a 303 checked)
form_token(client)                        -> the session's form token, as its pages carry it
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from qsolve.web.app import create_app
from qsolve_pipeline.storage.state import connect

HIDDEN_TOKEN = re.compile(r'name="_token" value="([^"]+)"')
LOGOUT_TOKEN = re.compile(r'action="/logout"[^>]*>\s*<input type="hidden" name="_token" value="([^"]+)"')


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("QSOLVE_HOME", str(path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return path


@pytest.fixture
def app(home: Path) -> FastAPI:
    return create_app(home)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False) as c:
        yield c


@pytest.fixture
def make_account(home: Path) -> Callable[..., str]:
    def make(name: str, *roles: str, workflows: tuple[str, ...] | list[str] = ()) -> str:
        with connect(home=home) as db:
            return db.add_login(name, roles, workflows)

    return make


def form_token_of(client: TestClient) -> str:
    """The form token the logged-in session's pages carry (read from the page, as a browser would)."""
    page = client.get("/workflows")
    # every page's logout form carries the session's form token
    logout = LOGOUT_TOKEN.search(page.text)
    assert logout is not None, "not logged in"
    return logout.group(1)


def log_in(client: TestClient, name: str, token: str) -> TestClient:
    page = client.get("/login")
    assert page.status_code == 200
    login_token = HIDDEN_TOKEN.search(page.text).group(1)
    response = client.post("/login", data={"name": name, "token": token, "_token": login_token, "next": "/"})
    assert response.status_code == 303, response.text
    return client


@pytest.fixture
def login() -> Callable[[TestClient, str, str], TestClient]:
    return log_in


@pytest.fixture
def form_token() -> Callable[[TestClient], str]:
    return form_token_of


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory):
    """The seeded home of the workflow pages (tests/web/seeding.py), built once per run (the tests copy it:
    :func:`tests.web.seeding.copy`)."""
    from tests.once import built_once
    from tests.web.seeding import build

    return built_once(tmp_path_factory, "web-seeded", lambda root: build(root / "home", root / "work"))


@pytest.fixture
def seeded(seeded_template, home: Path, monkeypatch: pytest.MonkeyPatch):
    """The seeded home, copied into this test's ``home``, its host key endorsed by the tests' root key,
    which is configured on this machine (``QSOLVE_RECEIPT_ROOT``)."""
    from tests.qsolve.receipts.roots import trust_root
    from tests.web.seeding import copy

    trust_root(monkeypatch)
    return copy(seeded_template, home)
