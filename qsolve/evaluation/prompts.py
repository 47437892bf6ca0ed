"""The six requests of one evaluation, and the prompt preview (docs/calibration.md, "The prompts").

Each request is single-turn with no system prompt: the background (not for technical_description),
the examples (in-context evaluations, three questions only), the ``Experiment context:`` line built
from the task result's evidence, and the question template with the figures at its ``<image>``
position. A request is text and image parts in order, which a client turns into OpenAI chat content
parts (:meth:`Request.openai_content`); its prompt text marks each image ``[figure]``.

    requests = evaluation_requests(reference, result.evidence(), with_examples=True, examples=chosen)
    shown = preview(reference, with_examples=True, examples=chosen)   # no figure, no model
    task = preview_task(directory, with_examples=True, model=name)   # read, selected and previewed

No model calls here, no storage, no Prefect (``preview_task`` reads the task directory it is given).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from qsolve.evaluation import questions as q
from qsolve.evaluation.examples import Example
from qsolve.evaluation.knowledge import Reference
from qsolve.evaluation.questions import IMAGE, QUESTION_KEYS, QuestionKey

#: the most figures of the result one evaluation shows (``max_figures``); the last is the one judged
MAX_FIGURES = 4
#: the figures of the result an evaluation shows unless more are asked: the judged one alone
DEFAULT_FIGURES = 1
#: the most images one request carries, the result's figures and the examples' together, so that an
#: evaluation fits a 16k-token deployment (vLLM's ``--limit-mm-per-prompt image=4``)
MAX_IMAGES = 4
#: what stands for an image in a prompt's text
FIGURE_PLACEHOLDER = "[figure]"
#: an ``<image>`` inside inserted text (the background, a message, an example) is written so
NEUTRALIZED_IMAGE = "(image)"

_IMAGE_TAG = re.compile(re.escape(IMAGE), re.IGNORECASE)


# --- the evidence -----------------------------------------------------------------------------------


class Sweep(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    parameter: str
    unit: str = ""
    start: float
    stop: float
    points: int
    step: float | None = None


class Interval(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    value: float
    unit: str = ""


class Evidence(BaseModel):
    """A task result as an evaluation sees it (TaskResult.evidence()); every other key is ignored, so
    fitted outputs and calibration inputs cannot reach a prompt even when a caller passes them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task: str
    target: str
    chip: str = ""
    status: str = ""
    message: str = ""
    sweeps: list[Sweep] = Field(default_factory=list)
    shots: int | None = None
    interval: Interval | None = None
    figures: list[str] = Field(default_factory=list)


def as_evidence(evidence: Evidence | Mapping[str, Any]) -> Evidence:
    return evidence if isinstance(evidence, Evidence) else Evidence.model_validate(dict(evidence))


def number(value: float) -> str:
    """A number as a prompt writes it: whole values without ``.0``, others at their shortest."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _with_unit(value: float, unit: str) -> str:
    return f"{number(value)} {unit}" if unit else number(value)


def rounded(value: float, digits: int = 4) -> float:
    """``value`` to ``digits`` significant figures (a derived step: 1000/120 is 8.333, not
    8.333333333333334)."""
    if not isinstance(value, float) or value == 0 or not math.isfinite(value):
        return value
    return round(value, max(0, digits - 1 - math.floor(math.log10(abs(value)))))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _neutral(text: str) -> str:
    return _IMAGE_TAG.sub(NEUTRALIZED_IMAGE, text)


def sweep_text(sweep: Sweep) -> str:
    """``sweep <parameter> from <start> to <stop> <unit>, <points> points, step <step> <unit>`` (the step
    left out when the evidence has none)."""
    text = (
        f"sweep {sweep.parameter} from {number(sweep.start)} to {_with_unit(sweep.stop, sweep.unit)}, "
        f"{sweep.points} points"
    )
    return text if sweep.step is None else f"{text}, step {_with_unit(rounded(sweep.step), sweep.unit)}"


def context_line(evidence: Evidence | Mapping[str, Any]) -> str:
    """``Experiment context: task T; target Q; status S; sweep ...; N shots; interval V U; message "M"``.

    Fields without a value are left out; the message is put on one line. Nothing else of the result
    (its fitted outputs, its calibration inputs, its chip) is said.
    """
    ev = as_evidence(evidence)
    fields = [f"task {ev.task}", f"target {ev.target}"]
    if ev.status:
        fields.append(f"status {ev.status}")
    fields.extend(sweep_text(s) for s in ev.sweeps)
    if ev.shots is not None:
        fields.append(f"{ev.shots} shots")
    if ev.interval is not None:
        fields.append(f"interval {_with_unit(ev.interval.value, ev.interval.unit)}")
    if ev.message.strip():
        fields.append(f'message "{_one_line(ev.message)}"')
    return _neutral("Experiment context: " + "; ".join(_one_line(f) for f in fields))


def preview_context_line(task: str) -> str:
    """The context line of a preview, which judges no result."""
    return _neutral(
        f"Experiment context: task {task}; [the target, status, sweep, shots, interval and message "
        "of the task result judged]"
    )


def range_format(reference: Reference, evidence: Evidence | Mapping[str, Any] | None = None) -> str:
    """The suggested-range format: the knowledge's own when it states one, else from the first sweep,
    ``(<min PARAM>, <max PARAM>) [UNIT]`` (no ``[UNIT]`` when the sweep has no unit), else generic."""
    if reference.range_format:
        return reference.range_format
    ev = as_evidence(evidence) if evidence is not None else None
    if ev is not None and ev.sweeps:
        sweep = ev.sweeps[0]
        text = f"(<min {sweep.parameter}>, <max {sweep.parameter}>)"
        return f"{text} [{sweep.unit}]" if sweep.unit else text
    return "(<min PARAM>, <max PARAM>) [UNIT]"


# --- requests ---------------------------------------------------------------------------------------

FigureRole = Literal["judged", "reference", "example"]


class TextPart(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image of a request: a figure of the result (by hash) or an example's figure (by hash and path)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["image"] = "image"
    sha256: str
    role: FigureRole
    example: str | None = None  #: the example's id, for an example's figure
    path: str | None = None  #: the example's figure file, for an example's figure
    media_type: str | None = None


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Request(BaseModel):
    """One single-turn request, no system prompt: ``text`` holds ``<image>`` where each image goes, the
    images in that order."""

    model_config = ConfigDict(frozen=True)

    question: QuestionKey
    text: str
    images: list[ImagePart]

    def prompt(self, placeholder: str = FIGURE_PLACEHOLDER) -> str:
        """The prompt as text, ``[figure]`` where an image goes (what a record and a preview show)."""
        return self.text.replace(IMAGE, placeholder)

    def parts(self) -> list[TextPart | ImagePart]:
        """Text and images in order; text around an image is stripped, empty text dropped."""
        pieces = self.text.split(IMAGE)
        out: list[TextPart | ImagePart] = []
        for i, piece in enumerate(pieces):
            if piece.strip():
                out.append(TextPart(text=piece.strip()))
            if i < len(self.images):
                out.append(self.images[i])
        return out

    def openai_content(self, image_url: Callable[[ImagePart], str]) -> list[dict[str, Any]]:
        """OpenAI chat content parts; ``image_url`` gives each image's URL (a ``data:`` URL, say)."""
        return [
            {"type": "text", "text": p.text}
            if isinstance(p, TextPart)
            else {"type": "image_url", "image_url": {"url": image_url(p)}}
            for p in self.parts()
        ]

    def openai_messages(self, image_url: Callable[[ImagePart], str]) -> list[dict[str, Any]]:
        """The request's messages: one user message, no system prompt."""
        return [{"role": "user", "content": self.openai_content(image_url)}]

    def examples(self) -> list[str]:
        return [i.example for i in self.images if i.role == "example" and i.example]


def _figure_group(figures: Sequence[str]) -> tuple[str, list[ImagePart]]:
    if len(figures) == 1:
        return IMAGE, [ImagePart(sha256=figures[0], role="judged")]
    earlier = [ImagePart(sha256=f, role="reference") for f in figures[:-1]]
    text = (
        "Earlier figures of this result, shown for reference:\n"
        + "\n".join(IMAGE for _ in earlier)
        + f"\nThe figure to judge:\n{IMAGE}"
    )
    return text, [*earlier, ImagePart(sha256=figures[-1], role="judged")]


def _example_image(example: Example) -> ImagePart:
    return ImagePart(
        sha256=example.figure_sha256,
        role="example",
        example=example.id,
        path=str(example.figure),
        media_type=example.media_type,
    )


def example_candidates(key: QuestionKey, examples: Sequence[Example]) -> list[Example]:
    """The examples one question would show with room for them all, in the repository's order: every
    one with an analysis (significance), the first with parameters (extraction), every one with a
    status (diagnosis); none for the other questions."""
    if key == "experimental_significance":
        return [e for e in examples if e.analysis]
    if key == "parameter_extraction":
        return [e for e in examples if e.parameters][:1]
    if key == "calibration_diagnosis":
        return [e for e in examples if e.status]
    return []


class LeftOut(BaseModel):
    """An example a question would have shown, left out so that its request carries at most
    :data:`MAX_IMAGES` images: the later examples in the repository's order give way."""

    id: str
    question: QuestionKey
    why: str


def examples_shown(
    key: QuestionKey, examples: Sequence[Example], figures: int
) -> tuple[list[Example], list[LeftOut]]:
    """The examples one question shows beside ``figures`` figures of the result, and those left out:
    the first ``MAX_IMAGES − figures`` of its candidates in the repository's order."""
    candidates = example_candidates(key, examples)
    room = max(0, MAX_IMAGES - figures)
    why = (
        f"a request carries at most {MAX_IMAGES} images (MAX_IMAGES): {figures} figure"
        f"{'s' * (figures != 1)} of the result and the first {room} example{'s' * (room != 1)} of "
        "the repository's order"
    )
    return candidates[:room], [LeftOut(id=e.id, question=key, why=why) for e in candidates[room:]]


def _examples_block(
    key: QuestionKey, examples: Sequence[Example], figures: int = DEFAULT_FIGURES
) -> tuple[str, list[ImagePart]]:
    """The demonstrations one question shows, as the seed's "Labeled examples" table lays them out, no
    more than leave its request :data:`MAX_IMAGES` images with ``figures`` figures of the result."""
    shown, _ = examples_shown(key, examples, figures)
    if key == "experimental_significance":
        blocks = [
            f'Scenario "{_neutral(_one_line(e.title))}":\n{IMAGE}\n{_neutral(e.analysis or "")}'
            for e in shown
        ]
        text = "Examples of this experiment, each with its analysis:\n\n" + "\n\n".join(blocks)
    elif key == "parameter_extraction":
        values = json.dumps(shown[0].parameters, ensure_ascii=False) if shown else ""
        text = (
            "An example of this experiment and the parameters read from it:\n"
            f"{IMAGE}\nExtracted parameters: {_neutral(values)}"
        )
    elif key == "calibration_diagnosis":
        blocks = [
            f"{IMAGE}\nStatus: {_neutral(e.status or '')}\n"
            f"Suggested range: {_neutral(e.suggested_range or 'none')}"
            for e in shown
        ]
        text = "Examples of this experiment with their status:\n\n" + "\n\n".join(blocks)
    else:
        shown = []
    if not shown:
        return "", []
    return text, [_example_image(e) for e in shown]


def _template(key: QuestionKey, reference: Reference, range_fmt: str, question: str | None) -> str:
    if key == "technical_description":
        return q.technical_description()
    if key == "experimental_conclusion":
        return q.experimental_conclusion()
    if key == "experimental_significance":
        return q.experimental_significance(q.DEFAULT_GUIDANCE, _neutral(question) if question else None)
    if key == "fit_reliability":
        return q.fit_reliability()
    if key == "parameter_extraction":
        schema = {
            name: (spec.type, _neutral(spec.description)) for name, spec in reference.parameters.items()
        }
        return q.parameter_extraction(schema)
    criteria = {code: _neutral(rule) for code, rule in reference.criteria.items()}
    return q.calibration_diagnosis(criteria, _neutral(range_fmt))


def build_request(
    key: QuestionKey,
    reference: Reference,
    context: str,
    figures: Sequence[str],
    *,
    range_fmt: str,
    examples: Sequence[Example] = (),
    question: str | None = None,
) -> Request:
    """One question's request: background, examples, the context line, the template and its figures."""
    blocks: list[str] = []
    images: list[ImagePart] = []
    if q.QUESTIONS[key].background and reference.background.strip():
        blocks.append(_neutral(reference.background.strip()))
    if examples and key in q.EXAMPLE_QUESTIONS:
        text, shown = _examples_block(key, examples, len(figures))
        if shown:
            blocks.append(text + "\n\nNow the result to judge.")
            images.extend(shown)
    blocks.append(context)
    group, judged = _figure_group(figures)
    blocks.append(_template(key, reference, range_fmt, question).replace(IMAGE, group, 1))
    images.extend(judged)
    return Request(question=key, text="\n\n".join(blocks), images=images)


def check_max_figures(max_figures: int) -> int:
    """``max_figures`` when it is 1 to :data:`MAX_FIGURES`; else a ValueError saying the rule."""
    whole = isinstance(max_figures, int) and not isinstance(max_figures, bool)
    if not whole or not 1 <= max_figures <= MAX_FIGURES:
        raise ValueError(f"max_figures {max_figures!r}: 1 to {MAX_FIGURES} figures of a result are shown")
    return max_figures


def shown_figures(figures: Sequence[str], max_figures: int = DEFAULT_FIGURES) -> list[str]:
    """The figures an evaluation shows: the last ``max_figures`` (1 to 4), the last of them judged."""
    if not figures:
        raise ValueError("no figure to judge: an evaluation needs the result's figure")
    return list(figures)[-check_max_figures(max_figures) :]


def evaluation_requests(
    reference: Reference,
    evidence: Evidence | Mapping[str, Any],
    figures: Sequence[str] | None = None,
    *,
    with_examples: bool = False,
    examples: Sequence[Example] = (),
    question: str | None = None,
    keys: Sequence[QuestionKey] = QUESTION_KEYS,
    max_figures: int = DEFAULT_FIGURES,
) -> list[Request]:
    """The six requests (or those of ``keys``) of one evaluation of a task result.

    ``figures`` are the result's figures by SHA-256, the last the one judged (default: the evidence's);
    the last ``max_figures`` (1 to :data:`MAX_FIGURES`, default 1) are shown. ``examples`` (from
    examples_of) are shown only ``with_examples``, only to the three questions that use them, and only
    as many as leave each request :data:`MAX_IMAGES` images (:func:`examples_shown`). ``question`` is
    the caller's optional question, one more point of the significance question.
    """
    ev = as_evidence(evidence)
    shown = shown_figures(ev.figures if figures is None else figures, max_figures)
    context = context_line(ev)
    fmt = range_format(reference, ev)
    demos = examples if with_examples else ()
    return [
        build_request(key, reference, context, shown, range_fmt=fmt, examples=demos, question=question)
        for key in keys
    ]


# --- the preview ------------------------------------------------------------------------------------


class PreviewExample(BaseModel):
    id: str
    title: str
    status: str | None
    figure_sha256: str
    questions: list[QuestionKey]


class Preview(BaseModel):
    """The six prompts a task's knowledge (or a draft) turns into, built without a figure or a model."""

    task: str
    model: str | None
    with_examples: bool
    knowledge_chars: int
    knowledge_sha256: str
    prompts: dict[QuestionKey, str]
    examples: list[PreviewExample]
    warnings: list[str] = Field(default_factory=list)
    #: the examples left out so that no request carries more than MAX_IMAGES images
    left_out: list[LeftOut] = Field(default_factory=list)


def preview(
    reference: Reference,
    *,
    with_examples: bool = False,
    examples: Sequence[Example] = (),
    evidence: Evidence | Mapping[str, Any] | None = None,
    question: str | None = None,
    model: str | None = None,
    figures: int = DEFAULT_FIGURES,
    keys: Sequence[QuestionKey] = QUESTION_KEYS,
) -> Preview:
    """The prompts by question, ``[figure]`` where an image goes, with the model that would judge (as
    the caller names it), the reference's size and hash and the examples used.

    Without ``evidence`` the context line and the range format are placeholders; ``figures`` (1 to 4)
    shows the layout of a result with that many figures shown (``max_figures``). Each example a
    question leaves out to keep its request within :data:`MAX_IMAGES` images is a warning.
    """
    count = max(1, min(MAX_FIGURES, figures))
    placeholders = [""] * count
    if evidence is not None:
        ev = as_evidence(evidence)
        context, fmt = context_line(ev), range_format(reference, ev)
    else:
        context, fmt = preview_context_line(reference.task), range_format(reference)
    demos = examples if with_examples else ()
    requests = [
        build_request(key, reference, context, placeholders, range_fmt=fmt, examples=demos, question=question)
        for key in keys
    ]
    used: dict[str, PreviewExample] = {}
    by_id = {e.id: e for e in demos}
    for request in requests:
        for example_id in request.examples():
            e = by_id[example_id]
            entry = used.setdefault(
                e.id,
                PreviewExample(
                    id=e.id, title=e.title, status=e.status, figure_sha256=e.figure_sha256, questions=[]
                ),
            )
            entry.questions.append(request.question)
    left = [lo for key in keys for lo in examples_shown(key, demos, count)[1]]
    return Preview(
        task=reference.task,
        model=model,
        with_examples=with_examples,
        knowledge_chars=reference.knowledge_chars,
        knowledge_sha256=reference.knowledge_sha256,
        prompts={r.question: r.prompt() for r in requests},
        examples=list(used.values()),
        warnings=[*reference.warnings, *left_out_warnings(left)],
        left_out=left,
    )


def left_out_warnings(left: Sequence[LeftOut]) -> list[str]:
    """One warning per example left out, naming the questions it was left out of and why."""
    by_id: dict[str, list[LeftOut]] = {}
    for lo in left:
        by_id.setdefault(lo.id, []).append(lo)
    return [
        f"example {i} is left out of {', '.join(lo.question for lo in los)}: {los[0].why}"
        for i, los in by_id.items()
    ]


class TaskPreview(BaseModel):
    """A task directory's preview: the prompts, the reference they were built from, and every warning
    (the reference's, then one per example left out, ``example ID: why``)."""

    preview: Preview
    reference: Reference
    warnings: list[str]


def preview_task(
    directory: Path | str,
    *,
    with_examples: bool = False,
    question: str | None = None,
    model: str | None = None,
    max_figures: int = DEFAULT_FIGURES,
) -> TaskPreview:
    """The preview of a task directory (published or a draft's), as ``qsolve knowledge preview`` prints
    it and the Knowledge page shows it: its task.md read, its labeled examples selected when
    ``with_examples``, and the prompts built with ``model`` named as the one that would judge (the
    caller chooses it), for a result of which ``max_figures`` figures are shown. Raises
    :class:`qsolve.evaluation.knowledge.KnowledgeError` for a directory
    that does not read as task knowledge."""
    from qsolve.evaluation.examples import select_examples
    from qsolve.evaluation.knowledge import read_task

    reference = read_task(directory).reference
    selection = select_examples(directory) if with_examples else None
    shown = preview(
        reference,
        with_examples=with_examples,
        examples=selection.examples if selection else (),
        question=question,
        model=model,
        figures=check_max_figures(max_figures),
    )
    skipped = [f"example {s.id}: {s.reason}" for s in (selection.skipped if selection else [])]
    return TaskPreview(preview=shown, reference=reference, warnings=[*shown.warnings, *skipped])
