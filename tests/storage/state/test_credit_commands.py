"""``qsolve credits grant`` and ``qsolve credits balance``: the operator's side of the ledger."""

from __future__ import annotations

from decimal import Decimal

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import connect


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


@pytest.fixture
def clean(monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("QSOLVE_CREDITS_")]:
        monkeypatch.delenv(name)


def test_the_limit_and_price_commands_set_the_database_for_every_machine(home, capsys, clean):
    with connect(home=home) as db:
        assert db.settings.per_run_limit == 50
    assert main(["credits", "limit", "88", "--history", "12", "--history-seconds", "300"]) == 0
    said = capsys.readouterr().out.strip()
    assert (
        said == "the per-run limit is 88 credits; a history case's 12 credits and 300 s "
        "(the state database: every machine)"
    )
    assert main(["credits", "price", "ibm:", "--per-shot", "0.001"]) == 0
    said = capsys.readouterr().out.strip()  # the per-circuit price not given stays the default's
    assert said == "ibm:: 0.5 credits a circuit, 0.001 a shot (every machine)"
    with connect(home=home) as db:
        settings = db.settings
    assert (settings.per_run_limit, settings.history_run_limit, settings.history_run_seconds) == (88, 12, 300)
    assert settings.price("ibm:ibm_fez").per_shot == Decimal("0.001")
    assert main(["credits", "show", "--json"]) == 0
    shown = __import__("json").loads(capsys.readouterr().out)
    assert shown["limits"]["per_run_limit"] == "88" and shown["prices"]["ibm:"]["set"] is True
    assert shown["prices"]["sim-cpu"] == {"per_circuit": "0.001", "per_shot": "0.00001", "set": False}
    for bad in (
        ["limit", "-1"],
        ["limit", "lots"],
        ["limit", "Infinity"],
        ["limit", "--history-seconds", "0"],
        ["price", "sim-cpu", "--per-shot", "-2"],
        ["price", "sim-cpu"],
        ["limit"],
    ):
        assert main(["credits", *bad]) == 2, bad
        assert capsys.readouterr().err.startswith("qsolve credits ")
    with connect(home=home) as db:
        assert db.settings == settings  # nothing refused changed anything
    assert not (home / "credits.toml").exists()  # nothing is written beside the home


def test_a_credits_file_is_refused_until_imported_once(home, capsys, clean):
    home.mkdir(parents=True)
    (home / "credits.toml").write_text(
        "# the operator's\nhistory_run_limit = 30\nper_run_limit = 88\n\n[prices.'ibm:']\nper_shot = 0.001\n"
    )
    assert main(["credits", "balance", "ada"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"qsolve: {home / 'credits.toml'}: credit prices and limits are kept in the state database now, "
        "alike "
        f"for every machine: run `qsolve credits import {home / 'credits.toml'}` once (it takes the file in "
        "and sets it aside)"
    ]
    assert main(["credits", "import"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"imported {home / 'credits.toml'} into the state database (2 limits, 1 price;")
    assert not (home / "credits.toml").exists() and (home / "credits.toml.imported").is_file()
    with connect(home=home) as db:
        settings = db.settings
    assert (settings.per_run_limit, settings.history_run_limit) == (88, 30)
    assert settings.price("ibm:ibm_fez").per_shot == Decimal("0.001")
    assert main(["credits", "balance", "ada"]) == 1  # it starts again: an unknown account


def test_a_credits_file_that_does_not_read_imports_nothing(home, capsys, clean, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("per_run_limit = -3\n")
    assert main(["credits", "import", str(bad)]) == 2
    assert "bad.toml: per_run_limit: " in capsys.readouterr().err and bad.is_file()
    bad.write_text("per_run_limit = [\n")
    assert main(["credits", "import", str(bad)]) == 2
    assert "is not TOML" in capsys.readouterr().err and bad.is_file()
    with connect(home=home) as db:
        assert db.settings.per_run_limit == 50


@pytest.mark.parametrize(
    "command",
    [
        ["credits", "price", "sim-cpu", "--per-circuit", "1e-70"],
        ["credits", "price", "sim-cpu", "--per-shot", "1e999999"],
        ["credits", "limit", "1" + "0" * 70],
    ],
)
def test_a_value_with_more_digits_than_the_database_keeps_is_one_line_and_sets_nothing(
    home, capsys, clean, command
):
    """Finding (issue 26 tester), fixed: on PostgreSQL ``credits price sim-cpu --per-circuit 1e-70`` was a
    DataError traceback (the price's decimal text is 72 characters, the column 64), and on SQLite a price of
    1e999999 was kept (a million digits) and overflowed every quote on the target."""
    with connect(home=home) as db:
        before = db.credit_settings()
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qsolve credits {command[1]}:") and "\n" not in err and "digits" in err, err
    with connect(home=home) as db:
        assert db.credit_settings() == before


def test_two_operators_setting_two_parts_of_one_price_at_once_both_keep_theirs(
    home, capsys, clean, monkeypatch
):
    """Finding (issue 26 tester), fixed: ``credits price`` read the whole price and wrote the whole price, so
    an operator setting ``--per-shot`` while another set ``--per-circuit`` of the same target undid the
    other's change (a lost update between machines). Operator B's command runs whole between A's read and
    A's write."""
    from qsolve_pipeline.storage.state import StateDB

    assert main(["credits", "price", "ibm:", "--per-circuit", "0.5", "--per-shot", "0.002"]) == 0
    original = StateDB.set_price
    interleaved = []

    def a_then_b(self, target, price, only=None):
        if not interleaved:
            interleaved.append(True)
            assert main(["credits", "price", "ibm:", "--per-shot", "0.01"]) == 0  # operator B, meanwhile
        return original(self, target, price, only)

    monkeypatch.setattr(StateDB, "set_price", a_then_b)
    assert main(["credits", "price", "ibm:", "--per-circuit", "5"]) == 0  # operator A
    capsys.readouterr()
    with connect(home=home) as db:
        price = db.credit_settings().price("ibm:")
    assert (price.per_circuit, price.per_shot) == (Decimal(5), Decimal("0.01"))


def test_a_second_machines_stale_credits_file_does_not_undo_what_the_database_holds(
    home, capsys, clean, tmp_path
):
    """Finding (issue 26 tester), fixed: the operator who imported a second machine's credits.toml left from
    before the move (as its refusal told them to) overwrote, on every machine, the prices and limits set in
    the database since, and was told "imported". An import now sets only what the database holds no value
    of its own for; one that would change a held value imports nothing and names each (exit 1), the file
    left in place, unless ``--replace``."""
    assert main(["credits", "price", "ibm:", "--per-shot", "0.004"]) == 0  # set since, for every machine
    assert main(["credits", "limit", "120"]) == 0
    stale = tmp_path / "machine-b" / "credits.toml"  # machine B's file, from before
    stale.parent.mkdir()
    stale.write_text("per_run_limit = 40\nhistory_run_limit = 7\n\n[prices.'ibm:']\nper_shot = 0.001\n")
    capsys.readouterr()
    assert main(["credits", "import", str(stale)]) == 1  # as B's refusal told its operator to
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"qsolve credits import: {stale}: "), err
    assert "per_run_limit is 120 there, 40 in the file" in err, err
    assert "ibm: price is 0.5 a circuit, 0.004 a shot there, 0 a circuit, 0.001 a shot in the file" in err, (
        err
    )
    assert "history_run_limit" not in err and "nothing imported" in err and "--replace" in err
    assert stale.is_file()  # left for the operator to decide
    with connect(home=home) as db:
        settings = db.credit_settings()
    assert settings.per_run_limit == 120 and settings.price("ibm:").per_shot == Decimal("0.004")
    assert settings.history_run_limit == 20  # nothing of the file, not even what the database did not hold
    assert main(["credits", "import", str(stale), "--replace"]) == 0  # the operator means it
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"imported {stale} into the state database (2 limits, 1 price;"), out
    assert "replaced: per_run_limit 120 by 40; ibm: price 0.5 a circuit, 0.004 a shot by 0 a circuit" in out
    assert not stale.is_file() and stale.with_name("credits.toml.imported").is_file()
    with connect(home=home) as db:
        settings = db.credit_settings()
    assert (settings.per_run_limit, settings.history_run_limit) == (40, 7)
    assert settings.price("ibm:").per_shot == Decimal("0.001")


def test_a_file_whose_values_the_database_holds_is_only_set_aside(home, capsys, clean, tmp_path):
    """Machine B's copy of the file machine A imported: nothing to import, said so, and set aside so that B
    starts; a file that adds only what the database holds no value for imports that, counting the rest."""
    first = tmp_path / "a.toml"
    first.write_text("per_run_limit = 88\n\n[prices.'ibm:']\nper_circuit = 0.5\nper_shot = 0.001\n")
    assert main(["credits", "import", str(first)]) == 0
    capsys.readouterr()
    copy = tmp_path / "b" / "credits.toml"
    copy.parent.mkdir()
    copy.write_text("per_run_limit = 88.0\n\n[prices.'ibm:']\nper_circuit = 0.50\nper_shot = 0.0010\n")
    before = _settings_rows(home)
    assert main(["credits", "import", str(copy)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == (
        f"{copy}: the state database holds every value it sets already (1 limit, 1 price): nothing to "
        f"import; the file is now {copy}.imported"
    )
    assert not copy.exists() and _settings_rows(home) == before  # not even the times they were set
    more = tmp_path / "c.toml"
    more.write_text("per_run_limit = 88\nhistory_run_seconds = 300\n")
    assert main(["credits", "import", str(more)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"imported {more} into the state database (1 limit, 0 prices, 1 held already;"), out
    with connect(home=home) as db:
        assert db.credit_settings().history_run_seconds == 300


def _settings_rows(home):
    import sqlalchemy as sa

    with connect(home=home) as db, db.engine.connect() as connection:
        return (
            connection.execute(sa.text("SELECT * FROM credit_limits ORDER BY name")).all(),
            connection.execute(sa.text("SELECT * FROM credit_prices ORDER BY target")).all(),
        )
