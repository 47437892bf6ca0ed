"""The run's targets: sim-cpu and fake devices with scaled noise."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from qiskit import QuantumCircuit

from qsolve.judging.quantum_context import QuantumContext
from qsolve.judging.results import quality
from qsolve.targets import TargetUnavailable, UnknownTarget, check_target, open_target
from tests.conftest import ghz

RUN = """
import json, sys
from qiskit import QuantumCircuit
from qsolve.judging.quantum_context import QuantumContext
from qsolve.targets import open_target
qc = QuantumCircuit(4); qc.h(0); [qc.cx(i, i + 1) for i in range(3)]; qc.measure_all()
ctx = QuantumContext(7, open_target(sys.argv[1]))
print(json.dumps([ctx.sample([qc], 500), ctx.sample([qc, qc], 300)]))
"""


@pytest.mark.parametrize("target", ["sim-cpu", "fake:fez@1.6"])
def test_runs_are_bit_reproducible_across_processes(target: str) -> None:
    outs = [
        subprocess.run([sys.executable, "-c", RUN, target], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert outs[0] == outs[1]
    first, second = json.loads(outs[0])
    assert first[0] != second[0]  # each dispatch has its own simulator seed


def test_noise_grows_with_the_scale() -> None:
    fidelities = []
    for target in ("sim-cpu", "fake:fez", "fake:fez@3", "fake:fez@10"):
        ctx = QuantumContext(1, open_target(target))
        ctx.sample([ghz(5)], 4000)
        fidelities.append(quality(ctx.records, None).fidelity)
    assert fidelities == sorted(fidelities, reverse=True)
    assert fidelities[0] > 0.99 and fidelities[-1] < 0.9


def test_fake_device_records_two_qubit_gates_after_transpiling() -> None:
    ctx = QuantumContext(1, open_target("fake:fez"))
    qc = QuantumCircuit(3)
    qc.h(0)
    qc.swap(0, 2)  # three CZs (and more with routing) on a heavy-hex device
    qc.measure_all()
    ctx.sample([qc], 100)
    assert ctx.records[0].two_qubit_gates >= 3


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        ("fake:nowhere", UnknownTarget, "fake:nowhere: no such fake device"),
        ("fake:fez@0.5", UnknownTarget, "fake:fez@0.5: the scale must be from 1 to 10"),
        ("fake:fez@11", UnknownTarget, "the scale must be from 1 to 10"),
        ("fake:fez@abc", UnknownTarget, "the scale 'abc' is not a number"),
        ("cpu", UnknownTarget, "unknown target 'cpu'"),
        ("ibm:ibm_fez", TargetUnavailable, "validation has no network and no device access"),
        ("provider:mine", TargetUnavailable, "validation has no network and no device access"),
    ],
)
def test_refused_targets(target: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
        open_target(target)


def test_check_target_accepts_every_kind() -> None:
    for spec in ("sim-cpu", "fake:fez", "fake:fez@1.6", "fake:fez@10", "ibm:ibm_fez", "provider:lab-1"):
        check_target(spec)


@pytest.mark.parametrize("spec", ["fake:fez@0.5", "fake:fez@11", "fake:fez@abc", "fake:fez@nan", "gpu"])
def test_check_target_refuses_what_it_can_without_opening_anything(spec: str) -> None:
    with pytest.raises(UnknownTarget, match="the scale|unknown target"):
        check_target(spec)


def test_sample_refuses_bad_arguments() -> None:
    ctx = QuantumContext(1, open_target("sim-cpu"))
    with pytest.raises(ValueError, match="shots must be an integer from 1 to 100,000"):
        ctx.sample([ghz(2)], 100_001)
    bare = QuantumCircuit(1)
    bare.h(0)
    with pytest.raises(ValueError, match="has no measurement"):
        ctx.sample([bare], 10)
    with pytest.raises(TypeError):
        ctx.sample(["not a circuit"], 10)
    assert ctx.dispatches == 0 and ctx.records == []


def test_a_circuit_changed_after_it_was_sent_is_scored_as_sent() -> None:
    ctx = QuantumContext(1, open_target("sim-cpu"))
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 200)
    qc.h(0)  # the method reuses its circuit object
    assert ctx.records[0].fidelity == pytest.approx(1.0)


def test_every_exported_name_is_there() -> None:
    import qsolve.targets as targets

    assert all(hasattr(targets, name) for name in targets.__all__)
