"""Recording and scoring the circuits a method sends."""

from __future__ import annotations

import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.quantum_info import hellinger_fidelity as qiskit_hellinger

from qsolve.judging.results import CircuitRecord, quality
from qsolve.judging.scoring import (
    counts_fidelity,
    counts_vector,
    final_measurements,
    hellinger_fidelity,
    ideal_distributions,
    mid_circuit_measurement,
    nearest_probability,
    record,
    two_qubit_gates,
    unfold_readout,
    with_exact_distribution,
)
from tests.conftest import ghz


def test_nearest_probability_is_a_distribution_and_keeps_a_valid_one() -> None:
    p = np.array([0.5, 0.3, 0.2])
    assert np.allclose(nearest_probability(p), p)
    q = nearest_probability(np.array([0.6, 0.5, -0.1]))
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)
    assert np.allclose(q, [0.55, 0.45, 0.0])  # Smolin et al.: drop -0.1, spread it over the rest


def test_unfold_readout_inverts_each_bit_confusion() -> None:
    true = np.array([0.5, 0.0, 0.0, 0.5])  # |00> + |11>, index bit 0 = clbit 0
    a0 = np.array([[0.97, 0.05], [0.03, 0.95]])  # A[j, i] = P(read j | prepared i)
    a1 = np.array([[0.9, 0.2], [0.1, 0.8]])
    observed = np.kron(a1, a0) @ true  # clbit 1 is the high bit
    assert np.allclose(unfold_readout(observed, [a0, a1]), true)
    assert np.allclose(unfold_readout(observed, [None, None]), observed)


def test_fidelity_of_counts_equals_the_dense_computation() -> None:
    rng = np.random.default_rng(5)
    ideal = rng.dirichlet(np.ones(64))
    counts = {
        format(int(k), "06b"): int(n)
        for k, n in zip(*np.unique(rng.choice(64, 300, p=ideal), return_counts=True), strict=True)
    }
    dense = hellinger_fidelity(ideal, nearest_probability(counts_vector(counts, 6)))
    assert counts_fidelity(ideal, counts) == pytest.approx(dense, abs=1e-12)
    assert counts_fidelity(ideal, {"00 1": 3, "00 0": 1}) == pytest.approx(
        hellinger_fidelity(ideal[:2], np.array([0.25, 0.75]))
    )


def test_hellinger_matches_qiskit() -> None:
    p, q = np.array([0.5, 0.25, 0.25, 0.0]), np.array([0.4, 0.3, 0.2, 0.1])
    expected = qiskit_hellinger(
        {"00": 0.5, "01": 0.25, "10": 0.25}, {"00": 0.4, "01": 0.3, "10": 0.2, "11": 0.1}
    )
    assert hellinger_fidelity(p, q) == pytest.approx(expected)


def test_ideal_distribution_in_counts_bit_order() -> None:
    qc = QuantumCircuit(2, 2)
    qc.x(0)
    qc.measure(0, 1)  # qubit 0 lands on clbit 1: the outcome "10"
    qc.measure(1, 0)
    measured = final_measurements(qc)
    assert measured == [1, 0]
    (ideal,) = ideal_distributions([qc], [measured])
    assert np.allclose(ideal, counts_vector({"10": 5}, 2))


def test_an_ideal_simulator_saves_the_exact_distribution_in_the_run_that_samples() -> None:
    from qsolve.targets.sim_cpu import SimCpu

    sim = SimCpu()
    qc = QuantumCircuit(3, 3)
    qc.ry(0.7, 0)
    qc.cx(0, 1)
    qc.rx(1.1, 2)
    qc.barrier()
    qc.measure([0, 1, 2], [2, 0, 1])  # clbits not in qubit order
    (sent,) = sim.transpile([qc], seed=3)
    counts, (saved,) = sim.execute_saving([with_exact_distribution(sent)], 2000, seed=11)
    assert counts == sim.execute([sent], 2000, seed=11)  # saving the distribution draws nothing
    (ideal,) = ideal_distributions([qc], [final_measurements(qc)])
    assert np.allclose(saved, ideal, atol=1e-12)
    unscorable = QuantumCircuit(1, 1)
    unscorable.reset(0)
    unscorable.measure(0, 0)
    assert with_exact_distribution(unscorable) is unscorable
    assert sim.execute_saving([unscorable], 10, seed=1)[1] == [None]


def test_the_clbits_are_read_whatever_follows_their_measurement() -> None:
    qc = QuantumCircuit(2, 2)
    qc.measure(0, 1)
    qc.swap(0, 1)  # routing may move a measured qubit on after its measurement
    qc.measure(0, 0)
    assert final_measurements(qc) == [0, 0] and mid_circuit_measurement(qc)


def test_a_circuit_measured_early_is_scored_on_a_fake_device() -> None:
    from qsolve.judging.quantum_context import QuantumContext
    from qsolve.targets import open_target

    qc = QuantumCircuit(4, 4)
    qc.h(0)
    qc.cx(0, 1)
    qc.measure([0, 1], [0, 1])  # then gates on the other qubits only: not mid-circuit
    qc.h(2)
    qc.cx(2, 3)
    qc.measure([2, 3], [2, 3])
    for target in ("sim-cpu", "fake:fez"):
        ctx = QuantumContext(3, open_target(target))
        ctx.sample([qc], 2000)
        (rec,) = ctx.records
        assert rec.unscored is None and rec.fidelity > 0.9, target


def test_mid_circuit_measurement_detected() -> None:
    assert not mid_circuit_measurement(ghz(3))
    qc = QuantumCircuit(1, 2)
    qc.measure(0, 0)
    qc.x(0)
    qc.measure(0, 1)
    assert mid_circuit_measurement(qc)
    qc = QuantumCircuit(2, 2)
    qc.measure(0, 0)
    qc.h(1)  # an operation on another qubit after a measurement is fine
    qc.measure(1, 1)
    assert not mid_circuit_measurement(qc)


def test_two_qubit_gates_count_inside_control_flow() -> None:
    qc = QuantumCircuit(2, 1)
    qc.cx(0, 1)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.cz(0, 1)
        qc.cz(0, 1)
    assert two_qubit_gates(qc) == 3
    assert mid_circuit_measurement(qc)


def test_record_scores_a_perfect_run_and_refuses_what_it_cannot() -> None:
    qc = ghz(3)
    (r,) = record([qc], [qc], [{"000": 50, "111": 50}], [100], lambda q: None)
    assert (r.qubits, r.two_qubit_gates, r.shots, r.fidelity, r.unscored) == (
        3,
        2,
        100,
        pytest.approx(1.0),
        None,
    )
    big = ghz(21)
    (r,) = record([big], [big], [{"0" * 21: 10}], [10], lambda q: None)
    assert r.fidelity is None and r.unscored == "21 qubits (at most 20 are scored)"


def test_quality_is_shot_weighted() -> None:
    records = [
        CircuitRecord(qubits=2, two_qubit_gates=1, shots=300, fidelity=0.9),
        CircuitRecord(qubits=2, two_qubit_gates=1, shots=100, fidelity=0.5),
        CircuitRecord(qubits=30, two_qubit_gates=1, shots=100, unscored="too big"),
    ]
    q = quality(records, (90, 100))
    assert q.fidelity == pytest.approx(0.8) and q.coverage == pytest.approx(0.8) and q.postselection == 0.9
    assert quality([], None).fidelity is None


def test_a_circuit_with_a_reset_is_recorded_unscored() -> None:
    qc = QuantumCircuit(1)
    qc.h(0)
    qc.reset(0)
    qc.measure_all()
    (r,) = record([qc], [qc], [{"0": 10}], [10], lambda q: None)
    assert (r.fidelity, r.unscored) == (None, "a reset or initialisation: no exact ideal distribution")
