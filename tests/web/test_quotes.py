"""Quotes in the page: the workflow's developer asks, sees each case's price or that its cost is unknown,
confirms each quote on its own with a POST carrying the page's form token; refusals shown as such."""

from __future__ import annotations

import re

import pytest

from qsolve_pipeline.storage.state import QuoteStatus, connect


@pytest.fixture
def developer(seeded, client, make_account, login):
    """The seeded workflow's developer, logged in (the credit account that paid for the seeded run)."""
    login(client, seeded.developer, make_account(seeded.developer, "developer", workflows=[seeded.workflow]))
    return seeded.developer


def ask(client, form_token, target: str = "provider:ref"):
    return client.post("/workflows/max-cut/quotes", data={"_token": form_token(client), "target": target})


def pending(home) -> list:
    with connect(home=home) as db:
        return db.list_quotes(workflow="max-cut", status=QuoteStatus.PENDING)


def test_ask_see_each_price_and_confirm_one_of_two(seeded, developer, client, form_token):
    # (one batch serves several checks: pricing runs each case's estimate in the sandbox)
    response = ask(client, form_token)
    assert response.status_code == 303 and response.headers["location"].startswith(
        "/workflows/max-cut/quotes"
    )
    first, second = pending(seeded.home)
    page = client.get("/workflows/max-cut/quotes").text
    for quote in (first, second):
        row = re.search(rf'<tr id="quote-{quote.id}"(.*?)</tr>', page, re.S).group(1)
        assert f"{quote.price.normalize():f} credits" in row and "the device is free" in row
        assert f'action="/quotes/{quote.id}/confirm"' in row
        amount = r'<span class="amount">at most [0-9.]+ credits</span>\s*<span class="provider-money">'
        assert re.search(amount, row)
        assert "and no provider money" in row and "this can spend your money</button>" in row
        assert f'data-version="{quote.version}"' in row and f"max-cut {quote.version}" in row

    # nothing is confirmed by a GET, a link, a forged form or a form from another site
    assert client.get(f"/quotes/{first.id}/confirm").status_code == 405
    assert client.post(f"/quotes/{first.id}/confirm").status_code == 403
    assert client.post(f"/quotes/{first.id}/confirm", data={"_token": "forged"}).status_code == 403
    other_site = client.post(
        f"/quotes/{first.id}/confirm",
        data={"_token": form_token(client)},
        headers={"origin": "http://evil.example"},
    )
    assert other_site.status_code == 403
    assert len(pending(seeded.home)) == 2

    confirmed = client.post(f"/quotes/{first.id}/confirm", data={"_token": form_token(client)})
    assert confirmed.status_code == 303
    with connect(home=seeded.home) as db:
        assert db.get_quote(first.id).status is QuoteStatus.CONFIRMED
        assert db.get_quote(first.id).authorised == first.price
        assert db.get_quote(second.id).status is QuoteStatus.PENDING  # confirmed on its own
    page = client.get(confirmed.headers["location"]).text
    assert "credits authorised for run" in page and "hardware deployment" in page

    # a second request while a confirmed quote of this batch is still to run is refused as in progress,
    # and prices nothing (a batch only awaiting confirmation would have lapsed instead: issue 33)
    again = ask(client, form_token)
    assert again.status_code == 409
    assert 'data-reason="in_progress"' in again.text and "Refused: in progress" in again.text
    assert len(pending(seeded.home)) == 1

    assert client.post(f"/quotes/{second.id}/refuse", data={"_token": "forged"}).status_code == 403
    assert client.post(f"/quotes/{second.id}/refuse", data={"_token": form_token(client)}).status_code == 303
    with connect(home=seeded.home) as db:
        assert db.get_quote(second.id).status is QuoteStatus.REFUSED

    twice = client.post(f"/quotes/{first.id}/confirm", data={"_token": form_token(client)})
    assert twice.status_code == 409 and "only a pending quote is confirmed" in twice.text
    wrong = client.post("/quotes/nope123/confirm", data={"_token": form_token(client)})
    assert wrong.status_code == 404 and "no quote &#39;nope123&#39;" in wrong.text
    missing = client.get("/workflows/no-such-flow/quotes")
    assert missing.status_code == 404 and "no published version no-such-flow" in missing.text


def test_only_the_workflows_developer_asks_and_confirms(seeded, client, make_account, login, form_token):
    assert client.get("/workflows/max-cut/quotes").status_code == 401
    anonymous = client.post("/workflows/max-cut/quotes", data={"_token": "x", "target": "provider:ref"})
    assert anonymous.status_code == 401
    login(client, "other", make_account("other", "developer", workflows=["generic-qubo"]))
    assert client.get("/workflows/max-cut/quotes").status_code == 403
    assert ask(client, form_token).status_code == 403
    client.post("/logout", data={"_token": form_token(client)})
    login(client, "rev", make_account("rev", "reviewer", "editor"))
    page = client.get("/workflows/max-cut/quotes")
    assert page.status_code == 403 and "not a developer" in page.text
    assert pending(seeded.home) == []


def test_a_device_outside_the_manifests_targets_is_target_not_supported(
    seeded, developer, client, form_token
):
    response = ask(client, form_token, target="fake:fez")
    assert response.status_code == 422
    assert 'data-reason="target_not_supported"' in response.text and "targets.qpu" in response.text
    assert pending(seeded.home) == []


def test_an_unknown_cost_is_confirmed_only_when_seen(seeded, developer, client, form_token):
    ask(client, form_token, target="provider:lab")
    first, _ = pending(seeded.home)
    page = client.get("/workflows/max-cut/quotes").text
    row = re.search(rf'<tr id="quote-{first.id}"(.*?)</tr>', page, re.S).group(1)
    assert "the cost is unknown" in row and 'name="seen_unknown" value="yes" required' in row
    unseen = client.post(f"/quotes/{first.id}/confirm", data={"_token": form_token(client)})
    assert unseen.status_code == 422 and "Not confirmed: the cost is unknown" in unseen.text
    assert first.id in [q.id for q in pending(seeded.home)]
    seen = client.post(
        f"/quotes/{first.id}/confirm", data={"_token": form_token(client), "seen_unknown": "yes"}
    )
    assert seen.status_code == 303
    with connect(home=seeded.home) as db:
        assert db.get_quote(first.id).status is QuoteStatus.CONFIRMED


def test_an_admin_asks_for_quotes_in_their_own_account_and_a_reviewer_may_not(
    seeded, client, make_account, login, form_token
):
    """benchmarks-and-gates.md: the developer asks for a quote, "admins can too"; the quotes are then the
    admin's, paid from the admin's credits. A reviewer (no admin, no developer of it) is refused."""
    login(client, "rita", make_account("rita", "reviewer"))
    assert client.get("/workflows/max-cut/quotes").status_code == 403
    assert ask(client, form_token).status_code == 403
    assert pending(seeded.home) == []
    client.cookies.clear()
    login(client, "ann", make_account("ann", "admin"))
    assert client.get("/workflows/max-cut").text.count('id="get-a-quote"') == 1
    assert ask(client, form_token).status_code == 403  # provider:ref is dev's: an admin is no holder
    with connect(home=seeded.home) as db:
        db.allow_provider("ref", "dev", account="ann")
    assert ask(client, form_token).status_code == 303
    quotes = pending(seeded.home)
    assert len(quotes) == 2 and {q.account for q in quotes} == {"ann"}


def test_a_provider_is_offered_and_spent_on_only_as_its_holder_allows_and_confirms(
    seeded, client, make_account, login, form_token
):
    """Issue 33, item 3: ``provider:labref`` is held by ``lab`` (its cost unknown, so not free). dev1, a
    developer of max-cut, is not offered it, and a hand-made request naming it is refused; once allowed,
    dev1's confirmation does not start the run: lab's, logged in, does."""
    from qsolve.cli import main
    from tests.flows.hardware_setup import REFERENCE

    cmd = ["providers", "add", "labref", "--holder", "lab", "--process", "--", *REFERENCE, "--unpriced"]
    assert main(cmd) == 0
    login(client, "dev1", make_account("dev1", "developer", workflows=[seeded.workflow]))
    page = client.get("/workflows/max-cut/quotes").text
    offered = re.search(r'<datalist id="targets">(.*?)</datalist>', page, re.S).group(1)
    assert "provider:" not in offered  # labref is lab's, ref and lab are dev's: none allows dev1
    refused = ask(client, form_token, target="provider:labref")
    assert refused.status_code == 403 and 'data-reason="provider_not_allowed"' in refused.text
    assert "held by lab, who has not allowed dev1" in refused.text
    assert pending(seeded.home) == []

    with connect(home=seeded.home) as db:
        db.allow_provider("labref", "lab", account="dev1")
    assert '<option value="provider:labref">' in client.get("/workflows/max-cut/quotes").text
    assert ask(client, form_token, target="provider:labref").status_code == 303
    first, _ = pending(seeded.home)
    assert first.holder == "lab"
    yes = {"_token": form_token(client), "seen_unknown": "yes"}
    assert client.post(f"/quotes/{first.id}/confirm", data=yes).status_code == 303
    with connect(home=seeded.home) as db:
        assert db.get_quote(first.id).status is QuoteStatus.PENDING  # awaiting lab: nothing runs
    row = re.search(
        rf'<tr id="quote-{first.id}"(.*?)</tr>', client.get("/workflows/max-cut/quotes").text, re.S
    )
    assert "awaiting the confirmation of lab (the provider&#39;s holder)" in row.group(1)

    lab = client  # the same browser, logged in as the holder (no role on max-cut)
    lab.cookies.clear()
    login(lab, "lab", make_account("lab", "reviewer"))
    assert lab.get("/workflows/max-cut/quotes").status_code == 403
    listed = lab.get("/providers/quotes").text
    assert f'id="quote-{first.id}"' in listed and "dev1" in listed
    done = lab.post(f"/quotes/{first.id}/confirm", data={"_token": form_token(lab), "seen_unknown": "yes"})
    assert done.status_code == 303 and done.headers["location"].startswith("/providers/quotes")
    with connect(home=seeded.home) as db:
        confirmed = db.get_quote(first.id)
    assert confirmed.status is QuoteStatus.CONFIRMED
    assert (confirmed.confirmed_by, confirmed.holder_confirmed_by) == ("dev1", "lab")
