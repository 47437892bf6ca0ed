"""The test run's end: pytest's summary is its last line (issue 23). A flow run outside the harness leaves
Prefect's temporary server for the interpreter's exit to stop, and Prefect's log of that stop met the
stream pytest's capture had closed: a ``--- Logging error ---`` traceback after the summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

ONE_FLOW = """\
from prefect import flow, task


@task
def one():
    return 1


@flow
def tiny():
    return one()


def test_a_flow_on_the_temporary_server():
    assert tiny() == 1
"""


def run_pytest(tmp_path: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_one_flow.py").write_text(ONE_FLOW)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "QSOLVE_", "PYTEST_"))}
    env |= {
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
    }
    options = [f"-p{p}" for p in plugins]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "-o", "addopts=", "-q",
         "--rootdir", str(tmp_path), str(tmp_path / "test_one_flow.py")],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip


def test_a_flow_run_outside_the_harness_leaves_the_summary_last(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, "tests.conftest")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert "Logging error" not in said and "Traceback" not in said, said
    assert proc.stdout.strip().splitlines()[-1].startswith("1 passed in "), said
