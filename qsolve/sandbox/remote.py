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

from qsolve.errors import Unconfined
from qsolve.home import qsolve_home
from qsolve.sandbox import circuits
from qsolve.sandbox.calls import Answer, MethodReturn, one_line
from qsolve.sandbox.confine import Job, Protections
from qsolve.sandbox.process import PACKAGE, JobProcess

if TYPE_CHECKING:
    from qsolve.context import Context

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
    paths = {p for p in paths if not home.is_relative_to(Path(p).resolve())}
    return sorted({str(process.workflow), str(process.tmp / "lib"), str(PACKAGE), *paths, *SYSTEM_READ})


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
        job = Job(
            root=str(p.workflow),
            module=module,
            scratch=str(p.scratch),
            memory_mb=memory_mb,
            read=readable(p),
            write=[str(p.scratch), "/dev/null"],
            require=require_confinement,
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
        try:
            counts = ctx.sample(circuits.decode(text), shots)
        except Exception as e:  # what the target says of these circuits: the method's to handle
            return {"op": "refused", "error": f"{type(e).__name__}: {e}"}
        return {"op": "counts", "counts": counts}

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
    return out
