"""What a quote's confirmation authorises of a provider's money, held to before each job (issue 21, item
2; quantum-provider-protocol §7): a job past the quote's price of a job, past the run's authorised total,
in another currency, of an unknown cost where a price was shown, or priced where none was, is refused."""

from __future__ import annotations

import pytest

from qsolve.providers.cost import Authority, CostRefused, authorised_text, cost_text, provider_cost

PRICED = {
    "cost": "priced",
    "jobs": 3,
    "each": {"free": False, "amount": "2.50", "currency": "EUR", "unit": "second"},
    "total": {"amount": "7.50", "currency": "EUR", "jobs": 3},
}
UNKNOWN = {"cost": "unknown", "jobs": 3, "note": "the provider sets no price"}


def job(amount: str, currency: str = "EUR", **more) -> dict:
    return {"free": False, "amount": amount, "currency": currency, **more}


def test_jobs_within_the_quote_go_and_the_one_past_the_total_does_not():
    authority = Authority("q1", PRICED)
    assert [authority.admit("p", job("2.50"), False) for _ in range(3)] == ["quote q1"] * 3
    with pytest.raises(CostRefused, match=r"job 4 of the run was not sent: .*to 10.00.*at most 7.50 EUR"):
        authority.admit("p", job("2.50"), False)
    assert str(authority.spent) == "7.50"


@pytest.mark.parametrize(
    ("estimate", "why"),
    [
        (job("2.51"), "more than the 2.50 EUR quoted a job"),
        (job("1.00", "USD"), "another currency"),
        (job("1.00", at_least=True), "only the least it can come to"),
        ({"free": False, "priced": False, "unknown": "no price"}, "its cost is unknown"),
    ],
)
def test_a_job_of_another_cost_than_the_quote_showed_is_refused(estimate, why):
    with pytest.raises(CostRefused, match=why) as e:
        Authority("q1", PRICED).admit("p", estimate, False)
    assert e.value.reason == "run_too_large"


def test_an_unknown_cost_confirmed_as_unknown_takes_unknown_jobs_and_never_a_price():
    authority = Authority("q2", UNKNOWN)
    assert authority.admit("p", {"free": False, "unknown": "no estimate"}, False) == "quote q2"
    with pytest.raises(CostRefused, match="no provider price was shown"):
        authority.admit("p", job("0.01"), False)


def test_free_jobs_need_no_confirmation_and_a_free_quote_authorises_no_money():
    authority = Authority("q3", {"cost": "free", "each": {"free": True}})
    assert authority.admit("p", {"free": True}, True) is None
    with pytest.raises(CostRefused):
        authority.admit("p", job("0.01"), False)


def test_provider_cost_as_qsolve_quote_json_gives_it():
    assert provider_cost(PRICED) == {
        "amount": "7.50",
        "currency": "EUR",
        "jobs": 3,
        "each": "2.50",
        "unit": "second",
    }
    assert provider_cost(UNKNOWN) == "unknown"
    assert provider_cost({"cost": "free"}) is None
    unstated = PRICED | {"each": {"free": False, "amount": "2.50", "currency": "EUR"}}
    assert provider_cost(unstated) == {"amount": "7.50", "currency": "EUR", "jobs": 3, "each": "2.50"}


def test_the_price_is_shown_in_the_providers_own_currency_and_unit_per_job_and_in_total():
    """Issue 21: the amount in its own currency and unit, per job and in total; a unit the estimate does
    not state is not made up."""
    said = "the provider's price: 2.50 EUR a job, 7.50 EUR for 3 jobs, billed by the second"
    assert cost_text(PRICED) == said
    assert authorised_text(PRICED) == (
        "at most 7.50 EUR of the provider's money (2.50 EUR a job, 3 jobs, billed by the second)"
    )
    unstated = PRICED | {"each": {"free": False, "amount": "2.50", "currency": "EUR"}}
    assert cost_text(unstated) == "the provider's price: 2.50 EUR a job, 7.50 EUR for 3 jobs"
    assert "billed" not in authorised_text(unstated)
