"""The sandbox: whatever a workflow's method does, it is contained and reported, and the platform goes on.
(test_hostile.py tries what an attacker would; test_confinement.py the kernel's parts.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qsolve.sandbox import JobProcess
from qsolve.validation.jobs import Limits, run_job
from qsolve.workflow.manifest import Resources
from tests.conftest import WorkflowDir

MODULE = """\
import os, socket, sys
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return -1.0


def reference(input, params, ctx):
    return MethodResult(-1.0)


def quantum(input, params, ctx):
{body}
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0)
"""

FAST = Limits(timeout_s=60, memory_mb=2048)


def job(wf: WorkflowDir, body: str, limits: Limits = FAST):
    wf.write("workflow.py", MODULE.format(body=body))
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    return run_job(wf.root, "sim-cpu", None, Resources(), limits=limits)


def only_case(outcome) -> dict:
    assert outcome.died is None, (outcome.died, outcome.log_tail)
    (case,) = outcome.report["cases"]
    return case


def quantum_failure(outcome) -> str:
    case = only_case(outcome)
    return case["methods"][0]["unavailable"]


def test_a_plain_job_reports_json(wf: WorkflowDir) -> None:
    outcome = job(wf, "    pass")
    assert only_case(outcome)["passed"]
    assert [g["name"] for g in outcome.report["gates"]][-2:] == ["reproducible", "estimate_honest"]
    assert outcome.network in ("namespace", "none (Landlock, seccomp)")
    if os.geteuid() == 0:  # this machine gives the whole boundary to root
        assert outcome.protections.confined, outcome.protections.missing
        assert outcome.protections.uid == 65534 and outcome.protections.seccomp
        assert set(outcome.protections.namespaces) == {"net", "pid", "ipc", "mnt"}


def test_no_network(wf: WorkflowDir) -> None:
    outcome = job(wf, "    socket.create_connection(('127.0.0.1', 5432), timeout=2)")
    assert quantum_failure(outcome) == (
        "failed: SandboxRefused: sandbox: no network (socket.getaddrinfo) (workflow.py:15)"
    )


def test_no_writes_outside_the_workflow_folder(wf: WorkflowDir, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    outcome = job(wf, f"    open({str(target)!r}, 'w').write('x')")
    assert quantum_failure(outcome).startswith(
        "failed: SandboxRefused: sandbox: writing outside the workflow folder"
    )
    assert not target.exists()


def test_writes_go_to_the_scratch_folder_and_the_copy_is_read_only(wf: WorkflowDir) -> None:
    outcome = job(wf, "    open('scratch.txt', 'w').write('x')\n    open(os.environ['TMPDIR'] + '/t', 'w')")
    assert only_case(outcome)["passed"]
    assert not wf.path("scratch.txt").exists()
    into_copy = "    open(os.path.join(os.path.dirname(__file__), 'x.txt'), 'w')"
    assert quantum_failure(job(wf, into_copy)).startswith("failed: SandboxRefused: sandbox: writing outside")


def test_memory_is_capped(wf: WorkflowDir) -> None:
    outcome = job(wf, "    bytearray(3 * 2**30)", Limits(timeout_s=60, memory_mb=1024))
    assert quantum_failure(outcome) == "failed: MemoryError: (workflow.py:15)"


def test_a_job_that_loops_forever_is_killed_at_its_time_limit(wf: WorkflowDir) -> None:
    outcome = job(wf, "    while True:\n        pass", Limits(timeout_s=4, memory_mb=2048))
    assert outcome.died.startswith("the sandbox job was stopped at its time limit of 4 s in case one")
    assert outcome.report["cases"] == [] and outcome.seconds < 15


def test_forking_is_refused(wf: WorkflowDir) -> None:
    outcome = job(wf, "    while True:\n        os.fork()")
    assert quantum_failure(outcome) == (
        "failed: SandboxRefused: sandbox: os.fork is not allowed (workflow.py:16)"
    )


def test_garbage_on_standard_output_does_no_harm(wf: WorkflowDir) -> None:
    outcome = job(
        wf, '    print(\'{"event": "report", "gates": []}\')\n    sys.stdout.write(\'\\x00\\xff\' * 1000)'
    )
    assert only_case(outcome)["passed"]
    assert len(outcome.report["gates"]) == 8


def test_a_crash_in_native_code_fails_its_case_with_its_signal(wf: WorkflowDir) -> None:
    outcome = job(wf, "    import ctypes\n    ctypes.string_at(0)")
    case = only_case(outcome)
    assert case["message"] == (
        "FAIL the workflow process was killed by SIGSEGV (a crash in native code) in case one, "
        "in method quantum"
    )
    assert not case["ran"]


def test_secrets_do_not_reach_the_job(wf: WorkflowDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QISKIT_IBM_TOKEN", "secret-token")
    monkeypatch.setenv("QSOLVE_DATABASE_URL", "postgresql://user:pw@host/db")
    outcome = job(
        wf, "    assert not any('secret' in v or 'pw@' in v for v in os.environ.values()), sorted(os.environ)"
    )
    assert only_case(outcome)["passed"]


def test_limits_follow_the_seed() -> None:
    assert Limits.of(Resources(timeout_s=10, memory_mb=100)) == Limits(timeout_s=300, memory_mb=100)
    assert Limits.of(Resources(timeout_s=7200, memory_mb=8192)) == Limits(timeout_s=7200, memory_mb=8192)


def test_the_child_has_namespaces_of_its_own_when_it_says_so() -> None:
    process = JobProcess()
    try:
        own = os.readlink("/proc/self/ns/net")
        its = os.readlink(f"/proc/{process.proc.pid}/ns/net")
        assert (its != own) == process.namespaces()["net"]
        if os.geteuid() == 0:  # root may always unshare: the namespaces are what the machine gives here
            # (its PID namespace shows once its first child exists: test_a_plain_job_reports_json)
            assert {k for k, own in process.namespaces().items() if own} >= {"net", "ipc", "mnt"}
    finally:
        process.close()


def test_a_case_job_waits_for_approval_of_its_estimate(wf: WorkflowDir) -> None:
    from qsolve.validation.jobs import run_case_job

    wf.write(
        "workflow.py",
        MODULE.format(body="    pass")
        + "\n\ndef estimate(input, params):\n    return {'circuits': 1, 'shots': 10}\n",
    )
    wf.save()
    seen = []

    def approve(event):
        seen.append(event["estimate"])
        return True

    outcome = run_case_job(wf.root, 0, "sim-cpu", FAST, approve)
    assert seen == [{"circuits": 1, "shots": 10}]
    assert outcome.report["result"]["passed"] and outcome.report["result"]["shots"] == 10
    refused = run_case_job(wf.root, 0, "sim-cpu", FAST, lambda event: False)
    assert refused.report is None and refused.died is not None


def test_a_process_started_ahead_runs_the_job_under_the_jobs_memory_cap(wf: WorkflowDir) -> None:
    from qsolve.sandbox.process import JobProcess

    wf.write("workflow.py", MODULE.format(body="    bytearray(1500 * 2**20)"))
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    early = JobProcess()  # started before the cap is known
    outcome = run_job(
        wf.root, "sim-cpu", None, Resources(), limits=Limits(timeout_s=60, memory_mb=1024), process=early
    )
    assert early.memory_mb == 1024
    assert quantum_failure(outcome) == "failed: MemoryError: (workflow.py:15)"


AS_AN_OLD_KERNEL = """
import errno, json, sys
from pathlib import Path
from qsolve.sandbox import seccomp

lib = seccomp._library()  # a kernel without Landlock: its three system calls answer ENOSYS
ctx = lib.seccomp_init(seccomp.SCMP_ACT_ALLOW)
for name in ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"):
    number = lib.seccomp_syscall_resolve_name(name.encode())
    assert lib.seccomp_rule_add_array(ctx, seccomp._fail_with(errno.ENOSYS), number, 0, None) == 0
assert lib.seccomp_load(ctx) == 0

from qsolve.validation.checks import check_submission
from qsolve.validation.pipeline import run_gates

root = Path(sys.argv[1])
out = {}
for required in (False, True):
    report = run_gates(root, check_submission(root), require_confinement=required)
    out[str(required)] = {
        "confined": report.sandbox.confined if report.sandbox else None,
        "missing": report.sandbox.protections.missing if report.sandbox else None,
        "gates": {g.name: [g.passed, g.message] for g in report.gates},
        "ran": [c.name for c in report.cases],
    }
print(json.dumps(out))
"""


def test_without_the_full_boundary_qsolve_test_says_so_and_the_platform_refuses(
    wf: WorkflowDir, tmp_path: Path
) -> None:
    import json
    import subprocess
    import sys

    wf.write("workflow.py", MODULE.format(body="    pass"))
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    env = {**os.environ, "QSOLVE_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-c", AS_AN_OLD_KERNEL, str(wf.root)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    developer, platform = out["False"], out["True"]
    assert developer["confined"] is False and any("Landlock" in m for m in developer["missing"])
    assert developer["ran"] == ["one"]  # a developer's own workflow still runs, said to be unconfined
    passed, message = platform["gates"]["cases_pass"]
    assert not passed
    assert message.startswith("the sandbox is not a full boundary on this machine (no Landlock")
    assert "QSOLVE_ACCEPT_UNCONFINED_CODE=1" in message and platform["ran"] == []


def test_the_jobs_process_dies_with_the_process_the_platform_started(wf: WorkflowDir) -> None:
    import signal
    import time

    from qsolve.sandbox.remote import RemoteCode
    from qsolve.validation.jobs import copy_workflow

    process = JobProcess()
    try:
        copy_workflow(wf.root, process.workflow)
        RemoteCode(process).begin("workflow.py", 1024).ready()
        inner = process.inner
        assert inner and inner != process.proc.pid  # the first process of its own PID namespace
        os.kill(process.proc.pid, signal.SIGKILL)  # as if the platform's own child were killed
        process.proc.wait()
        deadline = time.monotonic() + 5
        while Path(f"/proc/{inner}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{inner}").exists()
    finally:
        process.close()


def test_a_workflow_may_simulate_with_aer_itself(wf: WorkflowDir) -> None:
    body = (
        "    from qiskit_aer import AerSimulator\n"
        "    mine = QuantumCircuit(2)\n    mine.h(0)\n    mine.cx(0, 1)\n    mine.measure_all()\n"
        "    assert set(AerSimulator().run(mine, shots=50).result().get_counts()) <= {'00', '11'}"
    )
    assert only_case(job(wf, body))["passed"]


def test_an_evaluate_that_gives_nan_leaves_no_headline_metric(wf: WorkflowDir) -> None:
    wf.write(
        "workflow.py",
        MODULE.format(body="    pass").replace("return -1.0\n", "return float('nan')\n", 1)
        + "\n\ndef fixed(input, params, ctx):\n    return MethodResult(-1.0, solution={'x': 1})\n",
    )
    wf.manifest["methods"].append({"name": "fixed", "kind": "classical"})
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    outcome = run_job(wf.root, "sim-cpu", None, Resources(), limits=FAST)
    (case,) = outcome.report["cases"]
    fixed = next(m for m in case["methods"] if m["name"] == "fixed")
    assert fixed["objective"] is None and fixed["unavailable"] is None


def test_a_sigkill_is_put_down_to_memory_only_when_the_kernel_killed_for_memory() -> None:
    import signal

    from qsolve.sandbox.process import oom_kills, why_it_died

    now = oom_kills()
    assert now is not None  # /proc/vmstat counts the kernel's out-of-memory kills
    told = why_it_died(-signal.SIGKILL, 2048, now)
    assert told == (
        "the workflow process was killed by SIGKILL (by a signal from outside the sandbox, not for memory)"
    )
    told = why_it_died(-signal.SIGKILL, 2048, now - 1)  # one more kill than when it started
    assert "out of memory: the kernel's out-of-memory killer ended it; its limit is 2048 MB" in told


def test_a_process_killed_by_a_signal_with_no_name_is_said_to_be_by_its_number() -> None:
    """Finding (issue 22 tester), fixed: a workflow process that ended by a realtime signal
    (``os.kill(os.getpid(), 40)``, which kills it where it has no PID namespace of its own; confined,
    as pid 1 of its namespace it ignores the signal) made ``why_it_died`` raise ``ValueError: 40 is not
    a valid Signals`` in the platform, in place of the case's failure."""
    import signal

    from qsolve.sandbox.process import why_it_died

    assert why_it_died(-40, 2048) == "the workflow process was killed by signal 40"
    assert why_it_died(-signal.SIGSEGV, 2048).endswith("killed by SIGSEGV (a crash in native code)")
