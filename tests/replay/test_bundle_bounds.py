"""A bundle's zip is bounded by what it may extract to (a compression ratio, with a floor), counted while
extracting: a zip bomb is refused in one line naming the bound, before anything is parsed."""

from __future__ import annotations

import io
import zipfile

import pytest

from qsolve.replay.bundle import MIN_EXTRACTED_BYTES, BundleRefused, read_bundle


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data, compresslevel=9)
    return buffer.getvalue()


def test_a_bundle_that_extracts_past_its_ratio_is_refused_naming_the_bound() -> None:
    bomb = _zip({"bundle.json": b"{}", "rows.json": b" " * (MIN_EXTRACTED_BYTES + 2**20)})
    assert len(bomb) < 2**20  # a tiny zip, a large extraction
    with pytest.raises(BundleRefused) as caught:
        read_bundle(bomb)
    message = str(caught.value)
    assert "MAX_EXTRACTED_BYTES" in message and "\n" not in message, message


def test_a_small_bundle_within_its_floor_extracts() -> None:
    """Under the floor a bundle is read (here: refused later, for its index, not its size)."""
    small = _zip({"bundle.json": b"{}", "rows.json": b" " * 2**20 + b"[]"})
    with pytest.raises(BundleRefused) as caught:
        read_bundle(small)
    assert "MAX_EXTRACTED_BYTES" not in str(caught.value) and "bundle.json" in str(caught.value)
