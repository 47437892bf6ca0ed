"""Lint of ``benchmarks/cases.yaml`` (seed: benchmarks-and-gates.md, "Lint codes for benchmark mistakes").

Lint checks ``hardware_cases``, never the content of ``cases``: that is ``qsolve test``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from qsolve.errors import Issue, WorkflowInvalid, issues_from_validation
from qsolve.workflow.cases import HARDWARE_CASES, MAX_HARDWARE_CASES, HardwareCase
from qsolve.workflow.folder import CASES
from qsolve.workflow.manifest import Manifest
from qsolve.workflow.reading import kind, read_yaml


def benchmarks(root: Path, manifest: Manifest | None) -> Iterator[Issue]:
    if kind(root, CASES) == "missing":
        yield Issue(CASES, "the file is missing", code="E050")
        return
    try:
        raw = read_yaml(root, CASES)
    except WorkflowInvalid as e:
        yield from (Issue(i.file, i.message, code="E052") for i in e.issues)
        return
    if raw is None:
        return
    if not isinstance(raw, dict):
        yield Issue(
            CASES,
            f"must be a mapping with `cases` and `hardware_cases`, not {type(raw).__name__}",
            code="E052",
        )
        return
    hardware = raw.get("hardware_cases")
    if hardware is None:
        return
    try:
        HARDWARE_CASES.validate_python(hardware)
    except ValidationError as e:
        yield from issues_from_validation(
            e, CASES, prefix=("hardware_cases",), default_code="E052", model=list[HardwareCase]
        )
    if not isinstance(hardware, list):
        return
    if len(hardware) > MAX_HARDWARE_CASES:
        yield Issue(
            CASES,
            f"{len(hardware)} hardware cases; at most {MAX_HARDWARE_CASES} are allowed",
            loc=("hardware_cases",),
            code="E053",
        )
    if hardware and manifest is not None and "ibm" not in manifest.targets.qpu:
        yield Issue(
            CASES,
            "hardware cases need `targets: {qpu: [ibm]}` in the manifest",
            loc=("hardware_cases",),
            code="E054",
        )
