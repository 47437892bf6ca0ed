"""Hardware quote batches: one open per workflow (the database refuses a second), each quote confirmed on
its own, capped by the per-run limit; lapsed quotes and unseen unknown costs never authorise a run."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage.state import (
    BatchInProgress,
    FailureReason,
    QuoteRefused,
    QuoteStatus,
    RunStatus,
    Source,
    StateDB,
)
from qsolve_pipeline.storage.state._tables import quote_batches, quotes

CASE = {"name": "hw", "input": {"nodes": 2}, "target": "ibm:ibm_fez", "seed": 1}


def batch_of(db: StateDB, *prices, unknown: bool = False, valid_s: float = 3600):
    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE] * len(prices))
    batch = db.request_batch(version, "alice")
    made = [
        db.add_quote(
            batch.id, i, "hw", "provider:ref", price, {"circuits": 1, "shots": 10}, unknown_cost=unknown,
            valid_s=valid_s,
        )
        for i, price in enumerate(prices)
    ]  # fmt: skip
    db.batch_priced(batch.id)
    return version, batch, made


def test_a_quote_makes_a_created_hardware_run_in_the_developers_account(db: StateDB) -> None:
    _, batch, (quote,) = batch_of(db, Decimal("1.5"))
    assert quote.status is QuoteStatus.PENDING and quote.account == "alice" and quote.price == Decimal("1.5")
    run = db.get_run(quote.run_id)
    assert run.status is RunStatus.CREATED and run.source is Source.HARDWARE and run.case_index == 0
    assert db.get_batch(batch.id).status == "open"
    assert [q["id"] for q in db.batch_status(batch.id)["quotes"]] == [quote.id]
    assert db.quotes_to_run() == []  # nothing runs until it is confirmed


def test_confirming_authorises_at_most_the_price_capped_by_the_per_run_limit(db: StateDB) -> None:
    _, _, (cheap, dear) = batch_of(db, Decimal("2"), Decimal("80"))
    with pytest.raises(QuoteRefused):
        db.confirm_quote(cheap.id, "mallory")  # only the payer confirms
    assert db.confirm_quote(cheap.id, "alice").authorised == Decimal(2)
    assert db.confirm_quote(dear.id, "alice").authorised == Decimal(50)
    assert {q.id for q in db.quotes_to_run()} == {cheap.id, dear.id}
    with pytest.raises(QuoteRefused):
        db.confirm_quote(cheap.id, "alice")  # confirmed once, for its run only


def test_an_unknown_cost_is_confirmed_only_when_seen(db: StateDB) -> None:
    _, _, (quote,) = batch_of(db, Decimal("1"), unknown=True)
    with pytest.raises(QuoteRefused, match="unknown"):
        db.confirm_quote(quote.id, "alice")
    assert db.get_quote(quote.id).status is QuoteStatus.PENDING
    assert db.confirm_quote(quote.id, "alice", seen_unknown=True).status is QuoteStatus.CONFIRMED


def test_a_lapsed_quote_expires_and_its_run_never_runs(db: StateDB) -> None:
    _, batch, (late, later) = batch_of(db, Decimal("1"), Decimal("1"), valid_s=-1)
    with pytest.raises(QuoteRefused, match="lapsed"):
        db.confirm_quote(late.id, "alice")
    assert db.get_quote(late.id).status is QuoteStatus.EXPIRED
    assert db.expire_quotes() == [later.id]
    for quote in (late, later):
        run = db.get_run(quote.run_id)
        assert run.status is RunStatus.FAILED and run.reason is FailureReason.CANCELLED
    assert db.quotes_to_run() == [] and db.unfiled_runs() == []  # never recorded
    assert db.get_batch(batch.id).status == "ended"


def test_a_second_batch_is_refused_while_one_is_priced_or_run(db: StateDB) -> None:
    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
    pricing = db.request_batch(version, "alice")
    with pytest.raises(BatchInProgress, match="still being priced") as refused:
        db.request_batch(version, "bob")
    assert refused.value.batch_id == pricing.id
    quote = db.add_quote(
        pricing.id, 0, "hw", "provider:ref", 1, {"circuits": 1, "shots": 10}, unknown_cost=False
    )
    db.batch_priced(pricing.id)
    db.confirm_quote(quote.id, "alice")
    with pytest.raises(BatchInProgress, match="running its confirmed quotes"):  # confirmed, not started
        db.request_batch(version, "bob")
    db.start_run(quote.run_id)
    with pytest.raises(BatchInProgress):
        db.request_batch(version, "alice")
    db.finish_run(quote.run_id, RunStatus.FINISHED, result={})
    assert db.request_batch(version, "alice").status == "pricing"  # the first ended: a new one opens
    assert db.get_batch(pricing.id).status == "ended"


def test_a_batch_awaiting_confirmation_blocks_nobody_and_its_quotes_lapse(db: StateDB) -> None:
    """A second developer (or an admin) asks while alice's quotes only await confirmation: the request
    opens a batch, alice's pending quotes lapse (never confirmable, their runs never run) and it says so."""
    version, waiting, (one, two) = batch_of(db, Decimal("1"), Decimal("2"))
    db.refuse_quote(two.id, "alice")
    second = db.request_batch(version, "bob")
    assert second.status == "pricing" and second.account == "bob"
    assert second.lapsed_batch == waiting.id and second.lapsed == (one.id,)
    assert db.get_batch(waiting.id).status == "ended"
    assert db.get_quote(one.id).status is QuoteStatus.EXPIRED
    run = db.get_run(one.run_id)
    assert (
        run.status is RunStatus.FAILED and run.reason is FailureReason.CANCELLED and "replaced" in run.detail
    )
    with pytest.raises(QuoteRefused, match="expired"):
        db.confirm_quote(one.id, "alice")
    assert db.get_quote(two.id).status is QuoteStatus.REFUSED  # what was decided stays decided
    with pytest.raises(BatchInProgress):  # bob's own batch is being priced: that one is in progress
        db.request_batch(version, "alice")


def test_a_partly_confirmed_batch_whose_runs_ended_lapses_only_its_pending_quotes(db: StateDB) -> None:
    version, waiting, (done, pending) = batch_of(db, Decimal("1"), Decimal("1"))
    db.confirm_quote(done.id, "alice")
    db.start_run(done.run_id)
    db.finish_run(done.run_id, RunStatus.FINISHED, result={})
    second = db.request_batch(version, "alice")  # the same developer, on another target
    assert second.lapsed == (pending.id,)
    assert db.get_quote(done.id).status is QuoteStatus.CONFIRMED
    assert db.get_run(done.run_id).status is RunStatus.FINISHED


def test_a_confirmation_and_a_request_lapsing_its_batch_at_once_never_both_win(
    db: StateDB, database_url: str
) -> None:
    """Alice confirms her quote while bob's request lapses her batch, from two connections, many times:
    either the quote is confirmed and bob is refused as in progress, or it lapsed and bob's batch opened;
    never a confirmed quote in a batch that ended, nor two batches open."""
    import threading

    from qsolve_pipeline.storage.state import connect

    confirmer, asker = connect(database_url), connect(database_url)
    try:
        version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
        for _ in range(12):
            batch = db.request_batch(version, "alice")
            quote = db.add_quote(batch.id, 0, "hw", "provider:ref", 1, {}, unknown_cost=False)
            db.batch_priced(batch.id)
            start, said = threading.Barrier(2), {}

            def confirm(quote_id=quote.id, start=start, said=said) -> None:
                start.wait()
                try:
                    said["confirm"] = confirmer.confirm_quote(quote_id, "alice").status
                except QuoteRefused as e:
                    said["confirm"] = e

            def ask(start=start, said=said) -> None:
                start.wait()
                try:
                    said["ask"] = asker.request_batch(version, "bob")
                except BatchInProgress as e:
                    said["ask"] = e

            threads = [threading.Thread(target=confirm), threading.Thread(target=ask)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            final = db.get_quote(quote.id)
            if final.status is QuoteStatus.CONFIRMED:
                assert said["confirm"] is QuoteStatus.CONFIRMED and isinstance(said["ask"], BatchInProgress)
                assert db.get_batch(batch.id).status == "open"
                db.start_run(quote.run_id)
                db.finish_run(quote.run_id, RunStatus.FINISHED, result={})
            else:
                assert final.status is QuoteStatus.EXPIRED and isinstance(said["confirm"], QuoteRefused)
                assert said["ask"].lapsed == (quote.id,) and db.get_batch(batch.id).status == "ended"
                db.abandon_batch(said["ask"].id, "the test's")
            with db.engine.connect() as connection:
                live = connection.execute(
                    sa.select(sa.func.count())
                    .select_from(quote_batches)
                    .where(quote_batches.c.status != "ended")
                ).scalar()
            assert live <= 1
    finally:
        confirmer.close()
        asker.close()


def test_the_ledgers_own_accounts_ask_for_no_quote(db: StateDB) -> None:
    from qsolve_pipeline.storage.state import PlatformAccount

    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
    with pytest.raises(PlatformAccount, match="the ledger's own accounts"):
        db.request_batch(version, "system")


def test_the_database_itself_refuses_two_open_batches(db: StateDB) -> None:
    version, batch, _ = batch_of(db, Decimal("1"))
    row = {"workflow": "w", "version_id": version.id, "account": "alice", "status": "pricing"}
    with pytest.raises(sa.exc.IntegrityError), db.engine.begin() as connection:
        connection.execute(quote_batches.insert().values(id="x" * 32, created_at=batch.created_at, **row))


def test_a_batch_whose_pricing_failed_ends_with_its_runs_unrecorded(db: StateDB) -> None:
    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
    batch = db.request_batch(version, "alice")
    quote = db.add_quote(batch.id, 0, "hw", "provider:ref", 1, {}, unknown_cost=False)
    db.abandon_batch(batch.id, "the device is down")
    assert db.get_quote(quote.id).status is QuoteStatus.REFUSED
    assert db.get_run(quote.run_id).reason is FailureReason.PLATFORM_ERROR
    assert db.request_batch(version, "alice").status == "pricing"


def test_a_pricing_batch_left_by_a_stopped_process_does_not_block_for_ever(db: StateDB) -> None:
    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
    batch = db.request_batch(version, "alice")
    with db.engine.begin() as connection:
        old = batch.created_at - timedelta(hours=2)
        connection.execute(quote_batches.update().values(created_at=old))
        connection.execute(quotes.delete())
    assert db.request_batch(version, "alice").id != batch.id


def test_of_many_processes_claiming_one_quotes_run_at_once_one_gets_it(
    db: StateDB, database_url: str, tmp_path
) -> None:
    """Eight connections (as eight processes would hold) race to take one confirmed quote's run: the
    database gives it to exactly one; the run is then no one else's to run."""
    import threading

    from qsolve_pipeline.storage.state import connect
    from tests.storage.state.conftest import default_settings

    _, _, (quote,) = batch_of(db, Decimal("2"))
    db.confirm_quote(quote.id, "alice")
    others = [connect(database_url, home=tmp_path, settings=default_settings()) for _ in range(8)]
    start, won = threading.Barrier(len(others)), []

    def claim(i: int) -> None:
        start.wait()
        if others[i].claim_quote_run(quote.id, f"owner-{i}", 30):
            won.append(i)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(others))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for other in others:
        other.close()
    assert len(won) == 1
    assert db.get_run(quote.run_id).owner == f"owner-{won[0]}"
    assert db.quotes_to_run() == [] and not db.claim_quote_run(quote.id, "late", 30)


def test_expiry_racing_confirmation_never_expires_a_confirmed_quote(
    db: StateDB, database_url: str, tmp_path
) -> None:
    """Issue 24: expiry ends a quote only while it is still pending (a conditional UPDATE). 25 times, a
    quote confirmed at the moment it lapses while another connection expires quotes: a confirmation
    that was accepted stays confirmed, its run untouched; an expired quote's run is cancelled."""
    import threading
    import time

    from qsolve_pipeline.storage.state import connect
    from tests.storage.state.conftest import default_settings

    version, _ = db.publish_version("w", "1.0.0", "d" * 64, [CASE])
    outcomes = []
    with (
        connect(database_url, home=tmp_path, settings=default_settings()) as confirmer,
        connect(database_url, home=tmp_path, settings=default_settings()) as expirer,
    ):
        for i in range(25):
            batch = db.request_batch(version, "alice")
            quote = db.add_quote(
                batch.id,
                0,
                "hw",
                "provider:ref",
                Decimal(1),
                {"circuits": 1},
                unknown_cost=False,
                valid_s=0.3,
            )
            db.batch_priced(batch.id)
            lapse = time.monotonic() + 0.3 - 0.0004 * i  # from when it lapses to 10 ms before
            said: list = []

            def expire(lapse=lapse) -> None:
                while time.monotonic() < lapse + 0.1:
                    expirer.expire_quotes()

            def confirm(lapse=lapse, quote_id=quote.id, said=said) -> None:
                time.sleep(max(0.0, lapse - time.monotonic()))
                try:
                    said.append(confirmer.confirm_quote(quote_id, "alice").status)
                except QuoteRefused as e:
                    said.append(e)

            threads = [threading.Thread(target=expire), threading.Thread(target=confirm)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            final, run = db.get_quote(quote.id), db.get_run(quote.run_id)
            if said == [QuoteStatus.CONFIRMED]:
                assert final.status is QuoteStatus.CONFIRMED and run.status is RunStatus.CREATED, (final, run)
            else:
                assert final.status is QuoteStatus.EXPIRED and run.reason is FailureReason.CANCELLED, (
                    said,
                    run,
                )
            outcomes.append(final.status)
            db.expire_quotes()
            with db.engine.begin() as connection:  # the batch done, so the next may open
                connection.execute(quote_batches.update().values(status="ended"))
    assert len(outcomes) == 25


def test_the_ending_update_leaves_a_quote_confirmed_meanwhile_as_it_is(db: StateDB) -> None:
    """The window the race above aims at, opened by hand: expiry read the quote pending, then it was
    confirmed; expiry's UPDATE, conditioned on its still being pending, changes nothing."""
    from qsolve_pipeline.storage.state._quotes import _end_quote

    _, _, (quote,) = batch_of(db, Decimal(1))
    db.confirm_quote(quote.id, "alice")
    with db.engine.begin() as connection:
        assert not _end_quote(
            connection, quote.id, quote.run_id, QuoteStatus.EXPIRED, FailureReason.CANCELLED, "x"
        )
    assert db.get_quote(quote.id).status is QuoteStatus.CONFIRMED
    assert db.get_run(quote.run_id).status is RunStatus.CREATED
