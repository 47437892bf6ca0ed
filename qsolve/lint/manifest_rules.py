"""Lint of the manifest and the three schemas it names (E001 to E031, E060, E061)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qsolve.errors import Issue, WorkflowInvalid
from qsolve.workflow.folder import MANIFEST, check_schema, load_manifest, load_schema
from qsolve.workflow.manifest import Manifest


def read_manifest(root: Path) -> tuple[Manifest | None, list[Issue]]:
    try:
        return load_manifest(root), []
    except WorkflowInvalid as e:
        return None, e.issues


def schemas(root: Path, manifest: Manifest | None) -> Iterator[Issue]:
    """Input, output and params schemas load and pass their metaschema."""
    if manifest is None:
        return
    for key in ("input_schema", "output_schema"):
        relative = getattr(manifest, key)
        try:
            load_schema(root, relative, relative, (key,))
        except WorkflowInvalid as e:
            yield from e.issues
    try:
        check_schema(manifest.params, MANIFEST, ("params",))
    except WorkflowInvalid as e:
        yield from e.issues
