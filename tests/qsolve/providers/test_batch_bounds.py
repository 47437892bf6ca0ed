"""One batch of ``ctx.sample`` is bounded in the outcomes it may bring back (issue 35): the platform holds a
batch's counts whole outside every job's budget (40 circuits of 100,000 shots through a provider took its
process from 152 to 869 MB), so a batch whose circuits' ``min(shots, 2**measured bits)`` sum past
:data:`~qsolve.workflow.context.MAX_BATCH_OUTCOMES` is refused in one line, before anything is compiled,
estimated or sent, on a provider's target and a simulator's alike."""

from __future__ import annotations

import pytest
from qiskit import QuantumCircuit

from qsolve.judging.quantum_context import QuantumContext
from qsolve.providers.client import ProviderClient
from qsolve.providers.reference import ReferenceOptions
from qsolve.targets import open_target
from qsolve.targets.provider import ProviderBackend
from qsolve.workflow.context import MAX_BATCH_OUTCOMES, ClassicalContext, measured_bits
from tests.qsolve.providers.test_misbehaving import home, servers, sessions  # noqa: F401 - fixtures

SHOTS = 100_000


def wide(qubits: int, measured: int | None = None) -> QuantumCircuit:
    circuit = QuantumCircuit(qubits, qubits)
    circuit.h(range(qubits))
    circuit.measure(range(measured or qubits), range(measured or qubits))
    return circuit


def test_a_batch_past_the_bound_sends_a_provider_nothing(servers, sessions):  # noqa: F811
    server = servers(lambda message, answer, headers: (200, answer), ReferenceOptions(qubits=20))
    session = sessions("ref", ProviderClient.over_http("ref", server.url), "http", yes=True)
    ctx = QuantumContext(7, ProviderBackend(session))
    batch = [wide(20)] * 40  # the attack: 40 circuits of 100,000 shots, each of up to 100,000 outcomes
    with pytest.raises(ValueError) as caught:
        ctx.sample(batch, SHOTS)
    said = str(caught.value)
    assert len(said.splitlines()) == 1, said
    assert "40 circuits at 100,000 shots" in said and f"{MAX_BATCH_OUTCOMES:,}" in said, said
    assert server.ops == ["describe"]  # the backend's own describe: nothing estimated, nothing submitted
    assert session.records == [] and ctx.records == []


def test_a_batch_past_the_bound_is_not_simulated():
    ctx = QuantumContext(7, open_target("sim-cpu"))
    with pytest.raises(ValueError, match=f"3 circuits at 100,000 shots .* {MAX_BATCH_OUTCOMES:,}"):
        ctx.sample([wide(20)] * 3, SHOTS)
    assert ctx.dispatches == 0 and ctx.records == []


def test_the_bound_counts_each_circuits_outcomes_not_its_shots():
    per = 2**16  # 16 measured bits: at most 65,536 outcomes however many shots
    assert len(ClassicalContext.batch([wide(16)] * (MAX_BATCH_OUTCOMES // per), SHOTS)) == 4
    with pytest.raises(ValueError, match="past the bound"):
        ClassicalContext.batch([wide(16)] * (MAX_BATCH_OUTCOMES // per + 1), SHOTS)
    # bits declared but not measured bring back nothing: 1,000 circuits of 2 measured bits of 100 are
    # 4,000 outcomes
    assert measured_bits(wide(100, measured=2)) == 2
    assert len(ClassicalContext.batch([wide(100, measured=2)] * 1000, SHOTS)) == 1000


PAST_ITS_OWN_CHECK = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult
from qsolve.workflow.context import Context


def evaluate(input, solution):
    return -1.0


def reference(input, params, ctx):
    return MethodResult(-1.0)


def quantum(input, params, ctx):
    Context.batch = staticmethod(lambda circuits, shots: list(circuits))  # its own process's check, gone
    qc = QuantumCircuit(20)
    qc.h(range(20))
    qc.measure_all()
    ctx.sample([qc] * 40, 100_000)
    return MethodResult(-1.0)
"""


def test_a_workflow_past_its_own_check_is_refused_by_the_platforms(wf):
    # the workflow's process is the attacker's: its check is a courtesy, the platform's is the bound
    from qsolve.validation.jobs import Limits, run_job
    from qsolve.workflow.manifest import Resources

    wf.write("workflow.py", PAST_ITS_OWN_CHECK)
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()
    outcome = run_job(wf.root, "sim-cpu", None, Resources(), limits=Limits(timeout_s=120, memory_mb=512))
    text = repr(outcome.report) + repr(outcome.died)
    assert "SampleRefused" in text and "40 circuits at 100,000 shots" in text, text[:2000]
    assert f"past the bound of {MAX_BATCH_OUTCOMES:,}" in text, text[:2000]


def test_bits_a_gate_of_its_own_measures_are_counted():
    inner = QuantumCircuit(20, 20)
    inner.measure(range(20), range(20))
    outer = QuantumCircuit(20, 20)
    outer.h(range(20))
    outer.append(inner.to_instruction(), range(20), range(20))
    outer.measure(0, 0)
    assert measured_bits(outer) == 20
    with pytest.raises(ValueError, match="past the bound"):
        ClassicalContext.batch([outer] * 3, SHOTS)
