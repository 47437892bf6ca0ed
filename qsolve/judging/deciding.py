"""Deciding a case, and comparing the quantum method with the baseline.

Seed: benchmarks-and-gates.md, "Expectations", "What fails a case whatever expect says" and
"Comparison with the baseline". The failure checks are an ordered list; the first that applies gives
the message. Then ``max_abs_error`` (when set) or ``max_gap`` decides, without a message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names in signatures only: the track record's readers load no workflow models
    from qsolve.judging.results import MethodOutcome, Quality
    from qsolve.workflow.cases import Expect
    from qsolve.workflow.manifest import Metric

MATCHES = "Matches the best classical answer"
BELOW = "Below the best classical answer"
#: the track record's verdict of a row with nothing compared (a method crashed, no usable objective): never
#: null, so that ``verdict = MATCHES`` in an analyst's SQL is false for it, not unknown
NOT_COMPARED = "Not compared: no answer to compare"
GAP_SLACK = 1e-9
MIN_COVERAGE = 0.9
WILSON_Z = 1.959963984540054  # 95%
#: the largest test set an ``error_rate`` method may give as ``details["n_test"]``: every whole number up
#: to it is a double's exactly, and a Wilson interval over it is computed without overflow
MAX_N_TEST = 2**53


@dataclass(frozen=True)
class Evidence:
    """What the checks look at: every method, the headline quantum method and the baseline."""

    methods: list[MethodOutcome]
    quantum: MethodOutcome
    baseline: MethodOutcome
    expect: Expect
    quality: Quality


def _num(x: float) -> str:
    """A number as a message shows it: up to four decimals, no trailing zeros."""
    text = f"{x:.4f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


def _below(x: float, bound: float, decimals: int = 4) -> str:
    """``x``, which is below ``bound``, as a message shows it: as :func:`_num` does, with as many more
    decimals as it takes not to read as ``bound`` or above (0.96999 is "0.96999", never "0.97")."""
    for d in range(decimals, 13):
        text = f"{x:.{d}f}".rstrip("0").rstrip(".")
        if float(text) < bound:
            return text if text not in ("-0", "") else "0"
    return repr(x)


def _claim(x: float) -> str:
    return f"{x:.10g}"


def no_headline_metric(e: Evidence) -> str | None:
    if not (e.quantum.usable and e.baseline.usable):
        return "no headline metric: quantum and reference could not be compared"
    return None


def method_failed(e: Evidence) -> str | None:
    for m in e.methods:
        if m.unavailable is not None and m.unavailable.startswith("failed:"):
            return f"method {m.name} {m.unavailable}"
    return None


def claim_differs(e: Evidence) -> str | None:
    """A method's claimed objective its solution does not give; one that is not finite (its name,
    ``nan``, ``inf``, ``-inf``) is given by no solution whose objective is a number."""
    for m in e.methods:
        if m.claimed is None or m.objective is None:
            continue
        if isinstance(m.claimed, str) or not claim_holds(m.claimed, m.objective):
            said = m.claimed if isinstance(m.claimed, str) else _claim(m.claimed)
            return f"method {m.name} claimed {said}, its solution gives {_claim(m.objective)}"
    return None


def claim_holds(claimed: float, recomputed: float) -> bool:
    return abs(claimed - recomputed) <= 1e-6 * max(1.0, abs(recomputed))


def no_circuit(e: Evidence) -> str | None:
    if e.quantum.dispatches == 0:
        return f"quantum method {e.quantum.name} sent no circuit to the backend"
    return None


def no_mitigation_numbers(e: Evidence) -> str | None:
    q, x = e.quality, e.expect
    if (x.min_fidelity is not None and q.fidelity is None) or (
        x.min_postselection is not None and q.postselection is None
    ):
        return "no mitigation numbers reported"
    return None


def low_coverage(e: Evidence) -> str | None:
    if e.expect.min_fidelity is not None and (e.quality.coverage or 0.0) < MIN_COVERAGE:
        pct = _below(100 * (e.quality.coverage or 0.0), 100 * MIN_COVERAGE, decimals=1)
        return (
            f"only {pct}% of the quantum method's shots could be scored against an ideal output "
            "(circuits over 20 qubits or with mid-circuit measurement cannot be scored)"
        )
    return None


def low_fidelity(e: Evidence) -> str | None:
    bound, value = e.expect.min_fidelity, e.quality.fidelity
    if bound is not None and value is not None and value < bound:
        return f"fidelity {_below(value, bound)} < {_num(bound)}"
    return None


def low_postselection(e: Evidence) -> str | None:
    bound, value = e.expect.min_postselection, e.quality.postselection
    if bound is not None and value is not None and value < bound:
        return f"post-selection {_below(value, bound)} < {_num(bound)}"
    return None


def no_circuit_size(e: Evidence) -> str | None:
    if e.expect.max_two_qubit_gates is not None and not e.quantum.circuits:
        return "no circuit size reported"
    return None


def too_many_two_qubit_gates(e: Evidence) -> str | None:
    bound = e.expect.max_two_qubit_gates
    if bound is not None and e.quantum.circuits:
        worst = max(c.two_qubit_gates for c in e.quantum.circuits)
        if worst > bound:
            return f"{worst} two-qubit gates > {bound}"
    return None


#: The seed's checks, in the seed's order.
FAILURE_CHECKS: tuple[Callable[[Evidence], str | None], ...] = (
    no_headline_metric,
    method_failed,
    claim_differs,
    no_circuit,
    no_mitigation_numbers,
    low_coverage,
    low_fidelity,
    low_postselection,
    no_circuit_size,
    too_many_two_qubit_gates,
)


def first_failure(e: Evidence) -> str | None:
    for check in FAILURE_CHECKS:
        message = check(e)
        if message is not None:
            return message
    return None


def gap(quantum: float, baseline: float) -> float:
    return (quantum - baseline) / max(abs(baseline), 1e-12)


def meets_expect(expect: Expect, quantum: float, baseline: float) -> bool:
    if expect.max_abs_error is not None:
        return abs(quantum - baseline) <= expect.max_abs_error + GAP_SLACK  # 1.1 - 1.0 is 0.1 too
    return gap(quantum, baseline) <= expect.max_gap + GAP_SLACK


def broken_bound(expect: Expect, quantum: float, baseline: float) -> str | None:
    """The bound a case's numbers broke, for people (``gap 0.0189 > max_gap 0``,
    ``abs error 0.5 > max_abs_error 0.1``); ``None`` when they meet it. The case's ``message`` stays
    ``null`` for these, as the seed says: this is only what the terminal, the logs and the page show."""
    if meets_expect(expect, quantum, baseline):
        return None
    if expect.max_abs_error is not None:
        return f"abs error {_above(abs(quantum - baseline), expect.max_abs_error)} > max_abs_error " + _num(
            expect.max_abs_error
        )
    return f"gap {_above(gap(quantum, baseline), expect.max_gap)} > max_gap {_num(expect.max_gap)}"


def _above(x: float, bound: float, decimals: int = 4) -> str:
    """``x``, which is above ``bound``, never reading as ``bound`` or below."""
    for d in range(decimals, 13):
        text = f"{x:.{d}f}".rstrip("0").rstrip(".")
        if float(text) > bound:
            return text
    return repr(x)


@dataclass(frozen=True)
class Comparison:
    """The accuracy (``None`` where the seed's formula is undefined: a zero baseline of a relative
    metric, ``why_none`` saying so), its plus-or-minus and the verdict. An accuracy is in [0, 1]."""

    accuracy: float | None
    accuracy_pm: float | None
    verdict: str
    why_none: str | None = None


#: why a relative accuracy is undefined: ``(q - r) / abs(r)`` at ``r = 0``
ZERO_BASELINE = "the baseline is 0: no relative accuracy"
ZERO_BASELINE_FIX = (
    "add a constant to evaluate so that the reference's objective is not 0, or set metric.tolerance_abs"
)
BEATS_REFERENCE_HINT = (
    "is `reference` exact, and is `evaluate` lower-is-better (a maximisation returns the negative)?"
)


#: why an ``error_rate`` accuracy is undefined: ``1 - q`` where ``q`` is not a share of mistakes
NOT_A_SHARE = "is not a share of mistakes (error_rate takes 0 to 1)"
NOT_A_SHARE_FIX = "evaluate must return the share of the test set it got wrong, not a count"


def zero_baseline(metric: Metric, r: float) -> bool:
    """Whether the baseline leaves the seed's relative accuracy undefined: exactly 0 (the formulas
    divide by ``abs(r)``, which is defined at every other baseline, 1e-13 too)."""
    return metric.kind != "error_rate" and r == 0


def is_share(x: float) -> bool:
    """Whether ``x`` is a share (of mistakes, for ``error_rate``): from 0 to 1."""
    return 0.0 <= x <= 1.0


def _unit(x: float) -> float:
    return min(max(x, 0.0), 1.0) + 0.0  # max(-0.0, 0.0) is -0.0: never a negative zero


def wilson_interval(rate: float, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The 95% Wilson score interval of a share ``rate`` observed over ``n`` trials."""
    denom = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denom
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denom
    return centre - half, centre + half


def compare(metric: Metric, q: float, r: float, stderr: float | None, n_test: int | None) -> Comparison:
    """Accuracy, its plus-or-minus and the verdict for the manifest's metric kind."""
    tol_abs = metric.tolerance_abs
    if stderr is not None and not (stderr >= 0 and math.isfinite(stderr)):
        stderr = None  # a MethodResult refuses a negative one: none is never a negative plus-or-minus
    stderr = None if stderr is None else stderr + 0.0  # -0.0 is 0.0: no negative zero plus-or-minus
    if metric.kind == "error_rate":
        bound = r + metric.tolerance + (tol_abs or 0.0)
        pm = low = None
        if n_test and 1 <= n_test <= MAX_N_TEST and is_share(q):
            low, high = wilson_interval(q, n_test)
            pm = (high - low) / 2
        matches = q <= bound or (low is not None and low <= bound)
        verdict = MATCHES if matches else BELOW
        if not is_share(q):  # 1 - q of a "share" of 1.5 is no accuracy: none, and the reason
            return Comparison(None, None, verdict, f"the quantum objective {_claim(q)} {NOT_A_SHARE}")
        return Comparison(_unit(1 - q), pm, verdict)
    accuracy = relative_accuracy(metric.kind, q, r)
    pm = stderr / abs(r) if stderr is not None and r != 0 else None
    pm = pm if pm is None or math.isfinite(pm) else None  # a stderr of 1 over a baseline of 1e-320
    matches = (
        (accuracy is not None and _raw(metric.kind, q, r) >= 1 - metric.tolerance - 1e-12)
        or (tol_abs is not None and abs(q - r) <= tol_abs)
        or (stderr is not None and stderr <= abs(r) / 4 and abs(q - r) <= 2 * stderr)
        or (metric.kind == "relative_gap" and q <= r)
        or q == r  # no difference at all: a match under either kind, a zero baseline's too
    )
    if accuracy is None:  # the seed's formula divides by 0: no number, and the reason
        return Comparison(None, None, MATCHES if matches else BELOW, zero_baseline_why(metric, q, r))
    return Comparison(accuracy, pm, MATCHES if matches else BELOW)


def _raw(kind: str, q: float, r: float, floor: float = 0.0) -> float:
    """The seed's relative accuracy, unclamped, dividing by ``abs(r)`` (``max(abs(r), floor)``: a run
    stored before issue 37 divided by ``max(abs(r), 1e-12)``, which :func:`settled_accuracy` recognises).
    ``r`` is not 0 unless ``floor`` is above it. A quotient past a double's range is infinite, and the
    accuracy then ``-inf`` (clamped to 0)."""
    try:
        worse = (q - r) / max(abs(r), floor)
    except (OverflowError, ZeroDivisionError):  # pragma: no cover - r is never 0 here
        worse = math.inf
    return 1 - abs(worse) if kind == "relative_error" else 1 - max(worse, 0.0)


def relative_accuracy(kind: str, q: float, r: float) -> float | None:
    """The seed's accuracy of a relative metric (``relative_gap``, ``relative_error``) in [0, 1], or
    ``None`` at a baseline of exactly 0, where it is undefined (the formula divides by ``abs(r)``: at
    ``r = 1e-13`` it is defined, 1 for the reference's own answer). The one rule: :func:`compare` judges
    with it, and the track record files a stored result's accuracy by it (:func:`settled_accuracy`)."""
    if r == 0:
        return None
    return _unit(_raw(kind, q, r))


def zero_baseline_why(metric: Metric, q: float, r: float) -> str:
    """Why a zero baseline's case has no accuracy, and what decided its verdict."""
    tol_abs = metric.tolerance_abs
    if tol_abs is None:
        return ZERO_BASELINE
    compared = f"abs error {_num(abs(q - r))} with tolerance_abs {_num(tol_abs)}"
    return f"{ZERO_BASELINE} (the verdict compares {compared})"


def zero_baseline_warning(metric: Metric, q: float, r: float) -> str:
    """The warning of a zero baseline: what it means, and what to do unless ``tolerance_abs`` is set."""
    said = f"{zero_baseline_why(metric, q, r)}, so this case has none and is left out of the headline"
    return said if metric.tolerance_abs is not None else f"{said}: {ZERO_BASELINE_FIX}"


def settled_accuracy(
    q: float | None, r: float | None, accuracy: float | None, accuracy_pm: float | None
) -> tuple[float | None, float | None, bool]:
    """A stored result's ``(accuracy, accuracy_pm, zero_baseline)`` as the track record files it, never
    trusting the stored accuracy (a run stored before issue 37 kept the seed's number unclamped:
    -3999999999999 at a zero baseline). The metric kind is not stored: a stored accuracy that one of
    the relative formulas gives (clamped or not) is that metric's, and :func:`relative_accuracy` decides
    it again; any other is ``error_rate``'s ``1 - q``, clamped to [0, 1]. Where ``1 - q`` and a relative
    formula agree (``q = r = 0``) the stored number is kept."""
    if accuracy is None or q is None or r is None:
        return accuracy, accuracy_pm, False
    if accuracy_pm is not None and not accuracy_pm >= 0:  # a negative stderr's, kept before it was refused
        accuracy_pm = None
    accuracy_pm = None if accuracy_pm is None else accuracy_pm + 0.0  # a -0.0 stored before: 0.0
    for kind in ("relative_gap", "relative_error"):
        raws = [_raw(kind, q, r, floor=1e-12)] + ([_raw(kind, q, r)] if r != 0 else [])
        if any(
            math.isclose(accuracy, raw, rel_tol=1e-9, abs_tol=1e-9)
            or math.isclose(accuracy, _unit(raw), rel_tol=1e-9, abs_tol=1e-9)
            for raw in raws
        ):
            settled = relative_accuracy(kind, q, r)
            if settled is None and not math.isclose(accuracy, _unit(1 - q), abs_tol=1e-9):
                return None, None, True
            return (_unit(accuracy) if settled is None else settled), accuracy_pm, False
    if not is_share(q):  # error_rate's 1 - q of an objective that is no share: none (NOT_A_SHARE)
        return None, None, False
    return _unit(accuracy), accuracy_pm, False


def beats_reference(metric: Metric, q: float, r: float, stderr: float | None) -> bool:
    """Whether the quantum objective ``q`` is better (lower) than the reference's ``r`` by more than
    the metric's tolerance, its ``tolerance_abs`` and twice the quantum method's ``stderr``: a
    reference the guide asks to be exact was beaten, or ``evaluate`` has the wrong sign."""
    if metric.kind == "error_rate":
        allowed = metric.tolerance + (metric.tolerance_abs or 0.0)
    else:
        allowed = max(metric.tolerance * abs(r), metric.tolerance_abs or 0.0)
    allowed = max(allowed, 2 * stderr if stderr is not None else 0.0, 1e-9 * max(1.0, abs(r)))
    return r - q > allowed


def case_warnings(metric: Metric, quantum: MethodOutcome, q: float, r: float) -> list[str]:
    """What the numbers of a compared case say may be wrong with the workflow, never changing its
    verdict: a zero baseline (no relative accuracy), an ``error_rate`` objective that is no share (no
    accuracy where it is the quantum method's), the quantum method beating the reference."""
    out = []
    if zero_baseline(metric, r):
        out.append(zero_baseline_warning(metric, q, r))
    if metric.kind == "error_rate":
        if not is_share(q):
            out.append(
                f"quantum method {quantum.name}'s objective {_claim(q)} {NOT_A_SHARE}, so this case has no "
                f"accuracy: {NOT_A_SHARE_FIX}"
            )
        if not is_share(r):
            out.append(f"the reference's objective {_claim(r)} {NOT_A_SHARE}: {NOT_A_SHARE_FIX}")
    if beats_reference(metric, q, r, quantum.stderr):
        out.append(
            f"quantum method {quantum.name} beat the reference: {_claim(q)} against {_claim(r)} "
            f"(lower is better), beyond the tolerance; {BEATS_REFERENCE_HINT}"
        )
    return out
