"""What a deployed maintenance pass costs (issue 39, item 3): wall and CPU of a `maintenance` flow run
taken by `qsolve worker` on a real Prefect server, nothing to do (idle), against the pass's own work.

    python bench/maintenance_pass.py [--repo PATH ...] [--rounds R]

One `prefect server start` on a free loopback port, with a PREFECT_HOME of its own under a temporary
folder. For each ``--repo`` (a checkout of qsolve; default this one), as an operator does it from that
checkout: `python -m qsolve_pipeline.deployments.pool --pool qsolve-N --home ...`, the `maintenance`
deployment of its `prefect.yaml` (entrypoint, work queue, job variables; named `maintenance-N`, its schedule
left out so that only the bench's runs are timed), and `qsolve worker --pool qsolve-N` with that checkout
first on PYTHONPATH. Rounds alternate the checkouts, so a busy machine weighs on each alike. A round creates a
flow run of the deployment due 15 s later (as the schedule makes them ahead of time), and waits for its
final state and for the worker's process tree to be back to what it was. Per run:

- wall: from the time the run is due to its final state, split into ``taken`` (due until Pending: the
  worker's claim; negative when it claims ahead), ``start`` (Pending until Running: a process, its
  imports, the engine's set-up) and ``body`` (Running until final: the flow's tasks, logs, artifact, and
  the pass itself);
- cpu: user and system seconds of the worker's whole process tree (``qsolve worker``, Prefect's worker,
  the maintenance runner, every flow-run process, reaped ones included: /proc's utime, stime, cutime
  and cstime), from before the run's creation until the tree is back to its size (its 15 s of waiting
  included); and the Prefect server's over the same time (the run's API calls, and its own loops).

Also: the worker tree's CPU while nothing runs (per minute: its polls), and the pass's own work, the
five steps of ``storage.maintenance`` called in this process (warm) on the same home. Medians printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
#: each run is due this long after it is made, as the schedule makes them ahead (longer than a worker's
#: poll, 10 s, so that each worker sees it before it is due)
AHEAD_S = 15


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[int]:
    """``pid`` and its live descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s tree: each live process's own and its reaped children's."""
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def wait_until(what, timeout: float, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := what():
            return got
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout} s waiting for {what}")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


class Variant:
    """One checkout: its pool, deployment, home and worker."""

    def __init__(self, n: int, repo: Path, tmp: Path, base: dict[str, str]) -> None:
        self.repo = repo.resolve()
        self.name = f"{n}:{self.repo}"
        self.pool = f"qsolve-{n}"
        self.home = tmp / f"home-{n}"
        self.env = base | {
            "PYTHONPATH": str(self.repo),
            "QSOLVE_HOME": str(self.home),
            "QSOLVE_HOST_NAME": f"bench-{n}",
        }
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.server_cpus: list[float] = []
        self.splits: list[tuple[float, float, float]] = []
        self.worker: subprocess.Popen | None = None
        self.log = tmp / f"worker-{n}.log"

    def deploy(self) -> None:
        import yaml
        from prefect.client.orchestration import get_client

        run(
            [
                sys.executable,
                "-m",
                "qsolve_pipeline.deployments.pool",
                "--pool",
                self.pool,
                "--home",
                str(self.home),
            ],
            self.env,
            self.repo,
        )
        spec = yaml.safe_load((self.repo / "prefect.yaml").read_text())
        entry = next(d for d in spec["deployments"] if d["name"] == "maintenance")
        pool = entry.get("work_pool") or {}
        queue = pool.get("work_queue_name") or "default"
        with get_client(sync_client=True) as client:
            from prefect.client.schemas.actions import WorkQueueCreate  # noqa: F401 - the client's own

            try:
                client.read_work_queue_by_name(queue, work_pool_name=self.pool)
            except Exception:  # noqa: BLE001 - the checkout's pool module makes its queues; an old one may not
                client.create_work_queue(name=queue, work_pool_name=self.pool)
            flow_id = client.create_flow_from_name("maintenance")
            self.deployment = client.create_deployment(
                flow_id=flow_id,
                name=f"maintenance-{self.pool}",
                entrypoint=entry["entrypoint"],
                work_pool_name=self.pool,
                work_queue_name=queue,
                pull_steps=[],
                parameters={},
                enforce_parameter_schema=False,
                job_variables=pool.get("job_variables") or {},
            )

    def start(self) -> None:
        with self.log.open("w") as out:
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "qsolve.cli", "worker", "--pool", self.pool],
                env=self.env,
                cwd=self.repo,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        if self.worker and self.worker.poll() is None:
            self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.worker.pid, signal.SIGKILL)
                self.worker.wait()

    def settled_size(self, timeout: float = 300) -> int:
        """The worker tree's size once Prefect's worker said it started and the tree stopped changing
        for 3 s."""
        wait_until(lambda: "started!" in self.log.read_text(), timeout=timeout)
        last, since = -1, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            size = len(tree(self.worker.pid))
            if size != last:
                last, since = size, time.monotonic()
            elif time.monotonic() - since >= 3:
                return size
            time.sleep(0.2)
        return last

    def one(self, size: int, server: int) -> None:
        from prefect.client.orchestration import get_client
        from prefect.states import Scheduled

        cpu0, server0 = tree_cpu(self.worker.pid), tree_cpu(server)
        with get_client(sync_client=True) as client:
            due = datetime.now(UTC) + timedelta(seconds=AHEAD_S)
            flow_run = client.create_flow_run_from_deployment(
                self.deployment, parameters={}, state=Scheduled(scheduled_time=due)
            )
            created = due
            final = wait_until(
                lambda: (s := client.read_flow_run(flow_run.id).state) and s.is_final() and s, timeout=900
            )
            wait_until(lambda: len(tree(self.worker.pid)) <= size, timeout=300)
            cpu1, server1 = tree_cpu(self.worker.pid), tree_cpu(server)
            history = client.read_flow_run_states(flow_run.id)
        if not final.is_completed():
            raise SystemExit(f"{self.name}: the pass ended {final.type.value}: {final.message}")
        at = {s.type.value: s.timestamp for s in history}
        taken = (at["PENDING"] - created).total_seconds()
        started = (at["RUNNING"] - at["PENDING"]).total_seconds()
        body = (final.timestamp - at["RUNNING"]).total_seconds()
        self.walls.append((final.timestamp - created).total_seconds())
        self.cpus.append(cpu1 - cpu0)
        self.server_cpus.append(server1 - server0)
        self.splits.append((taken, started, body))


def own_work(home: Path, repeat: int = 3) -> tuple[float, float]:
    """The pass's five steps, warm, in this process (what the pass would cost with no Prefect at all): its
    wall and CPU seconds, medians."""
    from qsolve_pipeline.storage import maintenance
    from qsolve_pipeline.storage.state import connect

    times, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        with connect(home=home) as db:
            maintenance.end_abandoned_runs(db)
            db.release_stale_holds(maintenance.ABANDONED_AFTER)
            maintenance.refile_lost_runs(db, home)
            maintenance.file_ended_runs(db, home)
            maintenance.compact_track_record(db, home)
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(times), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", action="append", type=Path, help="a qsolve checkout (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU sampling per worker")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the servers and workers stopped on the way out
    repos = args.repo or [REPO]
    tmp = Path(tempfile.mkdtemp(prefix="bench-maintenance-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "PREFECT_", "QISKIT_IBM"))}
    base |= {
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_API_URL": url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    os.environ.update(
        {k: base[k] for k in ("PREFECT_HOME", "PREFECT_API_URL", "PREFECT_SERVER_ANALYTICS_ENABLED")}
    )
    server_log = (tmp / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=base,
        stdout=server_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    variants = [Variant(n, repo, tmp, base) for n, repo in enumerate(repos)]
    try:
        wait_until(lambda: healthy(url), timeout=600, every=1)
        for v in variants:
            v.deploy()
            v.start()
        sizes = {v.pool: v.settled_size() for v in variants}
        idle = {}
        for v in variants:
            c0 = tree_cpu(v.worker.pid)
            time.sleep(args.idle)
            idle[v.pool] = (tree_cpu(v.worker.pid) - c0) * 60 / args.idle
        for r in range(args.rounds):
            for v in variants:
                v.one(sizes[v.pool], server.pid)
                taken, started, body = v.splits[-1]
                print(
                    f"round {r + 1} {v.name}: wall {v.walls[-1]:.1f} s (taken {taken:.1f}, start "
                    f"{started:.1f}, body {body:.1f}), cpu {v.cpus[-1]:.2f} s "
                    f"(server {v.server_cpus[-1]:.2f} s)",
                    flush=True,
                )
        results = []
        for v in variants:
            work, work_cpu = own_work(v.home)
            result = {
                "repo": str(v.repo),
                "wall_median_s": round(statistics.median(v.walls), 2),
                "cpu_median_s": round(statistics.median(v.cpus), 2),
                "server_cpu_median_s": round(statistics.median(v.server_cpus), 2),
                "taken_start_body_median_s": [
                    round(statistics.median(s[i] for s in v.splits), 2) for i in range(3)
                ],
                "idle_cpu_per_minute_s": round(idle[v.pool], 2),
                "own_work_s": round(work, 3),
                "own_work_cpu_s": round(work_cpu, 3),
                "walls": [round(w, 1) for w in v.walls],
                "cpus": [round(c, 2) for c in v.cpus],
            }
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        for v in variants:
            v.stop()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        server_log.close()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    main()
