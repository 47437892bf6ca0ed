"""The paused quote run's form: *seen unknown cost* only when the cost is unknown, and the quote's id
shown once."""

from __future__ import annotations

import pytest

from qsolve_pipeline.flows.hardware import (
    QuoteConfirmation,
    UnknownCostConfirmation,
    _shown,
    confirmation_form,
)
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.tasks.hardware import request_quotes
from tests.flows.hardware_setup import add_reference, publish


@pytest.mark.parametrize("unpriced", [False, True])
def test_the_form_asks_seen_unknown_cost_only_when_the_cost_is_unknown(home, tmp_path, unpriced) -> None:
    add_reference(*(["--unpriced"] if unpriced else []))
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:ref", home=home)
        limit = db.limits("hardware").credits
    form = confirmation_form(quote)
    assert form is (UnknownCostConfirmation if unpriced else QuoteConfirmation)
    assert ("seen_unknown_cost" in form.model_fields) is unpriced
    shown = _shown(quote, limit)
    assert shown.count(quote.id) == 1, shown
    assert ("Tick *seen unknown cost*" in shown) is unpriced
    # qsolve confirm resumes every form with the same input: a known cost's form takes it too
    assert form.model_validate({"confirm": True, "seen_unknown_cost": True}).confirm
