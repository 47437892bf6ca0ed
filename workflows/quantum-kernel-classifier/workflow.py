"""Two-class classification of a synthetic data set: a quantum fidelity kernel against an RBF kernel.

The input names a data set and a seed; the training and test points are generated from them
(``dataset``), the same for every method. A solution is the predicted class of every test point, and
``evaluate`` regenerates the test labels and returns the share misclassified (lower is better), so
the platform recomputes every method's error rate itself.

The quantum method estimates the fidelity kernel k(x, y) = |<phi(y)|phi(x)>|^2 of a small feature map
on one qubit per feature, from the all-zeros frequency of overlap circuits U(y)^dagger U(x). To keep
the number of circuits bounded it measures the kernel only between each point and a few landmarks
(k-means centres of the training points, Nystroem-style), and fits a regularised least-squares
classifier (an LS-SVM over the landmarks) on those kernel values: (n_train + n_test) * landmarks
circuits. The reference is an RBF-kernel LS-SVM on the whole training set, its width and
regularisation chosen by exact leave-one-out error; ``linear`` is a least-squares linear classifier,
the floor a kernel has to beat.
"""

from __future__ import annotations

import math

import numpy as np
from qiskit import QuantumCircuit

from qsolve import Context, MethodResult

RIDGE_GRID = (1e-3, 1e-2, 1e-1, 1.0)
RBF_GRID = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0)  # gamma, on standardised features


# --- the data set -----------------------------------------------------------------------------------


def _points(kind: str, n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, n)
    if kind == "circles":
        t = rng.uniform(0, 2 * math.pi, n)
        r = np.where(y == 1, 0.5, 1.0)
        x = np.c_[r * np.cos(t), r * np.sin(t)]
    elif kind == "moons":
        t = rng.uniform(0, math.pi, n)
        upper = np.c_[np.cos(t), np.sin(t)]
        lower = np.c_[1 - np.cos(t), 0.5 - np.sin(t)]
        x = np.where(y[:, None] == 0, upper, lower)
    elif kind == "xor":
        corner = rng.integers(0, 2, (n, 2))
        y = corner[:, 0] ^ corner[:, 1]
        x = (2 * corner - 1) * 0.5
    elif kind == "blobs":
        x = np.where(y[:, None] == 1, 0.5, -0.5) * np.ones((n, 2))
    else:
        raise ValueError(f"unknown data set {kind!r}")
    return x + rng.normal(0.0, noise, (n, 2)), y.astype(int)


def dataset(input: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test), features standardised with the training mean and spread.

    The training and test points come from two streams of the seed, so the test set does not change
    with ``n_train``.
    """
    kind, noise, seed = input["dataset"], float(input["noise"]), int(input["seed"])
    x_train, y_train = _points(kind, int(input["n_train"]), noise, np.random.default_rng([seed, 0]))
    x_test, y_test = _points(kind, int(input["n_test"]), noise, np.random.default_rng([seed, 1]))
    mean, spread = x_train.mean(axis=0), x_train.std(axis=0)
    spread[spread == 0] = 1.0
    return (x_train - mean) / spread, y_train, (x_test - mean) / spread, y_test


def evaluate(input: dict, solution: dict) -> float:
    _, _, _, y_test = dataset(input)
    predictions = np.asarray(solution["predictions"])
    if predictions.shape != y_test.shape or not np.isin(predictions, (0, 1)).all():
        raise ValueError(f"predictions must hold {y_test.size} classes 0 or 1")
    return float(np.mean(predictions != y_test))


def estimate(input: dict, params: dict) -> dict:
    circuits = (input["n_train"] + input["n_test"]) * min(params["landmarks"], input["n_train"])
    return {"circuits": circuits, "shots": circuits * params["shots"]}


def _result(input: dict, predictions: np.ndarray, details: dict) -> MethodResult:
    solution = {"predictions": [int(p) for p in predictions]}
    return MethodResult(
        evaluate(input, solution), solution=solution, details={"n_test": len(predictions), **details}
    )


# --- least squares with a bias, the regularisation chosen by leave-one-out ---------------------------


def _ridge(features: np.ndarray, y: np.ndarray, grid=RIDGE_GRID) -> tuple[np.ndarray, float]:
    """Weights (last one the bias, not regularised) of least squares on +-1 labels; the ridge from
    ``grid`` with the lowest exact leave-one-out squared error."""
    a = np.c_[features, np.ones(len(features))]
    target = 2.0 * y - 1.0
    best = None
    for lam in grid:
        reg = lam * np.eye(a.shape[1])
        reg[-1, -1] = 0.0
        hat = a @ np.linalg.solve(a.T @ a + reg, a.T)
        loo = (target - hat @ target) / np.maximum(1.0 - np.diag(hat), 1e-12)
        score = float(np.mean(loo**2))
        if best is None or score < best[0]:
            best = (score, lam)
    lam = best[1]
    reg = lam * np.eye(a.shape[1])
    reg[-1, -1] = 0.0
    return np.linalg.solve(a.T @ a + reg, a.T @ target), lam


def _predict(features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return (np.c_[features, np.ones(len(features))] @ weights > 0).astype(int)


# --- reference: RBF-kernel LS-SVM ---------------------------------------------------------------------


def _rbf(a: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    return np.exp(-gamma * ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1))


def reference(input: dict, params: dict, ctx: Context) -> MethodResult:
    """LS-SVM (Suykens) with an RBF kernel over every training point; gamma and the regularisation
    chosen by exact leave-one-out squared error on the training set."""
    x_train, y_train, x_test, _ = dataset(input)
    n = len(y_train)
    target = 2.0 * y_train - 1.0
    best = None
    for gamma in RBF_GRID:
        k = _rbf(x_train, x_train, gamma)
        for lam in RIDGE_GRID:
            system = np.zeros((n + 1, n + 1))
            system[0, 1:] = system[1:, 0] = 1.0
            system[1:, 1:] = k + lam * np.eye(n)
            inverse = np.linalg.inv(system)
            solution = inverse @ np.r_[0.0, target]
            loo = solution[1:] / np.diag(inverse)[1:]  # the leave-one-out residuals
            score = float(np.mean(loo**2))
            if best is None or score < best[0]:
                best = (score, gamma, lam, solution)
    _, gamma, lam, solution = best
    decision = _rbf(x_test, x_train, gamma) @ solution[1:] + solution[0]
    return _result(input, (decision > 0).astype(int), {"gamma": gamma, "ridge": lam})


def linear(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Least squares on the raw features: a straight boundary."""
    x_train, y_train, x_test, _ = dataset(input)
    weights, lam = _ridge(x_train, y_train)
    return _result(input, _predict(x_test, weights), {"ridge": lam})


# --- quantum_kernel ----------------------------------------------------------------------------------


def feature_map(x: np.ndarray, bandwidth: float) -> QuantumCircuit:
    """One qubit per feature: RY(b x_i), CZ between neighbours, RY(b x_i) again (data re-uploading)."""
    d = len(x)
    qc = QuantumCircuit(d)
    for i, v in enumerate(x):
        qc.ry(bandwidth * float(v), i)
    for i in range(d - 1):
        qc.cz(i, i + 1)
    for i, v in enumerate(x):
        qc.ry(bandwidth * float(v), i)
    return qc


def overlap_circuit(x: np.ndarray, landmark: np.ndarray, bandwidth: float) -> QuantumCircuit:
    """U(landmark)^dagger U(x) |0>: the all-zeros outcome has probability k(x, landmark)."""
    qc = feature_map(x, bandwidth).compose(feature_map(landmark, bandwidth).inverse())
    qc.measure_all()
    return qc


def _kmeans(x: np.ndarray, m: int, rng: np.random.Generator, rounds: int = 50) -> np.ndarray:
    """k-means (Lloyd) from a k-means++ start: the landmarks."""
    centres = [x[rng.integers(len(x))]]
    for _ in range(1, m):
        d2 = np.min(((x[:, None, :] - np.array(centres)[None]) ** 2).sum(-1), axis=1)
        centres.append(x[rng.choice(len(x), p=d2 / d2.sum())] if d2.sum() > 0 else x[rng.integers(len(x))])
    c = np.array(centres)
    for _ in range(rounds):
        label = ((x[:, None, :] - c[None]) ** 2).sum(-1).argmin(axis=1)
        moved = np.array([x[label == j].mean(axis=0) if np.any(label == j) else c[j] for j in range(m)])
        if np.allclose(moved, c):
            break
        c = moved
    return c


def quantum_kernel(input: dict, params: dict, ctx: Context) -> MethodResult:
    """Fidelity kernel to a few landmarks, from sampled overlap circuits; least squares on top."""
    x_train, y_train, x_test, _ = dataset(input)
    m, shots, bandwidth = min(params["landmarks"], len(x_train)), params["shots"], params["bandwidth"]
    landmarks = _kmeans(x_train, m, np.random.default_rng([int(input["seed"]), 2]))
    points = np.concatenate([x_train, x_test])
    circuits = [overlap_circuit(x, c, bandwidth) for x in points for c in landmarks]
    counts = ctx.sample(circuits, shots)
    zeros = "0" * x_train.shape[1]
    kernel = np.array([c.get(zeros, 0) / shots for c in counts]).reshape(len(points), m)
    train, test = kernel[: len(x_train)], kernel[len(x_train) :]
    weights, lam = _ridge(train, y_train)
    return _result(
        input,
        _predict(test, weights),
        {
            "landmarks": m,
            "ridge": lam,
            "train_error": float(np.mean(_predict(train, weights) != y_train)),
            "mean_kernel": float(kernel.mean()),
        },
    )
