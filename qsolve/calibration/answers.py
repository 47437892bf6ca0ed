"""Reading the six answers (docs/calibration.md, "Reading the answers").

Answers arrive as free text and are read the way the QCalEval benchmark's public scoring scripts read
them: JSON by trying the whole text, the first fenced code block, the first ``{...}``, the first
``[...]``; labels after ``Classification:``, ``Assessment:`` and ``Status:`` with bold markers and a
trailing period stripped; a fit label tested for "unreliable" and "no fit" before "reliable"; a status
from ``Status:``, then ``Classification:``, then the first line, then any allowed code in the text
(longer codes first), only the allowed codes counting.

    reading = read_answers({"calibration_diagnosis": "Status: **SHORT_T1**\\n..."}, criteria=ref.criteria)
    reading.diagnosis.status      # "SHORT_T1"
    reading.answers               # every answer as returned, beside the reading
    reading.complete, reading.missing_keys

Every raw answer is kept as it arrived (:class:`Reading`); nothing here calls a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from qsolve.calibration.knowledge import status_code
from qsolve.calibration.questions import DEFAULT_STATUSES, QUESTION_KEYS, QuestionKey

Outcome = Literal["expected", "suboptimal", "anomalous", "apparatus"]
FitAssessment = Literal["reliable", "unreliable", "no_fit"]

# --- JSON --------------------------------------------------------------------------------------------

_FENCED = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def _loads(text: str) -> dict | list | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    return value if isinstance(value, dict | list) else None


def _first(text: str, opening: str, closing: str) -> dict | list | None:
    """The first ``{...}`` (or ``[...]``): the value that starts at the first opening bracket, else the
    text from that bracket to the last closing one."""
    start = text.find(opening)
    if start < 0:
        return None
    try:
        value, _end = _DECODER.raw_decode(text, start)
    except (json.JSONDecodeError, ValueError):
        end = text.rfind(closing)
        return _loads(text[start : end + 1]) if end > start else None
    return value if isinstance(value, dict | list) else None


def parse_json(text: str | None) -> dict | list | None:
    """A JSON object or array read from an answer: the whole text, the first fenced code block, the
    first ``{...}``, the first ``[...]``, in that order; a scalar (``42``, ``"x"``) does not count."""
    if not text or not text.strip():
        return None
    text = text.strip()
    found = _loads(text)
    if found is not None:
        return found
    m = _FENCED.search(text)
    if m:
        found = _loads(m.group(1).strip())
        if found is not None:
            return found
    found = _first(text, "{", "}")
    if found is not None:
        return found
    return _first(text, "[", "]")


# --- labels ------------------------------------------------------------------------------------------


def _clean_value(value: str) -> str:
    """Bold markers and a trailing period stripped (and stray emphasis, backticks, quotes at the ends)."""
    value = value.replace("**", "").replace("__", "").strip()
    value = value.strip("*_`\"' \t").strip()
    while value.endswith("."):
        value = value[:-1].rstrip()
    return value


def _label_pattern(name: str) -> re.Pattern[str]:
    words = r"[ _]+".join(re.escape(w) for w in name.split())
    return re.compile(
        rf"\b{words}\b[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?(.*)$", re.IGNORECASE | re.MULTILINE
    )


def label(text: str | None, name: str) -> str | None:
    """The value after ``<name>:`` (the first such line; case ignored; ``**Name:**`` and ``Name: **x**``
    read alike), cleaned; when the line holds nothing more, the next non-blank line."""
    if not text:
        return None
    m = _label_pattern(name).search(text)
    if not m:
        return None
    value = _clean_value(m.group(1))
    if not value:
        rest = text[m.end() :].lstrip("\r\n")
        for line in rest.splitlines():
            if line.strip():
                value = _clean_value(line)
                break
    return value or None


def _rest_after(text: str, name: str) -> str | None:
    """Everything after ``<name>:``, to the end of the answer (multi-line), cleaned at the ends."""
    m = _label_pattern(name).search(text)
    if not m:
        return None
    rest = (m.group(1) + text[m.end() :]).replace("**", "").strip()
    return rest or None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _clean_value(line.strip().lstrip("#>-* ").strip())
    return ""


def _short_first_line(text: str) -> str | None:
    """The first line, when it is short enough (four words or fewer) to be a bare label."""
    line = _first_line(text)
    return line if line and len(line.split()) <= 4 else None


# --- the conclusion and the fit ----------------------------------------------------------------------

_OUTCOME_WORDS: tuple[tuple[Outcome, re.Pattern[str]], ...] = (
    ("expected", re.compile(r"\bexpected\b", re.IGNORECASE)),
    ("suboptimal", re.compile(r"\bsub[- ]?optimal\b", re.IGNORECASE)),
    ("anomalous", re.compile(r"\banomal(?:ous|y|ies)\b", re.IGNORECASE)),
    ("apparatus", re.compile(r"\bapparatus\b", re.IGNORECASE)),
)


def outcome_of(value: str | None) -> Outcome | None:
    """expected, suboptimal, anomalous or apparatus: the word that comes first in the label ("Expected
    behavior", "Suboptimal parameters", ...); "unexpected" is not "expected"."""
    if not value:
        return None
    hits = [(m.start(), name) for name, pattern in _OUTCOME_WORDS if (m := pattern.search(value))]
    return min(hits)[1] if hits else None


def classification(text: str | None) -> Outcome | None:
    """The outcome after ``Classification:``, else a bare first line that names one."""
    if not text:
        return None
    found = label(text, "Classification")
    if found is not None:
        return outcome_of(found)
    return outcome_of(_short_first_line(text))


def fit_assessment_of(value: str | None) -> FitAssessment | None:
    """ "unreliable" (or "not reliable") tested first, then "no fit" / "no_fit" / "no-fit", then
    "reliable", so that neither reads as reliable."""
    if not value:
        return None
    low = value.lower()
    if "unreliable" in low or re.search(r"\bnot\s+reliable\b", low):
        return "unreliable"
    if re.search(r"\bno[ _-]?fit\b", low):
        return "no_fit"
    if "reliable" in low:
        return "reliable"
    return None


def fit_assessment(text: str | None) -> FitAssessment | None:
    """The assessment after ``Assessment:``, else a bare first line that names one."""
    if not text:
        return None
    found = label(text, "Assessment")
    if found is not None:
        return fit_assessment_of(found)
    return fit_assessment_of(_short_first_line(text))


def reason(text: str | None, field: str) -> str | None:
    """The text after ``Reason:``, else everything after the ``<field>:`` line, else None."""
    if not text:
        return None
    after = _rest_after(text, "Reason")
    if after:
        return after
    m = _label_pattern(field).search(text)
    if m:
        rest = text[m.end() :].strip()
        return rest or None
    return None


# --- the status --------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def allowed_codes(criteria: Mapping[str, str] | Iterable[str] | None) -> tuple[str, ...]:
    """The task's criteria keys, else SUCCESS, SUBOPTIMAL, NO_SIGNAL, ANOMALOUS."""
    codes = tuple(criteria) if criteria else ()
    return codes or tuple(DEFAULT_STATUSES)


def _code_in(value: str | None, allowed: tuple[str, ...]) -> str | None:
    """The label's first word as a code, else the whole label upper-snake-cased, when it is allowed."""
    if not value:
        return None
    m = _TOKEN.search(value)
    if m and m.group(0).upper() in allowed:
        return m.group(0).upper()
    whole = status_code(value)
    return whole if whole in allowed else None


def status_of(text: str | None, criteria: Mapping[str, str] | Iterable[str] | None = None) -> str | None:
    """A status read from ``Status:``, then ``Classification:``, then the first line, then any allowed
    code found in the text (case ignored, whole words, longer codes first); only allowed codes count."""
    if not text:
        return None
    allowed = allowed_codes(criteria)
    for name in ("Status", "Classification"):
        found = _code_in(label(text, name), allowed)
        if found:
            return found
    first = _first_line(text).upper()
    if first in allowed:
        return first
    upper = text.upper()
    for code in sorted(allowed, key=len, reverse=True):
        if re.search(rf"(?<![A-Z0-9_]){re.escape(code)}(?![A-Z0-9_])", upper):
            return code
    return None


_NONE = {"none", "n/a", "na", "null", "-", "—", "not applicable", "no change", "not needed"}


def suggested_range(text: str | None) -> str | None:
    """The value after ``Suggested range:``; "none", "n/a", "null", "-" read as no range."""
    value = label(text, "Suggested range")
    if value is None or value.lower() in _NONE:
        return None
    return value


def notes(text: str | None) -> str | None:
    """The text after ``Notes:`` (to the end); else the answer without its Status and range lines."""
    if not text:
        return None
    after = _rest_after(text, "Notes")
    if after:
        return after
    kept = [
        line
        for line in text.splitlines()
        if line.strip()
        and not _label_pattern("Status").search(line)
        and not _label_pattern("Suggested range").search(line)
    ]
    return "\n".join(kept).strip() or None


# --- the diagnosis -----------------------------------------------------------------------------------


class Diagnosis(BaseModel):
    """The parsed reading of an evaluation's answers; a field is None when its question was not asked
    or its answer could not be read."""

    status: str | None = None  #: calibration_diagnosis
    suggested_range: str | None = None
    notes: str | None = None
    outcome: Outcome | None = None  #: experimental_conclusion's classification
    outcome_reason: str | None = None
    fit_assessment: FitAssessment | None = None  #: fit_reliability
    fit_reason: str | None = None
    parameters: dict[str, Any] | list[Any] | str | None = None  #: parameter_extraction
    description: dict[str, Any] | list[Any] | str | None = None  #: technical_description
    significance: str | None = None  #: experimental_significance
    success: bool | None = None

    @property
    def classification(self) -> Outcome | None:
        return self.outcome


#: the diagnosis field that holds each question's reading
READING_FIELD: dict[QuestionKey, str] = {
    "technical_description": "description",
    "experimental_conclusion": "outcome",
    "experimental_significance": "significance",
    "fit_reliability": "fit_assessment",
    "parameter_extraction": "parameters",
    "calibration_diagnosis": "status",
}


def success_of(diagnosis: Diagnosis, questions: Iterable[str]) -> bool | None:
    """The status is SUCCESS; or, when the status question was not asked, the outcome is expected;
    None when neither was asked."""
    asked = set(questions)
    if "calibration_diagnosis" in asked:
        return diagnosis.status == "SUCCESS"
    if "experimental_conclusion" in asked:
        return diagnosis.outcome == "expected"
    return None


def missing_keys(diagnosis: Diagnosis, questions: Iterable[str]) -> list[str]:
    """The questions asked whose reading is absent (no answer, or one that could not be read), in the
    order of the six keys; derived again on every load, so old records are judged alike."""
    asked = set(questions)
    out: list[str] = []
    for key in QUESTION_KEYS:
        if key in asked:
            value = getattr(diagnosis, READING_FIELD[key])
            if value is None or (isinstance(value, str) and not value.strip()):
                out.append(key)
    return out


def is_complete(diagnosis: Diagnosis, questions: Iterable[str]) -> bool:
    return not missing_keys(diagnosis, questions)


class Reading(BaseModel):
    """The answers as returned, beside their parsed reading."""

    questions: list[QuestionKey]
    answers: dict[str, str | None]
    diagnosis: Diagnosis
    allowed_statuses: list[str]
    complete: bool = False
    missing_keys: list[str] = Field(default_factory=list)


def _json_or_text(text: str | None) -> dict | list | str | None:
    if text is None or not text.strip():
        return None
    found = parse_json(text)
    return found if found is not None else text.strip()


def read_answers(
    answers: Mapping[str, str | None],
    *,
    questions: Iterable[QuestionKey] | None = None,
    criteria: Mapping[str, str] | Iterable[str] | None = None,
) -> Reading:
    """Read an evaluation's answers. ``questions`` are those asked (default: the keys of ``answers``;
    an answer of None is a question asked that got no answer); ``criteria`` the task's, whose keys are
    the statuses allowed."""
    asked = [k for k in QUESTION_KEYS if k in set(questions if questions is not None else answers)]
    raw = {k: answers.get(k) for k in asked}
    allowed = allowed_codes(criteria)

    got = raw.get
    conclusion = got("experimental_conclusion")
    fit = got("fit_reliability")
    status_text = got("calibration_diagnosis")
    significance = got("experimental_significance")
    diagnosis = Diagnosis(
        description=_json_or_text(got("technical_description")),
        outcome=classification(conclusion),
        outcome_reason=reason(conclusion, "Classification"),
        significance=significance.strip() if significance and significance.strip() else None,
        fit_assessment=fit_assessment(fit),
        fit_reason=reason(fit, "Assessment"),
        parameters=_json_or_text(got("parameter_extraction")),
        status=status_of(status_text, allowed),
        suggested_range=suggested_range(status_text),
        notes=notes(status_text),
    )
    diagnosis = diagnosis.model_copy(update={"success": success_of(diagnosis, asked)})
    missing = missing_keys(diagnosis, asked)
    return Reading(
        questions=asked,
        answers=raw,
        diagnosis=diagnosis,
        allowed_statuses=list(allowed),
        complete=not missing,
        missing_keys=missing,
    )
