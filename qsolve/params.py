"""Run parameters: the manifest's ``params`` JSON Schema, its defaults, and the platform's limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry

from qsolve import patterns
from qsolve.reading import excerpt

patterns.install()  # a workflow schema's patterns, matched by RE2: none backtracks (issue 22)

MAX_SHOTS = 100_000
#: no retrieval: a remote ``$ref`` in a workflow's schema is unresolvable, never fetched (jsonschema's
#: default registry still fetches one with urllib, from the platform's network)
_NO_FETCH = Registry()


def defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``default`` of every top-level property that has one."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    return {k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p}


def merge(schema: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    return {**defaults(schema), **overrides}


def schema_error(schema: dict[str, Any], value: Any) -> str | None:
    """The most relevant way ``value`` fails ``schema``, naming the schema path; ``None`` if it matches."""
    err = best_match(Draft202012Validator(schema, registry=_NO_FETCH).iter_errors(value))
    if err is None:
        return None
    at = err.json_path
    schema_path = "/".join(str(p) for p in err.absolute_schema_path)
    # the message quotes the value: never more than a short excerpt of it (issue 22)
    return f"at {at}: {excerpt(err.message)} (schema path: {excerpt(schema_path) or '/'})"


def problems(
    schema: dict[str, Any], overrides: dict[str, Any], check: Callable[[Any, Any], str | None] | None = None
) -> list[str]:
    """Why these parameter overrides cannot run, in the order they are checked; empty when they can.
    ``check(schema, value)``: how the schema is checked (default :func:`schema_error`, here)."""
    merged = merge(schema, overrides)
    out = []
    shots = merged.get("shots")
    if isinstance(shots, int | float) and not isinstance(shots, bool) and shots > MAX_SHOTS:
        out.append(f"params.shots {shots:,} is above {MAX_SHOTS:,}")
    err = (check or schema_error)(schema, merged)
    if err:
        out.append(f"params do not match the manifest's params schema {err}")
    return out
