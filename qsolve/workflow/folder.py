"""A workflow folder read into models (DESIGN.md §3): manifest, schemas, module, examples, cases.

Reading never imports workflow code. Every failure is an :class:`Issue` naming the file and key
path; :func:`load_workflow` gathers all of them before it gives up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator, FormatChecker, SchemaError
from jsonschema.validators import validator_for
from pydantic import ValidationError

from qsolve.errors import Issue, PlatformFailed, WorkflowInvalid, format_loc, issues_from_validation
from qsolve.workflow import patterns
from qsolve.workflow.cases import CasesFile, case_label
from qsolve.workflow.manifest import Manifest
from qsolve.workflow.reading import Refused, files_in, inside, kind, read_json, read_yaml

if TYPE_CHECKING:
    from qsolve.runtime.worker import Worker

MANIFEST = "manifest.yaml"
CASES = "benchmarks/cases.yaml"
EXAMPLES = "examples"
MANIFEST_CODES = {"extra_forbidden": "E003", "missing": "E005"}


def load_manifest(root: Path) -> Manifest:
    """``manifest.yaml`` as a :class:`Manifest`; issues carry lint codes E001 to E031."""
    if kind(root, MANIFEST) == "missing":
        raise WorkflowInvalid("no manifest", [Issue(MANIFEST, "the file is missing", code="E001")])
    try:
        raw = read_yaml(root, MANIFEST)
    except WorkflowInvalid as e:
        raise WorkflowInvalid(e.message, [Issue(MANIFEST, e.message, code="E002")]) from None
    if not isinstance(raw, dict):
        msg = f"must be a mapping of keys, not {type(raw).__name__}"
        raise WorkflowInvalid(msg, [Issue(MANIFEST, msg, code="E002")])
    try:
        return Manifest.model_validate(raw)
    except ValidationError as e:
        issues = issues_from_validation(
            e, MANIFEST, codes=MANIFEST_CODES, default_code="E004", model=Manifest
        )
        raise WorkflowInvalid("manifest.yaml is invalid", issues) from None


def load_schema(
    root: Path, relative: str, label: str, loc: tuple = (), on: Worker | None = None
) -> dict[str, Any]:
    """A JSON Schema file, checked against its metaschema (2020-12 unless it names another; ``on``:
    the platform worker that checks it, as :func:`check_schema`)."""
    try:
        path = inside(root, relative)
    except Refused as e:
        raise WorkflowInvalid(str(e), [Issue(MANIFEST, f"{relative!r} {e}", loc=loc, code="E007")]) from None
    try:
        schema = read_json(root, path, relative)
    except WorkflowInvalid as e:
        raise WorkflowInvalid(e.message, [Issue(relative, e.message, code="E060")]) from None
    check_schema(schema, relative, on=on)
    return schema


def check_schema(schema: Any, label: str, loc: tuple = (), on: Worker | None = None) -> None:
    """Raise :class:`WorkflowInvalid` (E061) when ``schema`` is not a valid JSON Schema. The check runs
    in a platform worker, bounded as a validation is: the metaschema compiles every ``pattern`` with
    Python's ``re``, and a 4 MB pattern of a million groups takes the platform's process minutes and
    gigabytes (issue 22). ``on``: a worker kept for several checks (a workflow's schemas: one fork,
    not one each, and the metaschema's validator built once); else one of its own."""
    if not isinstance(schema, dict | bool):
        raise WorkflowInvalid(
            "not a schema", [Issue(label, "a JSON Schema must be an object", loc=loc, code="E061")]
        )
    from qsolve.runtime import worker
    from qsolve.workflow.reading import excerpt

    try:
        found = _checked_by_worker(schema, label, on)
    except worker.HostShort as e:  # the platform's failure: never the workflow's E061
        raise PlatformFailed(str(e), [Issue(label, f"not checked: {e}", loc=loc)]) from None
    except worker.WorkOutOfTime:
        found = (f"the platform stopped checking it after {worker.SCHEMA_S:g} s (a pattern as costly)", ())
    except worker.Raised as e:
        found = (f"the platform could not check it: {excerpt(str(e))}", ())
    except worker.WorkStopped as e:
        found = (str(e), ())
    if found is not None:
        message, path = found
        msg = f"not a valid JSON Schema: {message}"
        raise WorkflowInvalid(msg, [Issue(label, msg, loc=loc + path, code="E061")])


#: how many times a schema's check is tried when the host killed its worker (a host short of memory
#: for a moment); the pauses between tries, in seconds
HOST_TRIES = 3
HOST_PAUSE_S = 0.5


def _checked_by_worker(schema: Any, label: str, on: Worker | None = None) -> tuple[str, tuple] | None:
    """:func:`_schema_problem` in a platform worker (``on``, else one of its own), tried again
    (:data:`HOST_TRIES` in all) when the host killed the worker
    (:class:`~qsolve.runtime.worker.HostShort`), which is raised after the last. A kept worker that
    failed is ended by its call, and the next try forks a new one."""
    from qsolve.runtime import worker

    for attempt in range(HOST_TRIES):
        try:
            what, deadline = f"checking {label} against its metaschema", time.monotonic() + worker.SCHEMA_S
            if on is not None:
                return on.call(_schema_problem, schema, what=what, deadline=deadline)
            return worker.run(_schema_problem, schema, what=what, deadline=deadline)
        except worker.HostShort:
            if attempt + 1 == HOST_TRIES:
                raise
            time.sleep(HOST_PAUSE_S)
    raise AssertionError("unreachable")  # pragma: no cover


def _schema_problem(schema: dict[str, Any] | bool) -> tuple[str, tuple] | None:
    """What is wrong with ``schema`` against its metaschema (in a platform worker), and where."""
    cls = (
        validator_for(schema, default=Draft202012Validator)
        if isinstance(schema, dict)
        else Draft202012Validator
    )
    from qsolve.workflow.reading import excerpt

    try:
        cls.check_schema(schema)
    except SchemaError as e:
        return excerpt(e.message), tuple(e.absolute_path)
    # the platform matches every pattern with RE2 (qsolve.workflow.patterns): one it cannot run is refused
    # here, by name, rather than when a case's value reaches it
    for err in cls(cls.META_SCHEMA, format_checker=_RE2_FORMATS).iter_errors(schema):
        if err.validator == "format" and isinstance(err.instance, str):
            why = patterns.problem(err.instance)
            return (
                f"pattern {excerpt(err.instance)!r}: the platform matches patterns with RE2, which cannot "
                f"run it ({excerpt(why or 'refused')}; RE2 has no backreferences and no lookaround)",
                tuple(err.absolute_path),
            )
    return None


def _re2_runs(pattern: object) -> bool:
    return not isinstance(pattern, str) or patterns.problem(pattern) is None


_RE2_FORMATS = FormatChecker(formats=())
_RE2_FORMATS.checks("regex")(_re2_runs)


def load_cases(root: Path) -> CasesFile:
    """The whole of ``benchmarks/cases.yaml``, every case and hardware case checked for keys and types."""
    if kind(root, CASES) == "missing":
        raise WorkflowInvalid("no cases", [Issue(CASES, "the file is missing", code="E050")])
    raw = read_yaml(root, CASES)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        msg = f"must be a mapping with `cases` and `hardware_cases`, not {type(raw).__name__}"
        raise WorkflowInvalid(msg, [Issue(CASES, msg)])
    try:
        return CasesFile.model_validate(raw)
    except ValidationError as e:
        issues = [_named(i, raw) for i in issues_from_validation(e, CASES, model=CasesFile)]
        raise WorkflowInvalid("benchmarks/cases.yaml is invalid", issues) from None


def _named(issue: Issue, raw: dict) -> Issue:
    """An issue inside a case, its case named by position and name: ``cases[6] (othercrash): targets``."""
    loc = issue.loc
    if len(loc) < 2 or loc[0] not in ("cases", "hardware_cases") or not isinstance(loc[1], int):
        return issue
    entries = raw.get(loc[0])
    case = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
    label = case_label(str(loc[0]), loc[1], case)
    rest = format_loc(loc[2:])
    message = f"{label}: {rest}: {issue.message}" if rest else f"{label}: {issue.message}"
    return Issue(issue.file, message, (), issue.code, issue.severity)


def example_paths(root: Path) -> list[str]:
    """``examples/*.json`` by relative path (links and special files too: reading refuses them by name)."""
    return files_in(root, EXAMPLES, ".json")


@dataclass(frozen=True)
class Workflow:
    """A workflow folder that reads: its manifest, both schemas, its module's path and its cases."""

    root: Path
    manifest: Manifest
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    module_path: Path
    cases: CasesFile

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version


def load_workflow(root: Path | str, on: Worker | None = None) -> Workflow:
    """Read a workflow folder; raise :class:`WorkflowInvalid` with every issue found. Its three schemas
    (input, output, params) are checked in one platform worker: ``on``, else one kept for them."""
    root = Path(root)
    if not root.is_dir():
        raise WorkflowInvalid(f"{root} is not a folder", [Issue(str(root), "is not a folder")])
    if on is None:
        from qsolve.runtime import worker

        with worker.kept() as one:
            return load_workflow(root, one)
    issues: list[Issue] = []

    def attempt(fn, *args):
        try:
            return fn(*args)
        except WorkflowInvalid as e:
            issues.extend(e.issues)
            return None

    manifest = attempt(load_manifest, root)
    schemas = module = None
    if manifest is not None:
        schemas = [
            attempt(load_schema, root, manifest.input_schema, manifest.input_schema, ("input_schema",), on),
            attempt(
                load_schema, root, manifest.output_schema, manifest.output_schema, ("output_schema",), on
            ),
        ]
        attempt(check_schema, manifest.params, MANIFEST, ("params",), on)
        module = attempt(module_path, root, manifest.module)
    cases = attempt(load_cases, root)
    if issues:
        raise WorkflowInvalid(f"{root}: the workflow does not read", issues)
    return Workflow(
        root=root,
        manifest=manifest,
        input_schema=schemas[0],
        output_schema=schemas[1],
        module_path=module,
        cases=cases,
    )


def module_path(root: Path, relative: str) -> Path:
    try:
        path = inside(root, relative)
    except Refused as e:
        raise WorkflowInvalid(
            str(e), [Issue(MANIFEST, f"{relative!r} {e}", loc=("module",), code="E007")]
        ) from None
    found = kind(root, path)
    if found == "special":
        msg = "the module is not a regular file: the platform reads regular files only"
        raise WorkflowInvalid("no module", [Issue(relative, msg, code="E040")])
    if found != "file":
        raise WorkflowInvalid("no module", [Issue(relative, "the module does not exist", code="E040")])
    return root / path
