"""Run parameters: the manifest's ``params`` JSON Schema, its defaults, and the platform's limits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry

from qsolve.workflow import patterns
from qsolve.workflow.reading import excerpt

if TYPE_CHECKING:
    from qsolve.runtime import worker

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


def bounded_schema_error(
    schema: dict[str, Any],
    value: Any,
    what: str,
    *,
    deadline: float | None = None,
    on: worker.Worker | None = None,
) -> str | None:
    """:func:`schema_error` of a workflow's schema, in a platform worker (``on``, else one of its own,
    :mod:`qsolve.runtime.worker`): at most ``SCHEMA_S`` seconds and never past ``deadline`` (the job's).
    :class:`SchemaStopped` when the platform stopped it (a pattern that backtracks, say),
    :class:`WorkOutOfTime` at ``deadline``."""
    from qsolve.runtime import worker
    from qsolve.runtime.worker import Raised, SchemaStopped, WorkOutOfTime, WorkStopped

    check, SCHEMA_S = schema_error, worker.SCHEMA_S  # noqa: N806 - the worker's bound
    now = time.monotonic()
    own = now + SCHEMA_S
    end = min(own, deadline or own)
    if end <= now:  # the deadline passed: no worker is started (or killed) for work that cannot run
        raise WorkOutOfTime(f"the platform stopped validating {what} at its deadline")
    try:
        if on is not None:
            return on.call(check, schema, value, what=f"validating {what}", deadline=end)
        return worker.run(check, schema, value, what=f"validating {what}", deadline=end)
    except WorkOutOfTime:
        if deadline is not None and deadline <= own:
            raise
        raise SchemaStopped(
            f"the platform stopped validating {what} after {SCHEMA_S:g} s (a regular expression that "
            "backtracks, or a schema as costly)"
        ) from None
    except Raised as e:
        raise SchemaStopped(f"the platform could not validate {what}: {e}") from None
    except (SchemaStopped, worker.HostShort):  # the host's failure is its caller's to name
        raise
    except WorkStopped as e:
        raise SchemaStopped(str(e)) from None
