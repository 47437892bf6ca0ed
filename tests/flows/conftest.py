"""One Prefect test harness for the whole test session (it takes ~15 s to start), and a fresh
QSOLVE_HOME for the flows' state and track record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


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


@pytest.fixture(scope="session")
def prefect(qsolve_home: Path):
    import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
    from prefect.testing.utilities import prefect_test_harness

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    with prefect_test_harness(server_startup_timeout=120):
        yield
