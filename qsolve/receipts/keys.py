"""The host's Ed25519 key, made on first use and kept in ``QSOLVE_HOME/keys/`` (DESIGN.md §6).

The key file holds the 32-byte seed and is readable by its owner only (mode 0600, in a folder of mode
0700); a key file others can read is refused, not used. The seed is never printed: a key shows its
public half only. Two processes making the key at once agree on one: the file is written whole under
a temporary name and linked into place, and the one that loses the race reads the winner's.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import nacl.signing

from qsolve.errors import QsolveError
from qsolve.home import qsolve_home

KEY_FILE = "receipt-ed25519.seed"


class KeyFileExposed(QsolveError):
    """The key file (or its folder) can be read by someone other than its owner, or does not read."""


class HostKey:
    """The host's signing key. Its repr and str show the public key only."""

    __slots__ = ("_signing", "public_hex")

    def __init__(self, seed: bytes) -> None:
        self._signing = nacl.signing.SigningKey(seed)
        self.public_hex: str = bytes(self._signing.verify_key).hex()

    @property
    def public_key(self) -> bytes:
        return bytes.fromhex(self.public_hex)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature ``R ‖ S`` over ``message`` (RFC 8032, no context, not prehashed)."""
        return self._signing.sign(message).signature

    def __repr__(self) -> str:
        return f"HostKey(public={self.public_hex})"

    __str__ = __repr__


def key_path(home: Path | None = None) -> Path:
    return (home or qsolve_home()) / "keys" / KEY_FILE


def load_host_key(home: Path | None = None, *, create: bool = True) -> HostKey:
    """The host key under ``home`` (default :func:`qsolve_home`), made there on first use."""
    path = key_path(home)
    if not path.exists():
        if not create:
            raise FileNotFoundError(f"{path}: no host key")
        _create(path)
    return HostKey(read_seed(path))


def retire_key_file(public_hex: str, home: Path | None = None) -> Path | None:
    """Set the host key aside (``receipt-ed25519.seed.retired-<key id>``, kept for its owner only), so
    that the next :func:`load_host_key` makes a new one: what a host does when its key was retired or
    revoked. Only the key ``public_hex``: a key another process of this host made meanwhile stays. The
    path it was moved to, or None when the key file holds another key (or none)."""
    path = key_path(home)
    if not path.exists():
        return None
    old = HostKey(read_seed(path))
    if old.public_hex != public_hex:
        return None
    aside = path.with_name(f"{KEY_FILE}.retired-{old.public_hex[:16]}")
    with contextlib.suppress(FileNotFoundError):  # another process of this host set it aside first
        os.replace(path, aside)
    return aside


def read_seed(path: Path, what: str = "the host key") -> bytes:
    """The 32-byte seed in ``path``, a file its owner alone can read; else :class:`KeyFileExposed`."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise KeyFileExposed(f"{path}: {what} is not a file")
    if mode & 0o077:
        raise KeyFileExposed(
            f"{path}: {what} is readable by others (mode {stat.S_IMODE(mode):04o}); "
            "it should be 0600. Make a new key if others may have read it"
        )
    seed = path.read_bytes()
    if len(seed) != 32:
        raise KeyFileExposed(f"{path}: {what} file is not a 32-byte seed")
    return seed


def _create(path: Path) -> None:
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = folder / f".{KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):  # another process made it first: use that one
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
