from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh QSOLVE_HOME, also set in the environment for the commands."""
    path = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(path))
    return path
