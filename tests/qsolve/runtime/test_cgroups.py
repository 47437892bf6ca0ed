"""The cgroups of a workflow process (issue 22): made beneath the platform's own, bounded, removed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from qsolve.runtime import cgroups

writable = pytest.mark.skipif(
    os.geteuid() != 0 or any(cgroups._own(c) is None for c in cgroups.CONTROLLERS),
    reason="needs root and the memory and pids controllers mounted",
)


@writable
def test_a_cgroup_bounds_memory_and_threads_and_is_removed() -> None:
    made = cgroups.Cgroup.make()
    try:
        assert made.missing == [] and set(made.paths) == {"memory", "pids"}, made
        assert all(p.name == made.name and p.is_dir() for p in made.paths.values())
        made.limit(100)
        memory = made.paths["memory"]
        name = "memory.max" if made.v2["memory"] else "memory.limit_in_bytes"
        assert int((memory / name).read_text()) == (cgroups.RUNTIME_MB + 100) * 2**20
        # a job's: the process's own leaf as before, the job's budget with its worker's leaf around both
        made.limit(100, worker_mb=cgroups.WORKER_MB)
        assert set(made.leaves) == {cgroups.WORKFLOW, cgroups.WORKER}
        assert int((memory / name).read_text()) == (cgroups.JOB_OVERHEAD_MB + 100) * 2**20
        assert int((made.leaves[cgroups.WORKFLOW] / name).read_text()) == (cgroups.RUNTIME_MB + 100) * 2**20
        assert (made.paths["pids"] / "pids.max").read_text().strip() == str(cgroups.THREADS)
        other = cgroups.Cgroup.make()
        other.remove()
        assert other.name != made.name  # each its own
    finally:
        paths = list(made.paths.values())
        made.remove()
    assert not any(p.exists() for p in paths)


@writable
def test_a_process_over_its_limit_is_killed_and_said_to_be() -> None:
    """Memory written to a memory file, never mapped, is counted: the kernel ends the process."""
    made = cgroups.Cgroup.make()
    try:
        made.limit(32)
        fds = made.joining()
        code = "import os\nfd = os.memfd_create('m')\nfor _ in range(1024): os.write(fd, bytes(1 << 20))\n"
        ran = subprocess.run(
            [sys.executable, "-c", code], preexec_fn=lambda: cgroups.join(fds), pass_fds=(), timeout=120
        )
        for fd in fds:
            os.close(fd)
        assert ran.returncode == -9 and made.oom_killed()
    finally:
        made.remove()


@writable
def test_the_cgroups_of_a_killed_platform_process_are_removed_by_its_janitor() -> None:
    left = subprocess.run(
        [sys.executable, "-c", "from qsolve.runtime import cgroups; print(cgroups.Cgroup.make().name)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    pid = int(left.removeprefix(cgroups.PREFIX).split("-")[0])
    paths = [cgroups._own(c).path / left for c in cgroups.CONTROLLERS]
    assert all(p.is_dir() for p in paths)
    cgroups.remove_all_of(pid)
    assert not any(p.exists() for p in paths)


@writable
def test_what_an_ended_platform_process_left_is_removed_by_the_next() -> None:
    """A platform killed with no janitor (a test's own) left its cgroups; the next one removes them."""
    dead = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000  # no process has it
    own = cgroups._own("memory")
    left = own.path / f"{cgroups.PREFIX}{dead}-000000000000"
    left.mkdir()
    alive = own.path / f"{cgroups.PREFIX}{os.getpid()}-000000000000"
    alive.mkdir()
    try:
        cgroups.remove_left.cache_clear()
        cgroups.remove_left()
        assert not left.exists() and alive.exists()
    finally:
        for path in (left, alive):
            if path.exists():
                path.rmdir()


def _written(mb: int) -> int:
    """Work that holds ``mb`` MB, every page written (in the worker)."""
    return len(b"\x01" * (mb * 2**20))


HOLDER = "import sys\nheld = b'\\x01' * (64 << 20)\nprint('held', flush=True)\nsys.stdin.read()\n"


@writable
def test_a_jobs_worker_and_its_workflow_process_share_one_budget() -> None:
    """Issue 35, item 4: the platform's work for a job is charged to the job's memory cgroup, with its
    workflow process. The process holds 64 MB (within its own 100), the worker's work 96 MB: each fits
    the job's budget of 160 MB, the two together do not; the kernel's out-of-memory killer ends the
    worker (never the workflow process first), and its work fails naming the job's budget."""
    from qsolve.runtime import worker

    made = cgroups.Cgroup.make()
    one = worker.Worker(160)
    holder = None
    try:
        made.limit(100, overhead_mb=0, worker_mb=60)  # the process alone 100 MB, the job 160 MB
        fds = made.joining()
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            preexec_fn=lambda: cgroups.join(fds),
        )
        for fd in fds:
            os.close(fd)
        assert holder.stdout.readline() == b"held\n"
        one.charge_to(made)
        assert one.call(_written, 8, what="a small batch", deadline=time.monotonic() + 60) == 8 * 2**20
        assert str(one.pid) in (made.leaves[cgroups.WORKER] / "cgroup.procs").read_text().split()
        with pytest.raises(worker.WorkStopped) as stopped:
            one.call(_written, 96, what="simulating a batch", deadline=time.monotonic() + 60)
        assert str(stopped.value) == (
            "the platform's worker was killed by SIGKILL while it did simulating a batch: over the job's "
            "memory budget of 160 MB (its workflow process and the platform's work for it, together; the "
            "kernel's out-of-memory killer ended it)"
        )
        assert holder.poll() is None  # the workflow process lives on
        alone = worker.run(_written, 96, what="the same work alone", deadline=time.monotonic() + 60)
        assert alone == 96 * 2**20  # fits its own bound: it was the one budget that stopped it
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        one.close()
        made.remove()
