"""Fits of calibration data with scipy's ``curve_fit``: parameters, standard errors, and fit quality.

Each model is a function with named parameters and a way to guess them from the data, so that the
least-squares search starts near the answer (an FFT for a frequency, the ends of the data for a decay).
The data are probabilities measured with ``shots`` shots; their standard errors are binomial, floored at
half a shot so that a point at 0 or 1 does not get infinite weight. A fit that does not converge, or
gives a value that is not finite, raises :class:`FitFailed`.

Quality: R² (the share of the data's variance the curve explains) and the reduced χ² with the binomial
errors (about 1 when the model describes the data to within shot noise), and the degrees of freedom left.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit


class FitFailed(Exception):  # noqa: N818 - what it says
    """The data could not be fitted with the model; ``str(e)`` says why."""


@dataclass(frozen=True)
class Model:
    name: str
    formula: str
    parameters: tuple[str, ...]
    function: Callable[..., np.ndarray]
    guess: Callable[[np.ndarray, np.ndarray], Sequence[float]]
    lower: tuple[float, ...]
    upper: tuple[float, ...]


@dataclass(frozen=True)
class FitResult:
    model: Model
    values: dict[str, float]
    errors: dict[str, float | None]
    r2: float | None
    reduced_chi2: float | None
    dof: int

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.model.function(np.asarray(x, dtype=float), *self.values.values())


def binomial_sigma(p: np.ndarray, shots: int) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 0.5 / shots, 1 - 0.5 / shots)
    return np.sqrt(p * (1 - p) / shots)


def fit(model: Model, x: Sequence[float], y: Sequence[float], shots: int) -> FitResult:
    """Least squares of ``model`` through ``(x, y)``, weighted by the binomial errors of ``shots`` shots."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 2:
        raise FitFailed(f"{len(x)} point(s): nothing to fit")
    sigma = binomial_sigma(y, shots)
    p0 = np.clip(model.guess(x, y), model.lower, model.upper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)  # no covariance: reported as errors of None
        try:
            values, cov = curve_fit(
                model.function,
                x,
                y,
                p0=p0,
                sigma=sigma,
                absolute_sigma=True,
                bounds=(model.lower, model.upper),
                maxfev=20000,
            )
        except (RuntimeError, ValueError) as e:
            raise FitFailed(str(e).strip().splitlines()[0]) from None
    if not np.all(np.isfinite(values)):
        raise FitFailed("the fit gave a value that is not finite")
    errors = np.sqrt(np.diag(cov)) if cov is not None and np.all(np.isfinite(cov)) else [None] * len(values)
    residuals = y - model.function(x, *values)
    dof = len(x) - len(values)
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1 - float(np.sum(residuals**2)) / total if total > 0 else None
    chi2 = float(np.sum((residuals / sigma) ** 2)) / dof if dof > 0 else None
    return FitResult(
        model=model,
        values={n: float(v) for n, v in zip(model.parameters, values, strict=True)},
        errors={
            n: (float(e) if e is not None and math.isfinite(e) else None)
            for n, e in zip(model.parameters, errors, strict=True)
        },
        r2=r2,
        reduced_chi2=chi2,
        dof=dof,
    )


def _dominant_frequency(x: np.ndarray, y: np.ndarray) -> float:
    """The strongest non-zero frequency of evenly spaced data (cycles per unit of ``x``)."""
    if len(x) < 4:
        return 1.0 / max(x[-1] - x[0], 1e-12)
    spectrum = np.abs(np.fft.rfft(y - y.mean()))
    frequencies = np.fft.rfftfreq(len(x), d=(x[-1] - x[0]) / (len(x) - 1))
    return float(frequencies[1 + int(np.argmax(spectrum[1:]))])


# y = A exp(-x / tau) + B: T1 and the Hahn echo
def _exp_decay(x, amplitude, tau, offset):
    return amplitude * np.exp(-x / tau) + offset


def _exp_guess(x, y):
    span = max(x[-1] - x[0], 1e-12)
    offset = y[-1]
    amplitude = y[0] - offset
    target = offset + amplitude / math.e
    below = np.nonzero((y - target) * np.sign(amplitude or 1.0) <= 0)[0]
    tau = x[below[0]] - x[0] if len(below) and x[below[0]] > x[0] else span / 3
    return amplitude, tau, offset


EXP_DECAY = Model(
    name="exponential decay",
    formula="A·exp(−t/τ) + B",
    parameters=("amplitude", "tau", "offset"),
    function=_exp_decay,
    guess=_exp_guess,
    lower=(-2.0, 1e-9, -1.0),
    upper=(2.0, np.inf, 2.0),
)


# y = A exp(-x / tau) cos(2 pi f x + phi) + B: Ramsey fringes
def _damped_cosine(x, amplitude, tau, frequency, phase, offset):
    return amplitude * np.exp(-x / tau) * np.cos(2 * np.pi * frequency * x + phase) + offset


def _damped_cosine_guess(x, y):
    span = max(x[-1] - x[0], 1e-12)
    return (y.max() - y.min()) / 2, span / 2, _dominant_frequency(x, y), 0.0, float(y.mean())


DAMPED_COSINE = Model(
    name="damped cosine",
    formula="A·exp(−t/τ)·cos(2πft + φ) + B",
    parameters=("amplitude", "tau", "frequency", "phase", "offset"),
    function=_damped_cosine,
    guess=_damped_cosine_guess,
    lower=(0.0, 1e-9, 0.0, -2 * np.pi, -1.0),
    upper=(2.0, np.inf, np.inf, 2 * np.pi, 2.0),
)


# y = A cos(2 pi f x + phi) + B: Rabi oscillations in the drive amplitude
def _cosine(x, amplitude, frequency, phase, offset):
    return amplitude * np.cos(2 * np.pi * frequency * x + phase) + offset


def _cosine_guess(x, y):
    return (y.max() - y.min()) / 2, _dominant_frequency(x, y), np.pi, float(y.mean())


COSINE = Model(
    name="cosine",
    formula="A·cos(2πfa + φ) + B",
    parameters=("amplitude", "frequency", "phase", "offset"),
    function=_cosine,
    guess=_cosine_guess,
    lower=(0.0, 0.0, -2 * np.pi, -1.0),
    upper=(2.0, np.inf, 2 * np.pi, 2.0),
)
