"""``qsolve verify`` and ``qsolve receipt-key``, through a parser built with ``add_commands``."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from qsolve.cli.receipts import add_commands
from qsolve.receipts.keys import key_path, load_host_key
from qsolve.receipts.seal import seal
from tests.qsolve.receipts.builders import KEY, request, result, sealed
from tests.qsolve.receipts.roots import NOT_THE_ROOT, ROOT, endorse_home, root_file, trust_root


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_bytes(value if isinstance(value, bytes) else json.dumps(value, indent=2).encode())
    return str(path)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_receipt_sealed_by_qsolve_verifies_and_exits_0(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = seal(request(), result(), load_host_key())
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", job)], capsys)
    assert code == 0 and out.splitlines()[0].endswith(": valid")
    assert "time: none sealed" in out and "held to no list" in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", sealed(issued_ms=5)), "--json"], capsys)
    verdict = json.loads(out)
    assert code == 0 and out.count("\n") == 1
    assert verdict["valid"] is True and verdict["reasons"] == []
    assert verdict["time"] == {"sealed": True, "issued_ms": 5, "not_after_ms": None}
    assert verdict["trust"] == {"held": False}
    assert (
        verdict["provider"]["class"] == "measured"
        and verdict["provider"]["execution"]["stated_by"] == "client"
    )


def test_an_invalid_receipt_exits_1_with_its_reasons_sorted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = sealed()
    job["result"]["shots"] = 7
    job["result"]["receipt"]["signature"] = "00" * 64
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", job), "--json"], capsys)
    assert code == 1
    assert json.loads(out)["reasons"] == ["bad_signature", "counts", "digest_mismatch", "request_shots"]
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", job)], capsys)
    assert code == 1 and "not valid: bad_signature, counts" in out and "  digest_mismatch: " in out


def test_an_unreadable_job_is_a_reason_so_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", b'{"a": 1, "a": 2}'), "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["unreadable"] and "twice" in json.loads(out)["why"]


def test_a_job_needing_rules_not_run_here_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = seal({**request(), "contract": {"providers": "never"}}, result(), KEY)
    code, out, _ = _run(["verify", _write(tmp_path, "job.json", job)], capsys)
    assert code == 1 and "not called valid" in out and "§8.7" in out


def test_misuse_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = _write(tmp_path, "job.json", sealed())
    for argv in (
        ["verify", str(tmp_path / "missing.json")],
        ["verify", str(tmp_path)],
        ["verify", job, "--at", "yesterday"],
        ["verify", job, "--at", "-5"],
        ["verify", job, "--at", "1.5"],
        ["verify", job, "--skew-ms", "10"],  # an allowance with no time
        ["verify", job, "--trust", str(tmp_path / "missing-keys.json")],
    ):
        code, out, err = _run(argv, capsys)
        assert code == 2 and out == "" and err.startswith("qsolve verify: "), argv
    with pytest.raises(SystemExit) as e:
        _run(["verify"], capsys)
    assert e.value.code == 2


def test_a_trust_list_refused_whole_exits_2_and_judges_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _write(tmp_path, "job.json", sealed())
    bad = _write(tmp_path, "keys.json", {"format": "wai.quantum.receipt-keys/1", "keys": [{"key": "nope"}]})
    code, out, err = _run(["verify", job, "--trust", bad, "--json"], capsys)
    assert code == 2 and out == "" and "refused whole" in err


def test_held_to_a_list_and_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = _write(tmp_path, "job.json", sealed(issued_ms=1000, not_after_ms=2000))
    keys = _write(
        tmp_path, "keys.json", {"format": "wai.quantum.receipt-keys/1", "keys": [{"key": KEY.public_hex}]}
    )
    code, out, _ = _run(["verify", job, "--trust", keys, "--at", "1500", "--skew-ms", "0", "--json"], capsys)
    v = json.loads(out)
    assert code == 0 and v["trust"]["listed"] is True and v["checked_at_ms"] == 1500 and v["skew_ms"] == 0
    code, out, _ = _run(["verify", job, "--trust", keys, "--at", "now", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["expired"]
    code, out, _ = _run(["verify", job, "--at", "999", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["issued_later"]
    code, out, _ = _run(["verify", job, "--at", "9.99e2", "--skew-ms", "1", "--json"], capsys)
    assert code == 0


def test_a_job_on_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(sealed()).encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    code, out, _ = _run(["verify", "-", "--json"], capsys)
    assert code == 0 and json.loads(out)["valid"] is True


def test_receipt_key_prints_the_key_not_endorsed_then_a_trust_list_that_verifies_its_receipts(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trust_root(monkeypatch)
    root = str(root_file(tmp_path))
    code, out, _ = _run(["receipt-key"], capsys)
    key = load_host_key()
    assert code == 0 and key.public_hex in out
    assert key_path().read_bytes().hex() not in out  # the seed is never printed
    assert "not endorsed by the root" in out
    assert f"qsolve receipt-key endorse {key.public_hex[:16]} --root FILE" in out  # the command that does it
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    code, out, _ = _run(["verify", job, "--registered", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["key_untrusted"]
    code, out, _ = _run(["receipt-key", "endorse", key.public_hex[:16], "--root", root], capsys)
    assert code == 0 and out.startswith(f"endorsed {key.public_hex[:16]}")
    assert _run(["verify", job, "--registered"], capsys)[0] == 0  # sealed before its endorsement: verifies
    code, out, _ = _run(["receipt-key"], capsys)
    listing = json.loads(out.strip().splitlines()[-1])
    keys = _write(tmp_path, "keys.json", listing)
    code, out, _ = _run(["verify", job, "--trust", keys, "--json"], capsys)
    assert code == 0 and json.loads(out)["trust"]["listed"] is True
    code, out, _ = _run(["receipt-key", "--json"], capsys)
    printed = json.loads(out)
    assert printed["key"] == key.public_hex and printed["entry"]["key"] == key.public_hex
    assert printed["trust_list"]["keys"] == [printed["entry"]]  # the only host of this database
    assert printed["endorsed"] is True and printed["root"] == ROOT.public_hex


def test_the_root_key_is_made_once_off_the_home_and_shown(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, out, _ = _run(["receipt-key", "root", "init"], capsys)
    made = tmp_path / "config" / "qsolve-root" / "receipt-root-ed25519.seed"
    assert code == 0 and made.stat().st_mode & 0o777 == 0o600 and "QSOLVE_RECEIPT_ROOT=" in out
    public = out.split("QSOLVE_RECEIPT_ROOT=")[1].strip()
    seed = made.read_bytes()
    code, _, err = _run(["receipt-key", "root", "init"], capsys)
    assert code == 1 and "never overwritten" in err and made.read_bytes() == seed
    code, _, err = _run(["receipt-key", "root", "init", "--out", str(home / "root.seed")], capsys)
    assert code == 2 and "not kept under QSOLVE_HOME" in err and not (home / "root.seed").exists()
    assert _run(["receipt-key", "root", "show", "--root", str(made)], capsys)[1].strip().endswith(public)
    code, _, err = _run(["receipt-key", "root", "show"], capsys)
    assert code == 2 and "no receipt root is configured on this machine" in err
    monkeypatch.setenv("QSOLVE_RECEIPT_ROOT", public)
    assert _run(["receipt-key", "root", "show"], capsys)[1] == f"QSOLVE_RECEIPT_ROOT={public}\n"


def test_registered_with_no_root_configured_says_so_and_exits_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _write(tmp_path, "job.json", sealed())
    code, out, err = _run(["verify", job, "--registered"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "no receipt root is configured on this machine: set QSOLVE_RECEIPT_ROOT" in err
    code, _, err = _run(["receipt-key", "--trust-list"], capsys)
    assert code == 2 and "no receipt root is configured" in err


def test_a_key_a_database_writer_registers_under_a_hosts_name_never_verifies_as_registered(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from qsolve.receipts.endorsement import possession
    from qsolve.receipts.keys import HostKey
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._tables import host_keys

    trust_root(monkeypatch)
    endorse_home(home)
    mine = HostKey(bytes(range(50, 82)))
    with connect(home=home) as db, db.engine.begin() as connection:  # the database's URL, and no root key
        connection.execute(
            host_keys.insert().values(
                key=mine.public_hex,
                host=db.host_keys()[0].host,
                first_seen_at=db.host_keys()[0].first_seen_at,
                possession=possession(mine, db.host_keys()[0].host, 1),
                endorsement=db.host_keys()[0].endorsement,  # the real key's endorsement, copied
            )
        )
    forged = _write(tmp_path, "job.json", seal(request(), result(), mine))
    code, out, _ = _run(["verify", forged, "--registered", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["key_untrusted"]
    code, out, _ = _run(["receipt-key"], capsys)
    (line,) = [line for line in out.splitlines() if mine.public_hex in line]
    assert line.endswith("not endorsed")
    # and the root's own command refuses to endorse what the writer put there without the key's proof
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.execute(
            host_keys.update().where(host_keys.c.key == mine.public_hex).values(possession=None)
        )
    code, _, err = _run(
        ["receipt-key", "endorse", mine.public_hex[:16], "--root", str(root_file(tmp_path))], capsys
    )
    assert code == 1 and "there is no possession statement" in err


def test_the_trust_list_signed_by_the_root_is_checked_before_it_is_read(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trust_root(monkeypatch)
    key = endorse_home(home)
    root = str(root_file(tmp_path))
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    code, out, _ = _run(["receipt-key", "--trust-list", "--root", root], capsys)
    signed = json.loads(out)
    assert code == 0 and set(signed) == {"format", "list", "root", "signature"}
    assert signed["format"] == "qsolve.signed-receipt-keys/1" and signed["root"] == ROOT.public_hex
    assert signed["list"]["format"] == "wai.quantum.receipt-keys/1"
    assert _run(["verify", job, "--trust", _write(tmp_path, "signed.json", signed)], capsys)[0] == 0
    assert _run(["verify", job, "--trust", _write(tmp_path, "plain.json", signed["list"])], capsys)[0] == 0
    signed["list"]["keys"].append({"key": "ab" * 32})  # a bucket or database writer adds a key of theirs
    code, _, err = _run(["verify", job, "--trust", _write(tmp_path, "signed.json", signed)], capsys)
    assert code == 2 and "the signed trust list is refused whole" in err
    trust_root(monkeypatch, NOT_THE_ROOT)
    code, _, err = _run(["receipt-key", "--trust-list", "--root", root], capsys)
    assert code == 2 and "is not the root configured here" in err


def test_receipt_key_refuses_a_key_file_others_can_read(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_host_key()
    key_path().chmod(0o644)
    code, out, err = _run(["receipt-key"], capsys)
    assert code == 2 and out == "" and "readable by others" in err


def test_receipt_key_lists_every_registered_key_and_retires_and_revokes_them(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trust_root(monkeypatch)
    root = str(root_file(tmp_path))
    key = endorse_home(home)
    code, out, _ = _run(["receipt-key"], capsys)
    assert code == 0 and f"{key.public_hex[:16]}  {key.public_hex}  first seen " in out and "in use" in out
    assert _run(["receipt-key", "revoke", "f" * 16, "--root", root], capsys)[0] == 1  # no such key
    code, _, err = _run(
        ["receipt-key", "revoke", key.public_hex[:16], "--from", "soon", "--root", root], capsys
    )
    assert code == 2 and "--from" in err
    code, _, err = _run(
        ["receipt-key", "revoke", key.public_hex[:16], "--root", str(tmp_path / "none")], capsys
    )
    assert code == 2 and "no such file" in err
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    assert _run(["verify", job, "--registered"], capsys)[0] == 0
    assert _run(["receipt-key", "revoke", key.public_hex[:16], "--from", "7", "--root", root], capsys)[0] == 0
    code, out, _ = _run(["verify", job, "--registered", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["key_revoked"]  # it seals no time
    code, out, err = _run(["receipt-key"], capsys)  # the host moves to a new key, and says so
    assert f"receipt key {key.public_hex[:16]} is revoked from 7 ms" in err and "revoked from 7 ms" in out
    code, _, err = _run(["verify", job, "--registered", "--trust", job], capsys)
    assert code == 2 and "not both" in err
