"""Credentials: the keychain where one answers, else an owner-only file, labelled; never printed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from qsolve.providers.credentials import CredentialFileExposed, CredentialStore, Secret

PLANTED = "s3cr3t-TOKEN-planted-0451"


def test_with_no_keychain_the_credential_is_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)  # this machine is headless: keyring has no backend
    stored = store.put("lab", Secret(PLANTED))
    assert stored.where == "file"
    assert "a file only its owner can read" in stored.label and "NoKeyringError" in stored.label
    path = tmp_path / "credentials" / "lab"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.get("lab").reveal() == PLANTED
    assert store.where("lab").label == stored.label
    store.remove("lab")
    assert store.get("lab") is None and store.where("lab") is None
    assert list(path.parent.iterdir()) == []  # no temporary file left either


def test_a_secret_never_prints_itself() -> None:
    secret = Secret(PLANTED)
    assert PLANTED not in repr(secret) and PLANTED not in str(secret) and PLANTED not in f"{secret}"
    assert PLANTED not in repr({"credential": secret})


def test_a_credential_file_others_can_read_is_refused(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    store.put("lab", Secret(PLANTED))
    os.chmod(tmp_path / "credentials" / "lab", 0o644)
    with pytest.raises(CredentialFileExposed, match="readable by others than its owner") as e:
        store.get("lab")
    assert PLANTED not in str(e.value)


@pytest.mark.parametrize("name", ["", "Lab", "../x", "a/b", "x" * 64])
def test_a_provider_name_is_checked_before_any_file_is_touched(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="is not a provider name"):
        CredentialStore(tmp_path).put(name, Secret(PLANTED))
    assert not (tmp_path / "credentials").exists()
