"""Logins, roles and sessions of the web pages (storage/state/_accounts.py, migration 0007), on SQLite
and on PostgreSQL: tokens and session ids are kept only as their SHA-256."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage.state import AccountExists, NotFound, StateDB
from qsolve_pipeline.storage.state._accounts import token_hash


def test_a_login_is_added_with_its_roles_on_a_credit_account(db: StateDB) -> None:
    token = db.add_login("dev", ["developer", "reviewer"], workflows=["max-cut", "ising"])
    db.add_login("ed", ["editor"])
    found = db.get_login("dev")
    assert found.name == "dev" and found.roles == {"developer", "reviewer"}
    assert found.workflows == {"max-cut", "ising"} and found.created_at is not None
    assert db.get_login("ed").roles == {"editor"} and db.get_login("ed").workflows == set()
    assert [a.name for a in db.list_logins()] == ["dev", "ed"]
    assert db.balance("dev") == 0  # its credit account was opened
    assert db.workflow_developers("max-cut") == ["dev"] and db.workflow_developers("other") == []
    with db.engine.connect() as connection:
        stored = connection.execute(sa.text("SELECT token_sha256 FROM account_logins WHERE account = 'dev'"))
        assert stored.scalar_one() == token_hash(token) != token  # never kept in the clear


def test_a_login_on_an_existing_credit_account_keeps_its_credits(db: StateDB) -> None:
    db.open_account("alice")
    db.add_login("alice", ["reviewer"])
    assert db.balance("alice") == 0 and db.get_login("alice").roles == {"reviewer"}


def test_a_second_login_for_a_name_is_refused_and_the_first_still_works(db: StateDB) -> None:
    token = db.add_login("alice", ["editor"])
    with pytest.raises(AccountExists, match="alice already has a login") as refused:
        db.add_login("alice", ["reviewer"])
    assert refused.value.account == "alice"
    assert db.get_login("alice").roles == {"editor"}  # nothing of the refused one was kept
    assert db.check_login("alice", token) is not None


def test_a_developer_of_no_workflow_yet_logs_in_and_develops_nothing(db: StateDB) -> None:
    token = db.add_login("newdev", ["developer"])  # its first publication (from /submit) makes a name its own
    login = db.check_login("newdev", token)
    assert login is not None and login.roles == {"developer"} and login.workflows == frozenset()
    db.publish_version("fresh", "1.0.0", "d" * 64, [], account="newdev")
    assert db.get_login("newdev").workflows == {"fresh"}


@pytest.mark.parametrize(
    ("roles", "workflows", "message"),
    [
        ([], [], "give one or more of"),
        (["owner"], [], "owner"),
        (["editor"], ["max-cut"], "give --role developer"),
    ],
)
def test_roles_that_do_not_make_a_login_are_refused(
    db: StateDB, roles: list[str], workflows: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        db.add_login("bob", roles, workflows)
    with pytest.raises(NotFound):
        db.get_login("bob")


@pytest.mark.parametrize("name", ["", "-dash", "with space", "x" * 101, "ledger:mint"])
def test_a_name_that_is_not_an_account_name_is_refused(db: StateDB, name: str) -> None:
    with pytest.raises(ValueError, match="not an account name"):
        db.add_login(name, ["reviewer"])
    assert db.list_logins() == []


def test_login_by_token_needs_the_right_token_for_the_right_name(db: StateDB) -> None:
    token = db.add_login("alice", ["reviewer"])
    other = db.add_login("bob", ["editor"])
    assert db.check_login("alice", token).roles == {"reviewer"}
    assert db.check_login("alice", token + "x") is None
    assert db.check_login("alice", other) is None  # bob's token is not alice's
    assert db.check_login("nobody", token) is None
    assert db.check_login("alice", "") is None


def test_a_session_is_opened_read_and_ended(db: StateDB) -> None:
    db.add_login("alice", ["editor"])
    opened = db.open_session("alice")
    assert opened.session_id != opened.form_token
    account, form_token = db.session_of(opened.session_id)
    assert account.name == "alice" and account.roles == {"editor"} and form_token == opened.form_token
    assert opened.expires_at - datetime.now(UTC) > timedelta(hours=11)
    assert db.session_of("not-a-session") is None
    another = db.open_session("alice")  # two browsers: two sessions
    db.close_session(opened.session_id)
    assert db.session_of(opened.session_id) is None
    assert db.session_of(another.session_id)[0].name == "alice"
    db.close_session(opened.session_id)  # ending it again changes nothing


def test_a_lapsed_session_is_not_read_and_goes_when_another_opens(db: StateDB) -> None:
    db.add_login("alice", ["editor"])
    lapsed = db.open_session("alice", seconds=-1)
    assert db.session_of(lapsed.session_id) is None
    live = db.open_session("alice")
    with db.engine.connect() as connection:
        kept = connection.execute(sa.text("SELECT id_sha256 FROM account_sessions")).scalars().all()
    assert kept == [token_hash(live.session_id)]  # the lapsed one was deleted, and ids are hashes


def test_a_reissued_token_replaces_the_old_one_and_ends_its_sessions(db: StateDB) -> None:
    old = db.add_login("alice", ["reviewer"])
    db.add_login("bob", ["reviewer"])
    alices = [db.open_session("alice"), db.open_session("alice")]
    bobs = db.open_session("bob")
    new = db.reissue_token("alice")
    assert new != old
    assert db.check_login("alice", old) is None and db.check_login("alice", new).name == "alice"
    assert all(db.session_of(s.session_id) is None for s in alices)
    assert db.session_of(bobs.session_id)[0].name == "bob"  # another account's sessions go on
    assert db.get_login("alice").roles == {"reviewer"}  # the roles stay
    with pytest.raises(NotFound, match="no login for account 'nobody'"):
        db.reissue_token("nobody")


def test_an_account_with_no_login_is_not_found(db: StateDB) -> None:
    db.open_account("carol")
    with pytest.raises(NotFound, match="no login for account 'carol'") as missing:
        db.get_login("carol")
    assert missing.value.kind == "login" and missing.value.key == "carol"
    assert db.check_login("carol", "anything") is None


def test_the_published_workflows_are_listed_by_name_once_each(db: StateDB) -> None:
    assert db.published_workflows() == []
    db.publish_version("max-cut", "1.0.0", "d1" * 32, [])
    db.publish_version("max-cut", "1.1.0", "d2" * 32, [])
    db.publish_version("generic-qubo", "2.0.0", "d3" * 32, [])
    assert db.published_workflows() == ["generic-qubo", "max-cut"]
