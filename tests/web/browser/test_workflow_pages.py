"""The workflow pages in a real browser: read a workflow page's sections, ask for a quote and confirm one
of two, verify a receipt by dropping its file. Each page is kept as a screenshot
(tests/artifacts/screenshots/)."""

from __future__ import annotations

import json

import httpx


def log_in(page, base: str, name: str, token: str) -> None:
    page.goto(f"{base}/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.click("form.login button[type=submit]")
    assert page.locator(".who .account").inner_text() == name


def test_open_a_workflow_page_and_read_its_sections(seeded, live_server, browser_page, screenshot):
    page = browser_page
    page.goto(f"{live_server}/workflows")
    card = page.locator('article.card[data-workflow="max-cut"]')
    assert "2 of 3 cases passed on sim- targets" in card.inner_text()
    screenshot(page, "workflow-list")

    with page.expect_navigation():
        card.locator("h2 a").click()
    assert page.locator("h1").inner_text().startswith("max-cut 1.0.0 (current)")
    assert "Headline accuracy 100.0%" in page.locator("#headline").inner_text()
    track = page.locator("#track-record tbody tr")
    assert track.count() == 3
    failing = page.locator('#track-record tr[data-case="complete-8-weighted"]').inner_text()
    assert "FAIL: gap 0.1 > max_gap 0.05" in failing
    assert "0.981" in page.locator("#noise-model-estimate").inner_text()
    hardware = page.locator(f'#on-hardware tr[data-run="{seeded.hardware_run}"]')
    said = hardware.inner_text()
    assert "1.0.0" in said and "simulated" in said and f"{len(seeded.receipts)} receipts verify" in said
    assert "0.9.0 (earlier)" in page.locator('#on-hardware tr[data-case="hardware-triangle"]').inner_text()
    assert page.locator("#earlier-results tbody tr").count() == 3
    charts = page.locator("#case-histories figure.chart")
    assert charts.count() == 6
    ring = page.locator('figure.chart[data-case="ring-6-with-chord"] svg')
    assert ring.locator("circle.accuracy").count() == 3 and ring.bounding_box()["width"] > 200
    assert page.locator("#versions li").count() == 2
    screenshot(page, "workflow-page")

    with page.expect_navigation():
        hardware.locator("td.receipts a").click()
    assert page.locator("#receipts tbody tr").count() == len(seeded.receipts)
    assert page.locator("#receipts .pass", has_text="valid").count() == len(seeded.receipts)
    assert page.locator("#receipts td.key-standing .pass").count() == len(seeded.receipts)  # endorsed keys
    screenshot(page, "run-receipts")

    page.goto(f"{live_server}/workflows/max-cut/versions/0.9.0")
    assert "(current: 1.0.0)" in page.locator("h1").inner_text()
    screenshot(page, "workflow-page-earlier-version")


def test_ask_for_a_quote_and_confirm_one_of_two(seeded, live_server, browser_page, screenshot, make_account):
    from qsolve_pipeline.storage.state import QuoteStatus, connect

    page = browser_page
    token = make_account(seeded.developer, "developer", workflows=[seeded.workflow])
    log_in(page, live_server, seeded.developer, token)
    page.goto(f"{live_server}/workflows/max-cut")
    with page.expect_navigation():
        page.click("#get-a-quote")
    page.fill("#ask input[name=target]", "provider:ref")
    # pricing every case takes its time on a busy machine: the click waits as long as the navigation it starts
    with page.expect_navigation(timeout=60_000):
        page.click("#ask button[type=submit]", timeout=60_000)
    quotes = page.locator("tr.quote[data-status=pending]")
    assert quotes.count() == 2
    for i in range(2):
        row = quotes.nth(i)
        assert "credits" in row.locator("td.price").inner_text()
        assert "at most" in row.locator(".amount").inner_text()  # the amount beside its button
    screenshot(page, "quotes-priced")

    first = quotes.nth(0)
    case, quote_id = first.get_attribute("data-case"), first.get_attribute("data-quote")
    with page.expect_navigation():
        first.locator(".quote-actions button[type=submit]").click()
    assert page.locator(f"#quote-{quote_id}").get_attribute("data-status") == "confirmed"
    assert "credits authorised for run" in page.locator(f"#quote-{quote_id}").inner_text()
    assert page.locator("tr.quote[data-status=pending]").count() == 1
    assert page.locator("tr.quote[data-status=pending]").get_attribute("data-case") != case
    screenshot(page, "quotes-one-confirmed")
    with connect(home=seeded.home) as db:
        assert db.get_quote(quote_id).status is QuoteStatus.CONFIRMED
        assert len(db.list_quotes(workflow="max-cut", status=QuoteStatus.PENDING)) == 1

    # asked again while this batch is open: refused as in progress
    page.fill("#ask input[name=target]", "provider:ref")
    with page.expect_navigation():
        page.click("#ask button[type=submit]")
    assert "Refused: in progress" in page.locator("#refusal").inner_text()
    screenshot(page, "quotes-refused-in-progress")


def test_verify_a_receipt_by_dropping_its_file(seeded, live_server, browser_page, screenshot, capsys):
    from qsolve.cli import main

    page = browser_page
    job = httpx.get(f"{live_server}/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json").text
    page.goto(f"{live_server}/verify")
    screenshot(page, "verify-empty")

    def drop(text: str, name: str) -> None:
        page.evaluate(
            """([text, name]) => {
                const data = new DataTransfer();
                data.items.add(new File([text], name, {type: "application/json"}));
                document.getElementById("job-drop").dispatchEvent(
                    new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
            }""",
            [text, name],
        )
        assert page.locator("#job-drop .drop-name").inner_text() == name

    drop(job, "receipt.json")
    capsys.readouterr()
    assert main(["receipt-key", "--json"]) == 0  # the host's key, as a trust list
    trust = json.dumps(json.loads(capsys.readouterr().out)["trust_list"]).encode()
    page.set_input_files(
        "input[name=trust]", files=[{"name": "keys.json", "mimeType": "application/json", "buffer": trust}]
    )
    page.fill("input[name=at]", "now")
    with page.expect_navigation():
        page.click("#verify-form button[type=submit]")
    verdict = page.locator("#verdict")
    assert verdict.get_attribute("data-valid") == "true"
    assert "receipt.json: valid" in verdict.locator("h2").inner_text()
    assert "listed" in verdict.inner_text()
    screenshot(page, "verify-valid")

    tampered = json.loads(job)
    tampered["result"]["counts"] = {"0": 1}
    drop(json.dumps(tampered), "tampered.json")
    with page.expect_navigation():
        page.click("#verify-form button[type=submit]")
    assert page.locator("#verdict").get_attribute("data-valid") == "false"
    reasons = page.locator("#verdict li[data-reason]")
    codes = [reasons.nth(i).get_attribute("data-reason") for i in range(reasons.count())]
    assert "digest_mismatch" in codes
    screenshot(page, "verify-not-valid")


def test_the_login_and_error_pages(seeded, live_server, browser_page, screenshot):
    page = browser_page
    page.goto(f"{live_server}/workflows/max-cut/quotes")
    assert "401" in page.locator("h1").inner_text()
    screenshot(page, "error-not-logged-in")
    with page.expect_navigation():
        page.click("main a[href^='/login']")
    screenshot(page, "login")
    response = page.goto(f"{live_server}/runs/no-such-run/receipts")
    assert response.status == 404 and "no-such-run" in page.locator("h1").inner_text()
    screenshot(page, "error-wrong-id")
