"""A developer spends a provider's money only as its holder allows and confirms (issue 33, item 3; the
provider protocol's §1 and §7), on the command line, as dev1 would try it: ``provider:labref`` held by
``lab``, whose every job the provider prices (99.00 EUR, tests/flows/priced_provider.py, which records
each message it receives)."""

from __future__ import annotations

import json

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import QuoteStatus, RunStatus, connect
from qsolve_pipeline.tasks.hardware import HardwareRefused, run_quote
from tests.flows.hardware_setup import publish
from tests.flows.priced_provider import ops, process_command

JOBS = 10  # max-cut's estimate() for the hardware case


@pytest.fixture
def labref(home, tmp_path):
    """``provider:labref``, held by lab: (price file, record file)."""
    price, record = tmp_path / "price.txt", tmp_path / "received.jsonl"
    price.write_text("99.00")
    command = process_command(tmp_path, price, record)
    writes = ["--allow-write", str(record)]
    assert main(["providers", "add", "labref", "--holder", "lab", "--process", *writes, "--", *command]) == 0
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev1", 100)
    return price, record


def quote(capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["quote", "hw-max-cut", "--target", "provider:labref", "--account", "dev1", "--json"])
    said = capsys.readouterr()
    return code, said.out if code == 0 else said.err


def test_a_developer_not_allowed_gets_no_quote_and_cannot_allow_themselves(home, labref, capsys):
    _, record = labref
    code, said = quote(capsys)
    assert code == 1
    assert "provider_not_allowed: provider:labref is held by lab, who has not allowed dev1" in said
    assert "only its holder and those it allows spend on a provider" in said
    assert ops(record) == []  # the provider (and its credential) was asked nothing
    with connect(home=home) as db:
        assert db.list_quotes(workflow="hw-max-cut") == []

    assert main(["providers", "allow", "labref", "dev1", "--account", "dev1"]) == 1
    assert "only its holder or an admin changes whom a provider allows" in capsys.readouterr().err
    assert quote(capsys)[0] == 1

    # a second machine's operator adding the same name under another holder does not take it over
    assert main(["providers", "add", "labref", "--holder", "dev1", "--http", "https://mine.example"]) == 1
    assert "provider labref is held by lab" in capsys.readouterr().err
    with connect(home=home) as db:
        assert db.provider_holder("labref") == "lab"


def test_an_allowed_developers_priced_job_runs_only_once_the_holder_confirmed(home, labref, capsys):
    _, record = labref
    assert main(["providers", "allow", "labref", "dev1", "--account", "lab"]) == 0
    main(["providers", "list"])
    assert "holder: lab; allowed: account dev1" in capsys.readouterr().out
    code, said = quote(capsys)
    assert code == 0
    (listed,) = json.loads(said)["quotes"]
    assert listed["holder"] == "lab" and listed["awaiting"].startswith("dev1 (it pays) and lab")

    assert main(["confirm", listed["id"], "--yes", "--account", "dev1"]) == 0
    out = capsys.readouterr().out
    assert (
        f"confirmed {listed['id']} as dev1: it awaits the confirmation of lab (the provider's holder)" in out
    )
    with connect(home=home) as db:
        waiting = db.get_quote(listed["id"])
        assert waiting.status is QuoteStatus.PENDING and waiting.confirmed_by == "dev1"
        assert db.get_run(waiting.run_id).status is RunStatus.CREATED  # its run did not start
        with pytest.raises(HardwareRefused, match="not_confirmed"):
            run_quote(db, waiting.id, home=home)
    assert "submit" not in ops(record)

    assert main(["confirm", listed["id"], "--yes", "--no-run", "--account", "mallory"]) == 1
    assert main(["confirm", listed["id"], "--yes", "--no-run", "--account", "lab"]) == 0
    said = capsys.readouterr()
    assert "you hold provider:labref: this lets dev1's run spend at most 990.00 EUR" in said.err
    with connect(home=home) as db:
        confirmed = db.get_quote(listed["id"])
        assert confirmed.status is QuoteStatus.CONFIRMED
        assert (confirmed.confirmed_by, confirmed.holder_confirmed_by) == ("dev1", "lab")
        outcome = run_quote(db, confirmed.id, home=home)
    assert outcome.status == "finished", outcome
    assert ops(record).count("submit") == JOBS


def test_a_workflows_quotes_allowed_and_a_free_job_needs_no_holder_confirmation(home, labref, capsys):
    price, _ = labref
    price.write_text("free")  # the provider's estimates say free: no one's money is spent on the device
    assert main(["providers", "allow", "labref", "--workflow", "hw-max-cut", "--account", "lab"]) == 0
    code, said = quote(capsys)
    assert code == 0
    (listed,) = json.loads(said)["quotes"]
    assert listed["holder"] is None and listed["awaiting"] == "dev1"
    assert main(["providers", "disallow", "labref", "--workflow", "hw-max-cut", "--account", "lab"]) == 0
