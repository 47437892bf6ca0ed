"""``qsolve credits grant`` and ``qsolve credits balance``: the operator's side of the ledger."""

from __future__ import annotations

from decimal import Decimal

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


def test_the_limit_command_writes_per_run_limit_and_keeps_the_rest_of_the_file(home, capsys, monkeypatch):
    from storage.state import CreditSettings

    monkeypatch.delenv("QSOLVE_CREDITS_FILE", raising=False)
    monkeypatch.delenv("QSOLVE_CREDITS_PER_RUN_LIMIT", raising=False)
    assert CreditSettings.load().per_run_limit == 50
    assert main(["credits", "limit", "88"]) == 0
    assert capsys.readouterr().out.strip() == f"the per-run limit is 88 credits ({home / 'credits.toml'})"
    assert CreditSettings.load().per_run_limit == 88
    (home / "credits.toml").write_text(
        "# the operator's\nhistory_run_limit = 30\nper_run_limit = 88\n\n[prices.'ibm:']\nper_shot = 0.001\n"
    )
    assert main(["credits", "limit", "100.5"]) == 0
    settings = CreditSettings.load()
    assert (settings.per_run_limit, settings.history_run_limit) == (Decimal("100.5"), 30)
    assert settings.price("ibm:ibm_fez").per_shot == Decimal("0.001")
    assert (home / "credits.toml").read_text().startswith("# the operator's\nhistory_run_limit = 30\n")
    assert sorted(p.name for p in home.iterdir()) == ["credits.toml"]  # no partial file left
    for bad in ("-1", "lots", "Infinity"):
        assert main(["credits", "limit", bad]) == 2
    assert CreditSettings.load().per_run_limit == Decimal("100.5")
