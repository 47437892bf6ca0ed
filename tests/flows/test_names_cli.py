"""Names, versions and the ledger's accounts at the command line (issue 33, items 1 and 5): ``qsolve
quote`` prices the highest version and names it on every line, a waiting batch lapses with a line saying
so, ``qsolve accounts`` gives the ledger's own accounts nothing and adds co-developers only for a name's
developers (or the operator)."""

from __future__ import annotations

import json

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import QuoteStatus, connect
from tests.flows.hardware_setup import add_reference, publish


@pytest.fixture
def home(home, monkeypatch):
    monkeypatch.setenv("QSOLVE_ACCOUNT", "dev1")  # the local operator's account: the developer here
    return home


def test_qsolve_quote_prices_the_highest_version_and_names_it(home, tmp_path, capsys) -> None:
    add_reference(holder="dev1")
    assert main(["providers", "allow", "ref", "--workflow", "hw-max-cut", "--account", "dev1"]) == 0
    publish(home, tmp_path, version="1.10.0")

    with connect(home=home) as db:
        assert db.get_version("hw-max-cut").account == "dev1"
    capsys.readouterr()
    assert main(["quote", "hw-max-cut", "--target", "provider:ref", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["version"] == "1.10.0" and [q["version"] for q in shown["quotes"]] == ["1.10.0"]
    first = shown["quotes"][0]["id"]

    # the waiting batch blocks nobody: dev1's next request (another account's too) lapses it, and says so
    assert main(["quote", "hw-max-cut", "--target", "provider:ref", "--account", "dev2"]) == 0
    out, err = capsys.readouterr()
    assert f"lapsed: batch {shown['batch']} of hw-max-cut awaited confirmation; its 1 quote ({first})" in err
    assert "of hw-max-cut 1.10.0: 1 quote" in out
    assert all(
        "hw-max-cut 1.10.0: hardware-single-edge on provider:ref" in line for line in out.splitlines()[1:2]
    )
    with connect(home=home) as db:
        assert db.get_quote(first).status is QuoteStatus.EXPIRED
    assert main(["confirm", first, "--yes", "--no-run"]) == 1
    assert "expired: only a pending quote is confirmed" in capsys.readouterr().err


def test_the_ledgers_own_accounts_are_given_no_login(home, capsys) -> None:
    assert main(["accounts", "add", "system", "--role", "developer", "--workflow", "victim"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "qsolve accounts add: system is one of the ledger's own accounts, which act for nobody"
    )
    assert "\n" not in err
    assert main(["accounts", "developer", "add", "victim", "system"]) == 1
    with connect(home=home) as db:
        assert db.list_logins() == [] and db.workflow_developers("victim") == []


def test_a_co_developer_is_added_by_a_developer_or_the_operator_only(home, tmp_path, capsys) -> None:
    publish(home, tmp_path)  # by dev1, the local operator account here
    assert main(["accounts", "developer", "add", "hw-max-cut", "mallory", "--by", "mallory"]) == 1
    assert (
        "hw-max-cut belongs to its developers (dev1): account mallory may not add" in capsys.readouterr().err
    )
    assert main(["accounts", "developer", "add", "hw-max-cut", "dev2", "--by", "dev1"]) == 0
    assert "hw-max-cut belongs to its developers: dev1, dev2" in capsys.readouterr().out
    assert main(["accounts", "developer", "list", "hw-max-cut"]) == 0
    assert "dev1, dev2" in capsys.readouterr().out
    publish(home, tmp_path, version="1.1.0")  # dev1 still publishes; dev2 as well (test_names)
