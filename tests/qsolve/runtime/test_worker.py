"""The platform worker (issue 22, item 2): the platform's own work on a workflow's input, bounded."""

from __future__ import annotations

import os
import time

import pytest

from qsolve.runtime import worker
from qsolve.workflow.params import bounded_schema_error


def _allocate(mb: int) -> int:
    block = bytearray(mb * 2**20)  # a decoder that believed a header
    return len(block)


def _spin() -> None:
    while True:
        pass


def _pid() -> int:
    return os.getpid()


def test_the_work_comes_back_from_another_process() -> None:
    assert worker.run(_pid, what="asking", deadline=time.monotonic() + 60) != os.getpid()


def test_work_past_the_memory_bound_is_stopped_and_said_so() -> None:
    with pytest.raises(worker.WorkStopped, match="memory bound of 256 MB"):
        worker.run(_allocate, 4096, what="decoding", deadline=time.monotonic() + 60, memory_mb=256)
    got = worker.run(_allocate, 64, what="decoding", deadline=time.monotonic() + 60, memory_mb=256)
    assert got == 64 * 2**20


def test_work_is_killed_at_its_deadline() -> None:
    start = time.monotonic()
    with pytest.raises(worker.WorkOutOfTime, match="the platform stopped spinning at its deadline"):
        worker.run(_spin, what="spinning", deadline=start + 1)
    assert time.monotonic() - start < 5


def test_what_the_work_raised_comes_back_by_name() -> None:
    with pytest.raises(worker.Raised, match="ZeroDivisionError"):
        worker.run(divmod, 1, 0, what="dividing", deadline=time.monotonic() + 60)


def costly_schema(levels: int = 30, key: str | None = None) -> dict:
    """A schema that costs 2^levels validations of a string with no pattern at all: at each level,
    ``anyOf`` two references to the next, and none of them matches (``key``: an object's property)."""
    defs = {f"a{i}": {"anyOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 2} for i in range(levels)}
    defs[f"a{levels}"] = {"type": "integer"}
    if key is None:
        return {"$defs": defs, "$ref": "#/$defs/a0"}
    return {"type": "object", "$defs": defs, "properties": {key: {"$ref": "#/$defs/a0"}}}


def test_a_backtracking_pattern_is_matched_at_once_by_re2() -> None:
    """``^(a|a)+$`` against 34 ``a``'s and a ``!``: hours in Python's ``re``; RE2 never backtracks."""
    schema = {"type": "string", "pattern": "^(a|a)+$"}
    start = time.monotonic()
    said = bounded_schema_error(schema, "a" * 34 + "!", "the value")
    assert said is not None and "does not match '^(a|a)+$'" in said, said
    assert time.monotonic() - start < worker.SCHEMA_S
    assert bounded_schema_error(schema, "aaaa", "the value") is None
    keys = {"patternProperties": {"^(a|a)+$": {}}, "additionalProperties": False}  # a key, matched so
    said = bounded_schema_error(keys, {"a" * 34 + "!": 1}, "the value")
    assert said is not None and "does not match any of the regexes" in said, said
    assert time.monotonic() - start < worker.SCHEMA_S


def test_a_pattern_re2_cannot_run_stops_the_validation_by_name() -> None:
    with pytest.raises(worker.SchemaStopped, match=r"could not validate the value: PatternRefused: "):
        bounded_schema_error({"pattern": "^(a+)\\1$"}, "aa", "the value")


def test_a_costly_schema_is_stopped_and_an_honest_one_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "SCHEMA_S", 1.0)
    start = time.monotonic()
    with pytest.raises(worker.SchemaStopped, match=r"stopped validating the value after 1 s"):
        bounded_schema_error(costly_schema(), "s", "the value")
    assert time.monotonic() - start < worker.SCHEMA_S + 5
    assert bounded_schema_error(costly_schema(3), 1, "the value") is None
    assert "is not valid under any" in bounded_schema_error(costly_schema(3), "s", "the value")


def test_the_job_deadline_comes_first_when_it_is_nearer() -> None:
    with pytest.raises(worker.WorkOutOfTime):
        bounded_schema_error(costly_schema(), "s", "the value", deadline=time.monotonic() + 1)
