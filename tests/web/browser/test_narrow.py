"""The pages at phone width (390 px): nothing scrolls sideways (the header wraps, a wide table scrolls in
its own box), and every chart's runs can be reached by keyboard, not only by hovering."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.browser.conftest import PHONE_WIDTH, serving

WIDTH = PHONE_WIDTH
PAGES = ["/workflows", "/workflows/max-cut", "/workflows/max-cut/versions/0.9.0", "/verify", "/login",
         "/evaluations", "/knowledge"]  # fmt: skip


@pytest.fixture(scope="module")
def live_server(seeded_template, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeded home served once for the module: its tests only read its pages."""
    from tests.qsolve.receipts.roots import trust_root
    from tests.web.seeding import copy

    home = tmp_path_factory.mktemp("narrow") / "home"
    with pytest.MonkeyPatch.context() as mp:  # what the home and seeded fixtures set, for the module
        mp.setenv("QSOLVE_HOME", str(home))
        mp.delenv("QSOLVE_DATABASE_URL", raising=False)
        mp.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
        trust_root(mp)
        copy(seeded_template, home)
        with serving(home) as url:
            yield url


def sideways(page) -> int:
    """How far the page scrolls sideways, in CSS pixels (0: not at all)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.parametrize("path", PAGES)
def test_no_page_scrolls_sideways_at_390_px(live_server, phone, screenshot, path) -> None:
    phone.goto(live_server + path)
    assert phone.locator("h1").count() >= 1
    assert sideways(phone) == 0, f"{path} scrolls {sideways(phone)} px sideways at {WIDTH} px"
    screenshot(phone, "narrow" + path.replace("/", "-"))


def test_a_wide_table_scrolls_in_its_own_box(live_server, phone) -> None:
    phone.goto(live_server + "/workflows/max-cut")
    table = phone.locator("#track-record table")
    box = table.evaluate("t => [t.scrollWidth, t.clientWidth, getComputedStyle(t).overflowX]")
    assert box[0] > box[1] and box[2] == "auto", box  # wider than the screen, and scrolls itself


def test_the_runs_of_a_chart_are_reached_by_keyboard(live_server, phone) -> None:
    phone.goto(live_server + "/workflows/max-cut")
    runs = phone.locator('figure.chart[data-case="ring-6-with-chord"] details.runs')
    runs.locator("summary").focus()
    phone.keyboard.press("Enter")
    listed = runs.locator("li")
    assert listed.count() == 3 and listed.first.is_visible()
    assert "accuracy 96.0%" in runs.inner_text()
