"""``qsolve credits grant`` and ``qsolve credits balance``: the operator's side of the ledger."""

from __future__ import annotations

import pytest

from qsolve.cli import main
from storage.state import connect


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    return tmp_path / "home"


def test_a_grant_opens_the_account_and_the_balance_shows_it(home, capsys):
    assert main(["credits", "balance", "ada"]) == 1
    assert "no credit account 'ada'" in capsys.readouterr().err
    assert main(["credits", "grant", "ada", "12.5", "--memo", "first hardware quotes"]) == 0
    assert capsys.readouterr().out.strip() == "granted 12.5 credits to ada: its balance is 12.5"
    assert main(["credits", "grant", "ada", "2"]) == 0
    capsys.readouterr()
    assert main(["credits", "balance", "ada"]) == 0
    assert capsys.readouterr().out.strip() == "ada: 14.5 credits"
    with connect(home=home) as db:
        grants = [(t.kind, t.amount) for t in db.list_transfers() if t.destination == "ada"]
        assert grants == [("grant", 12.5), ("grant", 2)]


@pytest.mark.parametrize("credits", ["-3", "0", "lots", "NaN"])
def test_a_grant_that_does_not_read_is_refused_and_moves_nothing(home, capsys, credits):
    assert main(["credits", "grant", "ada", credits]) == 2
    assert "qsolve credits grant:" in capsys.readouterr().err
    with connect(home=home) as db:
        assert [t for t in db.list_transfers() if t.destination == "ada"] == []
