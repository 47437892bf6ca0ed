"""What the Prefect flow adds: `qsolve submit` against `qsolve test` on the same workflow.

Runs, each as a user would (a new process, a fresh QSOLVE_HOME so the submission publishes and builds
its track record):

  1. qsolve test DIR                          the gates alone
  2. qsolve submit DIR, ephemeral Prefect     no server: Prefect starts its own for the process
  3. qsolve submit DIR, with a server         `prefect server start` on a free loopback port

and prints the times and ratios. The flow's own cost is submit's time less the gates' time and less the
history stage's (which re-runs every case as a platform run: real work, not overhead); the history
stage's time is read from the submission's flow run. Target: with a server, the flow adds under 5 s
to the gates' own time.

    python bench/submission.py [DIR]            default workflows/max-cut
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QSOLVE = [sys.executable, "-m", "qsolve.cli"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return took, proc.stdout + proc.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(folder: str) -> None:
    base = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    base.pop("PREFECT_API_URL", None)
    with tempfile.TemporaryDirectory() as tmp:
        gates, _ = timed([*QSOLVE, "test", folder], {**base, "QSOLVE_HOME": f"{tmp}/test"})
        eph, _ = timed(
            [*QSOLVE, "submit", folder, "--no-history"], {**base, "QSOLVE_HOME": f"{tmp}/ephemeral"}
        )
        port = free_port()
        server_env = {**base, "PREFECT_HOME": f"{tmp}/prefect-home"}
        server = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=server_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}/api"
            started = time.perf_counter()
            while True:
                try:
                    urllib.request.urlopen(f"{url}/health", timeout=1).read()
                    break
                except OSError:
                    if time.perf_counter() - started > 90:
                        raise SystemExit("the Prefect server did not become healthy in 90 s") from None
                    time.sleep(0.5)
            ready = time.perf_counter() - started
            env = {**base, "PREFECT_API_URL": url, "QSOLVE_HOME": f"{tmp}/served"}
            srv, _ = timed([*QSOLVE, "submit", folder, "--no-history"], env)
            whole, _ = timed([*QSOLVE, "submit", folder], {**env, "QSOLVE_HOME": f"{tmp}/whole"})
        finally:
            os.killpg(server.pid, 15)
            server.wait()
    print(f"workflow: {folder}")
    print(f"qsolve test (the gates)                          {gates:7.2f} s")
    print(f"qsolve submit --no-history, Prefect server       {srv:7.2f} s  {srv / gates:.2f}x")
    print(f"qsolve submit --no-history, ephemeral Prefect    {eph:7.2f} s  {eph / gates:.2f}x")
    print(f"qsolve submit with its history stage, server     {whole:7.2f} s  {whole / gates:.2f}x")
    print(f"Prefect server start-up until healthy            {ready:7.2f} s  (not in the times above)")
    print(f"the flow adds, with a server:                    {srv - gates:7.2f} s  (target: under 5 s)")
    print(f"the flow adds, ephemeral (Prefect's start-up):   {eph - gates:7.2f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "workflows/max-cut")
