"""Content-addressed files under ``QSOLVE_HOME/blobs/`` (DESIGN.md §6): the name is the BLAKE3 of the bytes.

Written whole (a temporary file, fsync, rename), so a reader never sees half a blob, and writing the same
bytes twice is a no-op.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from blake3 import blake3


class BlobStore:
    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "blobs"

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = blake3(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: str) -> bytes:
        data = self.path(digest).read_bytes()
        if blake3(data).hexdigest() != digest:
            raise ValueError(f"blob {digest} does not match its name")
        return data
