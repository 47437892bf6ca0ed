"""Reading a workflow's files: YAML and JSON documents, each failure an :class:`Issue` naming the file.

Paths a workflow names are held inside its folder: relative, without ``..``, and not leaving it
through a symbolic link at any level.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import yaml

from qsolve.errors import Issue, WorkflowInvalid


class Unreadable(WorkflowInvalid):
    """A file that is missing, unreadable, or not the document it should be."""


def _fail(file: str, message: str, code: str | None = None) -> Unreadable:
    return Unreadable(message, [Issue(file=file, message=message, code=code)])


def read_text(path: Path, label: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _fail(label, "does not exist") from None
    except IsADirectoryError:
        raise _fail(label, "is a folder, not a file") from None
    except OSError as e:
        raise _fail(label, f"cannot be read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(label, f"cannot be read: not UTF-8 (byte {e.start})") from None


def read_yaml(path: Path, label: str) -> Any:
    text = read_text(path, label)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise _fail(label, f"is not YAML{where}: {problem}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise _fail(label, f"is not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise _fail(label, f"is not JSON: {e}") from None


def read_json(path: Path, label: str) -> Any:
    return parse_json(read_text(path, label), label)


def read_json_object(path: Path, label: str) -> dict[str, Any]:
    value = read_json(path, label)
    if not isinstance(value, dict):
        raise _fail(label, f"holds a JSON {_json_type(value)}, not a JSON object")
    return value


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def inside(root: Path, relative: str) -> Path:
    """Resolve ``relative`` under ``root``; refuse what is absolute, has ``..`` or leaves through a link.

    Raises :class:`ValueError` with the reason, worded to follow the path in a message.
    """
    if (
        PurePosixPath(relative).is_absolute()
        or PureWindowsPath(relative).is_absolute()
        or relative.startswith(("/", "\\"))
    ):
        raise ValueError("is absolute; give a path relative to the workflow folder")
    if ".." in PurePosixPath(relative.replace("\\", "/")).parts:
        raise ValueError("contains '..'")
    base = root.resolve()
    try:
        resolved = (base / relative).resolve()
    except (OSError, RuntimeError) as e:  # a loop of links
        raise ValueError(f"cannot be resolved: {e}") from None
    if not resolved.is_relative_to(base):
        raise ValueError("leaves the workflow folder through a symbolic link")
    return resolved
