"""One evaluation: a task result judged against its task's reference, and the record of it (issue 14).

:func:`evaluate` builds the six requests (:mod:`.prompts`), has the chosen judge answer them (a model
through :class:`~.vlm.VisionModel`, or the :class:`~.classical_judge.ClassicalJudge`), reads the answers
(:mod:`.answers`) and returns the record's three parts (:class:`EvaluationOutput`):

- ``input``: what the judge was given: the context line, the exact prompts (``[figure]`` where an image
  goes; no system prompt), the caller's question, whether a reference and examples were requested and
  used, the reference's ``knowledge_chars`` and ``knowledge_sha256``, the figures by SHA-256 (the last
  judged), the examples by id and figure hash; for the classical judge, the fit evidence it read.
- ``output``: the model (its id, ``fallback``), the parsed diagnosis, every answer as returned beside its
  reading, the questions asked, attempts and stop reasons, every call's duration and tokens, the totals,
  the model's ``context_window`` (its ``num_ctx``, kept with the record), the largest call and whether
  it reached 90% of the window, and ``success``, ``complete`` and ``missing_keys`` (derived from the
  diagnosis and the questions asked every time a record is loaded).
- ``evaluator``: the package (``qsolve``), its version, and :func:`source_sha256` of the modules that
  judged.

The API key is never part of any of it. No storage and no Prefect here: the records store persists
these models as JSON.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from qsolve.evaluation.answers import READING_FIELD, Diagnosis, missing_keys, read_answers, success_of
from qsolve.evaluation.classical_judge import ClassicalJudge, FitEvidence
from qsolve.evaluation.examples import Example
from qsolve.evaluation.knowledge import Reference, knowledge_chars, knowledge_sha256
from qsolve.evaluation.models import ChosenBy, Kind, ModelChoice, ModelSpec
from qsolve.evaluation.prompts import (
    DEFAULT_FIGURES,
    Evidence,
    LeftOut,
    Request,
    as_evidence,
    context_line,
    evaluation_requests,
    examples_shown,
    shown_figures,
)
from qsolve.evaluation.questions import QUESTION_KEYS, QuestionKey
from qsolve.evaluation.vlm import Answer, Call, ModelAnswers, TokenPeak, VisionModel, collect, media_type

PACKAGE = "qsolve"
#: the modules whose source :func:`source_sha256` covers: those that ask, call, judge and read
EVALUATOR_MODULES = ("answers", "classical_judge", "evaluate", "prompts", "questions", "units", "vlm")
_HERE = Path(__file__).parent


# --- the evaluator ---------------------------------------------------------------------------------------


def source_files() -> list[tuple[str, bytes]]:
    """(path, bytes) of the evaluator's modules, ``qsolve/evaluation/<name>.py``, sorted by path."""
    return sorted(
        (f"qsolve/evaluation/{name}.py", (_HERE / f"{name}.py").read_bytes()) for name in EVALUATOR_MODULES
    )


def source_sha256(files: Sequence[tuple[str, bytes]] | None = None) -> str:
    """SHA-256 over, for each file in path order: its path (UTF-8), a NUL byte, its length in bytes as
    decimal digits, a NUL byte, and its bytes (docs/calibration.md, "The evaluator")."""
    h = hashlib.sha256()
    for path, data in source_files() if files is None else sorted(files):
        h.update(path.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0")
        h.update(data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def _evaluator() -> tuple[str, str]:
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "0+unknown"
    return version, source_sha256()


def checkout_commit(root: Path | None = None) -> str | None:
    """The commit checked out where the package runs from a Git checkout (``root``: the folder above
    ``qsolve/``), with ``-dirty`` when its files differ from it; None for an installed package, or
    where Git cannot say (no ``git`` command, say). Asked once a process (:func:`evaluator`)."""
    import subprocess

    root = root if root is not None else _HERE.parents[1]
    if not (root / ".git").exists():
        return None
    try:
        got = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--abbrev=40", "--dirty", "--match=^$"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    commit = got.stdout.strip()
    return commit or None


@lru_cache(maxsize=1)
def _checkout() -> str | None:
    return checkout_commit()


class Evaluator(BaseModel):
    """What judged: the package, its version, the hash of the source of its evaluation modules, and
    whether it ran from a checkout (``source``), with the checkout's commit (``commit``)."""

    package: str = PACKAGE
    version: str
    source_sha256: str
    modules: list[str] = Field(
        default_factory=lambda: [f"qsolve/evaluation/{m}.py" for m in EVALUATOR_MODULES]
    )
    source: Literal["checkout", "package"] | None = None
    commit: str | None = None


def evaluator() -> Evaluator:
    version, digest = _evaluator()
    commit = _checkout()
    return Evaluator(
        version=version,
        source_sha256=digest,
        source="checkout" if commit else "package",
        commit=commit,
    )


# --- the record ------------------------------------------------------------------------------------------


class FigureUsed(BaseModel):
    sha256: str
    role: Literal["judged", "reference"]
    bytes: int
    media_type: str


class ExampleUsed(BaseModel):
    id: str
    figure_sha256: str
    questions: list[QuestionKey]


class RecordInput(BaseModel):
    """What the judge was given."""

    task: str
    target: str
    chip: str = ""
    #: what the judge read: the prompts (a model), or the fit evidence (the classical judge)
    reads: Literal["prompts", "fit_evidence"]
    context: str
    #: the exact prompts by question, ``[figure]`` where an image goes; empty for the classical judge
    prompts: dict[QuestionKey, str] = Field(default_factory=dict)
    #: always None: the requests carry no system prompt
    system_prompt: str | None = None
    question: str | None = None
    keys: list[QuestionKey]
    reference_requested: bool
    reference_used: bool
    examples_requested: bool
    examples_used: bool
    knowledge_chars: int | None = None
    knowledge_sha256: str | None = None
    #: the figures shown, the last judged (the last ``max_figures``); ``figures_given`` counts all the
    #: caller gave
    figures: list[FigureUsed] = Field(default_factory=list)
    figures_given: int = 0
    max_figures: int = DEFAULT_FIGURES
    examples: list[ExampleUsed] = Field(default_factory=list)
    #: the examples a question would have shown, left out so that no request carries more than
    #: MAX_IMAGES images (the later ones in the repository's order give way), with why
    examples_left_out: list[LeftOut] = Field(default_factory=list)
    fit_evidence: FitEvidence | None = None


AnswerState = Literal["arrived", "declined", "failed"]


class AnswerRecord(BaseModel):
    """One question's answer as returned, beside its reading. ``state``: ``arrived`` (an answer came
    back, whatever it says), ``declined`` (the judge declined it) or ``failed`` (no answer arrived
    after the resend; ``error`` says why): a record with a failed question is a failed record, and a
    retry asks exactly its failed questions again."""

    question: QuestionKey
    state: AnswerState | None = None
    #: exactly as returned (a declining answer too); None when no answer arrived
    answer: str | None
    #: the diagnosis field this answer fills; None when absent, unreadable or declined
    reading: Any = None
    attempts: int
    stop_reason: str | None = None
    declined: bool = False
    error: str | None = None
    duration_seconds: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None

    @model_validator(mode="after")
    def _state(self) -> AnswerRecord:
        if self.state is None:  # a record stored before states existed
            self.state = "declined" if self.declined else ("arrived" if self.answer is not None else "failed")
        return self


class RecordOutput(BaseModel):
    """What the judge answered, and what it cost."""

    model: str
    kind: Kind
    endpoint_model: str | None = None
    chosen_by: ChosenBy
    fallback: bool
    diagnosis: Diagnosis
    answers: dict[QuestionKey, AnswerRecord]
    questions: list[QuestionKey]
    allowed_statuses: list[str]
    attempts: dict[QuestionKey, int]
    stop_reasons: dict[QuestionKey, str | None]
    #: the questions no answer arrived for, with the last failure
    errors: dict[QuestionKey, str] = Field(default_factory=dict)
    calls: list[Call] = Field(default_factory=list)
    started_at: datetime
    duration_seconds: float
    model_seconds: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    context_window: int | None = None
    peak: TokenPeak | None = None
    context_warning: bool = False
    success: bool | None = None
    complete: bool = False
    missing_keys: list[str] = Field(default_factory=list)
    #: the questions whose answer arrived but states no reading (a refusal, a negation, a doubt)
    unread_keys: list[str] = Field(default_factory=list)
    #: the questions no answer arrived for after the resend: the record is failed while any is
    failed_keys: list[str] = Field(default_factory=list)
    #: each exchange with the judge (the first, and each retry of failed questions): when, how long
    exchanges: list[dict[str, Any]] = Field(default_factory=list)
    #: the [started, finished] of each execution before a retry (kept by the state database's retry)
    earlier_spans: list[list[str]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _derived(self) -> RecordOutput:
        """success, complete, missing, unread and failed keys from the diagnosis, the answers and the
        questions, on every load."""
        success = success_of(self.diagnosis, self.questions)
        if self.diagnosis.success != success:
            self.diagnosis = self.diagnosis.model_copy(update={"success": success})
        self.success = success
        self.missing_keys = missing_keys(self.diagnosis, self.questions)
        self.complete = not self.missing_keys
        self.failed_keys = [
            k for k in self.questions if k in self.answers and self.answers[k].state == "failed"
        ]
        self.unread_keys = [
            k
            for k in self.missing_keys
            if k in self.answers and self.answers[k].state == "arrived" and self.answers[k].answer is not None
        ]
        if not self.exchanges:
            self.exchanges = [
                {"started_at": self.started_at.isoformat(), "duration_seconds": self.duration_seconds}
            ]
        return self

    @property
    def failed(self) -> bool:
        return bool(self.failed_keys)


#: the output's fields derived from its diagnosis, answers and questions on every load
DERIVED = ("success", "complete", "missing_keys", "unread_keys", "failed_keys")


def loaded_output(output: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored output as every reader shows it: validated as :class:`RecordOutput`, so ``success``,
    ``complete`` and ``missing_keys`` (and the unread and failed keys) are derived from its diagnosis
    and the questions asked, whatever the stored values say. An output that is not a whole record (the
    times a retry keeps, say) is returned without those fields: nothing stored stands in for them."""
    if output is None:
        return None
    try:
        return RecordOutput.model_validate(dict(output)).model_dump(mode="json")
    except ValueError:  # pydantic's ValidationError is a ValueError
        return {k: v for k, v in output.items() if k not in DERIVED}


class EvaluationOutput(BaseModel):
    """One evaluation's record: input, output and evaluator."""

    input: RecordInput
    output: RecordOutput
    evaluator: Evaluator


# --- one evaluation ----------------------------------------------------------------------------------------


def _no_reference(task: str) -> Reference:
    return Reference(
        task=task,
        background="",
        knowledge_chars=knowledge_chars("", {}),
        knowledge_sha256=knowledge_sha256("", {}),
    )


def _figures_used(hashes: Sequence[str], data: Mapping[str, bytes], max_figures: int) -> list[FigureUsed]:
    shown = shown_figures(hashes, max_figures) if hashes else []
    return [
        FigureUsed(
            sha256=h,
            role="judged" if i == len(shown) - 1 else "reference",
            bytes=len(data[h]),
            media_type=media_type(data[h]),
        )
        for i, h in enumerate(shown)
    ]


def _examples_used(requests: Sequence[Request]) -> list[ExampleUsed]:
    used: dict[str, ExampleUsed] = {}
    for request in requests:
        for part in request.images:
            if part.role == "example" and part.example:
                entry = used.setdefault(
                    part.example, ExampleUsed(id=part.example, figure_sha256=part.sha256, questions=[])
                )
                entry.questions.append(request.question)
    return list(used.values())


def _choice(model: ModelChoice | ModelSpec) -> ModelChoice:
    return model if isinstance(model, ModelChoice) else ModelChoice(model=model, chosen_by="explicit")


def evaluate(
    reference: Reference | None,
    evidence: Evidence | Mapping[str, Any],
    figures: Sequence[bytes],
    *,
    model: ModelChoice | ModelSpec,
    with_examples: bool = False,
    examples: Sequence[Example] = (),
    fit_evidence: FitEvidence | None = None,
    question: str | None = None,
    keys: Sequence[QuestionKey] = QUESTION_KEYS,
    environ: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    previous: Mapping[str, Any] | None = None,
    max_figures: int = DEFAULT_FIGURES,
) -> EvaluationOutput:
    """Judge one task result.

    ``reference`` is the task's (None: no reference requested; the templates' generic fallbacks apply);
    ``evidence`` the result's (:meth:`TaskResult.evidence`); ``figures`` its figure bytes in order, the
    last the one judged (the last ``max_figures`` shown, 1 to 4, default 1); ``model`` the choice
    (:func:`~.models.choose_model`) or a declared model; ``fit_evidence`` what the classical judge
    reads. A model's key comes from ``environ`` (default ``os.environ``) under the variable the model
    names. ``previous`` is the stored output of the same record when it failed: only its failed
    questions are asked again, and the answers that arrived are kept as they were (never asked twice).
    """
    choice = _choice(model)
    spec = choice.model
    ev = as_evidence(evidence)
    ref = reference if reference is not None else _no_reference(ev.task)
    data = {hashlib.sha256(f).hexdigest(): bytes(f) for f in figures}
    hashes = [hashlib.sha256(f).hexdigest() for f in figures]
    asked = [k for k in QUESTION_KEYS if k in set(keys)]
    demos = list(examples) if with_examples else []

    if spec.is_classical:
        requests: list[Request] = []
        answers: ModelAnswers = ClassicalJudge().ask(ref, fit_evidence, asked)
    else:
        if not figures:
            raise ValueError("no figure to judge: an evaluation needs the result's figure")
        requests = evaluation_requests(
            ref, ev, hashes, with_examples=with_examples, examples=demos, question=question, keys=asked,
            max_figures=max_figures,
        )  # fmt: skip
        kept, kept_calls, exchanges = _arrived(previous, asked)
        again = [r for r in requests if r.question not in kept]
        answers = VisionModel(spec, environ=environ).ask(again, data, cancel=cancel)
        if kept:
            answers = _merged(spec, kept, kept_calls, answers, exchanges)

    used_examples = _examples_used(requests)
    shown = len(shown_figures(hashes, max_figures)) if requests else 0
    left_out = [lo for r in requests for lo in examples_shown(r.question, demos, shown)[1]]
    record_input = RecordInput(
        task=ev.task,
        target=ev.target,
        chip=ev.chip,
        reads="fit_evidence" if spec.is_classical else "prompts",
        context=context_line(ev),
        prompts={r.question: r.prompt() for r in requests},
        question=question,
        keys=asked,
        reference_requested=reference is not None,
        reference_used=reference is not None
        and bool(ref.background.strip() or ref.criteria or ref.parameters),
        examples_requested=with_examples,
        examples_used=bool(used_examples),
        knowledge_chars=ref.knowledge_chars if reference is not None else None,
        knowledge_sha256=ref.knowledge_sha256 if reference is not None else None,
        figures=_figures_used(hashes, data, max_figures),
        figures_given=len(figures),
        max_figures=max_figures,
        examples=used_examples,
        examples_left_out=left_out,
        fit_evidence=fit_evidence if spec.is_classical else None,
    )
    earlier = (previous or {}).get("earlier_spans") or ()  # executions before a retry
    output = _output(choice, ref, answers, asked, earlier)
    return EvaluationOutput(input=record_input, output=output, evaluator=evaluator())


def _arrived(
    previous: Mapping[str, Any] | None, asked: Sequence[QuestionKey]
) -> tuple[dict[QuestionKey, Answer], list[Call], list[dict[str, Any]]]:
    """The answers of a failed record's stored output that arrived (or were declined), its calls and
    its exchanges: what a retry keeps instead of asking again."""
    if not previous or set(previous) <= {"earlier_spans"}:  # no answer stored: only the times of a retry
        return {}, [], []
    stored = RecordOutput.model_validate(previous)
    kept = {
        k: Answer(
            question=k,
            text=a.answer,
            attempts=a.attempts,
            stop_reason=a.stop_reason,
            input_tokens=a.input_tokens,
            output_tokens=a.output_tokens,
            duration_seconds=a.duration_seconds,
            error=a.error,
            declined=a.declined,
        )
        for k, a in stored.answers.items()
        if k in asked and a.state != "failed"
    }
    return kept, list(stored.calls), list(stored.exchanges)


def _merged(
    spec: ModelSpec,
    kept: Mapping[QuestionKey, Answer],
    kept_calls: Sequence[Call],
    new: ModelAnswers,
    exchanges: Sequence[dict[str, Any]],
) -> ModelAnswers:
    """A retry's answers beside those kept: every call of both exchanges, their durations added up."""
    merged = collect(
        spec.id,
        dict(kept) | dict(new.answers),
        [*kept_calls, *new.calls],
        started_at=datetime.fromisoformat(exchanges[0]["started_at"]) if exchanges else new.started_at,
        duration_seconds=sum(float(e.get("duration_seconds") or 0) for e in exchanges) + new.duration_seconds,
        context_window=spec.num_ctx,
    )
    merged.exchanges = [
        *exchanges,
        {"started_at": new.started_at.isoformat(), "duration_seconds": new.duration_seconds},
    ]
    return merged


def _output(
    choice: ModelChoice,
    ref: Reference,
    got: ModelAnswers,
    asked: list[QuestionKey],
    earlier_spans: Sequence[Sequence[str]] = (),
) -> RecordOutput:
    """The output part: the answers read (a declined answer reads as no answer), beside what arrived."""
    texts = {k: (None if (a := got.answers.get(k)) is None or a.declined else a.text) for k in asked}
    reading = read_answers(texts, questions=asked, criteria=ref.criteria, parameters=ref.parameters)
    records: dict[QuestionKey, AnswerRecord] = {}
    for key in asked:
        answer = got.answers.get(key)
        declined = bool(answer and answer.declined)
        records[key] = AnswerRecord(
            question=key,
            state="declined" if declined else ("arrived" if answer and answer.error is None else "failed"),
            answer=answer.text if answer else None,
            reading=getattr(reading.diagnosis, READING_FIELD[key]),
            attempts=answer.attempts if answer else 0,
            stop_reason=answer.stop_reason if answer else None,
            declined=bool(answer and answer.declined),
            error=answer.error if answer else None,
            duration_seconds=answer.duration_seconds if answer else 0.0,
            input_tokens=answer.input_tokens if answer else None,
            output_tokens=answer.output_tokens if answer else None,
        )
    spec = choice.model
    return RecordOutput(
        model=spec.id,
        kind=spec.kind,
        endpoint_model=None if spec.is_classical else spec.endpoint_model,
        chosen_by=choice.chosen_by,
        fallback=choice.fallback,
        diagnosis=reading.diagnosis,
        answers=records,
        questions=reading.questions,
        allowed_statuses=reading.allowed_statuses,
        attempts={k: r.attempts for k, r in records.items()},
        stop_reasons={k: r.stop_reason for k, r in records.items()},
        errors={k: r.error for k, r in records.items() if r.answer is None and r.error},
        calls=got.calls,
        started_at=got.started_at,
        duration_seconds=got.duration_seconds,
        model_seconds=got.model_seconds,
        input_tokens=got.input_tokens,
        output_tokens=got.output_tokens,
        context_window=spec.num_ctx,
        peak=got.peak,
        context_warning=got.context_warning,
        exchanges=got.exchanges
        or [{"started_at": got.started_at.isoformat(), "duration_seconds": got.duration_seconds}],
        earlier_spans=[list(span) for span in earlier_spans],
    )
