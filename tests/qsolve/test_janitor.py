"""A command killed with SIGKILL leaves nothing behind: no Prefect server listening, no temporary folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from qsolve.runtime.janitor import PREFIX, _descendants
from tests.conftest import REPO

SCRIPT = """
import subprocess, sys, tempfile, time
from qsolve.runtime.janitor import guard
folder = guard()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
scratch = tempfile.mkdtemp(prefix="qsolve-history-")
print(folder, child.pid, scratch, flush=True)
time.sleep(60)
"""


def wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:  # a zombie of a reaped parent counts as gone
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        time.sleep(0.1)
    return False


def test_a_killed_command_takes_its_children_and_folders_with_it() -> None:
    command = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    folder, child, scratch = command.stdout.readline().split()
    assert Path(scratch).parent == Path(folder) and Path(folder).name.startswith(PREFIX)
    time.sleep(1.2)  # the janitor has noted the child
    command.send_signal(signal.SIGKILL)
    command.wait()
    assert wait_gone(int(child))
    deadline = time.monotonic() + 5
    while Path(folder).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(folder).exists()


def test_a_killed_submit_leaves_no_temporary_prefect_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "QSOLVE_DATABASE_URL")}
    env |= {"QSOLVE_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")}
    submit = subprocess.Popen(
        [sys.executable, "-m", "qsolve.cli", "submit", str(REPO / "workflows" / "max-cut")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = folder = None
    deadline = time.monotonic() + 60
    while server is None and time.monotonic() < deadline:
        for pid in _descendants(submit.pid):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if any(b"uvicorn" in a for a in argv):
                server = pid
            if b"qsolve.runtime.janitor" in argv:
                folder = Path(argv[argv.index(b"qsolve.runtime.janitor") + 2].decode())
        time.sleep(0.2)
    assert server is not None, "Prefect's temporary server never started"
    assert folder is not None and folder.is_dir()
    time.sleep(1)
    submit.send_signal(signal.SIGKILL)
    submit.wait()
    assert wait_gone(server)
    deadline = time.monotonic() + 5
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not folder.exists()
