"""Sandbox jobs: the gates run (seed: "Writing good cases"), one case as a platform run, and a replay's
cases (``run_cases_job``).

The workflow folder is copied into the job's workflow process's own folder (regular files only, read
beneath the folder through :mod:`qsolve.workflow.reading`, no link, at most :data:`COPY_MAX_BYTES`); the cases
run with the workflow's code in that process and everything else here. The time limit is
``resources.timeout_s`` raised to at least 300 and capped at 7200, over the whole job; memory is
``resources.memory_mb`` (at most 8192): the job's one budget, which its workflow process and the
platform's worker that simulates and scores its circuits share (one memory cgroup, with
:data:`~qsolve.runtime.cgroups.JOB_OVERHEAD_MB` for their runtimes), claimed whole on the host's budget
for jobs at once before the job starts (:func:`admitted`). The first case runs again in a
fresh workflow process, so nothing of the first run carries over into the second: that process is
started ahead (it imports numpy and Qiskit, platform code, meanwhile) but gets its job, and with it the
workflow's code, only once every workflow process before it has exited, so that no two of the job's
workflow processes ever run at once.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qsolve.errors import (
    HostShortOfMemory,
    OutOfTime,
    PlatformFailed,
    PlatformStopped,
    Unconfined,
    WorkflowInvalid,
    WorkflowProcessFailed,
)
from qsolve.home import qsolve_home
from qsolve.runtime import admission
from qsolve.runtime.cgroups import JOB_OVERHEAD_MB
from qsolve.runtime.worker import Worker
from qsolve.sandbox.confine import Protections
from qsolve.sandbox.process import JobProcess
from qsolve.sandbox.remote import ACCEPT_UNCONFINED, RemoteCode
from qsolve.workflow.publication import PublicationError, listing
from qsolve.workflow.reading import read_bytes

if TYPE_CHECKING:
    from qsolve.workflow.cases import Case
    from qsolve.workflow.folder import Workflow
    from qsolve.workflow.manifest import Resources

TIMEOUT_RANGE = (300, 7200)
MEMORY_MAX_MB = 8192
COPY_MAX_BYTES = 256 * 2**20

Event = Callable[[dict[str, Any]], None]
Tell = Callable[[str], None]


def confinement_required() -> bool:
    """Whether the platform's flows must refuse workflow code a process without the full boundary:
    yes, unless the operator has set ``QSOLVE_ACCEPT_UNCONFINED_CODE=1``."""
    return os.environ.get(ACCEPT_UNCONFINED, "").strip().lower() not in ("1", "true", "yes")


class CopyRefused(ValueError):
    """The workflow folder cannot go into the sandbox as it is."""


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
    """What came back: the job's report, or why it died; what held in its workflow processes; its
    log's last lines."""

    report: dict[str, Any] | None
    died: str | None
    protections: Protections
    limits: Limits
    seconds: float
    log_tail: str = ""
    #: the job ended by the host's failure, not the workflow's (its platform worker killed by the
    #: host short of memory; a check the platform could not make): ``died`` says so
    host_failure: bool = False

    @property
    def network(self) -> str:
        return "namespace" if "net" in self.protections.namespaces else "none (Landlock, seccomp)"


def copy_workflow(root: Path, dest: Path, limit: int = COPY_MAX_BYTES) -> None:
    """The folder's regular files into ``dest``, as publication lists them and read beneath it
    (:mod:`qsolve.workflow.reading`): a link or a special file is refused, and so is a folder of more than
    ``limit`` bytes."""
    try:
        files = listing(root)
        total = 0
        for rel in files:
            data = read_bytes(root, rel, limit=limit - total)
            total += len(data)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except PublicationError as e:
        raise CopyRefused(f"{root}: {e}") from None
    except WorkflowInvalid as e:
        if "larger than" in e.message:
            raise CopyRefused(f"{root}: the workflow folder is larger than {limit // 2**20} MiB") from None
        raise CopyRefused(f"{root}: {e.issues[0]}") from None
    dest.mkdir(parents=True, exist_ok=True)


def _module_of(root: Path) -> str:
    """The manifest's ``module`` (the gates report a manifest that does not read; the job then runs
    no case)."""
    from qsolve.workflow.folder import load_manifest

    try:
        return load_manifest(root).module
    except Exception:
        return "workflow.py"


class _Processes:
    """The job's workflow processes: each gets the copy and the job's limits when started."""

    def __init__(
        self, root: Path, limits: Limits, deadline: float, first: JobProcess | None, require: bool
    ) -> None:
        self.root, self.limits, self.deadline, self.require = root, limits, deadline, require
        self.module = _module_of(root)
        self.spare: list[JobProcess] = [first] if first else []
        self.used: list[JobProcess] = []
        self.protections: Protections | None = None
        self.begun: list[RemoteCode] = []
        # one platform worker for the job's batches and solutions, whichever process sent them: what
        # the targets build once (pass managers, noise models) is built once a job
        self.worker = Worker(limits.memory_mb)

    def begin(self) -> None:
        """Start a process (or take the one started ahead) and send it its job now: it confines itself
        and imports the workflow's module while the platform goes on (opening the targets, running
        the other cases); :meth:`start` then takes the processes begun, in order."""
        self.begun.append(self._begin())

    def _begin(self) -> RemoteCode:
        process = self.spare.pop(0) if self.spare else JobProcess()
        self.used.append(process)
        process.deadline, process.limit_s = self.deadline, self.limits.timeout_s
        process.platform_worker = self.worker
        copy_workflow(self.root, process.workflow)
        return RemoteCode(process).begin(self.module, self.limits.memory_mb, self.require)

    def start_ahead(self) -> None:
        """Start a process now, its job to come (:meth:`start_fresh`): no workflow code runs in it yet."""
        if not self.spare:
            self.spare.append(JobProcess())

    def start_fresh(self) -> RemoteCode:
        """The code of a fresh process, given its job only after every process used so far has exited."""
        for process in self.used:
            process.end()
        return self.start()

    def start(self) -> RemoteCode:
        code = self.begun.pop(0) if self.begun else self._begin()
        code.ready()
        if self.protections is None or len(code.protections.missing) > len(self.protections.missing):
            self.protections = code.protections  # the weakest seen is what the report says held
        return code

    def close(self) -> str:
        tail = self.used[-1].log_tail() if self.used else ""
        self.worker.close()
        for p in self.used + self.spare:
            p.close()
        return tail


def _open(targets: Iterable[str]) -> None:
    """Fake devices from the platform's own cache, and these targets opened now."""
    from qsolve.targets import devices, warm

    devices.use_cache(qsolve_home().resolve() / "cache" / "devices")
    warm(targets)


def budget_mb(limits: Limits) -> int:
    """A job's memory budget: its ``memory_mb`` and what its cgroup allows its runtimes (its workflow
    process's and its platform worker's: :data:`~qsolve.runtime.cgroups.JOB_OVERHEAD_MB`)."""
    return limits.memory_mb + JOB_OVERHEAD_MB


def _say(line: str) -> None:
    logging.getLogger("qsolve.jobs").warning(line)


def admitted(limits: Limits, what: str, tell: Tell | None = None) -> contextlib.AbstractContextManager[float]:
    """The job's claim of its memory budget on this host's budget for jobs at once
    (:mod:`qsolve.runtime.admission`), held while inside: waits, saying so once through ``tell``
    (else the ``qsolve.jobs`` logger), until it fits; the seconds waited. The claims are this user's on
    this host, whatever its ``QSOLVE_HOME`` (:func:`~qsolve.runtime.admission.claims_folder`)."""
    return admission.admitted(admission.claims_folder(), budget_mb(limits), what, tell or _say)


#: the devices whose jobs' waits are held to the job's deadline once it is admitted
#: (:func:`held_from_admission`), in this thread's context
_HELD: ContextVar[tuple[Any, ...]] = ContextVar("qsolve_held_from_admission", default=())


@contextlib.contextmanager
def held_from_admission(*devices: Any) -> Iterator[None]:
    """Within: each of ``devices`` that waits on device jobs (``hold_until(deadline, limit_s)``: a
    provider's, IBM's) is held to the job's own deadline, told when the job is admitted, its limit
    counted from then: a wait for memory is never taken from the time a device job is waited on
    (issue 35)."""
    token = _HELD.set(_HELD.get() + tuple(d for d in devices if hasattr(d, "hold_until")))
    try:
        yield
    finally:
        _HELD.reset(token)


def _run(
    root: Path,
    limits: Limits,
    body: Callable[[_Processes], dict[str, Any] | None],
    process: JobProcess | None = None,
    require: bool = False,
    *,
    what: str,
    tell: Tell | None = None,
    admit: bool = True,
) -> Outcome:
    """The job, once admitted (``admit``: its claim is taken here; else its caller holds it)."""
    try:
        with admitted(limits, what, tell) if admit else contextlib.nullcontext(0.0) as waited:
            return _admitted(root, limits, body, process, require, waited)
    except (PlatformStopped, admission.BudgetSettingInvalid) as e:  # stopped while it waited; a bad setting
        return Outcome(
            report=None,
            died=str(e),
            protections=Protections(missing=["no workflow process ran"]),
            limits=limits,
            seconds=0.0,
        )


def _admitted(
    root: Path,
    limits: Limits,
    body: Callable[[_Processes], dict[str, Any] | None],
    process: JobProcess | None,
    require: bool,
    waited: float,
) -> Outcome:
    # its time counts from its admission: a wait for memory is not the job's
    start = process.started if process and not waited else time.monotonic()
    processes = _Processes(root, limits, start + limits.timeout_s, process, require)
    for device in _HELD.get():  # a device job's wait ends with the job's own time, counted from now
        device.hold_until(start + limits.timeout_s, limits.timeout_s)
    died = None
    report = None
    host_failure = False
    try:
        report = body(processes)
    except OutOfTime as e:
        died = str(e)
    except (HostShortOfMemory, PlatformFailed) as e:  # the host's doing, never the workflow's
        died, host_failure = str(e), True
    except Unconfined:
        raise
    except (WorkflowProcessFailed, CopyRefused) as e:
        died = str(e)
    finally:
        tail = processes.close()
    if report is not None and report.get("died"):
        died = report["died"]  # the report keeps every case that finished before it
    return Outcome(
        report=report,
        died=died,
        protections=processes.protections or Protections(missing=["no workflow process ran"]),
        limits=limits,
        seconds=time.monotonic() - start,
        log_tail=tail,
        host_failure=host_failure,
    )


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
    require_confinement: bool = False,
    tell: Tell | None = None,
    workflow: Workflow | None = None,
) -> Outcome:
    """The gates of the workflow at ``root``, its code in workflow processes (the first in ``process``,
    when one was started ahead). ``targets``: those its cases run on, opened first. ``limits``
    overrides the manifest's resources (tests use seconds where the seed's floor is 300).
    ``require_confinement``: refuse (:class:`~qsolve.errors.Unconfined`) to run workflow code in a
    process that did not get the full boundary. ``tell``: where a wait for memory is said (one line).
    ``workflow``: the folder at ``root`` as the submission checks read it (else the job reads it)."""
    limits = limits or Limits.of(resources)

    def body(processes: _Processes) -> dict[str, Any]:
        processes.begin()  # first: the process confines itself and imports the workflow's module
        from qsolve.validation.gate_run import gate_report, run_gates  # while Qiskit and Aer load here

        _open(targets)
        if not gc.get_freeze_count():  # once a process: what the platform loaded stays, and the
            gc.freeze()  # run's collections skip it (about a third of qsolve test's time otherwise)

        def event(e: dict[str, Any]) -> None:
            if e.get("event") == "result" and e["index"] == 0:
                processes.start_ahead()  # the fresh process the first case runs again in
            on_event(e)

        inputs = run_gates(root, target, case, event, processes.start, processes.start_fresh, workflow)
        return {**gate_report(inputs), "died": inputs.died}

    return _run(root, limits, body, process, require_confinement, what=f"the gates of {root.name}", tell=tell)


def run_case_job(
    root: Path,
    case: int,
    target: str,
    limits: Limits,
    approve: Callable[[dict[str, Any]], bool],
    on_event: Event = lambda e: None,
    *,
    require_confinement: bool | None = None,
    on_target: bool = False,
    tell: Tell | None = None,
    admit: bool = True,
) -> Outcome:
    """One case, ``cases[case]``, as a platform run: its estimate asked first, ``approve(event)``
    decides (a credit hold, say) before anything of the case runs, and only then does it run. The
    report's ``result`` is the case's result; ``report`` is ``None`` when the run was not approved. A
    platform run refuses workflow code a process without the full boundary
    (:func:`confinement_required`). ``admit``: the job claims its memory budget here (else its caller
    holds the claim: :func:`admitted`); ``tell``: where a wait for memory is said."""

    def body(processes: _Processes) -> dict[str, Any] | None:
        processes.begin()
        from qsolve.validation.gate_run import run_one

        _open(())
        result = run_one(root, case, target, on_event, approve, processes.start, on_target=on_target)
        return None if result is None else {"result": result.model_dump(mode="json")}

    require = confinement_required() if require_confinement is None else require_confinement
    outcome = _run(root, limits, body, require=require, what=f"case {case}", tell=tell, admit=admit)
    if outcome.report is None and outcome.died is None:
        outcome.died = "the run was not approved"
    return outcome


def run_cases_job(
    root: Path,
    cases: list[Case],
    limits: Limits,
    before: Callable[[int, Case], None] = lambda i, c: None,
    on_event: Event = lambda e: None,
    *,
    require_confinement: bool | None = None,
    tell: Tell | None = None,
) -> Outcome:
    """``cases`` (each with its own target, params and seed) run one after another in the sandbox, as
    the gates run theirs (:class:`~qsolve.validation.gate_run.Runner`, in one workflow process, a new one
    after a process that failed): what a replay re-runs (``qsolve replay``). ``before(i, case)`` is
    called on the platform's side before each case (a replay sets the target its circuits run on). The
    report's ``results`` are the cases' results, in order."""

    def body(processes: _Processes) -> dict[str, Any]:
        processes.begin()
        from qsolve.validation.gate_run import Runner
        from qsolve.workflow.folder import load_workflow

        _open(sorted({c.target for c in cases if c.target and c.target.startswith(("sim-", "fake:"))}))
        workflow = load_workflow(root)
        runner = Runner(workflow, "sim-cpu", processes.start)
        results = []
        for i, case in enumerate(cases):
            on_event({"event": "case", "index": i, "total": len(cases), "name": case.name})
            before(i, case)
            results.append(runner.run(case).model_dump(mode="json"))
        return {"results": results}

    require = confinement_required() if require_confinement is None else require_confinement
    return _run(root, limits, body, require=require, what=f"the replay of {root.name}", tell=tell)
