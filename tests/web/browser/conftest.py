"""Browser tests: the real pages served by uvicorn on 127.0.0.1, driven by Playwright in Debian's
headless chromium (``/usr/bin/chromium``, by its path: no browser is downloaded).

    live_server        the base URL of create_app(home) served in a thread on a free loopback port
    browser_page       a fresh Playwright page (its own context: no cookies from another test)
    phone              a fresh page at 390 px, in its module's context (for pages read logged out)
    screenshot(page, name)   a full-page PNG at tests/artifacts/screenshots/NAME.png (kept as artifacts)

Without chromium or Playwright the tests are skipped, saying why (``.ci/run`` installs both).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("QSOLVE_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
TIMEOUT_MS = 15_000
PHONE_WIDTH = 390  # a phone's width, CSS pixels


@pytest.fixture
def live_server(home: Path) -> Iterator[str]:
    with serving(home) as url:
        yield url


@contextlib.contextmanager
def serving(home: Path) -> Iterator[str]:
    """create_app(home) served by uvicorn in a thread on a free loopback port: its base URL."""
    import uvicorn

    from qsolve.web.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(home), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def _browser() -> Iterator[object]:
    # a module's, not the session's: Playwright's sync API leaves its event loop running on the main
    # thread while it is open, and Prefect's sync-or-async calls (State.result, Artifact.get, ...) then
    # return coroutines in every later test of the process (the suite's workers run other files after)
    # missing parts fail the browser tests rather than skip them: .ci/run installs both
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is not installed: pip install -e '.[test]'")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


@pytest.fixture
def browser_page(_browser) -> Iterator[object]:
    context = _browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def screenshot() -> Callable[[object, str], Path]:
    def take(page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture(scope="module")
def _phone_context(_browser) -> Iterator[object]:
    context = _browser.new_context(viewport={"width": PHONE_WIDTH, "height": 844})
    context.set_default_timeout(15_000)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def phone(_phone_context) -> Iterator[object]:
    """A new page at phone width (the module's context: the tests log in nowhere, so share no cookie)."""
    page = _phone_context.new_page()
    try:
        yield page
    finally:
        page.close()
