"""Issue 35, item 4 attacked (second round): one job, one memory budget, and the host's budget of
concurrent jobs' memory (qsolve/runtime/admission.py, the up-front refusal in qsolve/sandbox/remote.py).

Each test was a finding that failed (a strict xfail) and passes since it was mended. What held has no
test here (see the attack's report)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from qsolve.runtime import admission
from qsolve.validation.jobs import Limits, run_job
from qsolve.workflow.manifest import Resources
from tests.conftest import WorkflowDir

#: an admission in a process of its own, whose platform stop is set after a second: it must end, either
#: admitted or stopped, within seconds (the test waits far longer than that)
ADMIT = """\
import sys, threading
from pathlib import Path
from qsolve.errors import PlatformStopped
from qsolve.runtime.admission import admitted
from qsolve.runtime.stopping import stopping
with stopping() as stop:
    threading.Timer(1.0, stop.set, ["the test stopped it"]).start()
    try:
        with admitted(Path(sys.argv[1]), 64, "the job", lambda line: print("said:", line), budget=1024):
            print("admitted", flush=True)
    except PlatformStopped as e:
        print("stopped:", e, flush=True)
"""
WAIT_S = 10


def admit(folder: Path) -> subprocess.CompletedProcess | None:
    """The admission's process, or ``None`` when it did not end within :data:`WAIT_S` (then killed)."""
    try:
        return subprocess.run(
            [sys.executable, "-c", ADMIT, str(folder)], capture_output=True, text=True, timeout=WAIT_S
        )
    except subprocess.TimeoutExpired:
        return None


def test_a_fifo_left_in_the_claims_folder_does_not_hang_admission(tmp_path) -> None:
    # the claims folder is QSOLVE_HOME/run/jobs-memory-HOST/: anything in it named *.claim is opened
    # (O_RDONLY, no O_NONBLOCK) to test its lock. A FIFO left there blocks that open forever, with the
    # folder's lock held: every job of the host then waits, saying nothing, and no stop ends the wait
    folder = tmp_path / "claims"
    folder.mkdir()
    os.mkfifo(folder / "64-1-forged.claim")
    done = admit(folder)
    assert done is not None, f"the admission did not end in {WAIT_S} s (the FIFO's open blocks)"
    assert "admitted" in done.stdout or "stopped:" in done.stdout


def test_a_folder_lock_inherited_by_a_forked_process_does_not_block_every_admission(tmp_path) -> None:
    # the history stage runs three cases in threads of one process, and each forks its platform worker
    # (os.fork, no exec: O_CLOEXEC does nothing) when its first batch comes. A fork while another thread
    # holds the folder's `lock` (admission's few system calls) gives the worker that open file, and with
    # it the flock: closing it in the admitting thread no longer releases it. Every later admission of
    # the host then blocks in a blocking flock for as long as that worker lives (the job's whole time,
    # up to 7200 s), saying nothing, deaf to a stop. Here the fork is made at that moment on purpose.
    folder = tmp_path / "claims"
    folder.mkdir()
    with admission._locked(folder):
        child = os.fork()
        if child == 0:  # pragma: no cover - the "worker": it lives on, as a worker does for its job
            try:
                time.sleep(WAIT_S + 30)  # no exec: it keeps the inherited descriptor, as a worker does
            finally:
                os._exit(0)
    try:
        done = admit(folder)
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
    assert done is not None, (
        f"the admission did not end in {WAIT_S} s, nor said it waited, nor heard the stop"
    )
    assert "admitted" in done.stdout or ("said:" in done.stdout and "stopped:" in done.stdout)


@pytest.mark.parametrize("raw", ["\u00b2", "9" * 5000])
def test_a_bad_budget_setting_is_refused_as_one(raw: str, monkeypatch) -> None:
    # "²".isdigit() is True but int("²") raises; so does int() of more than 4300 digits. Both escape as a
    # bare ValueError, which the callers (jobs._run, tasks/runs.py) do not catch: a traceback, not the
    # one line naming the variable that docs/validation.md promises
    monkeypatch.setenv(admission.VARIABLE, raw)
    with pytest.raises(admission.BudgetSettingInvalid, match=admission.VARIABLE):
        admission.budget_mb()


GHZ = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return -1.0


def reference(input, params, ctx):
    return MethodResult(-1.0)


def quantum(input, params, ctx):
    qc = QuantumCircuit(40)
    qc.h(0)
    for i in range(39):
        qc.cx(i, i + 1)
    qc.measure_all()
    counts = ctx.sample([qc], 100)[0]
    assert set(counts) <= {"0" * 40, "1" * 40}, counts
    return MethodResult(-1.0)
"""


def test_a_wide_clifford_circuit_aer_simulates_by_stabilizer_is_not_refused(wf: WorkflowDir) -> None:
    # sim-cpu's AerSimulator (automatic method) runs a 40-qubit GHZ circuit with the stabilizer method,
    # in kilobytes (it did before item 4, and does in the platform's process today). The up-front check
    # counts every circuit as a state vector ("counted by the method Aer will use", docs/validation.md)
    # and fails the case: "its state vector needs 16384 GiB, more than the job's memory budget"
    wf.write("workflow.py", GHZ)
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    outcome = run_job(wf.root, "sim-cpu", None, Resources(), limits=Limits(timeout_s=120, memory_mb=256))
    text = repr(outcome.report) + repr(outcome.died)
    assert "qubits wide" not in text, text
    assert outcome.died is None, outcome.died


LOOPING = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return -1.0


def reference(input, params, ctx):
    return MethodResult(-1.0)


def quantum(input, params, ctx):
    qc = QuantumCircuit(12)
    qc.h(range(12))
    qc.measure_all()
    for _ in range(100_000):  # batch after batch, until the platform's worker is gone
        ctx.sample([qc], 100)
    return MethodResult(-1.0)
"""


def _workers(stop: threading.Event, killed: list[int]) -> None:
    """Kill, as the machine's out-of-memory killer would, each child of this process whose
    ``oom_score_adj`` is 1000 and that is in a job's memory cgroup (a job's platform worker: the first
    the kernel takes when the host, not the job, runs out of memory)."""
    me = os.getpid()
    while not stop.is_set():
        for task in Path(f"/proc/{me}/task").iterdir():
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for pid in children:
                try:
                    score = Path(f"/proc/{pid}/oom_score_adj").read_text().strip()
                    cgroup = Path(f"/proc/{pid}/cgroup").read_text()
                except OSError:
                    continue
                # a job's worker: in its job's memory cgroup (a schema check's worker is not)
                if score == "1000" and "qsolve-sandbox-" in cgroup and int(pid) not in killed:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
        stop.wait(0.05)


def test_a_worker_killed_by_the_hosts_out_of_memory_killer_is_not_the_workflows_crash(
    wf: WorkflowDir, tmp_path, monkeypatch
) -> None:
    # the worker's oom_score_adj of 1000 makes it the machine's first victim whenever the host runs short,
    # whatever its job holds: then its cgroup was under its limit, and the case's failure is the host's.
    # tasks/runs.py files it as the workflow's crash: a FAILED run, reason `crash`, recorded (a
    # track-record row against the workflow), the detail "...(its memory bound is N MB)"
    from qsolve.workflow.cases import Case
    from qsolve_pipeline.storage.state import SYSTEM_ACCOUNT, RunStatus, Source, connect
    from qsolve_pipeline.tasks.runs import run_case
    from tests.storage.state.conftest import default_settings

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("QSOLVE_ACCEPT_UNCONFINED_CODE", "1")  # wherever the boundary is not whole
    wf.write("workflow.py", LOOPING)
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_workers, args=(stop, killed))
    killer.start()
    try:
        with connect(f"sqlite:///{tmp_path / 'state.db'}", home=tmp_path, settings=default_settings()) as db:
            version = db.publish_version("tiny", "1.0.0", "d1" * 32, [])[0]
            case = Case.model_validate(wf.cases["cases"][0])
            outcome = run_case(
                db, wf.root, version, 0, case, Source.HISTORY, SYSTEM_ACCOUNT,
                Resources(timeout_s=300, memory_mb=256),
            )  # fmt: skip
            run = db.get_run(outcome.run_id) if outcome.run_id else None
    finally:
        stop.set()
        killer.join()
    assert killed, "no platform worker was seen"
    assert "worker was killed by SIGKILL" in repr(outcome), outcome
    assert not outcome.recorded, outcome  # the host's failure: no row of the workflow's track record
    assert run is None or run.status is not RunStatus.FAILED or str(run.reason) != "crash", run


def _schema_workers(stop: threading.Event, killed: list[int]) -> None:
    """Kill each child of this process whose ``oom_score_adj`` is 1000 (a platform worker, here the one
    that checks a workflow's schemas), as the machine's out-of-memory killer would take it first."""
    me = os.getpid()
    while not stop.is_set():
        for task in Path(f"/proc/{me}/task").iterdir():
            with contextlib.suppress(OSError):
                for pid in (task / "children").read_text().split():
                    with contextlib.suppress(OSError):
                        if Path(f"/proc/{pid}/oom_score_adj").read_text().strip() == "1000":
                            os.kill(int(pid), signal.SIGKILL)
                            killed.append(int(pid))
        stop.wait(0.01)


def test_a_schema_worker_killed_by_the_hosts_out_of_memory_killer_is_not_the_workflows_error(
    wf: WorkflowDir,
) -> None:
    # item 4 gave every platform worker oom_score_adj 1000, the schema checks' too: when the host runs
    # short they go first, and their death is then reported as the workflow's own mistake, E061 "not a
    # valid JSON Schema" (a submission's checks fail; a history case's load raises it as an exception)
    from qsolve.errors import WorkflowInvalid
    from qsolve.workflow.folder import load_workflow

    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_schema_workers, args=(stop, killed))
    killer.start()
    try:
        for _ in range(20):
            try:
                load_workflow(wf.root)
            except WorkflowInvalid as e:
                error = str(e)
                break
        else:
            error = ""
    finally:
        stop.set()
        killer.join()
    assert killed, "no platform worker was seen"
    assert "not a valid JSON Schema" not in error, error
