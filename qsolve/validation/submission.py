"""What a submission produced, stage by stage, and how the report reads (issue 5).

The submission flow fills it in; ``qsolve submit`` prints it and the flow publishes it as Prefect
artifacts (a markdown report and a table of the gates).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from qsolve.judging.results import CaseResult
from qsolve.validation.gates import GateResult

Stage = Literal["lint", "checks", "gates", "publication", "history"]


class NotRun(BaseModel):
    case: str
    reason: str
    target: str | None = None


class HistoryOutcome(BaseModel):
    """The history stage: which cases became track-record rows and which the platform could not run.

    ``in progress``: another process holds the version's history stage; ``already recorded``: every
    case has a recorded run; ``ran``: this stage ran the cases that had none (``already`` counts those
    that had one); ``skipped``: the stage failed as a whole."""

    status: Literal["ran", "skipped", "already recorded", "in progress"]
    round: int | None = None  # 1, then one more for each history run `again`
    recorded: list[str] = Field(default_factory=list)
    not_run: list[NotRun] = Field(default_factory=list)
    already: int = 0  # cases of the round that had a recorded run before this stage ran
    credits: float = 0.0
    message: str | None = None

    def lines(self) -> list[str]:
        head = self.message
        if head is None and self.status == "ran":
            head = f"round {self.round}, {_cases(len(self.recorded) + len(self.not_run))} run"
        out = [self.status + (f": {head}" if head else "")]
        if self.recorded:
            out.append(
                f"{_cases(len(self.recorded))} recorded in the track record ({self.credits:g} credits)"
                + (
                    f"; {_cases(self.already)} of round {self.round} had been recorded before."
                    if self.already
                    else "."
                )
            )
        if self.not_run:
            out.append(f"{_cases(len(self.not_run))} the platform could not run (not recorded):")
            out += [
                f"- {n.case}" + (f" ({n.target})" if n.target else "") + f": {n.reason}" for n in self.not_run
            ]
        return out


MARKDOWN_SPECIAL = set("\\`*_[]<>|@~#!")


def md_escape(text: str) -> str:
    """Text as markdown shows it literally: every character markdown would read backslash-escaped
    (``fake:fez@1.6`` stays text, never a mail link; ``|`` never ends a table cell)."""
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in text)


def _cases(n: int) -> str:
    return f"{n} case{'' if n == 1 else 's'}"


class SubmissionRejected(Exception):
    """A rejected submission as its flow run's failure: Prefect reads a failed state's data as an
    exception, so the report travels inside one (``report``), its message the one-line reason."""

    def __init__(self, report: SubmissionReport) -> None:
        super().__init__(report.one_line())
        self.report = report

    def __reduce__(self):
        return (SubmissionRejected, (self.report,))


class Published(BaseModel):
    name: str
    version: str
    digest: str
    created: bool  # False when identical content was already published


class SubmissionReport(BaseModel):
    folder: str
    workflow: str | None = None
    version: str | None = None
    failed_stage: Stage | None = None
    reasons: list[str] = Field(default_factory=list)
    lint: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    rejected_cases: list[str] = Field(default_factory=list)
    gates: list[GateResult] = Field(default_factory=list)
    cases: list[CaseResult] = Field(
        default_factory=list
    )  # the gates' runs of the cases, each with its verdict
    sandbox: str | None = None  # what held in the gates' workflow processes
    published: Published | None = None
    history: HistoryOutcome | None = None

    @property
    def accepted(self) -> bool:
        return self.failed_stage is None

    def fail(self, stage: Stage, reasons: list[str]) -> SubmissionReport:
        self.failed_stage = stage
        self.reasons = list(reasons)
        return self

    def one_line(self) -> str:
        """``rejected at the gates stage: cases_pass: ...``, or ``accepted``."""
        if self.accepted:
            return "accepted"
        return f"rejected at the {self.failed_stage} stage: " + "; ".join(self.reasons)

    def gate_table(self) -> list[dict[str, str]]:
        return [
            {"gate": g.name, "result": "pass" if g.passed else "FAIL", "message": g.message}
            for g in self.gates
        ]

    def markdown(self, *, escape: bool = True) -> str:
        """The report as markdown; what it quotes (messages, paths, targets such as ``fake:fez@1.6``,
        which a renderer would make a mail link) escaped. ``escape=False``: as a terminal shows it."""
        e = md_escape if escape else (lambda text: text)
        title = e(f"{self.workflow or self.folder} {self.version or ''}".strip())
        out = [f"# Submission of {title}", ""]
        if self.accepted:
            out.append("**Accepted.**" if self.published else "**Passed.**")
        else:
            out += [f"**Rejected at the {self.failed_stage} stage.**", ""]
            out += [f"- {e(r)}" for r in self.reasons]
        out += ["", "## Lint", ""]
        out += [f"- `{line}`" for line in self.lint] or ["No lint issue."]
        if self.warnings:
            out += ["", "## Warnings", ""] + [f"- {e(w)}" for w in self.warnings]
        if self.rejected_cases:
            out += ["", "## Rejected cases", ""] + [f"- {e(c)}" for c in self.rejected_cases]
        if self.gates:
            out += ["", "## Gates", "", "| gate | result | message |", "|---|---|---|"]
            out += [f"| {g['gate']} | {g['result']} | {e(g['message'])} |" for g in self.gate_table()]
        if self.sandbox:
            out += ["", f"Sandbox: {e(self.sandbox)}."]
        if self.published:
            p = self.published
            state = "published" if p.created else "already published with identical content; nothing changed"
            out += ["", "## Version", "", f"{e(p.name)} {e(p.version)}: {state} (digest `{p.digest[:16]}`)"]
        if self.history:
            out += ["", "## History stage", "", *(e(line) for line in self.history.lines())]
        return "\n".join(out) + "\n"
