"""Every host's receipt key in the state database (issue 26, item 3), trusted through the operator's root
key (issue 33, item 4): registered with its proof of possession, endorsed by the root, listed as a trust
list a verifier takes only where the root's endorsement holds; retired (what it signed stands, its host
moves to a new key) and revoked (what it signed is refused ``key_revoked``), each signed by the root.

The attacker here is a database writer with no root key: every host holds the database's URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve.receipts import verify
from qsolve.receipts.endorsement import StatementRefused, possession, read_signed_list, sign_list
from qsolve.receipts.keys import HostKey, key_path, load_host_key
from qsolve.receipts.root import NoReceiptRoot
from qsolve.receipts.seal import seal
from qsolve.receipts.trust import HeldTo, TrustList
from qsolve_pipeline.storage.state import NotFound, StateDB
from qsolve_pipeline.storage.state._tables import host_keys
from tests.qsolve.receipts.builders import KEY, OTHER_KEY, request, result
from tests.qsolve.receipts.roots import NOT_THE_ROOT, ROOT, trust_root


@pytest.fixture(autouse=True)
def _root(monkeypatch: pytest.MonkeyPatch) -> None:
    trust_root(monkeypatch)


def verify_held(job: dict, db: StateDB) -> tuple[bool, list[str]]:
    verdict = verify(json.dumps(job), held=HeldTo(trust=TrustList.from_value(db.trust_list())))
    return verdict.valid, sorted(verdict.reasons)


def _write(db: StateDB, statement) -> None:
    """What a database writer does, with the URL alone."""
    with db.engine.begin() as connection:
        connection.execute(statement)


def test_a_key_is_registered_once_with_its_proof_and_trusted_once_endorsed(db: StateDB) -> None:
    first = db.register_host_key(KEY, "host-a")
    again = db.register_host_key(KEY, "host-b")  # the same key from elsewhere keeps its host
    assert again == first and first.host == "host-a" and first.in_use and first.key_id == KEY.public_hex[:16]
    assert json.loads(first.possession)["statement"]["host"] == "host-a"
    db.register_host_key(OTHER_KEY, "host-b")
    assert [(r.host, r.key) for r in db.host_keys()] == [
        ("host-a", KEY.public_hex),
        ("host-b", OTHER_KEY.public_hex),
    ]
    job = seal(request(), result(), KEY)
    assert db.trust_list()["keys"] == [] and verify_held(job, db) == (False, ["key_untrusted"])
    (record, standing), _ = db.key_standings()
    assert standing.status == "not endorsed" and "there is no endorsement" in standing.why
    db.endorse_host_key(KEY.public_hex[:16], ROOT)
    assert verify_held(job, db) == (True, [])  # a receipt sealed before the endorsement verifies after it
    listing = db.trust_list()
    assert listing["format"] == "wai.quantum.receipt-keys/1"
    (entry,) = listing["keys"]
    assert entry["key"] == KEY.public_hex and entry["host"] == "host-a"
    assert entry["endorsement"]["statement"]["format"] == "qsolve.receipt-key-endorsement/1"


def test_retired_stands_revoked_is_refused_each_signed_by_the_root(db: StateDB) -> None:
    db.register_host_key(KEY, "host-a")
    db.endorse_host_key(KEY.public_hex, ROOT)
    job = seal(request(), result(), KEY)
    retired = db.retire_host_key(KEY.public_hex[:16], ROOT, note="rotated")
    assert not retired.in_use and retired.status == "retired" and retired.revoked_from_ms is None
    assert retired.standing(ROOT.public_hex).status == "retired"
    assert verify_held(job, db) == (True, [])  # what a retired key sealed stands
    (entry,) = db.trust_list()["keys"]
    assert "retired_ms" in entry and entry["note"] == "rotated" and "revoked_from_ms" not in entry
    revoked = db.revoke_host_key(KEY.public_hex, ROOT, from_ms=5)
    assert revoked.standing(ROOT.public_hex).status == "revoked from 5 ms"
    assert db.revoke_host_key(KEY.public_hex, ROOT, from_ms=9).standing(ROOT.public_hex).revoked_from_ms == 5
    assert verify_held(job, db) == (False, ["key_revoked"])  # it seals no time: refused by any revocation
    timed = seal(request(), result(), KEY, issued_ms=4)
    assert verify_held(timed, db) == (True, [])  # sealed before the moment it is revoked from
    db.revoke_host_key(KEY.public_hex, ROOT, from_ms=0)
    assert verify_held(timed, db) == (False, ["key_revoked"])
    with pytest.raises(NotFound, match="no registered key starts with"):
        db.retire_host_key("0" * 16, ROOT)
    with pytest.raises(NotFound, match="give a key's id"):
        db.revoke_host_key("abc", ROOT)


def test_a_host_whose_key_was_retired_signs_with_a_new_one_not_endorsed_until_the_root_says(
    db: StateDB, tmp_path: Path
) -> None:
    home = tmp_path / "home-a"
    key = db.signing_key(home, host="host-a")
    assert db.signing_key(home, host="host-a").public_hex == key.public_hex  # registered once, the same
    db.endorse_host_key(key.public_hex, ROOT)
    old = seal(request(), result(), key)
    db.retire_host_key(key.public_hex, ROOT)
    said: list[str] = []
    new = db.signing_key(home, host="host-a", tell=said.append)
    assert new.public_hex != key.public_hex and load_host_key(home).public_hex == new.public_hex
    assert said == [
        f"receipt key {key.public_hex[:16]} is retired: this host signs with a new key {new.public_hex[:16]}"
    ]
    aside = key_path(home).with_name(f"{key_path(home).name}.retired-{key.public_hex[:16]}")
    assert aside.is_file() and aside.stat().st_mode & 0o077 == 0  # kept, for its owner only
    assert [(r.host, r.in_use) for r in db.host_keys()] == [("host-a", False), ("host-a", True)]
    fresh = seal(request(), result(), new)  # a new key seals before it is endorsed ...
    assert verify_held(fresh, db) == (False, ["key_untrusted"])
    db.endorse_host_key(new.public_hex, ROOT)
    assert verify_held(fresh, db) == (True, []) and verify_held(old, db) == (True, [])  # ... and after


def test_a_key_written_straight_into_the_database_under_a_hosts_name_is_not_endorsed(db: StateDB) -> None:
    db.register_host_key(KEY, "host-a")
    db.endorse_host_key(KEY.public_hex, ROOT)
    mine = HostKey(bytes(range(50, 82)))  # the attacker's own key, with its own (valid) proof of possession
    _write(
        db,
        host_keys.insert().values(
            key=mine.public_hex,
            host="host-a",
            first_seen_at=db.host_keys()[0].first_seen_at,
            possession=possession(mine, "host-a", 1),
        ),
    )
    forged = seal(request(), result(), mine)
    assert verify_held(forged, db) == (False, ["key_untrusted"])
    standings = {r.key: s for r, s in db.key_standings()}
    assert standings[mine.public_hex].status == "not endorsed" and standings[KEY.public_hex].endorsed
    # copying the real key's endorsement onto the attacker's row: it names another key
    endorsement = db.find_host_key(KEY.public_hex).endorsement
    _write(db, host_keys.update().where(host_keys.c.key == mine.public_hex).values(endorsement=endorsement))
    assert "names another key" in db.find_host_key(mine.public_hex).standing(ROOT.public_hex).why
    assert verify_held(forged, db) == (False, ["key_untrusted"])
    # an endorsement the attacker signs with a key of their own, in the form the root's takes
    from qsolve.receipts.endorsement import endorse

    signed_by_another = endorse(NOT_THE_ROOT, mine.public_hex, possession(mine, "host-a", 1), 2)
    _write(
        db, host_keys.update().where(host_keys.c.key == mine.public_hex).values(endorsement=signed_by_another)
    )
    assert (
        "does not hold, strictly, by the root"
        in db.find_host_key(mine.public_hex).standing(ROOT.public_hex).why
    )
    assert verify_held(forged, db) == (False, ["key_untrusted"])
    assert [e["key"] for e in db.trust_list()["keys"]] == [KEY.public_hex]


def test_the_root_endorses_nothing_without_the_keys_own_proof(db: StateDB) -> None:
    mine = HostKey(bytes(range(50, 82)))
    _write(  # a row of a key whose holder never signed a proof (another key's proof, or none)
        db,
        host_keys.insert().values(
            key=mine.public_hex,
            host="host-a",
            first_seen_at=sa.func.now(),
            possession=possession(KEY, "host-a", 1),
        ),
    )
    with pytest.raises(StatementRefused, match="names another key"):
        db.endorse_host_key(mine.public_hex, ROOT)
    _write(db, host_keys.update().where(host_keys.c.key == mine.public_hex).values(possession=None))
    with pytest.raises(StatementRefused, match="there is no possession statement"):
        db.endorse_host_key(mine.public_hex, ROOT)
    # the key's own host registering it writes its own proof over what it found, and can be endorsed
    db.register_host_key(mine, "host-m")
    assert db.endorse_host_key(mine.public_hex, ROOT).standing(ROOT.public_hex).host == "host-m"


def test_a_revocation_cleared_in_the_database_leaves_the_key_revoked_or_not_endorsed(db: StateDB) -> None:
    home = db.home
    db.register_host_key(KEY, "host-a")
    db.endorse_host_key(KEY.public_hex, ROOT)
    job = seal(request(), result(), KEY)
    db.revoke_host_key(KEY.public_hex, ROOT)
    # the columns a verifier once read, set back: the root's statement still says revoked
    _write(db, host_keys.update().values(revoked_from_ms=None, retired_at=None))
    assert verify_held(job, db) == (False, ["key_revoked"])
    # the statement taken away: elsewhere the key is not endorsed at all (key_untrusted); this machine,
    # which read the revocation, keeps the root's newest word (qsolve.receipts.newest)
    _write(db, host_keys.update().values(endorsement=None))
    assert verify_held(job, db) == (False, ["key_revoked"])
    db.home = None  # a reader that remembers nothing
    assert verify_held(job, db) == (False, ["key_untrusted"])
    db.home = home
    # the operator endorsing it anew puts the root's newest word back: revoked still, never in use
    db.endorse_host_key(KEY.public_hex, ROOT)
    assert db.key_standings(only=[KEY.public_hex])[0][1].revoked_from_ms == 0
    db.home = None
    assert verify_held(job, db) == (False, ["key_revoked"])
    db.home = home
    # a statement in which the attacker edited the revocation out no longer holds by the root
    doc = json.loads(db.find_host_key(KEY.public_hex).endorsement)
    doc["statement"]["revoked_from_ms"] = 12345
    _write(db, host_keys.update().values(endorsement=json.dumps(doc)))
    assert verify_held(job, db) == (False, ["key_revoked"])
    db.home = None
    assert verify_held(job, db) == (False, ["key_untrusted"])


def test_no_root_configured_trusts_no_key(db: StateDB, monkeypatch: pytest.MonkeyPatch) -> None:
    db.register_host_key(KEY, "host-a")
    db.endorse_host_key(KEY.public_hex, ROOT)
    monkeypatch.delenv("QSOLVE_RECEIPT_ROOT")
    with pytest.raises(NoReceiptRoot, match="no receipt root is configured on this machine"):
        db.trust_list()
    listing, why = db.page_trust_list()
    assert listing["keys"] == [] and "QSOLVE_RECEIPT_ROOT" in why
    trust_root(monkeypatch, NOT_THE_ROOT)  # another root configured: what this root signed is not listed
    assert db.trust_list()["keys"] == []


def test_the_operators_list_signed_whole_checks_offline_with_the_roots_public_key(db: StateDB) -> None:
    db.register_host_key(KEY, "host-a")
    db.endorse_host_key(KEY.public_hex, ROOT)
    signed = json.loads(json.dumps(sign_list(db.trust_list(), ROOT)))
    assert read_signed_list(signed, ROOT.public_hex) == db.trust_list()
    with pytest.raises(StatementRefused, match="not by the configured root"):
        read_signed_list(signed, NOT_THE_ROOT.public_hex)
    signed["list"]["keys"].append({"key": OTHER_KEY.public_hex})
    with pytest.raises(StatementRefused, match="does not hold"):
        read_signed_list(signed, ROOT.public_hex)
    other = sign_list(db.trust_list(), NOT_THE_ROOT) | {"root": ROOT.public_hex}
    with pytest.raises(StatementRefused, match="does not hold"):
        read_signed_list(other, ROOT.public_hex)
