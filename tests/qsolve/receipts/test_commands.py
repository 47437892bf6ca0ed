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


def test_receipt_key_prints_the_key_and_a_trust_list_that_verifies_its_receipts(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["receipt-key"], capsys)
    key = load_host_key()
    assert code == 0 and key.public_hex in out
    assert key_path().read_bytes().hex() not in out  # the seed is never printed
    listing = json.loads(out.strip().splitlines()[-1])
    keys = _write(tmp_path, "keys.json", listing)
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    code, out, _ = _run(["verify", job, "--trust", keys, "--json"], capsys)
    assert code == 0 and json.loads(out)["trust"]["listed"] is True
    code, out, _ = _run(["receipt-key", "--json"], capsys)
    printed = json.loads(out)
    assert printed["key"] == key.public_hex and printed["entry"]["key"] == key.public_hex
    assert printed["trust_list"]["keys"] == [printed["entry"]]  # the only host of this database
    assert set(printed["entry"]) == {"key", "host", "key_id", "first_seen_ms"}  # not retired, not revoked


def test_receipt_key_refuses_a_key_file_others_can_read(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_host_key()
    key_path().chmod(0o644)
    code, out, err = _run(["receipt-key"], capsys)
    assert code == 2 and out == "" and "readable by others" in err


def test_receipt_key_lists_every_registered_key_and_retires_and_revokes_them(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["receipt-key"], capsys)
    key = load_host_key()
    assert code == 0 and f"{key.public_hex[:16]}  {key.public_hex}  first seen " in out and "in use" in out
    assert _run(["receipt-key", "revoke", "f" * 16], capsys)[0] == 1  # no such key
    code, _, err = _run(["receipt-key", "revoke", key.public_hex[:16], "--from", "soon"], capsys)
    assert code == 2 and "--from" in err
    job = _write(tmp_path, "job.json", seal(request(), result(), key))
    assert _run(["verify", job, "--registered"], capsys)[0] == 0
    assert _run(["receipt-key", "revoke", key.public_hex[:16], "--from", "7"], capsys)[0] == 0
    code, out, _ = _run(["verify", job, "--registered", "--json"], capsys)
    assert code == 1 and json.loads(out)["reasons"] == ["key_revoked"]  # it seals no time
    code, out, err = _run(["receipt-key"], capsys)  # the host moves to a new key, and says so
    assert f"receipt key {key.public_hex[:16]} is revoked from 7 ms" in err and "revoked from 7 ms" in out
    code, _, err = _run(["verify", job, "--registered", "--trust", job], capsys)
    assert code == 2 and "not both" in err
