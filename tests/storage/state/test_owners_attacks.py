"""Issue 33 attacked by an independent tester, at the state database's API (both backends): a hostile
second developer against names and versions (odd, equal and lower versions), the ledger's own accounts
given a provider's holding or an allowance, a workflow allowance stretched to another workflow, a lapsed
quote made to run, a stranger confirming as the holder. What the attacker gets is asserted; where the
attack succeeded (a finding, now closed) the test asserts the right behaviour."""

from __future__ import annotations

from datetime import timedelta

import pytest

from qsolve.workflow.semver import publication_error
from qsolve_pipeline.storage.state import (
    NameOwned,
    NotFound,
    PlatformAccount,
    ProviderNotAllowed,
    QuoteRefused,
    QuoteStatus,
    StateDB,
    VersionConflict,
    VersionOrder,
)
from qsolve_pipeline.storage.state._tables import quotes
from tests.storage.state.test_provider_owners import CASE, shared_quote

D1, D2, D3 = "a" * 64, "b" * 64, "c" * 64


# names and versions: a second developer, and the developer's own odd versions


@pytest.mark.parametrize(
    "odd",
    [
        "1.0.0+evil",  # build metadata: the same precedence as 1.0.0
        "1.0.0-rc.1",  # a pre-release of 1.0.0 is below it
        "0.9.9",
        "1.0.0-0",
    ],
)
def test_a_version_not_above_the_highest_is_refused_even_for_its_developer(db: StateDB, odd: str) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    with pytest.raises(VersionOrder, match=r"is not above 1\.0\.0, its highest published version"):
        db.publish_version("hwflow", odd, D2, [], account="dev1")
    assert db.get_version("hwflow").digest == D1
    assert [v for v in ("1.0.0", odd) if _published(db, "hwflow", v)] == ["1.0.0"]


def _published(db: StateDB, name: str, version: str) -> bool:
    try:
        db.get_version(name, version)
    except NotFound:
        return False
    return True


@pytest.mark.parametrize("odd", ["01.0.0", "1.0", "v1.0.0", "1.0.0-01", "1.0.0+", "1.0.0 "])
def test_a_version_that_is_no_semantic_version_is_refused(db: StateDB, odd: str) -> None:
    with pytest.raises(VersionOrder, match="is not a semantic version"):
        db.publish_version("fresh", odd, D1, [], account="dev1")
    assert db.workflow_developers("fresh") == []  # a refused first publication takes no name
    with pytest.raises(NotFound):
        db.get_version("fresh")


def test_a_version_with_non_ascii_digits_is_no_semantic_version() -> None:
    assert publication_error("1\u0660.0.0") is not None
    assert publication_error("1.0.0-1\u0660") is not None


def test_a_second_developer_cannot_publish_an_equal_version_with_build_metadata(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    for version in ("1.0.0+evil", "1.0.1", "1.0.0"):
        with pytest.raises(NameOwned, match=r"hwflow belongs to its developers \(dev1\)"):
            db.publish_version("hwflow", version, D2, [], account="mallory")
    assert db.get_version("hwflow").account == "dev1"


def test_the_same_version_again_with_other_content_is_refused_and_the_same_content_is_a_no_op(
    db: StateDB,
) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    with pytest.raises(VersionConflict):
        db.publish_version("hwflow", "1.0.0", D2, [], account="dev1")
    assert db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")[1] is False


def test_a_second_developer_cannot_add_itself_nor_be_added_by_another_stranger(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    db.publish_version("other", "1.0.0", D2, [], account="mallory")  # a developer of another name
    with pytest.raises(NameOwned):
        db.add_developer("hwflow", "mallory", by="mallory")
    with pytest.raises(NameOwned):
        db.add_developer("hwflow", "mallory2", by="mallory")
    assert db.workflow_developers("hwflow") == ["dev1"]


def test_an_honest_developers_second_version_becomes_the_current_one(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    assert db.publish_version("hwflow", "1.0.1-rc.1", D2, [], account="dev1")[1]
    assert db.publish_version("hwflow", "1.0.1", D3, [], account="dev1")[1]
    assert db.get_version("hwflow").version == "1.0.1"


# the ledger's own accounts


def test_the_ledgers_accounts_publish_nothing_and_are_given_no_role(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    with pytest.raises(PlatformAccount):
        db.publish_version("fresh", "1.0.0", D1, [], account="system")
    with pytest.raises(PlatformAccount):
        db.add_developer("hwflow", "system", by="dev1")
    with pytest.raises((PlatformAccount, ValueError)):
        db.add_developer("hwflow", "ledger:mint", by="dev1")
    with pytest.raises(PlatformAccount):
        db.add_login("system", ["developer"], ["hwflow"])
    version = db.get_version("hwflow")
    with pytest.raises(PlatformAccount):
        db.request_batch(version, "system")
    assert db.workflow_developers("hwflow") == ["dev1"]


def test_the_ledgers_system_account_holds_no_provider(db: StateDB) -> None:
    with pytest.raises(PlatformAccount):
        db.hold_provider("labref", "system")
    assert db.provider_holder("labref") is None


def test_a_provider_allows_none_of_the_ledgers_accounts(db: StateDB) -> None:
    db.hold_provider("labref", "lab")
    for grantee in ("system", "ledger:mint"):
        with pytest.raises((PlatformAccount, ValueError)):
            db.allow_provider("labref", "lab", account=grantee)
    assert db.provider_holding("labref").accounts == ()


# providers, allowances and confirmations


def test_a_workflow_allowance_is_no_allowance_for_another_workflow(db: StateDB) -> None:
    db.hold_provider("labref", "lab")
    db.allow_provider("labref", "lab", workflow="hwflow")
    assert db.check_provider_use("labref", "dev1", "hwflow") == "lab"
    for workflow in ("hwflow2", "HWFLOW", "hwflow ", "other"):
        with pytest.raises(ProviderNotAllowed, match="held by lab, who has not allowed dev1"):
            db.check_provider_use("labref", "dev1", workflow)


def test_an_allowance_taken_back_refuses_the_next_quote(db: StateDB) -> None:
    db.hold_provider("labref", "lab")
    db.allow_provider("labref", "lab", account="dev1")
    assert db.may_use_provider("labref", "dev1", "w")
    db.disallow_provider("labref", "lab", account="dev1")
    with pytest.raises(ProviderNotAllowed):
        db.check_provider_use("labref", "dev1", "w")


def test_a_stranger_and_the_payer_cannot_confirm_as_the_holder(db: StateDB) -> None:
    quote = shared_quote(db)
    for stranger in ("mallory", "LAB", "lab ", "system"):
        with pytest.raises(QuoteRefused, match="only its payer and its provider's holder lab confirms it"):
            db.confirm_quote(quote.id, stranger)
    db.confirm_quote(quote.id, "dev1")
    with pytest.raises(QuoteRefused, match="confirmed by dev1 already"):
        db.confirm_quote(quote.id, "dev1")  # the payer's second confirmation is not the holder's
    after = db.get_quote(quote.id)
    assert after.status is QuoteStatus.PENDING and after.holder_confirmed_by is None
    assert not db.claim_quote_run(quote.id, "worker", 60)
    with pytest.raises(QuoteRefused):
        db.refuse_quote(quote.id, "mallory")


def _lapse(db: StateDB, quote_id: str) -> None:
    """The quote's hour is over (its valid_until set into the past, as time would)."""
    with db.engine.begin() as connection:
        row = connection.execute(quotes.select().where(quotes.c.id == quote_id)).first()
        connection.execute(
            quotes.update()
            .where(quotes.c.id == quote_id)
            .values(valid_until=row.created_at - timedelta(seconds=1))
        )


def test_a_lapsed_quote_neither_confirms_nor_runs_nor_confirms_again(db: StateDB) -> None:
    quote = shared_quote(db)
    db.confirm_quote(quote.id, "lab")  # the holder in time
    _lapse(db, quote.id)
    with pytest.raises(QuoteRefused, match="lapsed"):
        db.confirm_quote(quote.id, "dev1")
    assert db.get_quote(quote.id).status is QuoteStatus.EXPIRED
    for who in ("dev1", "lab"):
        with pytest.raises(QuoteRefused, match="is expired: only a pending quote is confirmed"):
            db.confirm_quote(quote.id, who)
    assert db.quotes_to_run() == [] and not db.claim_quote_run(quote.id, "worker", 60)


def test_a_payer_confirmed_quote_whose_holder_is_late_lapses_and_never_runs(db: StateDB) -> None:
    quote = shared_quote(db)
    db.confirm_quote(quote.id, "dev1")
    _lapse(db, quote.id)
    with pytest.raises(QuoteRefused, match="lapsed"):
        db.confirm_quote(quote.id, "lab")
    assert db.expire_quotes() == []  # it lapsed already
    assert db.get_quote(quote.id).status is QuoteStatus.EXPIRED
    assert not db.claim_quote_run(quote.id, "worker", 60)


def test_a_co_developers_quote_on_a_shared_provider_runs_with_the_holders_confirmation(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [CASE], account="dev1")
    db.add_developer("hwflow", "dev2", by="dev1")
    db.hold_provider("labref", "lab")
    db.allow_provider("labref", "lab", workflow="hwflow")
    holder = db.check_provider_use("labref", "dev2", "hwflow")
    version = db.get_version("hwflow")
    batch = db.request_batch(version, "dev2")
    quote = db.add_quote(
        batch.id, 0, "hw", "provider:labref", 1, {"circuits": 1}, unknown_cost=False, holder=holder
    )
    db.batch_priced(batch.id)
    assert quote.version == "1.0.0" and quote.account == "dev2"
    with pytest.raises(QuoteRefused):
        db.confirm_quote(quote.id, "dev1")  # the other developer does not pay for it
    db.confirm_quote(quote.id, "dev2")
    assert not db.claim_quote_run(quote.id, "worker", 60)
    confirmed = db.confirm_quote(quote.id, "lab")
    assert (confirmed.confirmed_by, confirmed.holder_confirmed_by) == ("dev2", "lab")
    assert db.claim_quote_run(quote.id, "worker", 60)


def test_a_waiting_batch_blocks_no_one_and_a_new_request_lapses_it(db: StateDB) -> None:
    quote = shared_quote(db, workflow="hwflow")
    version = db.get_version("hwflow")
    db.add_login("ann", ["admin"])
    again = db.request_batch(version, "ann")  # not refused as in progress
    assert again.lapsed == (quote.id,)
    assert db.get_quote(quote.id).status is QuoteStatus.EXPIRED
    with pytest.raises(QuoteRefused):
        db.confirm_quote(quote.id, "dev1")
