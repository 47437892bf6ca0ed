"""Issue 35, item 4: one job, one memory budget. A 28-qubit circuit sent through ``ctx.sample`` (a few
hundred bytes) made the platform's worker hold 4.29 GB for the job's whole time, outside the workflow
process's cgroup. Now a batch whose widest circuit's state vector cannot fit the job's memory budget is
refused before anything is built: the case fails at once, naming the circuit's width and the budget."""

from __future__ import annotations

import os
import time

import pytest

from qsolve.sandbox.circuits import simulation_bytes
from qsolve.validation.jobs import Limits, run_job
from qsolve.workflow.manifest import Resources
from tests.conftest import WorkflowDir

MODULE = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult


def evaluate(input, solution):
    return -1.0


def reference(input, params, ctx):
    return MethodResult(-1.0)


def quantum(input, params, ctx):
    qc = QuantumCircuit({width})
    qc.h(range({width}))
    qc.t(range({width}))  # not Clifford: Aer takes a state vector (a Clifford circuit, its stabilizer method)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0)
"""


def run(wf: WorkflowDir, width: int, memory_mb: int, *, target: str = "sim-cpu", shots: int = 10):
    module = MODULE.format(width=width).replace("ctx.sample([qc], 10)", f"ctx.sample([qc], {shots})")
    wf.write("workflow.py", module)
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    return run_job(wf.root, target, None, Resources(), limits=Limits(timeout_s=120, memory_mb=memory_mb))


def test_a_circuit_whose_state_vector_cannot_fit_the_budget_fails_the_case_at_once(wf: WorkflowDir) -> None:
    began = time.monotonic()
    outcome = run(wf, 28, 2048)
    took = time.monotonic() - began
    text = repr(outcome.report) + repr(outcome.died)
    assert "circuit 0 of a batch is 28 qubits wide: its state vector needs 4 GiB" in text
    assert "more than the job's memory budget of 2048 MB" in text
    assert took < 60  # at once: nothing simulated (it ran 300 s, holding 4.29 GB, before)


def test_a_circuit_that_fits_is_simulated(wf: WorkflowDir) -> None:
    outcome = run(wf, 3, 256)
    assert outcome.died is None, outcome.died
    assert "qubits wide" not in repr(outcome.report)


def test_a_noisy_target_counts_the_density_matrix_aer_would_take() -> None:
    # under noise, with more shots than 2**n, Aer's automatic method takes a density matrix: 16 × 4**n bytes
    assert simulation_bytes(13, 10_000, noisy=True, cap_mb=4096) == (16 << 26, "density matrix")
    assert simulation_bytes(13, 8_192, noisy=True, cap_mb=4096) == (16 << 13, "state vector")  # not > 2**n
    assert simulation_bytes(13, 10_000, noisy=False, cap_mb=4096) == (16 << 13, "state vector")  # ideal
    assert simulation_bytes(15, 100_000, noisy=True, cap_mb=4096) == (16 << 15, "state vector")  # 16 GiB


def test_a_noisy_circuit_whose_density_matrix_cannot_fit_fails_the_case_at_once(wf: WorkflowDir) -> None:
    # its state vector is 128 KiB; the density matrix Aer takes under noise, with 10,000 shots, 1 GiB
    outcome = run(wf, 13, 512, target="fake:fez@1", shots=10_000)
    text = repr(outcome.report) + repr(outcome.died)
    assert "circuit 0 of a batch is 13 qubits wide: its density matrix needs 1 GiB" in text
    assert "more than the job's memory budget of 512 MB" in text


def test_the_worker_runs_the_batch_in_the_workflow_process_cgroup(wf: WorkflowDir, monkeypatch) -> None:
    # the one budget, end to end (its bound itself: tests/qsolve/runtime/test_cgroups.py): the worker
    # that simulates the job's batch is moved into the memory cgroup of the workflow process that sent it
    # (its leaf there, beside the process's own), whose limit is the job's budget
    from qsolve.runtime import cgroups

    seen: list[tuple[list[str], list[str], int]] = []
    take = cgroups.Cgroup.take

    def taking(self: cgroups.Cgroup, pid: int) -> bool:
        moved = take(self, pid)
        if moved:
            procs = {leaf: (path / "cgroup.procs").read_text().split() for leaf, path in self.leaves.items()}
            name = "memory.max" if self.v2["memory"] else "memory.limit_in_bytes"
            limit = int((self.paths["memory"] / name).read_text()) >> 20
            seen.append((procs[cgroups.WORKER], procs[cgroups.WORKFLOW], limit))
            assert procs[cgroups.WORKER] == [str(pid)]
        return moved

    monkeypatch.setattr(cgroups.Cgroup, "take", taking)
    outcome = run(wf, 3, 256)
    assert outcome.died is None, outcome.died
    if cgroups._own("memory") is None or os.geteuid() != 0:
        pytest.skip("no memory cgroup here")
    assert seen  # a worker, and the workflow process beside it, within the job's budget
    budget = 256 + cgroups.JOB_OVERHEAD_MB
    assert all(worker and workflow and limit == budget for worker, workflow, limit in seen)


def test_a_clifford_circuit_is_counted_by_the_stabilizer_method_aer_takes() -> None:
    # Aer's automatic method runs a circuit of stabilizer instructions only by its stabilizer method: a
    # 40-qubit GHZ state is a tableau of kilobytes; one T gate more, and it is a 16 TiB state vector
    from qiskit import QuantumCircuit

    from qsolve.sandbox.circuits import encode
    from qsolve.sandbox.remote import _counted

    ghz = QuantumCircuit(40)
    ghz.h(0)
    for i in range(39):
        ghz.cx(i, i + 1)
    ghz.measure_all()
    index, qubits, need, method = _counted(encode([ghz]), 100)
    assert (index, qubits, method) == (0, 40, "stabilizer tableau") and need < 2**20
    t = ghz.copy_empty_like()
    t.compose(ghz, inplace=True)
    t.t(0)
    assert _counted(encode([ghz, t]), 100) == (1, 40, 16 << 40, "state vector")
