"""Reading the six answers (docs/calibration.md, "Reading the answers").

Answers arrive as free text and are read the way the QCalEval benchmark's public scoring scripts read
them: JSON by trying the whole text, the first fenced code block, the first ``{...}``, the first
``[...]``; labels after ``Classification:``, ``Assessment:`` and ``Status:`` with bold markers and a
trailing period stripped; a fit label tested for "unreliable" and "no fit" before "reliable"; a status
from a JSON answer's ``status``, then ``Status:``, then ``Classification:``, then the first line, then
the whole text only when it names exactly one allowed code that no sentence denies or doubts; an
answer that states no status plainly reads as None, never as a verdict it does not give. QCalEval's own
reading (any allowed code anywhere) is kept beside it as ``qcaleval_status``.

    reading = read_answers({"calibration_diagnosis": "Status: **SHORT_T1**\\n..."}, criteria=ref.criteria)
    reading.diagnosis.status      # "SHORT_T1"; None when the answer states no status plainly
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

from qsolve.evaluation.knowledge import status_code
from qsolve.evaluation.questions import DEFAULT_STATUSES, QUESTION_KEYS, QuestionKey
from qsolve.evaluation.units import convert, keyed, named_unit, quantity

Outcome = Literal["expected", "suboptimal", "anomalous", "apparatus"]
FitAssessment = Literal["reliable", "unreliable", "no_fit"]

# --- JSON --------------------------------------------------------------------------------------------

_FENCED = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def _loads(text: str) -> dict | list | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError):  # "[[[[...]]]]" nested past the stack
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
    except RecursionError:
        return None
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


def _alternatives(value: str) -> bool:
    """The value lists choices rather than picking one: the template's own ``<A | B | C>`` (a model
    that echoes the prompt) or any ``A | B``."""
    return "|" in value or bool(re.fullmatch(r"\s*<.*>\s*", value, re.DOTALL))


def outcome_of(value: str | None) -> Outcome | None:
    """expected, suboptimal, anomalous or apparatus: the word that comes first in the label ("Expected
    behavior", "Suboptimal parameters", ...); "unexpected" is not "expected"; a list of choices
    (``<Expected behavior | Suboptimal parameters | ...>``, an echoed prompt) is none."""
    if not value or _alternatives(value):
        return None
    hits = [(m.start(), name) for name, pattern in _OUTCOME_WORDS if (m := pattern.search(value))]
    if not hits:
        return None
    start, name = min(hits)
    if _doubted(value, start):  # "Not expected", "I cannot tell whether it is expected"
        return None
    return name


def classification(text: str | None) -> Outcome | None:
    """The outcome after ``Classification:``, else a bare first line that names one."""
    if not text:
        return None
    found = label(text, "Classification")
    if found is not None:
        first = outcome_of(found)  # two Classification: lines that disagree state no outcome
        return first if {outcome_of(v) for v in _labels(text, "Classification")} - {None} <= {first} else None
    return outcome_of(_short_first_line(text))


_FIT_WORDS: tuple[tuple[FitAssessment, re.Pattern[str]], ...] = (
    ("unreliable", re.compile(r"unreliable|\bnot\s+reliable\b", re.IGNORECASE)),
    ("no_fit", re.compile(r"\bno[ _-]?fit\b", re.IGNORECASE)),
    ("reliable", re.compile(r"reliable", re.IGNORECASE)),
)
#: the verdict named and then denied: "Unreliable is too strong", "Reliable is not right", "Unreliable
#: isn't fair"; only right after the word, so "Unreliable, not enough points" keeps its verdict
_FIT_DENIED_AFTER = re.compile(
    r"^[ \t]*(?:(?:is|was|would\s+be|seems|it'?s|'s|’s)\s+(?:not|never|too|wrong|incorrect|unfair|"
    r"an?\s+overstatement|overstated|an?\s+exaggeration|exaggerated|excessive|ruled\s+out|excluded)\b"
    r"|(?:isn'?t|wasn'?t|overstates|exaggerates|not|never|ruled\s+out|excluded)\b)",
    re.IGNORECASE,
)


def fit_assessment_of(value: str | None) -> FitAssessment | None:
    """ "unreliable" (or "not reliable") tested first, then "no fit" / "no_fit" / "no-fit", then
    "reliable", so that neither reads as reliable. The verdict found is None when a denial stands before
    it ("Not unreliable", "not a no fit", "isn't reliable"; "not reliable" is itself unreliable) or right
    after it ("Unreliable is too strong")."""
    if not value or hedged(value, negation=False):  # "I cannot tell whether it is reliable"
        return None
    if _alternatives(value):  # "<Reliable | Unreliable | No fit>": an echoed prompt picks nothing
        return None
    low = value.lower()
    if re.search(r"\b(?:cannot|can't|can not|unable to)\b", low):
        return None
    for name, pattern in _FIT_WORDS:
        m = pattern.search(value)
        if m is None:
            continue
        before = value[: m.start()]  # "No fit, so not reliable either": a verdict named is no denial
        if hedged(before, codes=("no fit", "no_fit", "no-fit"), negation=True):
            return None
        return None if _FIT_DENIED_AFTER.search(value[m.end() :]) else name
    return None


def fit_assessment(text: str | None) -> FitAssessment | None:
    """The assessment after ``Assessment:``, else a bare first line that names one."""
    if not text:
        return None
    found = label(text, "Assessment")
    if found is not None:
        first = fit_assessment_of(found)  # two Assessment: lines that disagree state no assessment
        return (
            first if {fit_assessment_of(v) for v in _labels(text, "Assessment")} - {None} <= {first} else None
        )
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


def qcaleval_status_of(
    text: str | None, criteria: Mapping[str, str] | Iterable[str] | None = None
) -> str | None:
    """QCalEval's own reading of a status, kept beside ours (``qcaleval_status``): ``Status:``, then
    ``Classification:``, then the first line, then any allowed code found anywhere in the text (case
    ignored, whole words, longer codes first), whatever surrounds it; only allowed codes count."""
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


#: words that deny or doubt what stands beside them ("not SUCCESS", "I cannot tell whether ...")
NEGATION = frozenset(
    [
        "not",
        "no",
        "never",
        "neither",
        "nor",
        "none",
        "cannot",
        "can't",
        "cant",
        "isn't",
        "isnt",
        "aren't",
        "doesn't",
        "don't",
        "won't",
        "wasn't",
        "without",
        "rather",
        "instead",
        "unlikely",
        "excluded",
        "exclude",
        "ruled",
        "rule",
    ]
)
UNCERTAINTY = frozenset(
    [
        "unclear",
        "uncertain",
        "unsure",
        "whether",
        "if",
        "maybe",
        "perhaps",
        "possibly",
        "possible",
        "might",
        "may",
        "could",
        "or",
        "probably",
        "likely",
        "unable",
        "impossible",
        "hard",
        "difficult",
        "ambiguous",
        "undetermined",
        "unknown",
        # doubts found by the independent test of issue 25 ("Status: SUCCESS is unlikely", "success, I
        # guess", "It's hardly a SUCCESS", "I refuse to answer"): doubts wherever they stand
        "unlikely",
        "guess",
        "hardly",
        "doubt",
        "doubtful",
        "tentative",
        "tentatively",
        "refuse",
        "sorry",
        # doubts found by the audit of issue 25 ("Status: SUCCESS cannot be ruled out", "SUCCESS, I
        # think", "SUCCESS seems plausible", "SUCCESS (can't be sure)"): a "cannot" beside a code, after
        # it as much as before, and the words that offer a verdict without giving it
        "cannot",
        "can't",
        "cant",
        "couldn't",
        "think",
        "seem",
        "seems",
        "seemingly",
        "plausible",
        "plausibly",
        "believe",
        "suppose",
        "supposedly",
        "presumably",
        "apparently",
        "suspect",
        "assume",
        "assuming",
        "arguably",
        "conceivably",
        "reckon",
        "borderline",
    ]
)
#: "not sure", "not entirely certain", "not confident": a doubt wherever it stands in the text
_NOT_SURE = re.compile(r"\bnot\s+(?:\w+\s+)?(?:sure|certain|confident|clear)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_CAN_NOT = re.compile(r"\bcan\s+not\b", re.IGNORECASE)
_THINK_TAG = re.compile(r"</?\s*think\s*>", re.IGNORECASE)


def hedged(text: str, *, codes: Iterable[str] = (), negation: bool = True) -> bool:
    """The text denies or doubts (a word of :data:`NEGATION`, with ``negation``, or of
    :data:`UNCERTAINTY`, or a question mark); the ``codes`` themselves are not read as words."""
    if "?" in text or _NOT_SURE.search(text):
        return True
    text = _THINK_TAG.sub(" ", _CAN_NOT.sub("cannot", text))  # a reasoning model's <think> is no doubt
    for code in codes:
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(code)}(?![A-Za-z0-9_])", " ", text, flags=re.I)
    cues = UNCERTAINTY | NEGATION if negation else UNCERTAINTY
    return any(w.lower().replace("’", "'") in cues for w in _WORD.findall(text))


_DENIED_AFTER = re.compile(r"^\W*(?:is|it'?s|was)?\s*(?:not|n't|never|ruled out|excluded)\b", re.I)


def _doubted(value: str, start: int, end: int | None = None, codes: Iterable[str] = ()) -> bool:
    """A label's value doubts what it names at ``start:end`` (a word of doubt anywhere, a denial before
    it, or "is not" right after it)."""
    if hedged(value, codes=codes, negation=False) or hedged(value[:start], negation=True):
        return True
    return end is not None and bool(_DENIED_AFTER.search(value[end:]))


def _code_stated(value: str | None, allowed: tuple[str, ...]) -> tuple[bool, str | None]:
    """(whether ``value`` names an allowed code, the code when it states it without doubt)."""
    code = _code_in(value, allowed)
    if code is None or value is None:
        return False, None
    if len(_codes_named(value, allowed) | _other_codes(value, allowed)) > 1:
        return True, None  # "SUCCESS|SWEEP_TOO_SHORT", ["SUCCESS", "NO_SIGNAL"], another task's code too
    spelled = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(code).replace('_', '[ _]')}(?![A-Za-z0-9_])", re.I)
    m = spelled.search(value)
    start, end = (m.start(), m.end()) if m else (0, len(value))
    return True, None if _doubted(value, start, end, codes=[code, code.replace("_", " ")]) else code


def _codes_named(text: str, allowed: tuple[str, ...]) -> set[str]:
    """The allowed codes ``text`` names (case ignored, whole words, not inside a longer code)."""
    upper = text.upper()
    return {c for c in allowed if re.search(rf"(?<![A-Z0-9_]){re.escape(c)}(?![A-Z0-9_])", upper)}


_CODE_SHAPED = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])")


def _other_codes(text: str, allowed: tuple[str, ...]) -> set[str]:
    """Status-shaped words (``SWEEP_TOO_SHORT``: upper case, joined by ``_``) that are not allowed: a
    value naming one beside an allowed code names two statuses, whichever the task allows."""
    return {m.group(0) for m in _CODE_SHAPED.finditer(text)} - set(allowed)


def _labels(text: str, name: str) -> list[str]:
    """Every ``<name>:`` line's value (cleaned), in order."""
    return [v for m in _label_pattern(name).finditer(text) if (v := _clean_value(m.group(1)))]


def _sentences_with(text: str, code: str) -> list[str]:
    pattern = re.compile(rf"(?<![A-Z0-9_]){re.escape(code)}(?![A-Z0-9_])")
    out = []
    for m in re.finditer(r"[^.!;\n]+[.!;]?", text):  # a sentence, its closing mark kept (a ? is a doubt)
        if pattern.search(m.group(0).upper()):
            out.append(m.group(0))
    return out


def status_of(text: str | None, criteria: Mapping[str, str] | Iterable[str] | None = None) -> str | None:
    """The status the answer states (docs/calibration.md, "Reading the answers"): from a JSON object's
    ``status``, else ``Status:``, then ``Classification:``, then the first line; a label that names an
    allowed code but denies or doubts it (:func:`hedged`) gives no status. Failing those, the whole text
    is scanned, and counts only when it names exactly one allowed code, in no sentence that denies or
    doubts it. Otherwise None: the answer could not be read (never a verdict it does not state)."""
    if not text:
        return None
    allowed = allowed_codes(criteria)
    found = _json_field(text, "status")
    if found is not None:
        return _code_stated(str(found), allowed)[1]
    for name in ("Status", "Classification"):
        value = label(text, name)
        if name == "Status" and value is not None and value.lower() in _NONE:
            return None  # "Status: N/A": it states none, whatever else the text mentions
        named, code = _code_stated(value, allowed)
        if named:
            # two Status lines naming different codes state no one status
            others = {_code_in(v, allowed) for v in _labels(text, name)} - {None}
            return code if others <= {code} else None
    first = _first_line(text)
    if first.upper() in allowed:
        return first.upper()
    upper = text.upper()
    named_codes = [c for c in allowed if re.search(rf"(?<![A-Z0-9_]){re.escape(c)}(?![A-Z0-9_])", upper)]
    if len(named_codes) != 1:
        return None
    (code,) = named_codes
    sentences = _sentences_with(text, code)
    if not sentences or any(hedged(s, codes=[code]) for s in sentences):
        return None
    if hedged(text, codes=[code]):  # a text without labels that doubts or denies anywhere states nothing
        return None
    return code


def _json_object(text: str | None) -> dict | None:
    found = parse_json(text)
    return found if isinstance(found, dict) else None


def _json_field(text: str | None, name: str) -> Any:
    """A field of the answer's JSON object (key matched case-insensitively, ``suggested range`` as
    ``suggested_range``); None when the answer holds no object with a ``status``."""
    found = _json_object(text)
    if not found:
        return None
    keys = {str(k).lower().replace(" ", "_"): v for k, v in found.items()}
    if "status" not in keys:
        return None
    return keys.get(name)


_NONE = {"none", "n/a", "na", "null", "-", "—", "not applicable", "no change", "not needed"}


def _range_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"({value[0]}, {value[1]})"
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        if low is not None and high is not None:
            unit = value.get("unit")
            return f"({low}, {high})" + (f" [{unit}]" if unit else "")
        return json.dumps(value)
    text = str(value).strip()
    return text or None


def suggested_range(text: str | None) -> str | None:
    """The value after ``Suggested range:`` (or a JSON answer's ``suggested_range``); "none", "n/a",
    "null", "-" read as no range."""
    if _json_field(text, "status") is not None:
        value = _range_text(_json_field(text, "suggested_range"))
    else:
        value = label(text, "Suggested range")
    if value is None or value.lower() in _NONE or _alternatives(value):  # "<the range, or none>" echoed
        return None
    return value


def notes(text: str | None) -> str | None:
    """The text after ``Notes:`` (to the end), or a JSON answer's ``notes``; else the answer without its
    Status and range lines."""
    if not text:
        return None
    if _json_field(text, "status") is not None:
        value = _json_field(text, "notes")
        return None if value is None else (str(value).strip() or None)
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


# --- parameters and their units ----------------------------------------------------------------------


class Value(BaseModel):
    """One parameter as read: a number (or true or false) in the unit its description names."""

    value: float | int | bool | None = None
    unit: str | None = None


def _number(value: Any, kind: str, wanted: str | None, key_unit: str | None) -> Value:
    if kind == "true | false":
        return Value(value=value if isinstance(value, bool) else None)
    found = quantity(value)
    if found is None:
        return Value(unit=wanted)
    number, given = found[0], found[1] or key_unit
    if wanted is not None and given is not None:
        number = convert(number, given, wanted)
    if kind == "int" and number is not None:
        number = int(number) if float(number).is_integer() else None
    return Value(value=number, unit=wanted or given)


def parameter_values(parameters: Any, schema: Mapping[str, Any] | None = None) -> dict[str, Value] | None:
    """parameter_extraction's reading, each parameter a number in the unit its description names
    (:mod:`.units`): ``{"t1_ms": 0.0491}``, ``{"t1": "0.0491 ms"}`` or ``{"t1": {"value": 0.0491,
    "unit": "ms"}}`` read as 49.1 us for a ``t1`` "in microseconds"; a bare number is taken to be in
    that unit; one of another kind of unit, or not a number, is None. The schema's names (``schema``: name ->
    spec with ``type`` and ``description``); without one, every key the answer gives, in the unit its
    key or value names. None when the answer is no JSON object."""
    if not isinstance(parameters, dict):
        return None
    given: dict[str, tuple[Any, str | None]] = {str(k): (v, None) for k, v in parameters.items()}
    for key, value in parameters.items():  # a key naming its unit, where no key of the name alone is
        named = keyed(str(key))
        if named is not None and named[0] not in given and (not schema or named[0] in schema):
            given[named[0]] = (value, named[1])
            del given[str(key)]
    out: dict[str, Value] = {}
    for name in schema or given:
        value, key_unit = given.get(name, (None, None))
        spec = schema.get(name) if schema else None
        if spec is None:
            kind = "true | false" if isinstance(value, bool) else "float"
            out[name] = _number(value, kind, None, key_unit)
        else:
            out[name] = _number(value, spec.type, named_unit(spec.description), key_unit)
    return out


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
    #: the parameters read as numbers, each in the unit its description names (:func:`parameter_values`)
    values: dict[str, Value] | None = None
    description: dict[str, Any] | list[Any] | str | None = None  #: technical_description
    significance: str | None = None  #: experimental_significance
    #: SUCCESS stated; None when the status (or, not asked, the outcome) could not be read
    success: bool | None = None
    #: QCalEval's own reading of the status (:func:`qcaleval_status_of`), kept to score its way
    qcaleval_status: str | None = None

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
    None when neither was asked, or when the answer it rests on could not be read."""
    asked = set(questions)
    if "calibration_diagnosis" in asked:
        return None if diagnosis.status is None else diagnosis.status == "SUCCESS"
    if "experimental_conclusion" in asked:
        return None if diagnosis.outcome is None else diagnosis.outcome == "expected"
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
    parameters: Mapping[str, Any] | None = None,
) -> Reading:
    """Read an evaluation's answers. ``questions`` are those asked (default: the keys of ``answers``;
    an answer of None is a question asked that got no answer); ``criteria`` the task's, whose keys are
    the statuses allowed; ``parameters`` its extraction schema (name -> spec), whose units the
    parameters are read in."""
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
        parameters=(extracted := _json_or_text(got("parameter_extraction"))),
        values=parameter_values(extracted, parameters),
        status=status_of(status_text, allowed),
        qcaleval_status=qcaleval_status_of(status_text, allowed),
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
