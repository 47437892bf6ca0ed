"""Which host's workers hold which provider (issue 26, item 3): a host registers exactly the queues it
holds now, its earlier ones no longer listed; two hosts may hold one provider."""

from __future__ import annotations

from storage.state import StateDB


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
