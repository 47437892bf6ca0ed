"""The platform's side of a workflow process: the workflow's functions called across the boundary.

:class:`RemoteCode` is a :class:`~qsolve.sandbox.calls.WorkflowCode` whose every call is a message to
the workflow process, and whose every answer is validated before the platform reads it. While a
quantum method runs, each batch of circuits it sends is read back from QPY
(:mod:`qsolve.sandbox.circuits`) and run by the platform's own context on the run's target, which
transpiles, records and scores them here: the workflow process only ever sees counts.
"""

from __future__ import annotations

import sys
import sysconfig
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from qsolve.errors import HostShortOfMemory, Unconfined, WorkflowProcessFailed
from qsolve.home import qsolve_home
from qsolve.runtime import worker
from qsolve.runtime.cgroups import WORKER_MB
from qsolve.sandbox import circuits
from qsolve.sandbox.calls import Answer, MethodReturn, one_line
from qsolve.sandbox.confine import Job, Protections
from qsolve.sandbox.process import PACKAGE, JobProcess
from qsolve.workflow.params import bounded_schema_error

if TYPE_CHECKING:
    from collections.abc import Callable

    from qsolve.workflow.context import Context

#: the operator's setting that lets the platform's flows run workflow code without the full boundary
ACCEPT_UNCONFINED = "QSOLVE_ACCEPT_UNCONFINED_CODE"

#: what every workflow process may read besides its own copy: the Python runtime and the system's
#: shared libraries (never the platform's home, its source tree, or any other process)
SYSTEM_READ = (
    "/usr",
    "/lib",
    "/lib64",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/dev/urandom",
    "/sys/devices/system/cpu",
    "/proc/self",
    "/proc/meminfo",  # the machine's memory and CPU figures: qiskit_aer reads them before it simulates
    "/proc/stat",
    "/proc/cpuinfo",
)


def readable(process: JobProcess) -> list[str]:
    """What the workflow process may read: never a folder that holds ``QSOLVE_HOME``."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    paths |= {p for p in sys.path if p.endswith("-packages")}
    home = qsolve_home().resolve()
    paths |= {str(process.workflow), str(process.tmp / "lib"), str(PACKAGE), *SYSTEM_READ}
    # the system's folders too: a home in /usr would be read past its files' modes (CAP_DAC_READ_SEARCH)
    return sorted(p for p in paths if not home.is_relative_to(Path(p).resolve()))


class Loaded(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: str | None = Field(default=None, max_length=4000)
    seconds: float = Field(default=0.0, ge=0.0)

    @field_validator("error")
    @classmethod
    def _one_line(cls, v: str | None) -> str | None:
        return None if v is None else one_line(v)[:4000]  # the workflow's words, never a line of their own


class RemoteCode:
    """The workflow's functions in a workflow process: :meth:`begin` sends the job, :meth:`ready` waits
    until the process is confined and has imported them."""

    def __init__(self, process: JobProcess) -> None:
        self.process = process
        self.protections = Protections()
        self.import_error: str | None = None
        self.import_seconds = 0.0
        self.required = False

    def begin(self, module: str, memory_mb: int, require_confinement: bool = False) -> RemoteCode:
        """Send the job: the process confines itself and imports the module while the platform goes on.
        ``require_confinement``: it imports nothing unless every protection held (and the platform
        ends it if ``/proc`` shows otherwise: :meth:`ready`)."""
        p = self.process
        p.memory_mb = memory_mb
        # before the job is sent: no workflow code runs unbounded. One budget for the job: the process
        # and the platform's worker that simulates and scores its circuits (charged here: _worker)
        p.cgroup.limit(memory_mb, worker_mb=WORKER_MB)
        job = Job(
            root=str(p.workflow),
            module=module,
            scratch=str(p.scratch),
            memory_mb=memory_mb,
            read=readable(p),
            write=[str(p.scratch), "/dev/null"],
            require=require_confinement,
            threads_counted=p.cgroup.counts_threads,
        )
        self.required = require_confinement
        p.send(job.model_dump())
        return self

    def ready(self) -> RemoteCode:
        """Wait until the process says what held and whether the module imported; check from outside
        what ``/proc`` shows of it. When the full boundary was required and did not hold, the process
        is ended (:class:`Unconfined`)."""
        p = self.process
        waited = time.perf_counter()
        said = self._expect("confined", Protections)
        p.found(said.pid)
        self.protections = _checked(said, p)
        if self.required and not self.protections.confined:
            p.kill()
            raise Unconfined(
                "the sandbox is not a full boundary on this machine ("
                + "; ".join(self.protections.missing)
                + f"): the platform runs no untrusted workflow code so; set {ACCEPT_UNCONFINED}=1 to "
                "accept that"
            )
        loaded = self._expect("loaded", Loaded)
        # its own account of the import, never more than the platform waited for it: an import that
        # ran while the platform was busy (opening targets, running other cases) cost no wall time
        self.import_seconds = min(loaded.seconds, time.perf_counter() - waited)
        self.import_error = loaded.error
        return self

    def call(self, function: str, kind: str, input: dict, params: dict, ctx: Context) -> MethodReturn:
        p = self.process
        p.send(
            {
                "op": "call",
                "function": function,
                "kind": kind,
                "input": input,
                "params": params,
                "seed": ctx.seed,
            }
        )
        while True:
            event = p.receive()
            if event["event"] == "returned":
                return self._model(event, MethodReturn)
            if event["event"] != "sample":
                raise p.broke(f"{event['event']!r} while a method ran")
            p.send(self._sample(event, kind, ctx))

    def _sample(self, event: dict[str, Any], kind: str, ctx: Context) -> dict[str, Any]:
        """Run one batch on the platform's context: its counts, or why it was refused."""
        if kind != "quantum":
            return {"op": "refused", "error": "a classical method cannot send circuits"}
        text, shots = event.get("circuits"), event.get("shots")
        if not isinstance(text, str) or set(event) != {"event", "circuits", "shots"}:
            raise self.process.broke("a sample request that is not {circuits, shots}")
        self._worker()
        local = ctx.backend.name == "sim-cpu" or ctx.backend.name.startswith("fake:")
        what = "reading and running a batch of circuits" if local else "reading a batch of circuits"
        if local:
            self._fits(text, shots, noisy=ctx.backend.name.startswith("fake:"))
        start = time.perf_counter()
        try:
            if local:  # decoded, transpiled, simulated and scored in the worker
                counts, new, dispatches, simulated = self._call(
                    _decode_and_run, ctx.backend.name, ctx.seed, ctx.dispatches, text, shots, what=what
                )
            else:  # a device's own backend (its receipts, its meter) stays here: only decoded there
                batch = self._call(circuits.decode, text, what=what)
        except worker.Raised as e:  # what the target says of these circuits: the method's to handle
            return {"op": "refused", "error": str(e)}
        if not local:
            try:
                return {"op": "counts", "counts": ctx.sample(batch, shots)}
            except Exception as e:  # what the target says of these circuits: the method's to handle
                return {"op": "refused", "error": f"{type(e).__name__}: {e}"}
        ctx._records.extend(new)
        ctx.dispatches = dispatches
        # the method's time is its batch's; the worker's own (scoring, the way there and back) the platform's
        ctx.scoring_in_method += max(0.0, time.perf_counter() - start - simulated)
        return {"op": "counts", "counts": counts}

    def _fits(self, text: str, shots: object, *, noisy: bool) -> None:
        """Refuse, before anything is built, a batch whose widest circuit's simulation cannot fit the
        job's memory budget (issue 35, item 4): the worker that would simulate it is bounded by that
        budget, so the case fails at once, naming the circuit's width and the budget, rather than after
        the simulation has taken what the machine has. Counted by the method the simulator will use: a
        noisy (``fake:``) target's density matrix where Aer would take one
        (:func:`~qsolve.sandbox.circuits.simulation_bytes`), else a state vector; on an ideal target, a
        circuit Aer runs by its stabilizer method (a Clifford circuit: a 40-qubit GHZ state) is counted
        as its stabilizer tableau (kilobytes). The headers alone count every circuit as a state
        vector; only when that does not fit is the batch read (in the worker, bounded) and each
        circuit counted by the method Aer will take for it."""
        from qsolve.targets.base import SIMULATION_MB

        p = self.process
        budget_mb = p.memory_mb or worker.MEMORY_MB
        found = circuits.widest(text)
        if found is None:
            return
        index, qubits = found
        need, method = circuits.simulation_bytes(qubits, shots, noisy=noisy, cap_mb=SIMULATION_MB)
        if need > budget_mb * 2**20 and not noisy:  # a Clifford circuit needs no state vector
            try:
                counted = self._call(_counted, text, shots, what="counting a batch's memory")
            except worker.Raised:  # a batch that does not read: its run says why
                return
            if counted is None:
                return
            index, qubits, need, method = counted
        if need > budget_mb * 2**20:
            p.kill()
            raise PlatformStopped(
                f"circuit {index} of a batch is {qubits} qubits wide: its {method} needs "
                f"{need / 2**30:g} GiB, more than the job's memory budget of {budget_mb} MB "
                "(resources.memory_mb); it was not simulated"
            )

    def _call(self, fn: Callable[..., Any], *args: Any, what: str) -> Any:
        """``fn(*args)`` in the platform's worker, within the job's deadline. Its time limit, the host's
        shortage of memory and the platform's bound end the job (the workflow process killed), each
        named; what ``fn`` raised (:class:`worker.Raised`) is the caller's to answer."""
        p = self.process
        try:
            return p.platform_worker.call(fn, *args, what=what, deadline=p.deadline)
        except worker.WorkOutOfTime:
            p.kill()
            raise worker.out_of_time(p.timeout_s) from None
        except worker.HostShort as e:  # the host's failure, not the workflow's
            p.kill()
            raise HostShortOfMemory(str(e)) from None
        except worker.WorkStopped as e:  # the platform's bound: the case fails, naming it
            p.kill()
            raise PlatformStopped(str(e)) from None

    def _worker(self) -> worker.Worker:
        """The platform's worker for this process's work, started on first use; what it does for this
        process is charged to the process's memory cgroup: one budget holds the job's workflow process
        and the platform's work for it (issue 35)."""
        p = self.process
        if p.platform_worker is None:
            p.platform_worker = worker.Worker(p.memory_mb or worker.MEMORY_MB)
        p.platform_worker.charge_to(p.cgroup)
        return p.platform_worker

    def schema_error(self, schema: dict[str, Any], value: Any, what: str) -> str | None:
        """A value the workflow sent, validated against its schema in a platform worker, by the job's
        deadline (:class:`~qsolve.errors.OutOfTime` then) and within its memory."""
        p = self.process
        try:
            return bounded_schema_error(schema, value, what, deadline=p.deadline, on=self._worker())
        except worker.HostShort as e:  # the host's failure, not the workflow's
            p.kill()
            raise HostShortOfMemory(str(e)) from None
        except worker.WorkOutOfTime:
            p.kill()
            raise worker.out_of_time(p.timeout_s) from None

    def evaluate(self, input: dict, solution: Any) -> Answer:
        self.process.send({"op": "evaluate", "input": input, "solution": solution})
        return self._expect("answer", Answer)

    def estimate(self, input: dict, params: dict) -> Answer:
        self.process.send({"op": "estimate", "input": input, "params": params})
        return self._expect("answer", Answer)

    def _expect(self, name: str, model: type[BaseModel]) -> Any:
        event = self.process.receive()
        if event["event"] != name:
            raise self.process.broke(f"{event['event']!r} where {name!r} was due")
        return self._model(event, model)

    def _model(self, event: dict[str, Any], model: type[BaseModel]) -> Any:
        fields = {k: v for k, v in event.items() if k != "event"}
        try:
            return model.model_validate(fields)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"]) or "?"
            raise self.process.broke(f"an invalid {event['event']!r}: {where}: {first['msg']}") from None


class PlatformStopped(WorkflowProcessFailed):
    """The platform stopped its own work on what the workflow sent (a bound of the platform's, named);
    the case fails with why, and the workflow process, left waiting, is replaced."""


def _counted(text: str, shots: Any) -> tuple[int, int, int, str] | None:
    """In the platform worker: ``(index, qubits, bytes, method)`` of the batch's circuit that needs the
    most memory on the ideal simulator (sim-cpu), each counted by the method Aer's automatic selection
    takes for it once written in sim-cpu's native gates: its stabilizer method for a circuit all of
    whose instructions it takes (:func:`~qsolve.sandbox.circuits.runs_by_stabilizer`), else a state
    vector. ``None`` for an empty batch."""
    from qsolve.targets.base import SIMULATION_MB
    from qsolve.targets.sim_cpu import native_gates

    worst: tuple[int, int, int, str] | None = None
    for index, circuit in enumerate(circuits.decode(text)):
        qubits = circuit.num_qubits
        if circuits.runs_by_stabilizer(native_gates().run(circuit)):
            need, method = circuits.stabilizer_bytes(qubits), "stabilizer tableau"
        else:
            need, method = circuits.simulation_bytes(qubits, shots, noisy=False, cap_mb=SIMULATION_MB)
        if worst is None or need > worst[2]:
            worst = (index, qubits, need, method)
    return worst


def _decode_and_run(target: str, seed: int, dispatches: int, text: str, shots: Any) -> tuple:
    """In the platform worker: the batch decoded, run on the target (this process's own, opened once)
    and scored at once; the records and the count of dispatches go back with the counts, and the
    seconds the batch itself took to read and run (the method's, as a batch run in the platform's
    process always was: scoring and the worker's own cost are the platform's)."""
    from qsolve.judging.quantum_context import QuantumContext
    from qsolve.targets import open_target

    ctx = QuantumContext(seed, open_target(target))
    ctx.dispatches = dispatches
    start = time.perf_counter()
    counts = ctx.sample(circuits.decode(text), shots)
    ran = time.perf_counter() - start - ctx.scoring_in_method  # reading, transpiling, simulating
    return counts, ctx.records, ctx.dispatches, ran


def _checked(said: Protections, process: JobProcess) -> Protections:
    """What the process said held, with what ``/proc`` shows of it from outside put in its place."""
    out = said.model_copy(deep=True)
    status = process.status()
    if status:
        out.seccomp = status.get("Seccomp", "0").strip() == "2"
        out.no_new_privs = status.get("NoNewPrivs", "0").strip() == "1"
        out.uid = int(status.get("Uid", "-1").split()[1])
        out.checked = ["seccomp", "no_new_privs", "uid", "namespaces"]
        if not out.seccomp and "no seccomp filter" not in " ".join(out.missing):
            out.missing.append("no seccomp filter (as /proc shows it)")
        if out.uid == 0 and "runs as root" not in out.missing:
            out.missing.append("runs as root")
    out.namespaces = [k for k, own in process.namespaces().items() if own]
    out.cgroups = sorted(process.cgroup.paths)
    out.missing.extend(process.cgroup.missing)
    return out
