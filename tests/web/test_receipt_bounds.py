"""The pages read no more than their bound for anyone (issue 34, item 4): a 1 GiB object put under a run's
receipts' names (as the folder's writer would) is not read by the receipts page, its download or the
workflow page; each says it is too large. Before, one anonymous load of the receipts page took ``qsolve
serve`` from 0.3 to 2.4 GB."""

from __future__ import annotations

import re
import tracemalloc

from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.bounds import RECEIPT_PAGE_BYTES

GIB = 1 << 30


def test_a_receipt_of_1_gib_is_never_read_by_a_page(seeded, client) -> None:
    from tests.web.test_workflows import section

    blobs = BlobStore(seeded.home)
    for digest in seeded.receipts:
        path = blobs.path(digest)
        path.unlink()  # its own file (the seeded home's may be shared): sparse, nothing on the disk
        with open(path, "wb") as f:
            f.truncate(GIB)
    n = len(seeded.receipts)
    tracemalloc.start()
    try:
        page = client.get(f"/runs/{seeded.hardware_run}/receipts")
        download = client.get(f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json")
        workflow = client.get("/workflows/max-cut")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak  # the object is sixteen times this
    assert page.status_code == 200
    # each read to its recorded size (the seeded runs' receipts were recorded with it), never past 8 MiB
    said = re.findall(rf"not read: {GIB} bytes, more than the (\d+) bytes this page reads", page.text)
    assert len(said) == n and all(0 < int(bound) <= RECEIPT_PAGE_BYTES for bound in said), page.text
    assert str(seeded.home) not in page.text  # the server's paths stay on the server
    assert download.status_code == 413 and f"{GIB} bytes, more than the" in download.text
    assert f"0 of {n} verify" in section(workflow.text, "on-hardware")
