"""The sandbox: the gates run as one job in a child process (seed: "Writing good cases"; issue 3).

The workflow is copied to a temporary folder; the environment is scrubbed to what Python needs; the
network is cut (a new network namespace where the kernel allows it, otherwise audit hooks refuse
sockets); memory is capped at ``resources.memory_mb`` (at most 8192); wall time is
``resources.timeout_s`` raised to at least 300 and capped at 7200, after which the job's whole process
group is killed. A job that dies is reported with why. Results cross back as JSON, never pickles.
The child itself is :class:`qsolve.sandbox.process.JobProcess`, which can be started ahead of its job.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qsolve.home import qsolve_home
from qsolve.sandbox.process import LOG_MAX_BYTES, JobProcess

if TYPE_CHECKING:
    from qsolve.manifest import Resources

TIMEOUT_RANGE = (300, 7200)
MEMORY_MAX_MB = 8192

Event = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Limits:
    timeout_s: int
    memory_mb: int

    @classmethod
    def of(cls, resources: Resources) -> Limits:
        lo, hi = TIMEOUT_RANGE
        return cls(
            timeout_s=min(max(resources.timeout_s, lo), hi), memory_mb=min(resources.memory_mb, MEMORY_MAX_MB)
        )


@dataclass
class Outcome:
    """What came back: the job's report, or why it died; how it was isolated; its log's last lines."""

    report: dict[str, Any] | None
    died: str | None
    network: str
    limits: Limits
    seconds: float
    log_tail: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


def _why(returncode: int, limits: Limits) -> str:
    if returncode < 0:
        sig = signal.Signals(-returncode)
        hint = {
            signal.SIGKILL: f" (out of memory? the limit is {limits.memory_mb} MB)",
            signal.SIGXFSZ: f" (a file or the output grew past {LOG_MAX_BYTES // 2**20} MB)",
            signal.SIGSEGV: " (a crash in native code)",
        }.get(sig, "")
        return f"the sandbox job was killed by {sig.name}{hint}"
    return f"the sandbox job exited with status {returncode} without a report"


def run_job(
    root: Path,
    target: str,
    case: str | None,
    resources: Resources,
    on_event: Event = lambda e: None,
    *,
    targets: Iterable[str] = (),
    limits: Limits | None = None,
    process: JobProcess | None = None,
) -> Outcome:
    """Run the gates of the workflow at ``root`` in a sandboxed child process. ``targets``: those its
    cases run on, whose fake devices the job loads (and caches) before any workflow code runs.
    ``limits`` overrides the manifest's resources (tests use seconds where the seed's floor is 300)."""
    job = {"mode": "gates", "target": target, "case": case, "targets": sorted(targets)}
    return _run(root, job, limits or Limits.of(resources), on_event, process=process)


def run_case_job(
    root: Path,
    case: str,
    target: str,
    limits: Limits,
    approve: Callable[[dict[str, Any]], bool],
    on_event: Event = lambda e: None,
) -> Outcome:
    """Run one case as a platform run: the child sends the case's estimate, ``approve(event)`` decides
    (a credit hold, say) before anything of the case runs, and only then does it run. The report's
    ``result`` is the case's result; ``report`` is ``None`` when the run was not approved."""
    job = {"mode": "case", "target": target, "case": case, "targets": [target]}
    return _run(root, job, limits, on_event, approve)


def _run(
    root: Path,
    job: dict[str, Any],
    limits: Limits,
    on_event: Event,
    approve: Callable[[dict[str, Any]], bool] | None = None,
    process: JobProcess | None = None,
) -> Outcome:
    process = process or JobProcess()
    process.limit_memory(limits.memory_mb)
    start = process.started
    try:
        work = process.tmp / "workflow"
        shutil.copytree(
            root, work, ignore=shutil.ignore_patterns("__pycache__", ".git"), ignore_dangling_symlinks=True
        )
        # fake devices' files (qsolve.targets.devices), written by the job before its guard is up
        cache = qsolve_home().resolve() / "cache"
        job = {**job, "root": str(work), "network": process.network, "cache": str(cache)}

        def handle(event: dict[str, Any]) -> None:
            if event.get("event") == "estimate" and approve is not None:
                process.send("go" if approve(event) else "stop", close=True)
            on_event(event)

        process.send(json.dumps(job), close=approve is None)
        try:
            report, events, timed_out = _collect(process.channel, start + limits.timeout_s, handle)
        finally:
            returncode = process.kill()
        died = None
        if timed_out:
            died = f"the sandbox job was stopped at its time limit of {limits.timeout_s} s"
        elif report is None:
            died = _why(returncode, limits)
        tail = process.log_tail()
    finally:
        process.close()
    return Outcome(
        report=report,
        died=died,
        network=process.network,
        limits=limits,
        seconds=time.monotonic() - start,
        log_tail=tail,
        events=events,
    )


def _collect(fd: int, deadline: float, on_event: Event) -> tuple[dict | None, list[dict], bool]:
    """Read JSON lines until the channel closes or the deadline passes."""
    buffer = b""
    report = None
    events: list[dict] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return report, events, True
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return report, events, False
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not ours: the channel carries only JSON objects, one a line
            if not isinstance(event, dict):
                continue
            if event.get("event") == "report":
                report = event
            else:
                events.append(event)
                on_event(event)


__all__ = ["Event", "JobProcess", "Limits", "Outcome", "run_case_job", "run_job"]
