"""The knowledge-draft tests' store (test_drafts.py and the two attacks on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qsolve.evaluation.drafts import DraftStore


@pytest.fixture
def store(tmp_path: Path) -> DraftStore:
    """A draft store in a fresh home."""
    return DraftStore(tmp_path / "home")
