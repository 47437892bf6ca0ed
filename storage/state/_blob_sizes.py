"""Every blob's size, recorded with its digest (issue 34, item 4; migration 0016).

A blob's name is the BLAKE3 of its bytes, so its length is a fact about the name: whoever records a blob
in the state database (a published archive, a sealed job's receipt, a calibration figure, an evaluation's
kept figure) records its size here too, and a reader reads no more than that (``storage.bounds``). Two
writers of the same blob record the same size; the first row stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa

from qsolve_pipeline.storage.state._rows import now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import blob_sizes

CHUNK = 500  # digests per IN (...) list


class BlobSizes(Store):
    def record_blob_sizes(self, sizes: Mapping[str, int]) -> None:
        """Record each blob's size by its digest (one already recorded is left as it is)."""
        if not sizes:
            return
        with self._write() as connection:
            if connection.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert
            at = now()
            rows = [{"digest": d, "bytes": int(n), "recorded_at": at} for d, n in sorted(sizes.items())]
            connection.execute(insert(blob_sizes).on_conflict_do_nothing(index_elements=["digest"]), rows)

    def blob_size(self, digest: str) -> int | None:
        """The recorded size of the blob ``digest``; None where none is recorded."""
        return self.blob_sizes([digest]).get(digest)

    def blob_limit(self, digest: str, kind: int) -> int:
        """What a read of the blob ``digest`` stops at: its recorded size, else ``kind`` (the bound of
        what it is, ``storage.bounds``)."""
        from qsolve_pipeline.storage.bounds import bound

        return bound(self.blob_size(digest), kind)

    def blob_sizes(self, digests: Iterable[str]) -> dict[str, int]:
        """The recorded sizes of these blobs (those recorded)."""
        wanted = sorted(set(digests))
        found: dict[str, int] = {}
        with self._read() as connection:
            for i in range(0, len(wanted), CHUNK):
                query = sa.select(blob_sizes.c.digest, blob_sizes.c.bytes).where(
                    blob_sizes.c.digest.in_(wanted[i : i + CHUNK])
                )
                found.update({row.digest: row.bytes for row in connection.execute(query)})
        return found
