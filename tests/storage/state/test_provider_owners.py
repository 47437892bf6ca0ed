"""A provider has a holder, and only those it allows spend on it (issue 33, item 3), as a second account,
a second machine and a database writer would try it: one holder per name whatever machine adds it, no
allowance changed but by the holder or an admin, no quote for an account not allowed, and no run of a
priced quote on another's provider before its holder confirmed it, whatever the quote's status says."""

from __future__ import annotations

import pytest

from qsolve_pipeline.storage.state import (
    NotFound,
    ProviderHeld,
    ProviderNotAllowed,
    QuoteRefused,
    QuoteStatus,
    StateDB,
    connect,
)
from qsolve_pipeline.storage.state._tables import quotes
from tests.storage.state.conftest import default_settings

CASE = {"name": "hw", "input": {"nodes": 2}, "target": "provider:labref", "seed": 1}


def test_two_machines_adding_one_name_under_two_holders_leave_one_holder(database_url, tmp_path) -> None:
    with (
        connect(database_url, home=tmp_path / "a", settings=default_settings()) as a,
        connect(database_url, home=tmp_path / "b", settings=default_settings()) as b,
    ):
        assert a.hold_provider("labref", "lab") is True
        with pytest.raises(ProviderHeld, match=r"held by lab: a provider name has one holder") as e:
            b.hold_provider("labref", "dev1")
        assert (e.value.holder, e.value.provider) == ("lab", "labref")
        assert b.hold_provider("labref", "lab") is False  # its holder adding it on a second machine
        assert a.provider_holder("labref") == b.provider_holder("labref") == "lab"


def test_only_the_holder_or_an_admin_changes_whom_it_allows(db: StateDB) -> None:
    db.hold_provider("labref", "lab")
    with pytest.raises(
        ProviderNotAllowed, match="dev1 is not the holder of provider labref .its holder is lab"
    ):
        db.allow_provider("labref", "dev1", account="dev1")  # allowing oneself
    with pytest.raises(ProviderNotAllowed):
        db.disallow_provider("labref", "dev1", workflow="w")
    assert db.provider_holding("labref").allowed() == "no one else"
    assert db.allow_provider("labref", "lab", account="dev1") is True
    assert db.allow_provider("labref", "lab", account="dev1") is False  # there already
    db.add_login("ann", ["admin"])
    assert db.allow_provider("labref", "ann", workflow="w") is True
    held = db.provider_holding("labref")
    assert (held.holder, held.accounts, held.workflows) == ("lab", ("dev1",), ("w",))
    assert db.disallow_provider("labref", "lab", account="dev1") is True
    with pytest.raises(NotFound, match="no recorded holder"):
        db.allow_provider("unheld", "lab", account="dev1")


def test_a_quote_is_taken_only_for_the_holder_and_those_it_allows(db: StateDB) -> None:
    db.hold_provider("labref", "lab")
    with pytest.raises(ProviderNotAllowed, match=r"held by lab, who has not allowed dev1") as e:
        db.check_provider_use("labref", "dev1", "w")
    assert e.value.holder == "lab"
    assert db.check_provider_use("labref", "lab", "w") == "lab"
    db.allow_provider("labref", "lab", workflow="w")  # w's quotes, not another workflow's
    assert db.may_use_provider("labref", "dev1", "w") and not db.may_use_provider("labref", "dev1", "other")
    db.allow_provider("labref", "lab", account="dev1")
    assert db.may_use_provider("labref", "dev1", "other")
    db.disallow_provider("labref", "lab", account="dev1")
    assert not db.may_use_provider("labref", "dev1", "other")
    with pytest.raises(ProviderNotAllowed, match="no recorded holder"):  # configured before holders
        db.check_provider_use("old", "whoever", "w")


def shared_quote(db: StateDB, holder: str | None = "lab", workflow: str = "w"):
    version, _ = db.publish_version(workflow, "1.0.0", "d" * 64, [CASE])
    batch = db.request_batch(version, "dev1")
    quote = db.add_quote(
        batch.id,
        0,
        "hw",
        "provider:labref",
        1,
        {"circuits": 1, "shots": 10},
        unknown_cost=False,
        holder=holder,
    )
    db.batch_priced(batch.id)
    return quote


def test_a_priced_quote_on_a_shared_provider_runs_only_once_its_holder_confirmed(db: StateDB) -> None:
    quote = shared_quote(db)
    assert quote.holder == "lab" and quote.awaiting == "dev1 (it pays) and lab (the provider's holder)"
    with pytest.raises(QuoteRefused, match="only its payer and its provider's holder lab confirms it"):
        db.confirm_quote(quote.id, "mallory")
    paid = db.confirm_quote(quote.id, "dev1")
    assert paid.status is QuoteStatus.PENDING and paid.confirmed_by == "dev1"
    assert paid.awaiting == "lab (the provider's holder)"
    with pytest.raises(QuoteRefused, match="confirmed by dev1 already: it awaits lab"):
        db.confirm_quote(quote.id, "dev1")
    assert db.quotes_to_run() == [] and not db.claim_quote_run(quote.id, "worker", 60)

    held = db.confirm_quote(quote.id, "lab")
    assert held.status is QuoteStatus.CONFIRMED and held.awaiting is None
    assert (held.confirmed_by, held.holder_confirmed_by) == ("dev1", "lab")
    assert held.holder_confirmed_at is not None and held.authorised is not None
    assert [q.id for q in db.quotes_to_run()] == [quote.id]
    assert db.claim_quote_run(quote.id, "worker", 60)


def test_the_holder_may_confirm_first_and_may_refuse(db: StateDB) -> None:
    quote = shared_quote(db)
    assert db.confirm_quote(quote.id, "lab").status is QuoteStatus.PENDING  # the payer has not confirmed
    assert db.confirm_quote(quote.id, "dev1").status is QuoteStatus.CONFIRMED
    other = shared_quote(db, workflow="w2")
    assert db.refuse_quote(other.id, "lab").status is QuoteStatus.REFUSED


def test_a_database_writer_marking_it_confirmed_does_not_start_its_run(db: StateDB) -> None:
    """The run claim asks the row for both confirmations: a status written by hand is not one."""
    quote = shared_quote(db)
    db.confirm_quote(quote.id, "dev1")
    with db.engine.begin() as connection:
        connection.execute(quotes.update().where(quotes.c.id == quote.id).values(status="confirmed"))
    assert db.quotes_to_run() == []
    assert not db.claim_quote_run(quote.id, "worker", 60)
    with db.engine.begin() as connection:  # nor a payer's confirmation written in another's name
        connection.execute(quotes.update().where(quotes.c.id == quote.id).values(holder_confirmed_by="dev1"))
    assert not db.claim_quote_run(quote.id, "worker", 60)


def test_a_quote_on_ones_own_provider_needs_no_second_confirmation(db: StateDB) -> None:
    quote = shared_quote(db, holder="dev1")  # the payer holds it (add_quote keeps no holder then)
    assert quote.holder is None
    assert db.confirm_quote(quote.id, "dev1").status is QuoteStatus.CONFIRMED
    assert db.claim_quote_run(quote.id, "worker", 60)
