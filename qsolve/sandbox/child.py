"""The workflow process: ``python -m qsolve.sandbox.child``, the only place a workflow's code runs.

It starts before its job is known and imports what workflow code will need (numpy, Qiskit) while the
platform reads the workflow. Its job, one JSON line on standard input, says where the workflow's copy
and its scratch folder are and what it may read and write. It then confines itself for good
(:mod:`qsolve.sandbox.confine`), tells the platform what holds, imports the workflow's module and
serves the platform's calls: one JSON line each way (requests on standard input, answers on the
file descriptor in ``QSOLVE_RESULT_FD``). ``ctx.sample`` sends each batch of circuits out as QPY and
waits for their counts: the circuits run, are recorded and scored on the platform's side. What the
workflow prints goes to the log.

It forks once first: the child is the first process of a PID namespace of its own where the kernel
allowed one (the platform asks for it when starting this process), so when it ends everything it
could have started ends with it; the first process only waits and exits as its child did.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _fork_into_namespace() -> None:
    """Fork; the parent waits for the child and ends as it ended (the same signal or status)."""
    _die_with_parent()
    pid = os.fork()
    if pid == 0:
        _die_with_parent()
        return
    os.close(0)
    os.close(int(os.environ["QSOLVE_RESULT_FD"]))  # the channel ends when the child's end closes
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # these two have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


class Channel:
    """The platform's requests in, answers out; one JSON object a line."""

    def __init__(self) -> None:
        self.requests = os.fdopen(0, "rb", buffering=0)
        self.out = os.fdopen(int(os.environ.pop("QSOLVE_RESULT_FD")), "w", buffering=1)
        self._pending = b""

    def emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, allow_nan=False) + "\n")
        self.out.flush()

    def request(self) -> dict[str, Any] | None:
        while b"\n" not in self._pending:
            chunk = self.requests.read(1 << 20)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)


class SampleRefused(ValueError):
    """The platform refused a batch of circuits (what it said is the message)."""


def _context_classes(channel: Channel):
    from qsolve.sandbox import circuits
    from qsolve.workflow.context import Context

    class SamplingContext(Context):
        """A quantum method's context in the workflow process: circuits go out, counts come back."""

        def sample(self, batch: Sequence[Any], shots: int) -> list[dict[str, int]]:
            batch = self.batch(batch, shots)
            channel.emit({"event": "sample", "circuits": circuits.encode(batch), "shots": int(shots)})
            answer = channel.request()
            if answer is None:
                raise SystemExit(0)  # the platform is gone
            if answer.get("op") != "counts":
                raise SampleRefused(str(answer.get("error")))
            return answer["counts"]

    return SamplingContext


def main() -> None:
    from qsolve.sandbox.confine import own_mount_namespace

    own_mounts = own_mount_namespace()  # asked of the platform, its parent, before the fork
    _fork_into_namespace()
    gc.disable()  # while the platform's part imports; on again, frozen, before workflow code runs
    import numpy  # noqa: F401 - what workflow code imports, loaded before the job is known
    from qiskit import QuantumCircuit, qpy  # noqa: F401

    from qsolve.sandbox import confine, guard
    from qsolve.sandbox.calls import ModuleCode, raised
    from qsolve.workflow.context import ClassicalContext
    from qsolve.workflow.method import MethodResult  # noqa: F401
    from qsolve.workflow.module_loader import load_module

    channel = Channel()
    first = channel.request()
    if first is None:
        return
    job = confine.Job.model_validate(first)
    protections = confine.confine(job, own_mounts)
    channel.emit({"event": "confined", **protections.model_dump(mode="json")})
    if job.require and not protections.confined:
        return  # no workflow code without the full boundary: the platform says why
    gc.freeze()
    gc.enable()
    sys.dont_write_bytecode = True
    os.chdir(job.scratch)
    guard.install(write_roots=job.write, block_network=True)  # clear errors early; not the boundary
    start = time.perf_counter()
    try:
        module = load_module(Path(job.root) / job.module)
    except (Exception, SystemExit) as e:
        seconds = time.perf_counter() - start
        channel.emit({"event": "loaded", "error": raised(e, job.root)[:4000], "seconds": seconds})
        while channel.request() is not None:  # no exit before the platform is done: it reads this
            pass  # process's /proc from outside, and an ended one would leave it the root parent's
        return
    channel.emit({"event": "loaded", "error": None, "seconds": time.perf_counter() - start})
    code = ModuleCode(module, root=job.root)
    sampling = _context_classes(channel)
    while (req := channel.request()) is not None:
        op = req.get("op")
        if op == "call":
            kind = req["kind"]
            ctx = sampling(req["seed"]) if kind == "quantum" else ClassicalContext(req["seed"])
            ret = code.call(req["function"], kind, req["input"], req["params"], ctx)
            channel.emit({"event": "returned", **ret.model_dump(mode="json")})
        elif op == "evaluate":
            channel.emit({"event": "answer", **code.evaluate(req["input"], req["solution"]).model_dump()})
        elif op == "estimate":
            channel.emit({"event": "answer", **code.estimate(req["input"], req["params"]).model_dump()})
        else:
            return


if __name__ == "__main__":
    main()
