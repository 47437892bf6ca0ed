"""The submission checks: every case of ``cases`` and ``hardware_cases``, before the sandbox gates.

Seed: benchmarks-and-gates.md, "Case keys" ("At submission, before the sandbox gates") and "Hardware
cases". One bad case rejects the whole submission, naming the case; nothing is skipped silently.
The submission flow, ``qsolve test`` and ``qsolve submit`` all call :func:`check_submission`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from qsolve.errors import WorkflowInvalid, did_you_mean
from qsolve.runtime import worker
from qsolve.workflow import params as run_params
from qsolve.workflow.cases import Case, case_label
from qsolve.workflow.folder import CASES, Workflow, load_workflow
from qsolve.workflow.params import bounded_schema_error
from qsolve.workflow.publication import PublicationError
from qsolve.workflow.reading import Refused, inside, read_json_object, read_yaml
from qsolve.workflow.snapshot import Snapshot

HARDWARE_BYTES_MAX = 600_000
TOO_LARGE = "The hardware cases are too large"
#: the most the validations of all the cases together may take (each is bounded at worker.SCHEMA_S
#: too): without it, N costly schemas stall the checks N times over, and `qsolve check` has no job
#: deadline (issue 22)
CHECKS_S = 60.0
DEFAULT_TARGET = "sim-cpu"

Section = Literal["cases", "hardware_cases"]


class CaseInputError(ValueError):
    """A case's input cannot be had; the message says why."""


def case_input(root: Path, case: Case) -> dict[str, Any]:
    """The case's input object: ``input`` when given (it wins), else the JSON object in ``input_file``."""
    if case.input is not None:
        return case.input
    if case.input_file is None:
        raise CaseInputError("has neither `input` nor `input_file`")
    shown = f"input_file {case.input_file!r}"
    try:
        path = inside(root, case.input_file)
    except Refused as e:
        raise CaseInputError(f"{shown} {e}") from None
    try:
        return read_json_object(root, path, case.input_file)
    except WorkflowInvalid as e:
        raise CaseInputError(f"{shown} {e.message}") from None


@dataclass(frozen=True)
class CheckedCase:
    """A case that passed the checks, with its input written out."""

    section: Section
    index: int
    case: Case
    input: dict[str, Any]

    @property
    def label(self) -> str:
        return case_label(self.section, self.index, self.case)

    def inline(self) -> dict[str, Any]:
        """The case as publication keeps it: ``input`` inline, no ``input_file``."""
        data = self.case.model_dump(mode="json", exclude={"input_file"})
        data["input"] = self.input
        return data


@dataclass
class SubmissionChecks:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cases: list[CheckedCase] = field(default_factory=list)
    hardware_cases: list[CheckedCase] = field(default_factory=list)
    workflow: Workflow | None = None
    #: the folder as the checks read it, and as the gates and publication use it (None: unreadable)
    snapshot: Snapshot | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def check_submission(root: Path | str) -> SubmissionChecks:
    """Run every submission check; the report lists every error and warning found. The folder is read
    once (:class:`Snapshot`): the checks read the snapshot, and so do the gates and publication after
    them (``report.snapshot``). A folder that cannot be read whole is still checked where it lies, so
    that every problem is named, but it has no snapshot: nothing is gated or published."""
    root = Path(root)
    report = SubmissionChecks()
    try:
        report.snapshot = Snapshot.take(root)
    except PublicationError as e:
        refused = str(e)
    folder = report.snapshot.folder if report.snapshot else root
    _check(folder, report)
    if report.snapshot is None and report.ok:
        report.errors.append(refused)
    return report


def _check(root: Path, report: SubmissionChecks) -> None:
    # one platform worker for the folder's schemas and every case's validations: one fork, not four
    with worker.kept() as validating:
        try:
            workflow = load_workflow(root, validating)
        except WorkflowInvalid as e:
            report.errors.extend(str(i) for i in e.issues)
            return
        report.workflow = workflow
        deadline = time.monotonic() + CHECKS_S
        _check_cases(root, workflow, report, validating, deadline)
    if report.ok:
        size = hardware_bytes(report.hardware_cases)
        if size > HARDWARE_BYTES_MAX:
            report.errors.append(
                f"{TOO_LARGE} ({size:,} bytes with their inputs written out; "
                f"the limit is {HARDWARE_BYTES_MAX:,})"
            )
    report.warnings.extend(_same_name_and_target(workflow))
    report.warnings.extend(_ignored_keys(root))


def _ignored_keys(root: Path) -> list[str]:
    """The seed ignores any top-level key of cases.yaml but ``cases`` and ``hardware_cases``; one close
    to them is a typo that leaves the file with no cases, said as a warning (``casess``)."""
    try:
        raw = read_yaml(root, CASES)  # through the one reader of a submitted folder, as load_workflow
    except (Refused, WorkflowInvalid, OSError):
        return []  # load_workflow read it; a file that changed since is the next run's
    known = ("cases", "hardware_cases")
    keys = [k for k in raw if isinstance(k, str) and k not in known] if isinstance(raw, dict) else []
    return [f"{CASES}: {k}: ignored{did_you_mean(k, known)}" for k in keys if did_you_mean(k, known)]


def _check_cases(
    root: Path, workflow: Workflow, report: SubmissionChecks, validating: worker.Worker, deadline: float
) -> None:
    for section in ("cases", "hardware_cases"):
        checked = report.cases if section == "cases" else report.hardware_cases
        for index, case in enumerate(getattr(workflow.cases, section)):
            label = case_label(section, index, case)
            errors = _check_case(workflow, case, validating, deadline)
            report.errors.extend(f"{CASES}: {label}: {e}" for e in errors)
            if not errors:
                checked.append(CheckedCase(section, index, case, case_input(root, case)))


def _check_case(workflow: Workflow, case: Case, validating: worker.Worker, deadline: float) -> list[str]:
    def check(schema: dict[str, Any], value: Any, what: str) -> str | None:
        try:
            return bounded_schema_error(schema, value, what, deadline=deadline, on=validating)
        except worker.WorkOutOfTime:
            raise worker.SchemaStopped(
                f"the platform stopped validating {what}: the checks of all the cases reached their "
                f"bound of {CHECKS_S:g} s (schemas this costly to check need simplifying)"
            ) from None

    try:
        value = case_input(workflow.root, case)
    except CaseInputError as e:
        errors = [str(e)]
    else:
        against = workflow.manifest.input_schema
        try:
            err = check(workflow.input_schema, value, f"the input against {against}")
        except worker.SchemaStopped as e:
            errors = [str(e)]
        else:
            errors = [f"input does not match {against} {err}"] if err else []

    def check_params(schema: dict[str, Any], value: Any) -> str | None:
        return check(schema, value, "the params against the manifest's params schema")

    try:
        return errors + run_params.problems(workflow.manifest.params, case.params, check_params)
    except worker.SchemaStopped as e:
        return [*errors, str(e)]


def hardware_bytes(cases: list[CheckedCase]) -> int:
    """Size of all hardware cases together, inputs written out, as compact UTF-8 JSON."""
    text = json.dumps([c.inline() for c in cases], separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return len(text.encode("utf-8"))


def _same_name_and_target(workflow: Workflow) -> list[str]:
    seen: dict[tuple[str, str], str] = {}
    out = []
    for section in ("cases", "hardware_cases"):
        for index, case in enumerate(getattr(workflow.cases, section)):
            key = (case.name, case.target or DEFAULT_TARGET)
            label = case_label(section, index, case)
            if key in seen:
                out.append(
                    f"{CASES}: {label}: same name and target as {seen[key]}; the track record keeps "
                    f"one current row per name and target, so one hides the other"
                )
            else:
                seen[key] = label
    return out
