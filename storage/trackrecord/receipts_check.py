"""The receipts behind hardware rows (issue 13, item 6): each row's ``receipt_digest`` names the blobs
of its device jobs' sealed receipts; they are read and verified here, and the class they seal
(``measured`` by a device, or ``simulated``) is what the page labels the row with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from storage.bounds import RECEIPT_BYTES, RECEIPT_PAGE_BYTES


class RowReceipts(BaseModel):
    """What a hardware row's receipts say."""

    named: int  # receipts the row names
    verified: int  # of those, found and valid under qsolve verify
    measured: int  # of those, sealed with accuracy.class measured (the rest: simulated)
    unendorsed: int = 0  # of those named, found but signed by a key the operator's root did not endorse

    @property
    def label(self) -> str:
        if self.named == 0:
            return "no receipt"
        kind = "measured" if self.measured == self.named else "simulated"
        verdict = "verify" if self.verified == self.named else f"{self.verified} of {self.named} verify"
        said = f"{self.named} receipts {verdict}; {kind}"
        return f"{said}; {self.unendorsed} signed by a key not endorsed" if self.unendorsed else said


def check_row(receipt_digest: str, home: Path, trust: dict[str, Any] | None = None) -> RowReceipts:
    """Read and verify every receipt a row names (a missing blob counts as not verified), held to
    ``trust`` where given: the host keys the operator's root endorsed (``StateDB.trust_list``), as
    ``qsolve verify --registered`` holds them, so that a receipt sealed by a key the root did not endorse
    (one written straight into the database), or one revoked, does not count as verified."""
    from qsolve.receipts import verify
    from storage.blobs import BlobStore

    held = held_to(trust)
    digests = [d for d in receipt_digest.split(",") if d]
    blobs = BlobStore(home)
    verified = measured = unendorsed = 0
    for digest in digests:
        try:
            text = blobs.get(digest, limit=RECEIPT_PAGE_BYTES)  # a page's bound (storage.bounds)
        except (OSError, ValueError, KeyError):
            continue
        verdict = verify(text, held=held)
        unendorsed += "key_untrusted" in verdict.reasons
        if verdict.valid:
            verified += 1
            accuracy = json.loads(text).get("result", {}).get("accuracy", {})
            measured += accuracy.get("class") == "measured"
    return RowReceipts(named=len(digests), verified=verified, measured=measured, unendorsed=unendorsed)


def held_to(trust: dict[str, Any] | None) -> Any:
    """What a receipt is held to: the trust list ``trust`` (a ``wai.quantum.receipt-keys/1`` value), or
    nothing beyond its seal (None)."""
    from qsolve.receipts.trust import HeldTo, TrustList

    return None if trust is None else HeldTo(trust=TrustList.from_value(trust))


def receipt_classes(digests: list[str], home: Path) -> list[str | None]:
    """The ``accuracy.class`` each receipt seals (``measured``, ``simulated``; None where a blob is
    missing or says none), as filing reads them to set a row's ``measured`` (row.measured_of)."""
    from storage.blobs import BlobStore

    blobs = BlobStore(home)
    out: list[str | None] = []
    for digest in digests:
        try:
            accuracy = (
                json.loads(blobs.get(digest, limit=RECEIPT_BYTES)).get("result", {}).get("accuracy", {})
            )
        except (OSError, ValueError, KeyError, AttributeError):
            out.append(None)
            continue
        out.append(accuracy.get("class") if isinstance(accuracy, dict) else None)
    return out


def write_receipts(digests: list[str], home: Path, out: Path) -> list[Path]:
    """The receipts as files anyone can check with ``qsolve verify``: ``OUT/<digest>.json``."""
    from storage.blobs import BlobStore

    out.mkdir(parents=True, exist_ok=True)
    blobs = BlobStore(home)
    written = []
    for digest in digests:
        path = out / f"{digest}.json"
        path.write_bytes(blobs.get(digest, limit=RECEIPT_BYTES))
        written.append(path)
    return written
