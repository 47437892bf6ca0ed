"""Several processes on one database: no hold spent twice, no settlement taken twice, no entry lost.

The workers are processes forked from a clean fork server (the pytest process may run threads, which
forking it directly would not survive), each with its own engine and connections, started together at a
barrier so that they really race.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import sqlalchemy as sa

from qsolve_pipeline.storage.state import (
    SYSTEM_ACCOUNT,
    InsufficientCredits,
    RunStatus,
    StateDB,
    VersionConflict,
    connect,
)
from qsolve_pipeline.storage.state._migrate import HEAD
from tests.storage.state.conftest import assert_ledger_balanced, default_settings

FORK = multiprocessing.get_context("forkserver")
FORK.set_forkserver_preload([__name__])


def _child(work: Callable, args: tuple, barrier, results, index: int) -> None:
    try:
        results.put((index, "ok", work(barrier, *args)))
    except BaseException:
        results.put((index, "error", traceback.format_exc()))


def race(jobs: list[tuple[Callable, tuple]]) -> list:
    """Run each ``work(barrier, *args)`` in a process of its own; what each returned, in order."""
    barrier, results = FORK.Barrier(len(jobs)), FORK.Queue()
    processes = [
        FORK.Process(target=_child, args=(work, args, barrier, results, i))
        for i, (work, args) in enumerate(jobs)
    ]
    for process in processes:
        process.start()
    outcomes = dict((i, (status, value)) for i, status, value in (results.get(timeout=120) for _ in jobs))
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    errors = [value for status, value in outcomes.values() if status == "error"]
    assert not errors, "\n".join(errors)
    return [outcomes[i][1] for i in range(len(jobs))]


def settle_all(barrier, url: str, run_ids: list[str]) -> dict[str, tuple]:
    with connect(url, settings=default_settings()) as db:
        barrier.wait(timeout=60)
        return {r: (s.held, s.charged, s.released) for r in run_ids for s in [db.settle(r, "2")]}


def release_stale(barrier, url: str) -> list[str]:
    with connect(url, settings=default_settings()) as db:
        barrier.wait(timeout=60)
        return db.release_stale_holds(timedelta(0))


def hold_run_settle(barrier, url: str, account: str, run_ids: list[str]) -> dict[str, str]:
    done = {}
    with connect(url, settings=default_settings()) as db:
        barrier.wait(timeout=60)
        for run_id in run_ids:
            try:
                db.hold(account, run_id, 1)
            except InsufficientCredits:
                done[run_id] = "refused"
                continue
            db.start_run(run_id)
            db.finish_run(run_id, "finished", result={"ok": True})
            db.settle(run_id, "0.5")
            db.settle(run_id, "0.5")
            done[run_id] = "settled"
    return done


def publish(barrier, url: str, digest: str) -> tuple:
    with connect(url, settings=default_settings()) as db:
        barrier.wait(timeout=60)
        try:
            version, created = db.publish_version("max-cut", "1.0.0", digest, [])
        except VersionConflict as e:
            return ("refused", e.published_digest)
        return (version.id, version.digest, created)


def connect_and_grant(barrier, url: str, account: str) -> None:
    barrier.wait(timeout=60)
    with connect(url, settings=default_settings()) as db:
        db.grant(account, 1)


def _url(db: StateDB) -> str:
    return db.engine.url.render_as_string(hide_password=False)


def test_processes_racing_to_settle_and_release_take_nothing_twice(db: StateDB) -> None:
    version, _ = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])
    db.grant("alice", 100)
    run_ids = []
    for i in range(12):
        run = db.create_run(version, f"case-{i}", "ibm:ibm_fez", "hardware")
        db.hold("alice", run.id, 5)
        db.start_run(run.id)
        db.finish_run(run.id, "finished", result={"ok": True})
        run_ids.append(run.id)
    url = _url(db)
    settler_a, settler_b, settler_c, released = race(
        [
            (settle_all, (url, run_ids)),
            (settle_all, (url, run_ids[::-1])),
            (settle_all, (url, run_ids)),
            (release_stale, (url,)),
        ]
    )
    charged = 0
    for run_id in run_ids:
        kinds = [t.kind for t in db.list_transfers(run_id)]
        assert settler_a[run_id] == settler_b[run_id] == settler_c[run_id]  # one settlement, seen by all
        if run_id in released:
            assert kinds == ["hold", "release"] and settler_a[run_id] == (5, 0, 5)
        else:
            assert kinds == ["hold", "charge", "release"] and settler_a[run_id] == (5, 2, 3)
            charged += 1
    assert db.balance("alice") == 100 - 2 * charged
    assert db.balance("ledger:holds") == 0
    assert_ledger_balanced(db)


def test_processes_holding_on_one_account_never_overdraw_it(db: StateDB) -> None:
    version, _ = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])
    db.grant("alice", 10)
    runs = [db.create_run(version, f"case-{i}", "ibm:ibm_fez", "hardware").id for i in range(24)]
    outputs = race([(hold_run_settle, (_url(db), "alice", runs[i::3])) for i in range(3)])
    done = {run_id: what for output in outputs for run_id, what in output.items()}
    settled = [r for r, what in done.items() if what == "settled"]
    refused = [r for r, what in done.items() if what == "refused"]
    assert len(done) == 24 and len(settled) + len(refused) == 24
    assert len(refused) >= 4  # each settled run keeps 0.5 of the 10 credits
    assert db.balance("alice") == Decimal(10) - Decimal("0.5") * len(settled) >= 0
    for run_id in settled:
        assert [t.kind for t in db.list_transfers(run_id)] == ["hold", "charge", "release"]
        assert db.get_run(run_id).status is RunStatus.FINISHED
    for run_id in refused:
        assert db.list_transfers(run_id) == []
        assert db.get_run(run_id).reason == "insufficient_credits"
    assert_ledger_balanced(db)


def test_processes_connecting_to_a_fresh_database_migrate_it_once(database_url: str, tmp_path: Path) -> None:
    accounts = [f"user-{i}" for i in range(4)]
    race([(connect_and_grant, (database_url, name)) for name in accounts])
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        with db.engine.connect() as connection:
            versions = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
            grants = connection.execute(
                sa.text("SELECT COUNT(*) FROM transfers WHERE kind = 'grant'")
            ).scalar()
        assert versions == [HEAD]
        assert grants == 1 + len(accounts)  # the system account's, once, and one per process
        assert db.balance(SYSTEM_ACCOUNT) == 1_000_000
        assert all(db.balance(name) == 1 for name in accounts)
        assert_ledger_balanced(db)


def test_processes_publishing_one_version_at_once_publish_it_once(db: StateDB) -> None:
    url = _url(db)
    outcomes = race([(publish, (url, digest)) for digest in ("a" * 64, "a" * 64, "a" * 64, "b" * 64)])
    published = [o for o in outcomes if o[0] != "refused"]
    winner = db.get_version("max-cut", "1.0.0")
    assert sum(1 for o in published if o[2]) == 1  # created once
    assert all(o[:2] == (winner.id, winner.digest) for o in published)
    assert all(o == ("refused", winner.digest) for o in outcomes if o[0] == "refused")
    assert len(published) == (3 if winner.digest == "a" * 64 else 1)
