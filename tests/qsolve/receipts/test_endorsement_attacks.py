"""Issue 33, item 4, attacked by an independent tester: a database writer with no root key (the
state database's URL alone, as every worker host holds it) and an operator holding the wrong root file,
through the commands a person runs (``qsolve verify --registered``, ``qsolve receipt-key``). What the
attacker gets is asserted; the two attacks that succeeded (a replayed earlier endorsement, a root file
that is not the configured root) are closed, and their tests assert the right behaviour."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from qsolve.receipts.endorsement import endorse, possession
from qsolve.receipts.keys import HostKey, load_host_key
from qsolve.receipts.seal import seal
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.state._tables import host_keys
from tests.qsolve.receipts.builders import request, result
from tests.qsolve.receipts.roots import NOT_THE_ROOT, ROOT, endorse_home, root_file, trust_root
from tests.qsolve.receipts.test_commands import _run, _write

MINE = HostKey(bytes(range(50, 82)))  # the attacker's own key


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    trust_root(monkeypatch)
    return tmp_path / "home"


def _writer(home: Path, statement) -> None:
    """What a database writer does, with the URL alone."""
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(statement)


def _verify(job: str, capsys) -> tuple[int, list[str]]:
    code, out, _ = _run(["verify", job, "--registered", "--json"], capsys)
    return code, json.loads(out)["reasons"]


def _endorsement(home: Path, key: str) -> str:
    with connect(home=home) as db:
        return db.find_host_key(key).endorsement


def test_a_revocation_is_not_undone_by_replaying_the_earlier_endorsement(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = endorse_home(home)
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    assert _verify(job, capsys) == (0, [])
    kept = _endorsement(home, key.public_hex)  # the writer reads it, as every worker can
    code, _, _ = _run(
        ["receipt-key", "revoke", key.public_hex[:16], "--root", str(root_file(tmp_path))], capsys
    )
    assert code == 0 and _verify(job, capsys) == (1, ["key_revoked"])
    _writer(home, host_keys.update().where(host_keys.c.key == key.public_hex).values(endorsement=kept))
    assert _verify(job, capsys) == (1, ["key_revoked"])


def test_a_revocation_cleared_or_edited_in_the_database_never_verifies(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = endorse_home(home)
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    _run(["receipt-key", "revoke", key.public_hex[:16], "--root", str(root_file(tmp_path))], capsys)
    _writer(home, host_keys.update().values(revoked_from_ms=None, retired_at=None, note=None))
    assert _verify(job, capsys) == (1, ["key_revoked"])
    revoked = json.loads(_endorsement(home, key.public_hex))
    revoked["statement"]["revoked_from_ms"] = None
    revoked["statement"]["retired_ms"] = None
    _writer(home, host_keys.update().values(endorsement=json.dumps(revoked)))
    assert _verify(job, capsys) == (1, ["key_revoked"])  # this machine read the root's revocation
    (home / "keys" / "endorsements-seen.json").unlink()  # as a machine that never read it
    assert _verify(job, capsys) == (1, ["key_untrusted"])  # the edited statement holds by no root


def test_a_key_the_writer_endorses_with_a_root_of_its_own_verifies_nowhere(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endorse_home(home)
    with connect(home=home) as db:
        host = db.host_keys()[0].host
    proof = possession(MINE, host, 1)
    _writer(
        home,
        host_keys.insert().values(
            key=MINE.public_hex,
            host=host,
            first_seen_at=datetime.now(UTC),
            possession=proof,
            endorsement=endorse(NOT_THE_ROOT, MINE.public_hex, proof, 2),
        ),
    )
    forged = dict(seal(request(), result(), MINE))
    forged_path = _write(tmp_path, "forged.json", forged)
    assert _verify(forged_path, capsys) == (1, ["key_untrusted"])
    code, out, _ = _run(["receipt-key"], capsys)
    (line,) = [line for line in out.splitlines() if MINE.public_hex[:16] in line and "not endorsed" in line]
    assert line
    listing = json.loads(out.strip().splitlines()[-1])
    assert MINE.public_hex not in [e["key"] for e in listing["keys"]]


def test_swapping_possession_and_endorsement_between_two_keys_endorses_neither_wrongly(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = endorse_home(home)
    with connect(home=home) as db:
        real = db.find_host_key(key.public_hex)
        db.register_host_key(MINE, "elsewhere")
    _writer(
        home,
        host_keys.update()
        .where(host_keys.c.key == MINE.public_hex)
        .values(possession=real.possession, endorsement=real.endorsement),
    )
    _writer(
        home,
        host_keys.update()
        .where(host_keys.c.key == key.public_hex)
        .values(possession=possession(MINE, "elsewhere", 1), endorsement=None),
    )
    forged = _write(tmp_path, "forged.json", seal(request(), result(), MINE))
    assert _verify(forged, capsys) == (1, ["key_untrusted"])
    code, _, err = _run(
        ["receipt-key", "endorse", MINE.public_hex[:16], "--root", str(root_file(tmp_path))], capsys
    )
    assert code == 1 and "names another key" in err  # the real key's proof endorses no other key


def test_a_root_file_that_is_not_the_configured_root_is_refused(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = endorse_home(home)
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    wrong = str(root_file(tmp_path / "stale", NOT_THE_ROOT))
    code, out, err = _run(["receipt-key", "revoke", key.public_hex[:16], "--root", wrong], capsys)
    assert _verify(job, capsys) == (0, [])  # the key was not revoked ...
    assert code != 0 and "not the configured root" in err  # ... so the command must not say it was
    before = _endorsement(home, key.public_hex)
    code, _, _ = _run(["receipt-key", "endorse", key.public_hex[:16], "--root", wrong], capsys)
    assert code != 0 and _endorsement(home, key.public_hex) == before


def test_a_rotated_key_and_a_revoked_key_as_the_honest_operator_sees_them(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(root_file(tmp_path))
    key = endorse_home(home)
    old = _write(tmp_path, "old.json", seal(request(), result(), key))
    assert _run(["receipt-key", "retire", key.public_hex[:16], "--root", root], capsys)[0] == 0
    assert _verify(old, capsys) == (0, [])  # what a retired key sealed stands
    with connect(home=home) as db:
        new = db.signing_key(home)
    assert new.public_hex != key.public_hex and load_host_key().public_hex == new.public_hex
    fresh = _write(tmp_path, "new.json", seal(request(), result(), new))
    assert _verify(fresh, capsys) == (1, ["key_untrusted"])  # until the root endorses it
    assert _run(["receipt-key", "endorse", new.public_hex[:16], "--root", root], capsys)[0] == 0
    assert _verify(fresh, capsys) == (0, [])
    assert _run(["receipt-key", "revoke", new.public_hex[:16], "--root", root], capsys)[0] == 0
    assert _verify(fresh, capsys) == (1, ["key_revoked"]) and _verify(old, capsys) == (0, [])
    assert ROOT.public_hex  # the configured root is the tests' ROOT throughout
