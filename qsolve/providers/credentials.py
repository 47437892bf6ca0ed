"""Providers' credentials (quantum-provider-protocol §1): kept in the operating system's keychain
through ``keyring`` where a backend answers; otherwise in a file under ``QSOLVE_HOME/credentials/`` that
only its owner can read, and labelled as such wherever the person is told where it is. On a headless
Linux machine keyring has no backend and raises ``NoKeyringError``: the file is used, and said to be.

A credential is handed only to the transport of its own provider. It never goes in a log, a message, a
receipt, the state database, the track record or an artifact: the store gives it out as a
:class:`Secret`, whose ``repr`` and ``str`` say nothing of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from qsolve.home import qsolve_home

SERVICE = "qsolve-provider"
FOLDER = "credentials"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class Secret:
    """A credential that does not print itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not value:
            raise ValueError("an empty credential")
        self._value = value

    def reveal(self) -> str:
        """The credential itself: for the transport of its provider, and nothing else."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(…)"

    __str__ = __repr__


@dataclass(frozen=True)
class Stored:
    """Where a provider's credential is kept, as the person is told it."""

    where: str  # "keychain" or "file"
    label: str


class CredentialStore:
    """The keychain where one answers, else owner-only files under ``home/credentials/``."""

    def __init__(self, home: Path | None = None, *, use_keychain: bool = True) -> None:
        self.folder = (home or qsolve_home()) / FOLDER
        self.use_keychain = use_keychain

    def put(self, provider: str, secret: Secret) -> Stored:
        _check_name(provider)
        problem = self._keychain(lambda kr: kr.set_password(SERVICE, provider, secret.reveal()))
        if problem is None:
            self._remove_file(provider)
            return self.where(provider)
        self._write_file(provider, secret.reveal())
        return Stored("file", self._file_label(provider, problem))

    def get(self, provider: str) -> Secret | None:
        _check_name(provider)
        found: list[str | None] = []
        if self._keychain(lambda kr: found.append(kr.get_password(SERVICE, provider))) is None and found[0]:
            return Secret(found[0])
        path = self.folder / provider
        if not path.is_file():
            return None
        _check_mode(path)
        text = path.read_text(encoding="utf-8").strip()
        return Secret(text) if text else None

    def remove(self, provider: str) -> None:
        _check_name(provider)

        def delete(kr) -> None:
            with contextlib.suppress(kr.errors.PasswordDeleteError):
                kr.delete_password(SERVICE, provider)

        self._keychain(delete)
        self._remove_file(provider)

    def where(self, provider: str) -> Stored | None:
        """Where the provider's credential is, labelled; ``None`` when it has none."""
        found: list[str | None] = []
        problem = self._keychain(lambda kr: found.append(kr.get_password(SERVICE, provider)))
        if problem is None and found[0]:
            import keyring

            backend = type(keyring.get_keyring()).__name__
            return Stored("keychain", f"the operating system's keychain ({backend}, service {SERVICE})")
        if (self.folder / provider).is_file():
            return Stored("file", self._file_label(provider, problem))
        return None

    def _keychain(self, action) -> str | None:
        """Run ``action(keyring)``; ``None`` when it worked, else why no keychain answered."""
        if not self.use_keychain:
            return "the keychain is not used here"
        try:
            import keyring
            from keyring.errors import KeyringError, NoKeyringError
        except ImportError:
            return "keyring is not installed"
        try:
            action(keyring)
        except NoKeyringError:
            return "no keychain answers here: keyring found no backend (NoKeyringError)"
        except KeyringError as e:
            return f"the keychain refused: {type(e).__name__}"
        return None

    def _file_label(self, provider: str, why: str | None) -> str:
        return f"a file only its owner can read, {self.folder / provider}" + (f" ({why})" if why else "")

    def _write_file(self, provider: str, value: str) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        tmp = self.folder / f".tmp-{provider}-{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(value)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / provider)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _remove_file(self, provider: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / provider).unlink()


class CredentialFileExposed(PermissionError):
    """A credential file others can read: refused until its mode is 0600 again."""


def _check_mode(path: Path) -> None:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise CredentialFileExposed(
            f"{path}: mode {mode:04o}, readable by others than its owner; run chmod 600 on it"
        )


def _check_name(provider: str) -> None:
    if not NAME_RE.match(provider):
        raise ValueError(
            f"{provider!r} is not a provider name: lower-case letters, digits, '-' and '_', at most 63"
        )
