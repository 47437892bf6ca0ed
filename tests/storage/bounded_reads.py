"""Run by tests/storage/test_bounds.py in a process of its own (``python -m tests.storage.bounded_reads
HOME DIGEST TRACKRECORD_KEY``): every kind's reader over a home whose objects under those names are
1 GiB, what each said, and how far the process's peak memory (``ru_maxrss``) grew while they read."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path


def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def main(home: Path, digest: str, trackrecord_key: str) -> dict:
    from qsolve.calibration.task_result import FigureRef
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES, TRACKRECORD_FILE_BYTES
    from qsolve_pipeline.storage.calibration import CalibrationStore, FigureMissing
    from qsolve_pipeline.storage.objects import ObjectTooLarge, storage_of
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.trackrecord.published import published_workflow
    from qsolve_pipeline.storage.trackrecord.receipts_check import check_row, receipt_classes, write_receipts
    from tests.storage.trackrecord.builders import row

    said: dict = {}
    with connect(home=home) as db:
        blobs = BlobStore(home)
        before = peak()
        # a receipt: the page's check (a receipt not read counts as not verified), filing's classes, the
        # command that writes them out
        planted = row("r1", target="provider:ref", receipt_digest=digest, circuits=1, shots=100)
        said["page receipts verified"] = check_row(planted, home).verified
        said["classes"] = receipt_classes([digest], home)
        try:
            write_receipts([digest], home, home / "receipts-out")
        except ObjectTooLarge as e:
            said["receipt"] = str(e)
        # the published archive: the page loads it (shown without it), the history stage reads it
        said["page workflow"] = published_workflow(digest, home, db.blob_limit(digest, ARCHIVE_BYTES))
        try:
            blobs.get(digest, limit=db.blob_limit(digest, ARCHIVE_BYTES))
        except ObjectTooLarge as e:
            said["archive"] = str(e)
        # a calibration figure
        figure = FigureRef(name="t1", sha256="0" * 64, blob=digest)
        try:
            CalibrationStore(db, blobs).figure_bytes(figure)
        except FigureMissing as e:
            said["figure"] = str(e)
        # a track-record file read whole
        try:
            storage_of(home).get(trackrecord_key, limit=TRACKRECORD_FILE_BYTES)
        except ObjectTooLarge as e:
            said["trackrecord"] = str(e)
        except FileNotFoundError:
            pass
        said["grew"] = peak() - before
    return said


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])))
