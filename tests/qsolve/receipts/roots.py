"""The operator's root key in tests (issue 33, item 4): a root made for the tests, configured on "this
machine" (``QSOLVE_RECEIPT_ROOT``), and the host keys a test's state database holds endorsed by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qsolve.receipts.keys import HostKey
from qsolve.receipts.root import ROOT_VARIABLE

ROOT = HostKey(bytes(range(100, 132)))
NOT_THE_ROOT = HostKey(bytes(range(200, 232)))


def trust_root(monkeypatch: pytest.MonkeyPatch, root: HostKey = ROOT) -> HostKey:
    """Configure ``root``'s public key on this machine, as the deployment does."""
    monkeypatch.setenv(ROOT_VARIABLE, root.public_hex)
    return root


def endorse_all(db, root: HostKey = ROOT) -> list[str]:
    """The operator endorses every key in ``db`` whose proof of possession holds (the ids endorsed)."""
    from qsolve.receipts.endorsement import StatementRefused

    done = []
    for record in db.host_keys():
        try:
            db.endorse_host_key(record.key, root)
        except StatementRefused:
            continue
        done.append(record.key_id)
    return done


def endorse_home(home: Path | str, database_url: str | None = None, root: HostKey = ROOT) -> HostKey:
    """The host key of ``home`` made (where it is not yet), registered and endorsed by ``root``."""
    from qsolve_pipeline.storage.state import connect

    with connect(database_url, home=Path(home)) as db:
        key = db.signing_key(Path(home))
        db.endorse_host_key(key.public_hex, root)
    return key


def root_file(folder: Path, root: HostKey = ROOT) -> Path:
    """``root``'s key as the operator keeps it: a 32-byte seed, mode 0600."""
    import os

    path = folder / "operator" / "root.seed"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(root._signing.encode())
    return path
