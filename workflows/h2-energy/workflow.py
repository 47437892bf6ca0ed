"""Ground-state energy of H2 (STO-3G, two qubits): a VQE against exact diagonalisation.

The Hamiltonian is the standard two-qubit reduced form of H2 (parity mapping, two-qubit reduction)::

    H = g0 II + g1 (IZ - ZI) + g3 ZZ + g4 XX        (IZ: Z on qubit 0, Qiskit's order)

with its coefficients fixed below for six bond lengths (``coefficients.py`` shows how they were
computed). The objective is the total energy in hartree (electronic plus nuclear repulsion), lower is
better. A solution is an angle of the ansatz ``cos(theta/2)|01> + sin(theta/2)|10>``, which holds
the exact ground state; ``evaluate`` gives its exact energy. The VQE returns no solution: its number
is the energy it measured, with the standard error of the shot noise.
"""

from __future__ import annotations

import math

import numpy as np
from qiskit import QuantumCircuit

from qsolve import Context, MethodResult

#: bond length (angstrom) -> (g0, g1, g3, g4, nuclear repulsion), hartree
COEFFICIENTS = {
    0.5: (-0.9477058572, 0.5830812258, -0.0125165825, 0.1688716312, 1.0583544218),
    0.735: (-1.0523735230, 0.3979378002, -0.0112801865, 0.1809320912, 0.7199689944),
    1.0: (-1.0692442218, 0.2675287368, -0.0090149828, 0.1967913056, 0.5291772109),
    1.5: (-1.0096454150, 0.1291013051, -0.0041889757, 0.2295366525, 0.3527848073),
    2.0: (-0.9285569263, 0.0606279596, -0.0014311039, 0.2591392879, 0.2645886055),
    2.5: (-0.8607229734, 0.0271346301, -0.0003774174, 0.2822109442, 0.2116708844),
}

_I = np.eye(2)
_X = np.array([[0.0, 1.0], [1.0, 0.0]])
_Z = np.diag([1.0, -1.0])
# z of qubit 0 and qubit 1 for the outcomes 0..3 (outcome = 2 b1 + b0)
_Z0 = np.array([1.0, -1.0, 1.0, -1.0])
_Z1 = np.array([1.0, 1.0, -1.0, -1.0])
# the three angles of the sinusoid fit (Rotosolve): E(theta) = a + b cos(theta) + c sin(theta)
_FIT_ANGLES = (0.0, 2 * math.pi / 3, 4 * math.pi / 3)


def _coefficients(input: dict) -> tuple[float, float, float, float, float]:
    r = float(input["bond_length"])
    for length, coefficients in COEFFICIENTS.items():
        if abs(length - r) < 1e-9:
            return coefficients
    raise ValueError(f"no Hamiltonian for bond length {r}; tabulated: {sorted(COEFFICIENTS)}")


def hamiltonian(input: dict) -> np.ndarray:
    """The 4x4 matrix of H (electronic part), basis index = 2 b1 + b0."""
    g0, g1, g3, g4, _ = _coefficients(input)
    return (
        g0 * np.kron(_I, _I)
        + g1 * (np.kron(_I, _Z) - np.kron(_Z, _I))
        + g3 * np.kron(_Z, _Z)
        + g4 * np.kron(_X, _X)
    )


def ansatz_state(theta: float) -> np.ndarray:
    return np.array([0.0, math.cos(theta / 2), math.sin(theta / 2), 0.0])


def evaluate(input: dict, solution: dict) -> float:
    """Exact total energy of the ansatz state at ``solution["theta"]``."""
    psi = ansatz_state(float(solution["theta"]))
    return float(psi @ hamiltonian(input) @ psi) + _coefficients(input)[4]


def estimate(input: dict, params: dict) -> dict:
    calibration = 2 if params["mitigate"] else 0
    fit = 2 * len(_FIT_ANGLES)
    return {
        "circuits": calibration + fit + 2,
        "shots": (calibration + 2) * params["shots"] + fit * params["opt_shots"],
    }


# --- reference: exact diagonalisation --------------------------------------------------------------


def reference(input: dict, params: dict, ctx: Context) -> MethodResult:
    """The lowest eigenvalue of H (numpy eigvalsh), and the ansatz angle of its eigenvector."""
    _, vectors = np.linalg.eigh(hamiltonian(input))
    ground = vectors[:, 0] * (1.0 if vectors[1, 0] >= 0 else -1.0)
    theta = 2 * math.atan2(ground[2], ground[1])
    energy = float(np.linalg.eigvalsh(hamiltonian(input))[0]) + _coefficients(input)[4]
    return MethodResult(
        energy,
        solution={"theta": theta},
        details={"ground_weight_in_ansatz": float(ground[1] ** 2 + ground[2] ** 2)},
    )


def hartree_fock(input: dict, params: dict, ctx: Context) -> MethodResult:
    """The Hartree-Fock determinant |g g> (theta = 0): the energy without electron correlation."""
    return MethodResult(evaluate(input, {"theta": 0.0}), solution={"theta": 0.0})


# --- vqe -------------------------------------------------------------------------------------------


def ansatz(theta: float, basis: str) -> QuantumCircuit:
    """cos(theta/2)|01> + sin(theta/2)|10>, measured in the Z basis or (basis "X") the X basis."""
    qc = QuantumCircuit(2, name=f"ansatz-{basis}")
    qc.x(0)
    qc.ry(theta, 1)
    qc.cx(1, 0)
    if basis == "X":
        qc.h([0, 1])
    qc.measure_all()
    return qc


def _calibration(state: str) -> QuantumCircuit:
    qc = QuantumCircuit(2, name=f"calibration-{state}")
    if state == "11":
        qc.x([0, 1])
    qc.measure_all()
    return qc


def _probabilities(counts: dict[str, int]) -> tuple[np.ndarray, int]:
    p = np.zeros(4)
    for key, n in counts.items():
        p[int(key.replace(" ", ""), 2)] += n
    total = int(p.sum())
    return p / total, total


class _Readout:
    """Per-qubit readout errors measured from |00> and |11>; ``eps`` = (P(1|0) q0, P(1|0) q1,
    P(0|1) q0, P(0|1) q1), each from ``shots`` shots."""

    def __init__(self, eps: np.ndarray, shots: int) -> None:
        self.eps = eps
        self.shots = shots

    @classmethod
    def measured(cls, zeros: dict[str, int], ones: dict[str, int]) -> _Readout:
        p0, n = _probabilities(zeros)
        p1, _ = _probabilities(ones)
        read1_q0, read1_q1 = p0 @ (_Z0 < 0), p0 @ (_Z1 < 0)
        read0_q0, read0_q1 = p1 @ (_Z0 > 0), p1 @ (_Z1 > 0)
        return cls(np.array([read1_q0, read1_q1, read0_q0, read0_q1]), n)

    @classmethod
    def ideal(cls) -> _Readout:
        return cls(np.zeros(4), 0)

    @staticmethod
    def unfold(eps: np.ndarray) -> np.ndarray:
        """The inverse of the 4x4 readout matrix (qubit 1 the high factor)."""

        def confusion(p10: float, p01: float) -> np.ndarray:  # A[j, i] = P(read j | prepared i)
            return np.array([[1 - p10, p01], [p10, 1 - p01]])

        a0 = confusion(eps[0], eps[2])
        a1 = confusion(eps[1], eps[3])
        return np.linalg.inv(np.kron(a1, a0))


def _energy(eps: np.ndarray, terms: list[tuple[np.ndarray, np.ndarray]], constant: float) -> float:
    """Readout-corrected energy: sum over measured circuits of values . (M^-1 p), plus the constant."""
    unfold = _Readout.unfold(eps)
    return constant + sum(float(values @ (unfold @ p)) for values, p in terms)


def _measured_energy(
    coefficients, z_counts: dict, x_counts: dict, readout: _Readout
) -> tuple[float, float, dict[str, float]]:
    """Energy from one Z-basis and one X-basis circuit, its standard error, and the Pauli averages.

    The error has two parts: the shots of the two circuits (the variance of each per-shot value
    after readout correction), and the shots that measured the readout errors (delta method).
    """
    g0, g1, g3, g4, nuclear = coefficients
    z_values = g1 * (_Z0 - _Z1) + g3 * _Z0 * _Z1
    x_values = g4 * _Z0 * _Z1
    pz, nz = _probabilities(z_counts)
    px, nx = _probabilities(x_counts)
    terms = [(z_values, pz), (x_values, px)]
    energy = _energy(readout.eps, terms, g0 + nuclear)
    unfold = _Readout.unfold(readout.eps)
    variance = 0.0
    for values, p, n in ((z_values, pz, nz), (x_values, px, nx)):
        effective = unfold.T @ values  # the value each raw outcome contributes
        variance += (p @ effective**2 - (p @ effective) ** 2) / n
    if readout.shots:
        for k in range(4):
            e = readout.eps[k]
            step = 1e-6
            shifted = readout.eps.copy()
            shifted[k] += step
            slope = (_energy(shifted, terms, g0 + nuclear) - energy) / step
            variance += slope**2 * e * (1 - e) / readout.shots
    mz, mx = unfold @ pz, unfold @ px
    paulis = {
        "IZ": float(_Z0 @ mz),
        "ZI": float(_Z1 @ mz),
        "ZZ": float((_Z0 * _Z1) @ mz),
        "XX": float((_Z0 * _Z1) @ mx),
    }
    return energy, math.sqrt(max(variance, 0.0)), paulis


def vqe(input: dict, params: dict, ctx: Context) -> MethodResult:
    """VQE with one parameter: a sinusoid fit over three angles (Rotosolve), then a fresh measurement.

    The energy of any one-angle ansatz is a + b cos(theta) + c sin(theta), on a noisy device too, so
    three measured energies fix it and its minimum. The reported energy comes from new shots at that
    angle, not from the fit, so it carries no optimiser's bias. With ``mitigate``, two calibration
    circuits (|00>, |11>) measure the readout errors, and every measured distribution is corrected.
    """
    coefficients = _coefficients(input)
    shots, opt_shots = params["shots"], params["opt_shots"]
    readout = _Readout.ideal()
    if params["mitigate"]:
        zeros, ones = ctx.sample([_calibration("00"), _calibration("11")], shots)
        readout = _Readout.measured(zeros, ones)

    circuits = [ansatz(t, basis) for t in _FIT_ANGLES for basis in ("Z", "X")]
    counts = ctx.sample(circuits, opt_shots)
    fit = [_measured_energy(coefficients, counts[2 * k], counts[2 * k + 1], readout)[0] for k in range(3)]
    b = 2 / 3 * sum(e * math.cos(t) for e, t in zip(fit, _FIT_ANGLES, strict=True))
    c = 2 / 3 * sum(e * math.sin(t) for e, t in zip(fit, _FIT_ANGLES, strict=True))
    theta = math.atan2(-c, -b)

    z_counts, x_counts = ctx.sample([ansatz(theta, "Z"), ansatz(theta, "X")], shots)
    energy, stderr, paulis = _measured_energy(coefficients, z_counts, x_counts, readout)
    return MethodResult(
        energy,
        stderr=stderr,
        details={
            "theta": theta,
            "fit_energies": fit,
            "fit_minimum": float(np.mean(fit) - math.hypot(b, c)),
            "paulis": paulis,
            "readout_errors": [float(e) for e in readout.eps],
        },
    )
