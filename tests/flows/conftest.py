"""A fresh QSOLVE_HOME per test; the session's Prefect harness (``prefect``, ``qsolve_home``) is in
tests/conftest.py, one for every folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh ``QSOLVE_HOME`` of the test's own, on its own SQLite state, with no keyring."""
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture(autouse=True)
def operator_is_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local operator is ``dev``, the account the hardware tests quote as: a provider they add is held
    by ``dev`` (docs/providers.md, "Who may spend on a provider"), as it is by whoever adds one."""
    monkeypatch.setenv("QSOLVE_ACCOUNT", "dev")
