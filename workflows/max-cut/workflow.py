"""Maximum cut of a weighted graph: QAOA against exact brute force and a greedy local search.

The objective is lower-is-better, so ``evaluate`` returns minus the cut weight.
"""

from __future__ import annotations

import math

import numpy as np
from qiskit import QuantumCircuit
from scipy.optimize import minimize

from qsolve import Context, MethodResult, MethodUnavailable

MAX_QAOA_QUBITS = 20
MAX_BRUTE_FORCE_NODES = 24


def _graph(input: dict) -> tuple[int, list[tuple[int, int, float]]]:
    n = int(input["nodes"])
    edges = []
    for k, (u, v, w) in enumerate(input["edges"]):
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ValueError(f"edges[{k}] = [{u}, {v}, {w}] must join two different nodes of 0..{n - 1}")
        edges.append((int(u), int(v), float(w)))
    return n, edges


def cut_weight(edges: list[tuple[int, int, float]], assignment: list[int]) -> float:
    return sum(w for u, v, w in edges if assignment[u] != assignment[v])


def evaluate(input: dict, solution: dict) -> float:
    n, edges = _graph(input)
    assignment = solution["assignment"]
    if len(assignment) != n:
        raise ValueError(f"assignment has {len(assignment)} entries for {n} nodes")
    return -cut_weight(edges, assignment)


def estimate(input: dict, params: dict) -> dict:
    grid, opt, iters = params["grid"], params["opt_shots"], params["maxiter"]
    return {"circuits": grid * grid + iters + 1, "shots": (grid * grid + iters) * opt + params["shots"]}


# --- reference: exact ---------------------------------------------------------------------------


def reference(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Every cut, with the last node fixed on side 0 (a cut and its mirror weigh the same)."""
    n, edges = _graph(input)
    if n > MAX_BRUTE_FORCE_NODES:
        raise MethodUnavailable(f"brute force stops at {MAX_BRUTE_FORCE_NODES} nodes; this graph has {n}")
    x = np.arange(1 << (n - 1), dtype=np.int64)
    cut = np.zeros(x.shape, dtype=np.float64)
    for u, v, w in edges:
        cut += w * (((x >> u) ^ (x >> v)) & 1)
    best = int(x[int(np.argmax(cut))])
    assignment = [(best >> i) & 1 for i in range(n)]
    return MethodResult(
        -cut_weight(edges, assignment),
        solution={"assignment": assignment},
        details={"cuts_examined": int(x.size)},
    )


# --- greedy: local search from random starts -----------------------------------------------------


def greedy(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Flip any node whose move raises the cut until none does; best of ``restarts`` random starts."""
    n, edges = _graph(input)
    neighbours: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for u, v, w in edges:
        neighbours[u].append((v, w))
        neighbours[v].append((u, w))
    best: list[int] | None = None
    best_cut = -math.inf
    for _ in range(params["restarts"]):
        a = [int(b) for b in ctx.rng.integers(0, 2, n)]
        improved = True
        while improved:
            improved = False
            for i in range(n):
                gain = sum(w if a[i] == a[j] else -w for j, w in neighbours[i])
                if gain > 1e-12:
                    a[i] ^= 1
                    improved = True
        c = cut_weight(edges, a)
        if c > best_cut:
            best, best_cut = a, c
    return MethodResult(-best_cut, solution={"assignment": best}, details={"restarts": params["restarts"]})


# --- qaoa ------------------------------------------------------------------------------------------


def qaoa_circuit(n: int, edges: list[tuple[int, int, float]], gammas, betas) -> QuantumCircuit:
    """p layers of exp(-i gamma C) exp(-i beta B) on |+>^n, C the cut weight; every qubit measured."""
    qc = QuantumCircuit(n)
    qc.h(range(n))
    for gamma, beta in zip(gammas, betas, strict=True):
        for u, v, w in edges:
            qc.rzz(-gamma * w, u, v)
        qc.rx(2 * beta, range(n))
    qc.measure_all()
    return qc


def _assignment(key: str, n: int) -> list[int]:
    bits = key.replace(" ", "")
    return [int(bits[-1 - i]) for i in range(n)]


def _mean_cut(counts: dict[str, int], n: int, edges) -> float:
    total = sum(counts.values())
    return sum(c * cut_weight(edges, _assignment(k, n)) for k, c in counts.items()) / total


def _schedule(gamma: float, beta: float, p: int) -> np.ndarray:
    """A linear ramp of p layers from one (gamma, beta): the usual start for deeper QAOA."""
    k = np.arange(p)
    return np.concatenate([gamma * (k + 1) / p, beta * (1 - k / p)])


def qaoa(input: dict, params: dict, ctx: Context) -> MethodResult:
    """QAOA: a grid over (gamma, beta), COBYLA on sampled cut weights, then the final distribution.

    The answer is the most frequent bitstring at the optimised angles (not the best of thousands of
    samples, which on small graphs finds the optimum by sampling alone).
    """
    n, edges = _graph(input)
    if n > MAX_QAOA_QUBITS:
        raise MethodUnavailable(f"QAOA here runs at most {MAX_QAOA_QUBITS} qubits; this graph has {n}")
    p, g, opt_shots = params["layers"], params["grid"], params["opt_shots"]
    scale = 1.0 / max(np.mean([w for _, _, w in edges]), 1e-9)

    def circuit(x: np.ndarray) -> QuantumCircuit:
        return qaoa_circuit(n, edges, x[:p], x[p:])

    gammas = (np.arange(g) + 0.5) * math.pi * scale / g
    betas = (np.arange(g) + 0.5) * (math.pi / 2) / g
    starts = [_schedule(gm, bt, p) for gm in gammas for bt in betas]
    counts = ctx.sample([circuit(x) for x in starts], opt_shots)
    values = [-_mean_cut(c, n, edges) for c in counts]
    best = int(np.argmin(values))
    x_best, f_best = starts[best], values[best]
    evaluations = len(starts)

    if params["maxiter"] > 0:

        def f(x: np.ndarray) -> float:
            nonlocal evaluations
            evaluations += 1
            return -_mean_cut(ctx.sample([circuit(x)], opt_shots)[0], n, edges)

        res = minimize(
            f, x_best, method="COBYLA", options={"maxiter": params["maxiter"], "rhobeg": math.pi / (2 * g)}
        )
        if res.fun < f_best:
            x_best, f_best = res.x, float(res.fun)

    final = ctx.sample([circuit(x_best)], params["shots"])[0]
    key = max(final, key=lambda k: (final[k], k))
    assignment = _assignment(key, n)
    return MethodResult(
        -cut_weight(edges, assignment),
        solution={"assignment": assignment},
        details={
            "gammas": [float(v) for v in x_best[:p]],
            "betas": [float(v) for v in x_best[p:]],
            "expected_cut": _mean_cut(final, n, edges),
            "mode_share": final[key] / sum(final.values()),
            "evaluations": evaluations + 1,
        },
    )
