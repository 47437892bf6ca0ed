"""The six questions of an evaluation, in our own words (docs/calibration.md, "The questions").

The keys are the QCalEval benchmark's. Each template holds one ``<image>``, where the figure to judge
goes (and, when a result has several figures, the earlier ones before it); prompts.py puts the
background, the examples and the ``Experiment context:`` line before it. What each is filled from and
how its answer is read:

=========================== ===================================== ==========================================
key                         filled from the reference             answer read as (answers.py)
=========================== ===================================== ==========================================
technical_description       nothing, not even the background      JSON {plot_type, x_axis, y_axis,
                                                                  main_features}, or the text
experimental_conclusion     background                            ``Classification:`` expected, suboptimal,
                                                                  anomalous, apparatus; ``Reason:``
experimental_significance   background; the guidance bullets;     the text
                            the caller's question as one more
fit_reliability             background                            ``Assessment:`` reliable, unreliable,
                                                                  no_fit; ``Reason:``
parameter_extraction        background; parameters as the keys    JSON object, or the text
                            to report
calibration_diagnosis       background; the criteria as the       ``Status:`` (an allowed code),
                            decision rules, SUCCESS first; the    ``Suggested range:``, ``Notes:``
                            suggested-range format
=========================== ===================================== ==========================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

QuestionKey = Literal[
    "technical_description",
    "experimental_conclusion",
    "experimental_significance",
    "fit_reliability",
    "parameter_extraction",
    "calibration_diagnosis",
]
QUESTION_KEYS: tuple[QuestionKey, ...] = get_args(QuestionKey)  # in the seed's order
#: the three questions an in-context evaluation shows examples for
EXAMPLE_QUESTIONS: tuple[QuestionKey, ...] = (
    "experimental_significance",
    "parameter_extraction",
    "calibration_diagnosis",
)
#: where the figure goes in a template
IMAGE = "<image>"

#: the outcomes experimental_conclusion offers, as the answer's reading names them
OUTCOMES = ("expected", "suboptimal", "anomalous", "apparatus")
#: the fit assessments fit_reliability offers, as the answer's reading names them
FIT_ASSESSMENTS = ("reliable", "unreliable", "no_fit")

#: the statuses a task without criteria is judged by, with the generic rule for each
DEFAULT_STATUSES: dict[str, str] = {
    "SUCCESS": "the feature this experiment looks for is clearly visible across the sweep, and a fit, "
    "where one is drawn, follows it",
    "SUBOPTIMAL": "the feature is there, but the settings keep it from being measured well: the sweep "
    "too short or too long, too few points, too little contrast above the noise",
    "NO_SIGNAL": "no feature can be made out above the noise; the data are flat or random",
    "ANOMALOUS": "the data show a shape this experiment should not produce",
}

#: the significance question's default guidance (task.md states none)
DEFAULT_GUIDANCE: tuple[str, ...] = (
    "what the figure says about the quantity this experiment measures, and how far it can be trusted",
    "whether the result is sound enough to build the next calibration step on",
    "what to do next: accept it, repeat it with other settings (say which), or look into the device",
)


class Question(BaseModel):
    """What a question is, for the docs and the preview: not the template itself."""

    model_config = ConfigDict(frozen=True)

    key: QuestionKey
    asks: str
    background: bool  #: whether the prompt carries the reference's background
    examples: bool  #: whether an in-context evaluation shows examples for it
    answer: str  #: how the answer is read


QUESTIONS: dict[QuestionKey, Question] = {
    q.key: q
    for q in (
        Question(
            key="technical_description",
            asks="describe the figure in JSON",
            background=False,
            examples=False,
            answer="JSON {plot_type, x_axis, y_axis, main_features}, or the text",
        ),
        Question(
            key="experimental_conclusion",
            asks="classify the outcome",
            background=True,
            examples=False,
            answer="Classification: expected | suboptimal | anomalous | apparatus; Reason:",
        ),
        Question(
            key="experimental_significance",
            asks="what the result implies",
            background=True,
            examples=True,
            answer="the text",
        ),
        Question(
            key="fit_reliability",
            asks="whether the fit is reliable for parameter extraction",
            background=True,
            examples=False,
            answer="Assessment: reliable | unreliable | no_fit; Reason:",
        ),
        Question(
            key="parameter_extraction",
            asks="extract parameters in JSON",
            background=True,
            examples=True,
            answer="the JSON object, or the text",
        ),
        Question(
            key="calibration_diagnosis",
            asks="determine the experiment's status",
            background=True,
            examples=True,
            answer="Status: an allowed code; Suggested range:; Notes:",
        ),
    )
}


def technical_description() -> str:
    return (
        f"{IMAGE}\n"
        "Describe this figure as one JSON object with these keys:\n"
        '- "plot_type": the kind of plot, such as "scatter", "line", "scatter with fit", "heatmap", '
        '"histogram" or "bar";\n'
        '- "x_axis": {"label": the label as printed, "unit": its unit or null, "scale": "linear" or "log"};\n'
        '- "y_axis": the same for the vertical axis;\n'
        '- "main_features": a list of short statements of what the data show (the shape, trends, peaks '
        "or dips, the noise, and the fitted curve if one is drawn).\n"
        "Reply with the JSON object and nothing else."
    )


def experimental_conclusion() -> str:
    return (
        f"{IMAGE}\n"
        "Classify the outcome of this experiment as the figure shows it. Pick exactly one:\n"
        "- Expected behavior: the data show what this experiment is meant to show, clearly enough to "
        "take its result.\n"
        "- Suboptimal parameters: the physics looks right, but the settings (sweep range, number of "
        "points, shots, power) keep the result from being read well.\n"
        "- Anomalous behavior: the data show something this experiment should not produce.\n"
        "- Apparatus issue: the figure points to a fault in the setup or the measurement chain rather "
        "than in the qubit (no response at all, saturation, broken or missing data).\n"
        "Reply in this form:\n"
        "Classification: <Expected behavior | Suboptimal parameters | Anomalous behavior | Apparatus issue>\n"
        "Reason: <one or two sentences>"
    )


def experimental_significance(guidance: Sequence[str] = DEFAULT_GUIDANCE, question: str | None = None) -> str:
    points = [*guidance, *([" ".join(question.split())] if question and question.strip() else [])]
    bullets = "".join(f"- {point}\n" for point in points)
    return (
        f"{IMAGE}\n"
        "What does this result mean for the calibration of this qubit? Address these points:\n"
        f"{bullets}"
        "Reply in one short paragraph."
    )


def fit_reliability() -> str:
    return (
        f"{IMAGE}\n"
        "Is the fit in this figure reliable enough to take the experiment's parameters from it? "
        "Pick exactly one:\n"
        "- Reliable: a fitted curve follows the data across the part of the sweep that fixes the "
        "parameters.\n"
        "- Unreliable: a fitted curve is drawn, but it strays from the data, rests on too little of the "
        "feature, or leaves the parameters unconstrained.\n"
        "- No fit: no fitted curve is drawn.\n"
        "Reply in this form:\n"
        "Assessment: <Reliable | Unreliable | No fit>\n"
        "Reason: <one or two sentences>"
    )


def parameter_extraction(parameters: Mapping[str, tuple[str, str]] | None = None) -> str:
    """``parameters``: name -> (type, description), the task's extraction schema; None or empty asks
    for whatever parameters the plot determines."""
    if parameters:
        keys = "".join(
            f'- "{name}" ({kind}): {description}\n' if description else f'- "{name}" ({kind})\n'
            for name, (kind, description) in parameters.items()
        )
        return (
            f"{IMAGE}\n"
            "Read these parameters from this figure and reply with one JSON object with exactly these keys:\n"
            f"{keys}"
            "Give each number in the unit its description names. Use null for a value the figure does not "
            "determine. Reply with the JSON object and nothing else."
        )
    return (
        f"{IMAGE}\n"
        "Read from this figure the parameters it determines: fitted values printed on it, or positions, "
        "widths, periods and levels read off its axes. Reply with one JSON object whose keys name each "
        'parameter with its unit (for example "t1_us") and whose values are numbers, true or false, or '
        "null. Reply with the JSON object and nothing else."
    )


def calibration_diagnosis(criteria: Mapping[str, str] | None, range_format: str) -> str:
    """``criteria``: code -> rule, SUCCESS first (the task's); None or empty falls back to
    :data:`DEFAULT_STATUSES` with generic guidance."""
    if criteria:
        intro = (
            "Decide the status of this experiment from the figure. The statuses, each with the rule "
            "that identifies it:\n"
        )
        rules = criteria
    else:
        intro = (
            "Decide the status of this experiment from the figure. This task states no statuses of its "
            "own; judge it by these general ones, each with the rule that identifies it:\n"
        )
        rules = DEFAULT_STATUSES
    listed = "".join(f"- {code}: {rule}\n" for code, rule in rules.items())
    return (
        f"{IMAGE}\n"
        f"{intro}"
        f"{listed}"
        "Pick the one status whose rule this figure meets. When it is not SUCCESS and a different sweep "
        f"would fix it, suggest that sweep's range, written as {range_format}.\n"
        "Reply in this form:\n"
        f"Status: <{' | '.join(rules)}>\n"
        "Suggested range: <the range, or none>\n"
        "Notes: <one or two sentences on what in the figure decided it>"
    )


def allowed_statuses(criteria: Mapping[str, str] | None) -> tuple[str, ...]:
    """The codes a status answer may take: the task's criteria keys, else the default four."""
    return tuple(criteria) if criteria else tuple(DEFAULT_STATUSES)
