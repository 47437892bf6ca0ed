"""The classical judge: a built-in evaluator that reads a task result's data and fit, not its figure.

It is the baseline a vision model must beat, and it makes an evaluation runnable with no endpoint. It
answers what the numbers decide and declines the rest, with an answer that says so (never a made-up
one):

=========================== ======================================================================
technical_description       declined: it does not see the figure
experimental_conclusion     from the first finding below: Expected, Suboptimal, Anomalous, Apparatus
experimental_significance   declined: what a result implies is a judgement it does not make
fit_reliability             No fit (no curve, or no signal to fit), Unreliable (any finding), Reliable
parameter_extraction        the fitted outputs under the reference's parameter names, as JSON
calibration_diagnosis       the finding mapped to a code of the task's criteria; declined when none maps
=========================== ======================================================================

Its answers are written in the forms the answer parser reads (``Classification: ...``, ``Assessment:
...``, ``Status: ...``), so that answers.py reads them exactly as it reads a model's.

The findings, checked in order, the first that holds deciding (:data:`CHECKS`):

1. ``no_signal``: the data span less than :data:`FLAT_CONTRAST` (when the raw points are given), or the
   fitted curve explains less than half their variance (R² < :data:`NO_SIGNAL_R2`) when they are not.
2. ``poor_readout``: an output named ``*fidelity*`` below the criterion's "below N" (default 0.8).
3. ``too_few_points``: fewer points than the criterion's "fewer than N ... points" (default 8).
4. ``aliased``: fewer points per oscillation period (1 / (frequency × step)) than the criterion's
   "fewer than N points" (default 4).
5. ``sweep_too_short``: the sweep spans less than ln 2 fitted decay constants (an output in the sweep's
   time unit: span / T1; under ln 2 the decay has not fallen to half its start), or fewer oscillation
   periods than the criterion's "fewer than N fringes" (default 1).
6. ``poor_fit``: R² < :data:`MIN_R2`, reduced χ² > :data:`MAX_REDUCED_CHI2`, or an output's standard
   error above :data:`MAX_RELATIVE_ERROR` of its value.

A finding becomes a status code of the task's criteria by keywords: the first code (after SUCCESS) whose
name holds one of the check's code words (``POINTS`` for too_few_points), else the first whose
criterion holds one of its phrases ("data points") among the codes no other check's code words claim.
Without criteria the generic statuses are used (NO_SIGNAL, SUBOPTIMAL, ANOMALOUS). Limits: the keywords
are English and few; a criterion that names its failure in other words is not found, and then the
status question is declined rather than guessed; the thresholds are the ones above unless the mapped
criterion states its own number in those phrasings; the judge knows nothing the numbers do not say
(a fit that is good but of the wrong feature, a figure that is mislabelled, a plot it never sees).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qsolve.evaluation.knowledge import Reference
from qsolve.evaluation.models import CLASSICAL_JUDGE
from qsolve.evaluation.prompts import Sweep, number
from qsolve.evaluation.questions import QUESTION_KEYS, QuestionKey
from qsolve.evaluation.units import convert, measure, named_unit, unit
from qsolve.evaluation.vlm import Answer, ModelAnswers, collect

#: the data's lowest-to-highest span below which a sweep shows no signal
FLAT_CONTRAST = 0.1
#: without the raw points: a fit explaining less of the variance than this found no signal
NO_SIGNAL_R2 = 0.5
#: a fit explaining less of the variance than this does not follow the data
MIN_R2 = 0.9
#: a reduced χ² above this: the curve strays from the data by more than shot noise
MAX_REDUCED_CHI2 = 5.0
#: a standard error above this share of its value leaves the parameter unconstrained
MAX_RELATIVE_ERROR = 0.5
#: a sweep shorter than this many decay constants has not seen the decay: ln 2, where an exponential has
#: fallen to half its start (the knowledge's "the last point is still above half of the first")
MIN_DECAY_CONSTANTS = math.log(2)
#: a healthy decay sweep ends at this many decay constants (the suggested range)
SUGGESTED_DECAY_CONSTANTS = 5.0

_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
)
_WORDS = {w: i for i, w in enumerate(_NUMBER_WORDS.split())}


class FitOutput(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    value: float
    unit: str = ""
    error: float | None = None


class FitEvidence(BaseModel):
    """What the classical judge reads: the sweep, the raw points when there are any, the fitted outputs
    and the fit's quality. Never shown to a vision model."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task: str
    #: the task result's own status: completed, or failed (its fit failed)
    status: str = "completed"
    message: str = ""
    sweep: Sweep | None = None
    #: the number of data points (default: the sweep's)
    points: int | None = None
    shots: int | None = None
    outputs: dict[str, FitOutput] = Field(default_factory=dict)
    #: the fitted model (its formula); None when the task draws no fitted curve
    fit_model: str | None = None
    r_squared: float | None = None
    reduced_chi2: float | None = None
    dof: int | None = None
    #: the sweep's span in fitted decay constants, (stop − start) / T1; None: computed from the outputs
    covered_fraction: float | None = None
    x: list[float] | None = None
    y: list[float] | None = None

    @classmethod
    def from_result(
        cls, result: Any, *, x: Sequence[float] | None = None, y: Sequence[float] | None = None
    ) -> FitEvidence:
        """From a task result (read by attribute: task, status, message, sweep, settings.shots, outputs,
        fit.model/r2/reduced_chi2/dof), with its raw points when the caller has them."""
        fit = getattr(result, "fit", None)
        sweep = getattr(result, "sweep", None)
        settings = getattr(result, "settings", None)
        return cls(
            task=result.task,
            status=getattr(result, "status", "completed"),
            message=getattr(result, "message", ""),
            sweep=None if sweep is None else Sweep.model_validate(sweep.model_dump()),
            shots=getattr(settings, "shots", None),
            outputs={k: FitOutput.model_validate(v.model_dump()) for k, v in result.outputs.items()},
            fit_model=getattr(fit, "model", None) if fit is not None else None,
            r_squared=getattr(fit, "r2", None) if fit is not None else None,
            reduced_chi2=getattr(fit, "reduced_chi2", None) if fit is not None else None,
            dof=getattr(fit, "dof", None) if fit is not None else None,
            x=list(x) if x is not None else None,
            y=list(y) if y is not None else None,
        )

    @property
    def n_points(self) -> int | None:
        if self.points is not None:
            return self.points
        if self.sweep is not None:
            return self.sweep.points
        return len(self.y) if self.y is not None else None

    @property
    def fitted(self) -> bool:
        return self.fit_model is not None or self.r_squared is not None


# --- what the numbers say ----------------------------------------------------------------------------


def _time_sweep(ev: FitEvidence) -> float | None:
    """The size of the sweep's unit in seconds, for a sweep over time; else None."""
    measured = measure(ev.sweep.unit) if ev.sweep is not None else None
    return measured[1] if measured is not None and measured[0] == "time" else None


def decay_constant(ev: FitEvidence) -> tuple[str, FitOutput] | None:
    """The first positive output in the sweep's time unit (T1 of a delay sweep in µs)."""
    if _time_sweep(ev) is None:
        return None
    for name, out in ev.outputs.items():
        if unit(out.unit) == unit(ev.sweep.unit) and out.value > 0:
            return name, out
    return None


def frequency(ev: FitEvidence) -> tuple[str, float] | None:
    """The first positive frequency output, as cycles per sweep unit (MHz over a µs sweep: as it is)."""
    step = _time_sweep(ev)
    if step is None:
        return None
    for name, out in ev.outputs.items():
        measured = measure(out.unit)
        if measured is not None and measured[0] == "frequency" and out.value > 0:
            return name, out.value * measured[1] * step
    return None


def coverage(ev: FitEvidence) -> float | None:
    """The sweep's span in decay constants: the evidence's own, else span / the decay constant."""
    if ev.covered_fraction is not None:
        return ev.covered_fraction
    constant = decay_constant(ev)
    if constant is None or ev.sweep is None:
        return None
    return (ev.sweep.stop - ev.sweep.start) / constant[1].value


def cycles(ev: FitEvidence) -> float | None:
    """Oscillation periods the sweep covers: an ``oscillations`` (or ``cycles``) output, else the
    frequency times the span."""
    for name in ("oscillations", "cycles", "fringes"):
        if name in ev.outputs:
            return ev.outputs[name].value
    f = frequency(ev)
    if f is None or ev.sweep is None:
        return None
    return f[1] * (ev.sweep.stop - ev.sweep.start)


def points_per_cycle(ev: FitEvidence) -> float | None:
    f = frequency(ev)
    step = _step(ev)
    if f is None or not step:
        return None
    return 1.0 / (f[1] * step)


def _step(ev: FitEvidence) -> float | None:
    if ev.sweep is None:
        return None
    if ev.sweep.step:
        return abs(ev.sweep.step)
    if ev.sweep.points > 1:
        return abs(ev.sweep.stop - ev.sweep.start) / (ev.sweep.points - 1)
    return None


def relative_errors(ev: FitEvidence) -> dict[str, float]:
    return {
        name: out.error / abs(out.value)
        for name, out in ev.outputs.items()
        if out.error is not None and out.value != 0 and math.isfinite(out.error)
    }


def _g(value: float) -> str:
    return f"{value:.3g}"


def _output_text(name: str, out: FitOutput) -> str:
    error = f" ± {_g(out.error)}" if out.error is not None else ""
    return f"{name} = {_g(out.value)}{error} {out.unit}".rstrip()


# --- thresholds a criterion may state ------------------------------------------------------------------


def _count(word: str) -> float | None:
    word = word.lower()
    if word in _WORDS:
        return float(_WORDS[word])
    try:
        return float(word)
    except ValueError:
        return None


def stated(criterion: str | None, pattern: str, default: float) -> float:
    """The number a criterion states in ``pattern`` (group 1: digits or a number word), else ``default``."""
    if criterion:
        m = re.search(pattern, criterion, re.IGNORECASE)
        if m:
            found = _count(m.group(1))
            if found is not None:
                return found
    return default


_FEWER_POINTS = r"fewer than (\w+(?:\.\d+)?)(?: \w+)? points"
_BELOW = r"(?:below|under|less than) (\d*\.?\d+)"
_FEWER_CYCLES = r"fewer than (\w+(?:\.\d+)?) (?:fringes|oscillations|periods|cycles)"


# --- the checks ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One finding: its test, the words that find its code, and what it makes of the outcome."""

    name: str
    code_words: tuple[str, ...]
    phrases: tuple[str, ...]
    generic: str  #: the status when the task states no criteria
    outcome: str  #: the conclusion's label
    test: Callable[[FitEvidence, str | None], str | None]  #: (evidence, mapped criterion) -> why, or None


def _no_signal(ev: FitEvidence, criterion: str | None) -> str | None:
    if ev.status == "failed" and not ev.outputs:
        return f"the task's own analysis gave no result ({ev.message or 'its fit failed'})"
    if ev.sweep is not None and ev.y:
        span = max(ev.y) - min(ev.y)
        if span < FLAT_CONTRAST:
            return f"the data span only {_g(span)} from lowest to highest: they are flat"
        return None
    if ev.r_squared is not None and ev.r_squared < NO_SIGNAL_R2:
        return (
            f"the fitted curve explains {max(ev.r_squared, 0.0):.0%} of the data's variance "
            f"(R² {_g(ev.r_squared)}): to the fit the data are as flat as noise"
        )
    return None


def _poor_readout(ev: FitEvidence, criterion: str | None) -> str | None:
    fidelities = {n: o.value for n, o in ev.outputs.items() if "fidelity" in n.lower()}
    if not fidelities:
        return None
    limit = stated(criterion, _BELOW, 0.8)
    name, worst = min(fidelities.items(), key=lambda kv: kv[1])
    if worst < limit:
        return f"the lowest readout fidelity, {name}, is {_g(worst)}, below {number(limit)}"
    return None


def _too_few_points(ev: FitEvidence, criterion: str | None) -> str | None:
    n = ev.n_points
    limit = stated(criterion, _FEWER_POINTS, 8)
    if ev.sweep is not None and n is not None and n < limit:
        return f"the sweep has {n} points, fewer than {number(limit)}"
    return None


def _aliased(ev: FitEvidence, criterion: str | None) -> str | None:
    per = points_per_cycle(ev)
    limit = stated(criterion, _FEWER_POINTS, 4)
    if per is not None and per < limit:
        name = frequency(ev)[0]  # type: ignore[index]
        return (
            f"at {name} = {_g(ev.outputs[name].value)} {ev.outputs[name].unit} and a step of "
            f"{_g(_step(ev) or 0)} {ev.sweep.unit if ev.sweep else ''}, each period spans {_g(per)} points, "
            f"fewer than {number(limit)}"
        )
    return None


def _sweep_too_short(ev: FitEvidence, criterion: str | None) -> str | None:
    covered = coverage(ev)
    if covered is not None and covered < MIN_DECAY_CONSTANTS:
        constant = decay_constant(ev)
        of = (
            f"{constant[0]} = {_g(constant[1].value)} {constant[1].unit}"
            if constant
            else "the decay constant"
        )
        return f"the sweep spans {_g(covered)} decay constants ({of}): it ends before the decay does"
    periods = cycles(ev)
    limit = stated(criterion, _FEWER_CYCLES, 1)
    if periods is not None and periods < limit:
        return f"the sweep covers {_g(periods)} oscillation periods, fewer than {number(limit)}"
    return None


def _poor_fit(ev: FitEvidence, criterion: str | None) -> str | None:
    reasons = []
    if ev.r_squared is not None and ev.r_squared < MIN_R2:
        reasons.append(f"R² is {_g(ev.r_squared)}, below {number(MIN_R2)}")
    if ev.reduced_chi2 is not None and ev.reduced_chi2 > MAX_REDUCED_CHI2:
        reasons.append(f"the reduced χ² is {_g(ev.reduced_chi2)}, above {number(MAX_REDUCED_CHI2)}")
    for name, rel in relative_errors(ev).items():
        if rel > MAX_RELATIVE_ERROR:
            reasons.append(f"{name}'s standard error is {rel:.0%} of its value")
    return "; ".join(reasons) or None


CHECKS: tuple[Check, ...] = (
    Check(
        "no_signal",
        ("NO_DRIVE", "NO_SIGNAL", "NO_RESPONSE", "FLAT", "DEAD"),
        ("lie flat", "no oscillation", "no signal", "no response", "does not reach"),
        "NO_SIGNAL",
        "Apparatus issue",
        _no_signal,
    ),
    Check(
        "poor_readout",
        ("READOUT", "FIDELITY", "ASSIGNMENT"),
        ("readout", "fidelity"),
        "NO_SIGNAL",
        "Apparatus issue",
        _poor_readout,
    ),
    Check(
        "too_few_points",
        ("POINTS", "SPARSE"),
        ("data points", "few points", "too few"),
        "SUBOPTIMAL",
        "Suboptimal parameters",
        _too_few_points,
    ),
    Check(
        "aliased",
        ("DETUNING", "ALIAS", "FRINGE", "UNDERSAMPL"),
        ("alias", "detuning"),
        "SUBOPTIMAL",
        "Suboptimal parameters",
        _aliased,
    ),
    Check(
        "sweep_too_short",
        ("SWEEP", "WINDOW", "RANGE", "TRUNCAT"),
        ("sweep ended", "never level", "not flattened", "too short"),
        "SUBOPTIMAL",
        "Suboptimal parameters",
        _sweep_too_short,
    ),
    Check(
        "poor_fit",
        ("POOR_FIT", "BAD_FIT", "FIT_FAILED"),
        ("fit does not follow", "poor fit", "strays from"),
        "ANOMALOUS",
        "Anomalous behavior",
        _poor_fit,
    ),
)


def _failure_codes(criteria: Mapping[str, str]) -> list[str]:
    return [code for code in criteria if code != "SUCCESS"]


def map_code(check: Check, criteria: Mapping[str, str]) -> str | None:
    """The task's code for this finding: by the code's name, else by its criterion's words (among the
    codes no other check's code words claim); None when nothing maps."""
    codes = _failure_codes(criteria)
    for code in codes:
        if any(word in code for word in check.code_words):
            return code
    claimed = {code for other in CHECKS if other is not check for code in codes if _claims(other, code)}
    for code in codes:
        if code not in claimed and any(p in criteria[code].lower() for p in check.phrases):
            return code
    return None


def _claims(check: Check, code: str) -> bool:
    return any(word in code for word in check.code_words)


@dataclass
class Judgement:
    """What the checks found: the first finding (None: none), its code, every finding's reason."""

    finding: Check | None
    status: str | None  #: the code, SUCCESS, or None when the finding maps to no code of the task
    reasons: dict[str, str] = field(default_factory=dict)  #: check name -> why it holds
    summary: list[str] = field(default_factory=list)  #: the fit's numbers, said once

    @property
    def outcome(self) -> str:
        return self.finding.outcome if self.finding else "Expected behavior"


def judge_evidence(reference: Reference, ev: FitEvidence) -> Judgement:
    """Every check run, the first that holds deciding; its code from the task's criteria."""
    criteria = reference.criteria
    generic = not criteria
    reasons: dict[str, str] = {}
    first: Check | None = None
    for check in CHECKS:
        code = None if generic else map_code(check, criteria)
        why = check.test(ev, criteria.get(code) if code else None)
        if why:
            reasons[check.name] = why
            first = first or check
    if first is None:
        status: str | None = "SUCCESS"
    elif generic:
        status = first.generic
    else:
        status = map_code(first, criteria)
    return Judgement(finding=first, status=status, reasons=reasons, summary=_summary(ev))


def _summary(ev: FitEvidence) -> list[str]:
    out = []
    if ev.r_squared is not None:
        chi = f", reduced χ² {_g(ev.reduced_chi2)}" if ev.reduced_chi2 is not None else ""
        out.append(f"R² {_g(ev.r_squared)}{chi}")
    out.extend(_output_text(n, o) for n, o in ev.outputs.items())
    if ev.n_points is not None and ev.sweep is not None:
        out.append(f"{ev.n_points} points")
    covered = coverage(ev)
    if covered is not None:
        out.append(f"the sweep spans {_g(covered)} decay constants")
    return out


# --- the answers -------------------------------------------------------------------------------------------

_SEES_NO_FIGURE = "It reads the task result's fitted outputs and sweep data, not the figure."
DECLINED: dict[str, str] = {
    "technical_description": "it does not see the figure, so it cannot describe it",
    "experimental_significance": "what a result implies for the calibration is a judgement it does not make",
}


def declined(why: str) -> str:
    return f"The classical judge declines this question: {why}. {_SEES_NO_FIGURE}"


def _sentence(parts: Sequence[str]) -> str:
    """The parts joined by semicolons, capitalised (unless it begins with a name such as ``t1``)."""
    text = "; ".join(parts)
    if not text:
        return ""
    first = text.split(" ", 1)[0]
    if not any(c in first for c in "_0123456789"):
        text = text[:1].upper() + text[1:]
    return text + "."


def _conclusion(j: Judgement) -> str:
    why = list(j.reasons.values())[:1] or j.summary
    return f"Classification: {j.outcome}\nReason: {_sentence(why) or 'The fit shows no fault.'}"


def _fit(j: Judgement, ev: FitEvidence) -> str:
    if not ev.fitted:
        return "Assessment: No fit\nReason: This task draws no fitted curve."
    if "no_signal" in j.reasons:
        return (
            f"Assessment: No fit\nReason: There is no signal for a curve to follow: {j.reasons['no_signal']}."
        )
    faults = [why for name, why in j.reasons.items() if name != "poor_readout"]
    if faults:
        return f"Assessment: Unreliable\nReason: {_sentence(faults)}"
    return f"Assessment: Reliable\nReason: {_sentence(j.summary)}"


def _value(value: float, kind: str) -> Any:
    if kind == "int":
        return round(value)
    if kind == "true | false":
        return bool(value)
    return value


def _in_unit(out: FitOutput, wanted: str | None) -> float:
    """A fitted value in the unit a parameter's description names (as it is where either is unknown)."""
    given = unit(out.unit)
    if wanted is None or given is None:
        return out.value
    converted = convert(out.value, given, wanted)
    return out.value if converted is None else converted


def _parameters(reference: Reference, ev: FitEvidence, j: Judgement) -> str | None:
    """The fitted outputs under the schema's names, each in the unit its description names; without a
    schema, each output keyed with its unit (``t1_us``), as the prompt asks."""
    determined = "no_signal" not in j.reasons
    if reference.parameters:
        values = {
            name: (
                _value(_in_unit(ev.outputs[name], named_unit(spec.description)), spec.type)
                if determined and name in ev.outputs
                else None
            )
            for name, spec in reference.parameters.items()
        }
    elif ev.outputs:
        values = {
            (f"{name}_{unit(out.unit)}" if unit(out.unit) else name): (out.value if determined else None)
            for name, out in ev.outputs.items()
        }
    else:
        return None
    return json.dumps(values, ensure_ascii=False)


def _nice(value: float) -> float:
    """Two significant figures."""
    if value == 0 or not math.isfinite(value):
        return value
    digits = 1 - math.floor(math.log10(abs(value)))
    return round(value, digits)


def _range(j: Judgement, ev: FitEvidence) -> str | None:
    """A sweep that would fix it: five decay constants for a short sweep (ten times the span when the
    constant is itself unconstrained), the same span with more points for too few points."""
    if ev.sweep is None or j.finding is None or j.finding.name not in ("sweep_too_short", "too_few_points"):
        return None
    start, stop = ev.sweep.start, ev.sweep.stop
    if j.finding.name == "sweep_too_short":
        constant = decay_constant(ev)
        rel = relative_errors(ev).get(constant[0]) if constant else None
        if constant is not None and rel is not None and rel <= MAX_RELATIVE_ERROR:
            stop = start + SUGGESTED_DECAY_CONSTANTS * constant[1].value
        else:
            stop = start + 10 * (ev.sweep.stop - ev.sweep.start)
        stop = _nice(stop)
    unit = f" [{ev.sweep.unit}]" if ev.sweep.unit else ""
    return f"({number(float(start))}, {number(float(stop))}){unit}"


def _diagnosis(j: Judgement, ev: FitEvidence) -> str | None:
    if j.status is None:
        return None
    suggested = _range(j, ev)
    notes = list(j.reasons.values())[:1] if j.finding else j.summary
    if j.finding and j.finding.name == "too_few_points":
        notes.append("the same range with more points would fix it")
    return (
        f"Status: {j.status}\nSuggested range: {suggested or 'none'}\n"
        f"Notes: {_sentence(notes) or 'The fit shows no fault.'}"
    )


def answers_of(
    reference: Reference, ev: FitEvidence | None, keys: Sequence[QuestionKey] = QUESTION_KEYS
) -> dict[QuestionKey, tuple[str, bool]]:
    """Each question's answer text and whether it is a declining one."""
    if ev is None:
        return {k: (declined("no fit evidence was given for this task result"), True) for k in keys}
    j = judge_evidence(reference, ev)
    out: dict[QuestionKey, tuple[str, bool]] = {}
    for key in keys:
        text: str | None = None
        why = DECLINED.get(key, "")
        if key in DECLINED:
            pass
        elif key == "experimental_conclusion":
            text = _conclusion(j)
        elif key == "fit_reliability":
            text = _fit(j, ev)
        elif key == "parameter_extraction":
            text = _parameters(reference, ev, j)
            why = "the result has no fitted outputs to report"
        else:
            text = _diagnosis(j, ev)
            found = j.reasons.get(j.finding.name, "") if j.finding else ""
            why = f"the data show a fault ({found}), but none of the task's statuses names it"
        out[key] = (text, False) if text is not None else (declined(why), True)
    return out


class ClassicalJudge:
    """The built-in evaluator, with the interface of a model: :meth:`ask` returns :class:`ModelAnswers`."""

    id = CLASSICAL_JUDGE

    def ask(
        self, reference: Reference, evidence: FitEvidence | None, keys: Sequence[QuestionKey] = QUESTION_KEYS
    ) -> ModelAnswers:
        started_at = datetime.now(UTC)
        start = time.perf_counter()
        texts = answers_of(reference, evidence, keys)
        took = time.perf_counter() - start
        answers = {
            key: Answer(
                question=key,
                text=text,
                attempts=1,
                stop_reason="declined" if refused else "stop",
                duration_seconds=took / max(1, len(texts)),
                declined=refused,
            )
            for key, (text, refused) in texts.items()
        }
        return collect(
            self.id, answers, [], started_at=started_at, duration_seconds=took, context_window=None
        )
