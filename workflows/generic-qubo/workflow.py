"""A QUBO, with or without a cardinality constraint: QAOA against exact brute force and simulated annealing.

The problem: minimise ``offset + sum_i linear[i] x[i] + sum_(i,j) w x[i] x[j]`` over ``x`` in {0, 1}^n,
and, when the input has ``cardinality: k``, only over the ``x`` with exactly ``k`` ones.

``evaluate`` returns that value, lower is better. An assignment that breaks the cardinality constraint
is scored, not refused: its value plus ``penalty_weight(input)`` for every variable it is off by. The
weight (one plus the sum of all coefficients' sizes) exceeds the spread of the objective over all
assignments, so every infeasible assignment scores worse than every feasible one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from qiskit import QuantumCircuit
from scipy.optimize import minimize

from qsolve import Context, MethodResult, MethodUnavailable

MAX_QAOA_QUBITS = 20
MAX_BRUTE_FORCE_VARIABLES = 20


@dataclass(frozen=True)
class Qubo:
    n: int
    linear: np.ndarray  # (n,)
    weights: np.ndarray  # (n, n) symmetric, zero diagonal: W[i, j] = W[j, i] = w of the pair
    offset: float
    cardinality: int | None

    def pairs(self) -> list[tuple[int, int, float]]:
        return [
            (i, j, float(self.weights[i, j]))
            for i in range(self.n)
            for j in range(i + 1, self.n)
            if self.weights[i, j] != 0.0
        ]

    def value(self, x: np.ndarray) -> float:
        """The objective of one 0/1 vector, constraint not applied."""
        x = np.asarray(x, dtype=float)
        return float(self.offset + self.linear @ x + 0.5 * x @ self.weights @ x)


def _qubo(input: dict) -> Qubo:
    n = int(input["variables"])
    linear = np.zeros(n)
    given = input.get("linear")
    if given is not None:
        if len(given) != n:
            raise ValueError(f"linear has {len(given)} entries for {n} variables")
        linear[:] = given
    weights = np.zeros((n, n))
    for k, (i, j, w) in enumerate(input.get("quadratic", [])):
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise ValueError(
                f"quadratic[{k}] = [{i}, {j}, {w}] must join two different variables of 0..{n - 1} "
                "(put x[i]^2 = x[i] terms in linear)"
            )
        weights[i, j] += w
        weights[j, i] += w
    k = input.get("cardinality")
    if k is not None and not 0 <= k <= n:
        raise ValueError(f"cardinality {k} is not between 0 and {n}")
    return Qubo(n, linear, weights, float(input.get("offset", 0.0)), None if k is None else int(k))


def penalty_weight(q: Qubo) -> float:
    """What ``evaluate`` adds for each variable an assignment is off the cardinality by."""
    return 1.0 + float(np.abs(q.linear).sum() + np.abs(np.triu(q.weights, 1)).sum())


def evaluate(input: dict, solution: dict) -> float:
    q = _qubo(input)
    x = solution["x"]
    if len(x) != q.n or any(v not in (0, 1) for v in x):
        raise ValueError(f"x must hold {q.n} values 0 or 1, got {x!r}")
    value = q.value(np.array(x))
    if q.cardinality is not None:
        value += penalty_weight(q) * abs(sum(x) - q.cardinality)
    return value


def estimate(input: dict, params: dict) -> dict:
    grid, opt, iters = params["grid"], params["opt_shots"], params["maxiter"]
    return {"circuits": grid * grid + iters + 1, "shots": (grid * grid + iters) * opt + params["shots"]}


# --- reference: exact ---------------------------------------------------------------------------


def reference(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Every assignment (every one with ``k`` ones under a cardinality constraint), the lowest value."""
    q = _qubo(input)
    if q.n > MAX_BRUTE_FORCE_VARIABLES:
        raise MethodUnavailable(f"brute force stops at {MAX_BRUTE_FORCE_VARIABLES} variables; this has {q.n}")
    idx = np.arange(1 << q.n, dtype=np.int64)
    bits = [((idx >> i) & 1).astype(np.int8) for i in range(q.n)]
    energy = np.full(idx.shape, q.offset)
    for i in range(q.n):
        if q.linear[i] != 0.0:
            energy += q.linear[i] * bits[i]
    for i, j, w in q.pairs():
        energy += w * (bits[i] & bits[j])
    examined = idx.size
    if q.cardinality is not None:
        ones = np.zeros(idx.shape, dtype=np.int8)
        for b in bits:
            ones += b
        energy[ones != q.cardinality] = np.inf
        examined = math.comb(q.n, q.cardinality)
    best = int(np.argmin(energy))
    x = [(best >> i) & 1 for i in range(q.n)]
    return MethodResult(
        evaluate(input, {"x": x}), solution={"x": x}, details={"assignments_examined": examined}
    )


# --- annealing: simulated annealing, classical ---------------------------------------------------


def annealing(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Simulated annealing with single flips, or with swaps (a one and a zero trade places) under a
    cardinality constraint, so every state visited is feasible; best of ``restarts`` runs."""
    q = _qubo(input)
    n, c, w, k = q.n, q.linear, q.weights, q.cardinality
    sweeps = params["sweeps"]
    scale = max(float(np.abs(c).max(initial=0.0)), float(np.abs(w).sum(axis=1).max(initial=0.0)), 1e-9)
    temps = scale * np.geomspace(1.0, 1e-3, sweeps)
    best_x, best_e = None, math.inf
    for _ in range(params["restarts"]):
        if k is None:
            x = ctx.rng.integers(0, 2, n).astype(float)
        else:
            x = np.zeros(n)
            x[ctx.rng.choice(n, size=k, replace=False)] = 1.0
        field = c + w @ x  # field[i]: the change of the objective when x[i] goes from 0 to 1
        e = q.value(x)
        for t in temps:
            for _ in range(n):
                if k is None:
                    i = int(ctx.rng.integers(n))
                    delta = (1 - 2 * x[i]) * field[i]
                    if delta <= 0 or ctx.rng.random() < math.exp(-delta / t):
                        x[i] = 1 - x[i]
                        field += (2 * x[i] - 1) * w[i]
                        e += delta
                else:
                    if k in (0, n):
                        break
                    i = int(ctx.rng.choice(np.flatnonzero(x == 1)))
                    j = int(ctx.rng.choice(np.flatnonzero(x == 0)))
                    delta = -field[i] + field[j] - w[i, j]
                    if delta <= 0 or ctx.rng.random() < math.exp(-delta / t):
                        x[i], x[j] = 0.0, 1.0
                        field += w[j] - w[i]
                        e += delta
                if e < best_e - 1e-12:
                    best_x, best_e = x.copy(), e
        if q.value(x) < best_e - 1e-12:
            best_x, best_e = x.copy(), q.value(x)
    sol = [int(v) for v in best_x]
    return MethodResult(
        evaluate(input, {"x": sol}), solution={"x": sol}, details={"restarts": params["restarts"]}
    )


# --- qaoa ------------------------------------------------------------------------------------------


def ising(q: Qubo, penalty: float) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """The QUBO (plus ``penalty (sum x - k)^2`` under a constraint) as ``sum h_i Z_i + sum J_ij Z_i Z_j``
    up to a constant, with x = (1 - z) / 2."""
    c = q.linear.copy()
    w = q.weights.copy()
    if q.cardinality is not None:
        c += penalty * (1 - 2 * q.cardinality)
        w += 2 * penalty * (1 - np.eye(q.n))
    h = -c / 2 - w.sum(axis=1) / 4
    couplings = [(i, j, w[i, j] / 4) for i in range(q.n) for j in range(i + 1, q.n) if w[i, j] != 0.0]
    return h, couplings


def qaoa_circuit(n: int, h: np.ndarray, couplings, gammas, betas) -> QuantumCircuit:
    """p layers of exp(+i gamma H) exp(-i beta sum X) on |+>^n; every qubit measured.

    |+>^n is the top eigenstate of sum X, so with beta > 0 the layers climb -H (Farhi's convention
    for maximising, applied to -H): low values of H gain weight.
    """
    qc = QuantumCircuit(n)
    qc.h(range(n))
    for gamma, beta in zip(gammas, betas, strict=True):
        for i, j, jij in couplings:
            qc.rzz(-2 * gamma * jij, i, j)
        for i in range(n):
            if h[i] != 0.0:
                qc.rz(-2 * gamma * h[i], i)
        qc.rx(2 * beta, range(n))
    qc.measure_all()
    return qc


def _bits(key: str, n: int) -> np.ndarray:
    bits = key.replace(" ", "")
    return np.array([int(bits[-1 - i]) for i in range(n)], dtype=float)


def _schedule(gamma: float, beta: float, p: int) -> np.ndarray:
    """A linear ramp of p layers from one (gamma, beta): the usual start for deeper QAOA."""
    k = np.arange(p)
    return np.concatenate([gamma * (k + 1) / p, beta * (1 - k / p)])


def qaoa(input: dict, params: dict, ctx: Context) -> MethodResult:
    """QAOA: a grid over (gamma, beta), COBYLA on the sampled mean objective, then the final distribution.

    A cardinality constraint enters the cost as a penalty; the final shots that break it are dropped
    (reported as post-selection). The answer is the most frequent remaining bitstring at the optimised
    angles, not the best of thousands of samples, which on small problems finds the optimum by
    sampling alone.
    """
    q = _qubo(input)
    n = q.n
    if n > MAX_QAOA_QUBITS:
        raise MethodUnavailable(f"QAOA here runs at most {MAX_QAOA_QUBITS} qubits; this QUBO has {n}")
    p, g, opt_shots = params["layers"], params["grid"], params["opt_shots"]
    coef_scale = max(
        float(np.abs(q.linear).max(initial=0.0)), float(np.abs(q.weights).max(initial=0.0)), 1e-9
    )
    penalty = params["penalty"] * coef_scale
    h, couplings = ising(q, penalty)
    # gamma is scaled so that the largest field a qubit feels turns it by about pi at the grid's end
    strength = max(float(np.max(np.abs(h) + _coupling_sum(n, couplings))), 1e-9)
    cache: dict[str, float] = {}

    def cost(key: str) -> float:
        if key not in cache:
            x = _bits(key, n)
            v = q.value(x)
            if q.cardinality is not None:
                v += penalty * (x.sum() - q.cardinality) ** 2
            cache[key] = v
        return cache[key]

    def mean_cost(counts: dict[str, int]) -> float:
        total = sum(counts.values())
        return sum(m * cost(k) for k, m in counts.items()) / total

    def circuit(x: np.ndarray) -> QuantumCircuit:
        return qaoa_circuit(n, h, couplings, x[:p], x[p:])

    gammas = (np.arange(g) + 0.5) * (math.pi / 2) / (g * strength)
    betas = (np.arange(g) + 0.5) * (math.pi / 2) / g
    starts = [_schedule(gm, bt, p) for gm in gammas for bt in betas]
    values = [mean_cost(c) for c in ctx.sample([circuit(x) for x in starts], opt_shots)]
    best = int(np.argmin(values))
    x_best, f_best = starts[best], values[best]
    evaluations = len(starts)

    if params["maxiter"] > 0:

        def f(x: np.ndarray) -> float:
            nonlocal evaluations
            evaluations += 1
            return mean_cost(ctx.sample([circuit(x)], opt_shots)[0])

        rhobeg = min(gammas[0], betas[0])
        res = minimize(f, x_best, method="COBYLA", options={"maxiter": params["maxiter"], "rhobeg": rhobeg})
        if res.fun < f_best:
            x_best, f_best = res.x, float(res.fun)

    final = ctx.sample([circuit(x_best)], params["shots"])[0]
    kept = final
    if q.cardinality is not None:
        kept = {key: m for key, m in final.items() if int(_bits(key, n).sum()) == q.cardinality}
        ctx.postselected(sum(kept.values()), params["shots"])
    pool = kept or final  # no feasible shot: the most frequent one, which evaluate then penalises
    key = max(pool, key=lambda s: (pool[s], s))
    x = [int(v) for v in _bits(key, n)]
    return MethodResult(
        evaluate(input, {"x": x}),
        solution={"x": x},
        details={
            "gammas": [float(v) for v in x_best[:p]],
            "betas": [float(v) for v in x_best[p:]],
            "mean_cost": mean_cost(final),
            "mode_share": pool[key] / params["shots"],
            "feasible_share": sum(kept.values()) / params["shots"],
            "evaluations": evaluations + 1,
        },
    )


def _coupling_sum(n: int, couplings) -> np.ndarray:
    s = np.zeros(n)
    for i, j, jij in couplings:
        s[i] += abs(jij)
        s[j] += abs(jij)
    return s
