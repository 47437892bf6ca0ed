"""Content-addressed files (DESIGN.md §6): the name is the BLAKE3 of the bytes, kept under ``blobs/`` of the
home's store (``storage.objects``): ``QSOLVE_HOME/blobs/`` or ``s3://BUCKET/PREFIX/blobs/``.

Written whole and created only where absent (a hard link of a fsynced temporary file; in object storage a
PUT with ``If-None-Match: *``), so a reader never sees half a blob, two machines never overwrite each
other, and writing the same bytes twice is a no-op.
"""

from __future__ import annotations

from pathlib import Path

from blake3 import blake3

from qsolve_pipeline.storage.bounds import BLOB_BYTES
from qsolve_pipeline.storage.objects import ObjectStore, ObjectTooLarge, storage_of

FOLDER = "blobs"


class BlobStore:
    def __init__(self, home: Path, store: ObjectStore | None = None) -> None:
        self.store = store if store is not None else storage_of(home)
        self.root = Path(home) / FOLDER  # where a local store keeps them

    @staticmethod
    def key(digest: str) -> str:
        return f"{FOLDER}/{digest[:2]}/{digest}"

    def path(self, digest: str) -> Path:
        """The blob's file in a local store (a home without ``QSOLVE_STORAGE_URL``)."""
        return self.root / digest[:2] / digest

    def where(self, digest: str) -> str:
        """Where the blob is, as a person reads it: a path, or an ``s3://`` address."""
        return self.store.address(self.key(digest))

    def put(self, data: bytes) -> str:
        """Store ``data`` under its hash. An object already under that name whose bytes are not these (a
        foreign object put there first, a damaged copy) is replaced: this call never returns a name that
        does not give these bytes back."""
        digest = blake3(data).hexdigest()
        key = self.key(digest)
        if not self.store.create(key, data) and not self._holds(key, digest, len(data)):
            self.store.delete(key)
            self.store.create(key, data)
        return digest

    def _holds(self, key: str, digest: str, size: int) -> bool:
        """Whether ``key`` holds the ``size`` bytes named ``digest``; an object larger than that does not
        (and is never read past ``size`` + 1 bytes)."""
        try:
            return blake3(self.store.get(key, limit=size)).hexdigest() == digest
        except (FileNotFoundError, ObjectTooLarge):
            return False

    def get(self, digest: str, *, limit: int | None = None) -> bytes:
        """The blob's bytes, checked against its name. ``limit`` is its recorded size or the bound of its
        kind (``storage.bounds``; without one, the largest blob's, ``BLOB_BYTES``): a larger object is
        :class:`ObjectTooLarge` and never read past the bound."""
        data = self.store.get(self.key(digest), limit=BLOB_BYTES if limit is None else limit)
        if blake3(data).hexdigest() != digest:
            raise ValueError(f"blob {digest} does not match its name")
        return data
