"""Credits: holds capped at the limits, refusal before the run, settlement at cost, stale holds released."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state import (
    SYSTEM_ACCOUNT,
    CreditError,
    InsufficientCredits,
    NoHold,
    NotFound,
    RunStateError,
    RunStatus,
    Settlement,
    StateDB,
    Version,
    connect,
)
from tests.storage.state.conftest import assert_ledger_balanced, default_settings


@pytest.fixture
def version(db: StateDB) -> Version:
    return db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]


def test_the_system_account_starts_with_a_generous_balance(db: StateDB) -> None:
    assert db.balance(SYSTEM_ACCOUNT) == Decimal(1_000_000)
    assert_ledger_balanced(db)


def test_a_grant_opens_the_account_and_is_two_entries(db: StateDB) -> None:
    transfer = db.grant("alice", "12.5", memo="welcome")
    assert (transfer.kind, transfer.source, transfer.destination) == ("grant", "ledger:mint", "alice")
    assert transfer.amount == Decimal("12.5")
    db.grant("alice", 3)
    assert db.balance("alice") == Decimal("15.5")
    with pytest.raises(ValueError, match="positive"):
        db.grant("alice", 0)
    with pytest.raises(ValueError, match="cannot name a user's account"):
        db.grant("ledger:holds", 5)
    with pytest.raises(NotFound, match="no credit account 'bob'"):
        db.balance("bob")
    db.open_account("bob")
    db.open_account("bob")
    assert db.balance("bob") == 0
    assert_ledger_balanced(db)


def test_a_hardware_hold_is_capped_at_the_per_run_limit(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    hold = db.hold("alice", run.id, 80)
    assert (hold.account, hold.amount, hold.closed) == ("alice", Decimal(50), False)
    assert db.balance("alice") == 50
    assert db.get_run(run.id).estimated_credits == 80
    small = db.create_run(version, "hw-2", "ibm:ibm_fez", "hardware")
    assert db.hold("alice", small.id, "7.25").amount == Decimal("7.25")
    assert db.balance("alice") == Decimal("42.75")
    assert_ledger_balanced(db)


def test_a_history_hold_is_capped_at_20_credits(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "ring-6", "sim-cpu", "history")
    assert db.hold(SYSTEM_ACCOUNT, run.id, 35).amount == 20
    assert db.limits("history").seconds == 900
    assert db.limits("hardware").credits == 50
    assert db.balance(SYSTEM_ACCOUNT) == 1_000_000 - 20


def test_the_limits_can_be_configured(database_url: str, tmp_path) -> None:
    settings = default_settings(per_run_limit=Decimal(10), history_run_limit=Decimal(2))
    with connect(database_url, home=tmp_path, settings=settings) as db:
        version, _ = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])
        db.grant("alice", 100)
        assert db.hold("alice", db.create_run(version, "a", "ibm:x", "hardware").id, 80).amount == 10
        assert db.hold(SYSTEM_ACCOUNT, db.create_run(version, "b", "sim-cpu", "history").id, 80).amount == 2


def test_holding_again_for_a_run_returns_the_first_hold(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    first = db.hold("alice", run.id, 10)
    assert db.hold("alice", run.id, 30) == first
    assert db.balance("alice") == 90
    db.grant("bob", 100)
    with pytest.raises(CreditError, match="already held on alice, not bob"):
        db.hold("bob", run.id, 10)
    assert_ledger_balanced(db)


def test_insufficient_credits_refuse_the_run_before_it_starts(db: StateDB, version: Version) -> None:
    db.grant("alice", 5)
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    with pytest.raises(InsufficientCredits, match=r"alice has 5 credits, run \w+ needs 6") as caught:
        db.hold("alice", run.id, 6)
    error = caught.value
    assert (error.reason, error.account, error.run_id) == ("insufficient_credits", "alice", run.id)
    assert (error.needed, error.available) == (6, 5)
    refused = db.get_run(run.id)
    assert (refused.status, refused.reason) == (RunStatus.FAILED, "insufficient_credits")
    assert not refused.recordable
    assert db.balance("alice") == 5
    assert db.get_hold(run.id) is None
    with pytest.raises(RunStateError, match=r"is failed \(insufficient_credits\)"):
        db.start_run(run.id)
    with pytest.raises(RunStateError):
        db.hold("alice", run.id, 1)
    assert db.unfiled_runs() == []
    assert_ledger_balanced(db)


def test_a_run_that_started_holds_nothing(db: StateDB, version: Version) -> None:
    db.grant("alice", 5)
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    db.start_run(run.id)
    with pytest.raises(RunStateError, match="credits are held before a run starts"):
        db.hold("alice", run.id, 1)
    with pytest.raises(NotFound, match="no credit account 'carol'"):
        db.hold("carol", run.id, 1)
    with pytest.raises(CreditError, match="ledger's own account"):
        db.hold("ledger:revenue", run.id, 1)
    with pytest.raises(ValueError, match="not negative"):
        db.hold("alice", run.id, -1)


def _held_run(db: StateDB, version: Version, estimated, account: str = "alice"):
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    db.hold(account, run.id, estimated)
    db.start_run(run.id)
    db.finish_run(run.id, "finished", result={"passed": True})
    return run


def test_settlement_charges_the_actual_cost_and_releases_the_rest(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = _held_run(db, version, 30)
    settlement = db.settle(run.id, "12.345678")
    assert settlement == Settlement(
        run_id=run.id,
        account="alice",
        held=Decimal(30),
        charged=Decimal("12.345678"),
        released=Decimal("17.654322"),
    )
    assert db.balance("alice") == Decimal("87.654322")
    assert db.balance("ledger:revenue") == Decimal("12.345678")
    assert db.balance("ledger:holds") == 0
    assert db.get_run(run.id).actual_credits == Decimal("12.345678")
    assert db.get_hold(run.id).closed
    assert [t.kind for t in db.list_transfers(run.id)] == ["hold", "charge", "release"]
    assert_ledger_balanced(db)


def test_settlement_never_charges_more_than_the_hold(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = _held_run(db, version, 10)
    assert db.settle(run.id, 75).charged == 10
    assert db.balance("alice") == 90
    assert db.get_run(run.id).actual_credits == 10


def test_a_run_that_cost_nothing_gets_its_hold_back(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = _held_run(db, version, 10)
    assert db.settle(run.id, 0).released == 10
    assert db.balance("alice") == 100
    assert_ledger_balanced(db)


def test_settling_twice_takes_nothing_twice(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = _held_run(db, version, 20)
    first = db.settle(run.id, 8)
    assert db.settle(run.id, 8) == first
    assert db.settle(run.id, 15) == first
    assert db.balance("alice") == 92
    assert db.get_run(run.id).actual_credits == 8
    assert len(db.list_transfers(run.id)) == 3
    assert_ledger_balanced(db)


def test_the_database_refuses_a_second_charge_or_release_for_a_run(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    run = _held_run(db, version, 20)
    db.settle(run.id, 8)
    for kind in ("hold", "charge", "release"):
        with pytest.raises(IntegrityError), db.engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO transfers (kind, run_id, created_at) VALUES (:kind, :run, CURRENT_TIMESTAMP)"
                ),
                {"kind": kind, "run": run.id},
            )


def test_settling_without_a_hold_is_refused(db: StateDB, version: Version) -> None:
    run = db.create_run(version, "hw", "ibm:ibm_fez", "hardware")
    with pytest.raises(NoHold, match=f"run {run.id} holds no credits"):
        db.settle(run.id, 1)
    db.grant("alice", 10)
    held = _held_run(db, version, 5)
    with pytest.raises(ValueError, match="not negative"):
        db.settle(held.id, -1)


def test_stale_holds_are_released_settled_ones_left_alone(db: StateDB, version: Version) -> None:
    db.grant("alice", 100)
    settled = _held_run(db, version, 10)
    db.settle(settled.id, 4)
    crashed = _held_run(db, version, 20)  # the process died before settling
    assert db.release_stale_holds(timedelta(hours=1)) == []
    assert db.balance("alice") == 100 - 4 - 20
    assert db.release_stale_holds(timedelta(0)) == [crashed.id]
    assert db.balance("alice") == 96
    assert db.get_hold(crashed.id).closed
    assert db.release_stale_holds(timedelta(0)) == []
    late = db.settle(crashed.id, 7)  # a settlement after the release charges nothing
    assert (late.charged, late.released) == (0, 20)
    assert db.balance("alice") == 96
    assert db.balance("ledger:holds") == 0
    assert_ledger_balanced(db)


def test_the_ledger_always_sums_to_zero(db: StateDB, version: Version) -> None:
    db.grant("alice", 80)
    for i, (estimate, actual) in enumerate([(5, 1), (50, 60), ("0.000001", 0), (3, "2.5")]):
        run = _held_run(db, version, estimate)
        if i != 2:
            db.settle(run.id, actual)
        assert_ledger_balanced(db)
    db.release_stale_holds(timedelta(0))
    assert_ledger_balanced(db)
    with db.engine.connect() as connection:
        accounts = connection.execute(sa.text("SELECT DISTINCT account FROM entries")).scalars().all()
    assert sum(db.balance(a) for a in accounts) == 0
