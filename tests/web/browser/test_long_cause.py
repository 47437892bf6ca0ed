"""A failing row whose cause is the longest the platform keeps (4000 characters a workflow chose, no
space in them) on the workflow page at 390 px: the page does not scroll sideways, its cell keeps
the width of any cell (32rem: the cause wraps in it), and the workflow's words are text, not markup."""

from __future__ import annotations

from datetime import UTC, datetime

from qsolve_pipeline.storage.trackrecord import file_rows
from tests.web.browser.test_narrow import sideways
from tests.web.seeding import home_set, row

CAUSE = "method maxcut failed: RuntimeError: <b>bold</b>" + "A" * 3950


def test_a_long_cause_wraps_in_its_cell_at_390_px(seeded, live_server, phone, screenshot) -> None:
    failing = row("c0000000000000000000000000000001", "1.0.0", "complete-5", "sim-cpu", datetime.now(UTC),
                  passed=False, accuracy=None, quantum=None, message=CAUSE)  # fmt: skip
    with home_set(seeded.home):
        file_rows([failing], seeded.home)
    phone.goto(live_server + "/workflows/max-cut")
    screenshot(phone, "narrow-long-cause")
    assert sideways(phone) == 0
    assert phone.locator("#track-record b").count() == 0  # the <b> is shown as text
    assert "<b>bold</b>" in phone.locator("#track-record").inner_text()
    cell = phone.locator("#track-record td", has_text="method maxcut failed")
    width = cell.evaluate("td => td.getBoundingClientRect().width")
    assert width <= 32 * 16 + 20, f"the cause's cell is {width} px wide"  # td's max-width, 32rem
