"""Every host's receipt key in the state database (issue 26, item 3): registered once, listed as a trust
list a verifier takes; retired (what it signed stands, its host moves to a new key) and revoked (what it
signed is refused ``key_revoked``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qsolve.receipts import verify
from qsolve.receipts.keys import key_path, load_host_key
from qsolve.receipts.seal import seal
from qsolve.receipts.trust import HeldTo, TrustList
from storage.state import NotFound, StateDB
from tests.qsolve.receipts.builders import KEY, OTHER_KEY, request, result


def _held(db: StateDB) -> HeldTo:
    return HeldTo(trust=TrustList.from_value(db.trust_list()))


def test_a_key_is_registered_once_under_the_host_that_first_showed_it(db: StateDB) -> None:
    first = db.register_host_key(KEY.public_hex, "host-a")
    again = db.register_host_key(KEY.public_hex, "host-b")  # the same key from elsewhere keeps its host
    assert again == first and first.host == "host-a" and first.in_use and first.key_id == KEY.public_hex[:16]
    db.register_host_key(OTHER_KEY.public_hex, "host-b")
    assert [(r.host, r.key) for r in db.host_keys()] == [
        ("host-a", KEY.public_hex),
        ("host-b", OTHER_KEY.public_hex),
    ]
    listing = db.trust_list()
    assert listing["format"] == "wai.quantum.receipt-keys/1" and len(listing["keys"]) == 2
    assert TrustList.from_value(listing).entries.keys() == {KEY.public_hex, OTHER_KEY.public_hex}
    with pytest.raises(ValueError, match="64 lower-case hex digits"):
        db.register_host_key(KEY.public_hex.upper(), "host-a")


def test_retired_stands_revoked_is_refused(db: StateDB) -> None:
    db.register_host_key(KEY.public_hex, "host-a")
    job = seal(request(), result(), KEY)
    assert verify_held(job, db) == (True, [])
    unknown = seal(request(), result(), OTHER_KEY)
    assert verify_held(unknown, db) == (False, ["key_untrusted"])  # not registered: not trusted
    retired = db.retire_host_key(KEY.public_hex[:16], note="rotated")
    assert not retired.in_use and retired.status == "retired" and retired.revoked_from_ms is None
    assert verify_held(job, db) == (True, [])  # what a retired key sealed stands
    (entry,) = db.trust_list()["keys"]
    assert "retired_ms" in entry and entry["note"] == "rotated" and "revoked_from_ms" not in entry
    revoked = db.revoke_host_key(KEY.public_hex, from_ms=5)
    assert revoked.revoked_from_ms == 5 and revoked.status == "revoked from 5 ms"
    assert db.revoke_host_key(KEY.public_hex, from_ms=9).revoked_from_ms == 5  # the earlier moment stays
    assert verify_held(job, db) == (False, ["key_revoked"])  # it seals no time: refused by any revocation
    timed = seal(request(), result(), KEY, issued_ms=4)
    assert verify_held(timed, db) == (True, [])  # sealed before the moment it is revoked from
    assert db.revoke_host_key(KEY.public_hex, from_ms=0).revoked_from_ms == 0
    assert verify_held(timed, db) == (False, ["key_revoked"])
    with pytest.raises(NotFound, match="no registered key starts with"):
        db.retire_host_key("0" * 16)
    with pytest.raises(NotFound, match="give a key's id"):
        db.revoke_host_key("abc")


def verify_held(job: dict, db: StateDB) -> tuple[bool, list[str]]:
    import json

    verdict = verify(json.dumps(job), held=_held(db))
    return verdict.valid, sorted(verdict.reasons)


def test_a_host_whose_key_was_retired_signs_with_a_new_one(db: StateDB, tmp_path: Path) -> None:
    home = tmp_path / "home-a"
    key = db.signing_key(home, host="host-a")
    assert db.signing_key(home, host="host-a").public_hex == key.public_hex  # registered once, the same
    db.retire_host_key(key.public_hex)
    said: list[str] = []
    new = db.signing_key(home, host="host-a", tell=said.append)
    assert new.public_hex != key.public_hex and load_host_key(home).public_hex == new.public_hex
    assert said == [
        f"receipt key {key.public_hex[:16]} is retired: this host signs with a new key {new.public_hex[:16]}"
    ]
    aside = key_path(home).with_name(f"{key_path(home).name}.retired-{key.public_hex[:16]}")
    assert aside.is_file() and aside.stat().st_mode & 0o077 == 0  # kept, for its owner only
    assert [(r.host, r.in_use) for r in db.host_keys()] == [("host-a", False), ("host-a", True)]
