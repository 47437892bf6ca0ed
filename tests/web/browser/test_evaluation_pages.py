"""The evaluation pages in headless Chromium (issue 16, "Tests"): open two evaluation runs in compare and
see a decision difference; add a verdict as a reviewer; preview a task's prompts and drop a knowledge
draft as an editor. A screenshot of each page is kept (tests/artifacts/screenshots/)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.web.test_evaluations import Seeded, seeded
from tests.web.test_knowledge import edited_zip


@pytest.fixture
def runs(home: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Seeded:
    for name in ("QSOLVE_EVALUATION_CONFIG", "QCALEVAL_MODEL", "QSOLVE_TASK_KNOWLEDGE"):
        monkeypatch.delenv(name, raising=False)
    return seeded(home, tmp_path_factory)


def log_in(page, base: str, name: str, token: str, then: str) -> None:
    page.goto(f"{base}/login?next={then}")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", token)
    page.click("form.login button[type=submit]")
    page.wait_for_url(f"{base}{then}")


def test_two_runs_side_by_side_show_a_decision_difference(
    runs, live_server, browser_page, screenshot
) -> None:
    page = browser_page
    page.goto(f"{live_server}/evaluations")
    assert page.locator("#runs tbody tr").count() == 3
    other = page.locator(f'tr[data-run="{runs.other}"]')
    assert "completed" in other.inner_text() and "with examples" in other.inner_text()
    screenshot(page, "evaluation-runs")

    page.select_option("#compare-form select[name=a]", runs.model)
    page.select_option("#compare-form select[name=b]", runs.other)
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**/evaluations/compare?*")
    assert page.locator('#settings tr[data-setting="with_examples"]').get_attribute("data-differs") == "yes"
    decision = page.locator('details[data-entity="CheckT1 Q01"]')
    assert decision.get_attribute("data-kind") == "decision"
    assert "decision: success, status" in decision.locator("summary").inner_text()
    content = page.locator('details[data-entity="CheckT1 Q00"]')
    assert content.get_attribute("data-kind") == "content"
    body = decision.locator(".ev-body")
    assert not body.is_visible()  # closed until the row is opened
    decision.locator("summary").click()
    assert body.is_visible()
    changed = body.locator("table.ev-diff tr.changed").filter(has_text='"status": "SWEEP_TOO_SHORT"').first
    assert changed.is_visible() and '"status": "SUCCESS"' in changed.locator("td.l").inner_text()
    assert body.locator('.ev-prompt[data-question="calibration_diagnosis"] table.ev-diff').is_visible()
    screenshot(page, "evaluation-compare")


def test_a_reviewer_adds_a_verdict_and_sees_it_on_the_record(
    runs, live_server, browser_page, screenshot, make_account
) -> None:
    page = browser_page
    record = runs.records[runs.other]["Q01"]
    run_path = f"/evaluations/{runs.other}"
    page.goto(f"{live_server}{run_path}")
    section = page.locator(f"#record-{record}")
    assert section.locator("form.ev-verdict").count() == 0  # nobody logged in: no form
    assert (
        section.locator('tr[data-question="calibration_diagnosis"] pre.returned')
        .inner_text()
        .startswith("Status: SWEEP_TOO_SHORT")
    )
    assert (
        section.locator('tr[data-question="calibration_diagnosis"] pre.parsed').inner_text()
        == "SWEEP_TOO_SHORT"
    )
    assert "at 90% of its window" in section.locator("dd.tokens").inner_text()
    image = section.locator(".ev-figures img").first
    image.scroll_into_view_if_needed()
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")  # the figure itself, served

    log_in(page, live_server, "rita", make_account("rita", "reviewer"), run_path)
    section = page.locator(f"#record-{record}")
    form = section.locator("form.ev-verdict")
    form.locator("select[name=verdict]").select_option("agree")
    form.locator("select[name=area]").select_option("status")
    form.locator("textarea[name=comment]").fill("the sweep stops before the floor: SWEEP_TOO_SHORT is right")
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"**{run_path}#record-{record}")
    section = page.locator(f"#record-{record}")
    assert "rita: agree (status)" in section.locator(".current-verdicts").inner_text()
    assert "SWEEP_TOO_SHORT is right" in section.inner_text()
    screenshot(page, "evaluation-run")

    page.goto(f"{live_server}{run_path}/score")
    assert "2/2" in page.locator('#scores tr[data-task="total"]').inner_text()
    screenshot(page, "evaluation-scores")


def _drop(page, selector: str, name: str, data: bytes) -> None:
    """Drop a file on a drop zone as a person would drag it there (a DataTransfer with the file)."""
    page.locator(selector).evaluate(
        """(zone, [name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, {type: "application/zip"}));
            const how = {dataTransfer: transfer, bubbles: true, cancelable: true};
            zone.dispatchEvent(new DragEvent("dragover", how));
            zone.dispatchEvent(new DragEvent("drop", how));
        }""",
        [name, base64.b64encode(data).decode()],
    )


def test_an_editor_previews_the_prompts_and_drops_a_draft(
    live_server, browser_page, screenshot, make_account
) -> None:
    page = browser_page
    page.goto(f"{live_server}/knowledge")
    assert page.locator('#tasks tr[data-task="CheckT1"]').is_visible()
    screenshot(page, "knowledge")
    log_in(page, live_server, "eddie", make_account("eddie", "editor"), "/knowledge/CheckT1")
    page.check("#preview-form input[name=with_examples]")
    page.click("#preview-form button[type=submit]")
    page.wait_for_url("**/knowledge/CheckT1?with_examples=true*")
    published = page.locator("#preview-meta code.sha").inner_text()
    assert page.locator("#prompts details").count() == 6
    assert (
        "[figure]" in page.locator('#prompts details[data-question="calibration_diagnosis"] pre').inner_text()
    )
    assert page.locator("#examples img").count() == 3
    screenshot(page, "knowledge-preview")

    _drop(page, ".drop[data-for=draft-file]", "CheckT1-edit.zip", edited_zip())
    assert page.locator(".drop .drop-name").inner_text() == "CheckT1-edit.zip"
    page.click("#draft-upload button[type=submit]")
    page.wait_for_url("**/knowledge/CheckT1?draft=*")
    assert "Draft stored" in page.locator("#draft-stored").inner_text()
    assert page.locator("#preview-meta code.sha").inner_text() != published
    assert "at least 20 points" in page.locator("#criteria").inner_text()
    screenshot(page, "knowledge-draft")

    _drop(page, ".drop[data-for=draft-file]", "attack.zip", b"PK\x03\x04 not a zip at all")
    page.click("#draft-upload button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("section.error").get_attribute("data-status") == "422"
    assert "not a zip file" in page.locator("section.error").inner_text()
    screenshot(page, "knowledge-draft-refused")
