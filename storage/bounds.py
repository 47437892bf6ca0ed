"""How much of an object a reader reads, at most (issue 34, item 4): every object read has a bound.

A blob the state database knows is read to its recorded size (``StateDB.blob_size``, migration 0016):
its name is the BLAKE3 of its bytes, so its length is known too, and anything longer under its name is
not it. What has no recorded size (a blob recorded before 0016, a file the state database does not size)
is read to the bound of its kind, below. A larger object is refused (:class:`storage.objects.
ObjectTooLarge`, one line naming it) before it is read: a folder's file is measured first, a bucket's
object by the length its answer gives, and no more than the bound and one byte is ever read.

    ARCHIVE_BYTES            a published workflow's archive: what a snapshot packs (256 MiB of files,
                             ``qsolve.workflow.snapshot.MAX_BYTES``) and room for its listing
    RECEIPT_BYTES            a sealed job (a receipt): what ``qsolve verify`` reads on every host
                             (``qsolve.receipts.verifier.VERIFY_LIMITS``, 384 MiB)
    RECEIPT_PAGE_BYTES       a receipt a page reads for anyone (the workflow page, the receipts page): 8 MiB,
                             the receipts page's own bound; a longer one is shown as too large, not read
    FIGURE_BYTES             a calibration figure or an evaluation's kept figure (PNG; an evaluation keeps
                             a figure of up to 10 MiB, ``qsolve.evaluation.runs.MAX_SNAPSHOT_BYTES``)
    TRACKRECORD_FILE_BYTES   a track-record file (``trackrecord/*.parquet``) read whole; compaction keeps
                             its outputs far below this
    MARKER_BYTES             the storage binding's marker object (a token of 64 hex digits)
    BLOB_BYTES               a blob read with no kind given: the largest of the blobs' bounds
"""

from __future__ import annotations

ARCHIVE_BYTES = 272 * 2**20
RECEIPT_BYTES = 384 * 2**20
RECEIPT_PAGE_BYTES = 8 * 2**20
FIGURE_BYTES = 16 * 2**20
TRACKRECORD_FILE_BYTES = 512 * 2**20
MARKER_BYTES = 4096
BLOB_BYTES = max(ARCHIVE_BYTES, RECEIPT_BYTES, FIGURE_BYTES)


def bound(recorded: int | None, kind: int) -> int:
    """The bound of a read: the size the state database recorded, else the bound of its kind."""
    return kind if recorded is None else recorded
