"""How the table ``COEFFICIENTS`` in workflow.py was computed; run ``python coefficients.py`` to print it.

H2 in the STO-3G basis (Szabo and Ostlund, "Modern Quantum Chemistry", ch. 3 and appendix A): two 1s
functions (zeta 1.24), the symmetric and antisymmetric molecular orbitals g and u (fixed by symmetry,
so no SCF iteration is needed), their one- and two-electron integrals. In the sector of two electrons
with total spin projection zero the Hamiltonian acts on |g g>, |u u> (singlet, coupled by the exchange
integral K_gu) and the two open-shell determinants. Qubit 0 set ("01") is |g g>, qubit 1 set ("10") is
|u u>; this gives the usual two-qubit form (parity mapping with two-qubit reduction)::

    H = g0 II + g1 (IZ - ZI) + g3 ZZ + g4 XX

with g1 = (2 h_uu + J_uu - 2 h_gg - J_gg) / 4, g0 - g3 = (2 h_gg + J_gg + 2 h_uu + J_uu) / 2,
g0 + g3 = h_gg + h_uu + J_gu and g4 = K_gu. Check: at 1.4 bohr the integrals are Szabo and Ostlund's
(h_gg -1.2528, h_uu -0.4756, J_gg 0.6746, J_uu 0.6975, J_gu 0.6636, K_gu 0.1813); at 0.735 angstrom
the coefficients agree with Qiskit Nature's H2 example (-1.05237, 0.39794, -0.01128, 0.18093) within
4e-7 and the total ground energy is -1.137307 Ha.

Not imported by the workflow: the platform runs the fixed table.
"""

from __future__ import annotations

import numpy as np
from scipy.special import erf

BOHR = 0.529177210903  # angstrom (CODATA 2018)
D = np.array([0.444635, 0.535328, 0.154329])  # STO-3G contraction of a 1s function
A = np.array([0.109818, 0.405771, 2.227660]) * 1.24**2  # exponents, hydrogen zeta 1.24
N = D * (2 * A / np.pi) ** 0.75  # coefficients of normalised primitives


def _f0(t: float) -> float:
    return 1.0 if t < 1e-12 else 0.5 * np.sqrt(np.pi / t) * erf(np.sqrt(t))


def coefficients(r_angstrom: float) -> tuple[float, float, float, float, float]:
    """(g0, g1, g3, g4, nuclear repulsion) in hartree at this bond length."""
    r = r_angstrom / BOHR
    centres = [np.zeros(3), np.array([0.0, 0.0, r])]
    prims = list(zip(A, N, strict=True))
    s, t, v = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    eri = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            ca, cb = centres[i], centres[j]
            for a, na in prims:
                for b, nb in prims:
                    p = a + b
                    k = np.exp(-a * b / p * np.sum((ca - cb) ** 2))
                    centre = (a * ca + b * cb) / p
                    s[i, j] += na * nb * (np.pi / p) ** 1.5 * k
                    t[i, j] += (
                        na
                        * nb
                        * a
                        * b
                        / p
                        * (3 - 2 * a * b / p * np.sum((ca - cb) ** 2))
                        * (np.pi / p) ** 1.5
                        * k
                    )
                    for nucleus in centres:
                        v[i, j] -= na * nb * 2 * np.pi / p * k * _f0(p * np.sum((centre - nucleus) ** 2))
    for i, j, k_, l_ in np.ndindex(2, 2, 2, 2):
        ca, cb, cc, cd = centres[i], centres[j], centres[k_], centres[l_]
        for a, na in prims:
            for b, nb in prims:
                for c, nc in prims:
                    for d, nd in prims:
                        p, q = a + b, c + d
                        pc, qc = (a * ca + b * cb) / p, (c * cc + d * cd) / q
                        eri[i, j, k_, l_] += (
                            na * nb * nc * nd * 2 * np.pi**2.5 / (p * q * np.sqrt(p + q))
                            * np.exp(-a * b / p * np.sum((ca - cb) ** 2) - c * d / q * np.sum((cc - cd) ** 2))
                            * _f0(p * q / (p + q) * np.sum((pc - qc) ** 2))
                        )  # fmt: skip
    s12 = s[0, 1]
    mo = np.array([[1, 1], [1, -1]]) / np.sqrt([2 * (1 + s12), 2 * (1 - s12)])
    h = mo.T @ (t + v) @ mo
    g = np.einsum("pi,qj,rk,sl,pqrs->ijkl", mo, mo, mo, mo, eri)
    h_gg, h_uu = h[0, 0], h[1, 1]
    j_gg, j_uu, j_gu, k_gu = g[0, 0, 0, 0], g[1, 1, 1, 1], g[0, 0, 1, 1], g[0, 1, 0, 1]
    closed = (2 * h_gg + j_gg + 2 * h_uu + j_uu) / 2
    open_shell = h_gg + h_uu + j_gu
    g1 = (2 * h_uu + j_uu - 2 * h_gg - j_gg) / 4
    return (closed + open_shell) / 2, g1, (open_shell - closed) / 2, k_gu, 1 / r


if __name__ == "__main__":
    for length in (0.5, 0.735, 1.0, 1.5, 2.0, 2.5):
        print(f"    {length}: ({', '.join(f'{c:.10f}' for c in coefficients(length))}),")
