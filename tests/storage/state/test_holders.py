"""Which host's workers hold which provider (issue 26, item 3): a host registers exactly the queues it
holds now, its earlier ones no longer listed; two hosts may hold one provider."""

from __future__ import annotations

from datetime import timedelta

from qsolve_pipeline.storage.state import StateDB


def test_a_host_registers_what_it_holds_now(db: StateDB) -> None:
    assert db.holders("provider-lab") == []
    assert db.register_holder("host-a", ["provider-lab", "ibm", "ibm"]) == ["ibm", "provider-lab"]
    db.register_holder("host-b", ["provider-lab"])
    assert [host for host, _ in db.holders("provider-lab")] == ["host-a", "host-b"]
    ((_, first),) = db.holders("ibm")
    db.register_holder("host-a", ["ibm"])  # lab's credential left host-a
    assert [host for host, _ in db.holders("provider-lab")] == ["host-b"]
    ((host, seen),) = db.holders("ibm")
    assert host == "host-a" and seen >= first  # registered again: seen again
    db.register_holder("host-a", [])
    assert db.holders("ibm") == [] and [h for h, _ in db.holders("provider-lab")] == ["host-b"]


def test_a_host_not_seen_for_ten_minutes_is_not_counted_by_the_database_s_clock(
    db: StateDB, host_clock
) -> None:
    """A worker renews its registration while it lives (``qsolve worker``); a host whose worker stopped
    long ago is not taken for a live holder. Seen and judged by the database's clock: a host whose clock
    runs ahead neither ages out a live holder nor, running behind, writes one that is stale at once."""
    from qsolve_pipeline.storage.state._tables import provider_holders

    db.register_holder("host-a", ["provider-lab"])
    db.register_holder("host-b", ["provider-lab"])
    ((_, seen), _) = db.holders("provider-lab")
    with db.engine.begin() as connection:  # host-a's worker stopped eleven minutes ago
        connection.execute(
            provider_holders.update()
            .where(provider_holders.c.host == "host-a")
            .values(seen_at=seen - timedelta(minutes=11))
        )
    live, stale = db.live_holders("provider-lab")
    assert [h for h, _ in live] == ["host-b"] and [h for h, _ in stale] == ["host-a"]
    assert [h for h, _ in db.holders("provider-lab")] == ["host-a", "host-b"]  # still listed, with when
    host_clock(timedelta(minutes=-30))  # host-a's clock, half an hour behind
    db.register_holder("host-a", ["provider-lab"])  # its worker is back, renewing
    host_clock(timedelta(minutes=30))  # judged on a host half an hour ahead
    live, stale = db.live_holders("provider-lab")
    assert [h for h, _ in live] == ["host-a", "host-b"] and stale == []
