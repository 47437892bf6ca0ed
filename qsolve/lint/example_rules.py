"""Lint of ``examples/``: each file one JSON object (E064). Matching the schema is the gate's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qsolve.errors import Issue, WorkflowInvalid
from qsolve.workflow.folder import example_paths
from qsolve.workflow.manifest import Manifest
from qsolve.workflow.reading import read_json_object


def examples(root: Path, manifest: Manifest | None) -> Iterator[Issue]:
    for relative in example_paths(root):
        try:
            read_json_object(root, relative)
        except WorkflowInvalid as e:
            yield from (Issue(i.file, i.message, code="E064") for i in e.issues)
