"""The operator's root key: what every machine trusts a host's receipt key through (DESIGN.md §8).

The private half is a file the operator keeps, off the workers (``qsolve receipt-key root init``): by
default ``~/.config/qsolve-root/receipt-root-ed25519.seed`` (``XDG_CONFIG_HOME`` where set), never under
a ``QSOLVE_HOME``, mode 0600, never overwritten. Its public half is configured on every machine in
``QSOLVE_RECEIPT_ROOT`` (64 lower-case hex digits), as the deployment's environment sets the database's
URL: not in the state database and not in the bucket, whose writers are not trusted with it. A machine
with none configured trusts no host key (``qsolve verify --registered`` says so and exits 2; the pages
hold every receipt to an empty list).
"""

from __future__ import annotations

import os
from pathlib import Path

from qsolve.errors import QsolveError
from qsolve.home import qsolve_home
from qsolve.receipts.keys import HostKey, read_seed
from qsolve.receipts.signature import is_lower_hex

ROOT_VARIABLE = "QSOLVE_RECEIPT_ROOT"
ROOT_FILE = "receipt-root-ed25519.seed"


class NoReceiptRoot(QsolveError):
    """No root public key is configured on this machine, or the one configured does not read."""


def configured_root() -> str:
    """The root's public key this machine trusts (``QSOLVE_RECEIPT_ROOT``); :class:`NoReceiptRoot` with
    the line to show where none is set or it is not 64 lower-case hex digits."""
    value = os.environ.get(ROOT_VARIABLE, "").strip()
    if not value:
        raise NoReceiptRoot(
            f"no receipt root is configured on this machine: set {ROOT_VARIABLE} to the operator's root "
            "public key (qsolve receipt-key root show); no host key is trusted without it"
        )
    if not is_lower_hex(value, 64):
        raise NoReceiptRoot(f"{ROOT_VARIABLE} is not a public key of 64 lower-case hex digits")
    return value


def default_root_path() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "qsolve-root" / ROOT_FILE


def init_root(path: Path | None = None) -> HostKey:
    """Make the root key in ``path`` (default :func:`default_root_path`), mode 0600 in a folder of mode
    0700; refused (FileExistsError) where a file is there already, and (ValueError) under the
    ``QSOLVE_HOME`` of this machine, which is a worker's."""
    path = (path or default_root_path()).expanduser()
    home = qsolve_home().resolve()
    if path.resolve().is_relative_to(home):
        raise ValueError(f"{path}: the root key is not kept under QSOLVE_HOME ({home}), which workers read")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # FileExistsError: never overwritten
    seed = os.urandom(32)
    with os.fdopen(fd, "wb") as f:
        f.write(seed)
        f.flush()
        os.fsync(f.fileno())
    return HostKey(seed)


def load_root(path: Path) -> HostKey:
    """The root key in ``path``: a 32-byte seed its owner alone can read (else KeyFileExposed)."""
    return HostKey(read_seed(Path(path).expanduser(), "the root key"))
