"""One Prefect test harness for the whole test session (it takes ~15 s to start), and a fresh
QSOLVE_HOME for the flows' state and track record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qsolve_pipeline.flows.server import stop_temporary_servers

#: Prefect counts only its own sleeps against this: on a loaded 2-core machine the harness's start took
#: 15 s idle and over 120 s at load 30 (issue 23)
HARNESS_STARTUP_S = int(os.environ.get("QSOLVE_TEST_HARNESS_STARTUP_S", "900"))


@pytest.fixture(scope="session")
def qsolve_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("qsolve-home")
    previous = os.environ.get("QSOLVE_HOME")
    os.environ["QSOLVE_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("QSOLVE_HOME", None)
    else:
        os.environ["QSOLVE_HOME"] = previous


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


@pytest.fixture(scope="session")
def prefect(qsolve_home: Path):
    """The harness's server, given as long to start as a busy machine needs; stopped at the end even when
    its start failed (Prefect's harness leaves a server that timed out running, and registered as the
    process's temporary server, for Prefect's atexit to stop after pytest's summary)."""
    import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
    from prefect.testing.utilities import prefect_test_harness

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    try:
        with prefect_test_harness(server_startup_timeout=HARNESS_STARTUP_S):
            yield
    finally:  # a harness whose start failed leaves its server registered as the process's temporary one
        stop_temporary_servers()
