"""Faults read as one line (issue 24): a read-only home serves the reading commands; a writing command
there, a full disk and a corrupt database each say in one line what is wrong and where, exit 2, no
traceback. Real file systems: the home is bind-mounted read-only, or put on a full tmpfs, in a mount
namespace of the command's own (``unshare -rm``; skipped where the kernel refuses one)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qsolve_pipeline.storage.state import connect
from tests.conftest import REPO

READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
FULL = (
    'mount -t tmpfs -o size=1m none "$0" && cp "$QSOLVE_SEED"/state.db "$0"/ && '
    '{ dd if=/dev/zero of="$0"/fill bs=4k 2>/dev/null; true; } && exec "$@"'
)


@functools.cache
def namespaces_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare"
    done = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare -rm: {done.stderr.strip()}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    with connect(home=folder) as db:
        db.publish_version("w", "1.0.0", "d" * 64, [])
        db.grant("alice", 3)
    return folder


def qsolve(home: Path, *args: str, mount: str | None = None, seed: Path | None = None):
    env = {k: v for k, v in os.environ.items() if k != "QSOLVE_DATABASE_URL"}
    env |= {"QSOLVE_HOME": str(home), "PYTHONPATH": str(REPO)} | ({"QSOLVE_SEED": str(seed)} if seed else {})
    command = [sys.executable, "-m", "qsolve.cli", *args]
    if mount is not None:
        if problem := namespaces_problem():
            pytest.skip(f"no mount namespace here: {problem}")
        command = ["unshare", "-rm", "sh", "-c", mount, str(home), *command]
    return subprocess.run(command, env=env, cwd=home.parent, capture_output=True, text=True, timeout=300)


def assert_one_line(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_read_only_home_serves_the_reading_commands(home: Path) -> None:
    for args in (["page", "w"], ["credits", "balance", "alice"], ["query", "SELECT 1 AS one"]):
        done = qsolve(home, *args, mount=READ_ONLY)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
    assert "3" in qsolve(home, "credits", "balance", "alice", mount=READ_ONLY).stdout


def test_a_writing_command_on_a_read_only_home_says_so_in_one_line(home: Path) -> None:
    done = qsolve(home, "credits", "grant", "alice", "5", mount=READ_ONLY)
    assert_one_line(done, str(home / "state.db"), "read-only", "qsolve credits")
    assert "3" in qsolve(home, "credits", "balance", "alice").stdout  # nothing was written


def test_a_corrupt_database_says_so_in_one_line(home: Path) -> None:
    (home / "state.db").write_bytes(b"not a database, half a page of it" * 64)
    for name in ("state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    assert_one_line(qsolve(home, "page", "w"), str(home / "state.db"), "damaged")


def test_a_full_disk_says_so_in_one_line(home: Path, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    done = qsolve(small, "credits", "grant", "alice", "5", mount=FULL, seed=home)
    assert_one_line(done, str(small / "state.db"), "full")


def test_a_read_only_home_serves_the_web_pages(home: Path) -> None:
    import urllib.request

    if problem := namespaces_problem():
        pytest.skip(f"no mount namespace here: {problem}")
    env = {k: v for k, v in os.environ.items() if k != "QSOLVE_DATABASE_URL"}
    env |= {"QSOLVE_HOME": str(home), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "qsolve.cli", "serve", "--port", "0"]
    server = subprocess.Popen(
        ["unshare", "-rm", "sh", "-c", READ_ONLY, str(home), *command],
        env=env, cwd=home.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        first = server.stdout.readline()
        assert " at http://127.0.0.1:" in first, (first, server.stdout.read() if server.poll() else "")
        url = first.rsplit(" at ", 1)[1].strip()
        deadline = time.monotonic() + 120
        while True:  # the line comes just before the server listens
            try:
                urllib.request.urlopen(url, timeout=10).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, server.stdout.read()
                time.sleep(0.2)
        for page in ("", "workflows/w"):
            with urllib.request.urlopen(url + page, timeout=60) as response:
                assert response.status == 200 and b"Traceback" not in response.read()
    finally:
        server.terminate()
        server.wait(timeout=60)
        server.stdout.close()
