"""The host key: made on first use in QSOLVE_HOME/keys/, readable by its owner only, never printed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from qsolve.receipts.keys import KeyFileExposed, key_path, load_host_key, qsolve_home


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_key_is_made_on_first_use_owner_only_and_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = load_host_key(home)
    path = home / "keys" / "receipt-ed25519.seed"
    assert path.exists() and _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert len(path.read_bytes()) == 32
    assert load_host_key(home).public_hex == key.public_hex
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_the_key_is_never_printed(tmp_path: Path) -> None:
    key = load_host_key(tmp_path)
    seed = key_path(tmp_path).read_bytes()
    for shown in (repr(key), str(key), f"{key}"):
        assert seed.hex() not in shown and key.public_hex in shown


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    load_host_key(tmp_path)
    os.chmod(key_path(tmp_path), 0o644)
    with pytest.raises(KeyFileExposed, match="readable by others"):
        load_host_key(tmp_path)


def test_a_key_file_of_another_length_is_refused(tmp_path: Path) -> None:
    path = key_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    path.chmod(0o600)
    with pytest.raises(KeyFileExposed, match="32-byte"):
        load_host_key(tmp_path)


def test_without_create_a_missing_key_is_not_made(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_host_key(tmp_path, create=False)
    assert not key_path(tmp_path).exists()


def test_qsolve_home_defaults_to_dot_qsolve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QSOLVE_HOME", raising=False)
    assert qsolve_home() == Path(".qsolve")
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    assert qsolve_home() == tmp_path
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("QSOLVE_HOME")
    key = load_host_key()
    assert (tmp_path / ".qsolve" / "keys" / "receipt-ed25519.seed").exists()
    assert load_host_key().public_hex == key.public_hex


def test_a_signature_is_ed25519_over_the_message(tmp_path: Path) -> None:
    import nacl.signing

    key = load_host_key(tmp_path)
    sig = key.sign(b"\x01" * 32)
    nacl.signing.VerifyKey(key.public_key).verify(b"\x01" * 32, sig)
