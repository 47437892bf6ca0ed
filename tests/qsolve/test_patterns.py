"""What RE2 (:mod:`qsolve.workflow.patterns`) matches where Python's ``re`` would match otherwise, and what it
refuses to compile (issue 22 tester)."""

from __future__ import annotations

import re

import pytest
from jsonschema import Draft202012Validator

from qsolve.workflow import params, patterns  # noqa: F401 - params installs RE2 for jsonschema


def valid(pattern: str, text: str) -> bool:
    return Draft202012Validator({"type": "string", "pattern": pattern}).is_valid(text)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("^abc$", "abc\n"),  # Python's $ matches before a final newline; ECMA-262's and RE2's do not
        (r"^\d+$", "\u0663\u0664"),  # Arabic-Indic digits: Python's \d is Unicode, ECMA-262's and RE2's ASCII
        (r"^\w+$", "\u00e9"),  # likewise \w
    ],
)
def test_patterns_match_as_ecma_262_says_not_as_pythons_re(pattern: str, text: str) -> None:
    """JSON Schema's patterns are ECMA-262's: a value Python's ``re`` (jsonschema's own engine) lets
    through is refused, as the standard says (docs/validation.md names these)."""
    assert re.search(pattern, text) is not None
    assert not valid(pattern, text)


@pytest.mark.xfail(
    strict=True,
    reason="finding (issue 22 tester): RE2's \\s is Perl's [\\t\\n\\f\\r ], not ECMA-262's (which "
    "has \\v, U+00A0, U+2028, U+FEFF...): a schema's '^\\S+$' (no whitespace, as ECMA-262 and "
    "jsonschema's own re read it) lets 'a\\u00a0b' and 'a\\vb' through the platform's validation",
)
def test_whitespace_is_ecma_262s_whitespace() -> None:
    for text in ("a\u00a0b", "a\vb", "a\u2028b", "a\ufeffb"):
        assert not valid(r"^\S+$", text), repr(text)


def test_the_swap_is_jsonschemas_alone() -> None:
    """Only jsonschema's matching modules see RE2: ``re`` itself, and jsonschema's ``regex`` format
    (which compiles with Python's ``re``), are the platform's as before."""
    import jsonschema._format

    assert re.search.__module__ == "re"
    assert jsonschema._format.re is re
    assert re.search(r"(?<=a)b", "ab")  # a lookbehind: RE2 refuses it, Python's re still runs it


def test_a_short_pattern_that_costs_re2_seconds_and_100_mb_is_refused() -> None:
    """Finding (issue 22 tester), fixed: ``\\pL{1000}`` (nine characters) compiled in 1.2 s and held
    100 MB under a 32 MiB ``max_mem`` (sixty distinct ones: 54 s, 830 MB in one worker, each cached).
    Lint's metaschema check (Python's ``re``, which has no ``\\p``) refuses it too, but a pattern it
    does not see (the E061 gaps below) reached RE2 in every validation. RE2's own default of 8 MiB
    refuses it at once, named; a smaller repetition still runs."""
    assert "pattern too large" in (patterns.problem(r"^\pL{1000}$") or "")
    assert "pattern too large" in (patterns.problem(r"^\p{L}{1,1000}$") or "")
    assert patterns.problem(r"^\pL{200}$") is None and valid(r"^\pL{1,200}$", "é" * 200)


@pytest.mark.xfail(
    strict=True,
    reason="finding (issue 22 tester): E061 checks the patterns the metaschema walks (format: regex) "
    "only: a lookahead reached by a $ref into a keyword no metaschema knows ('hidden'), or a draft-04 "
    "patternProperties key (its metaschema has no propertyNames), passes lint and the schema check, and "
    "every case then fails at validation ('the platform could not validate ...: PatternRefused') in place "
    "of one E061 naming the pattern; the attacker gets no match, only the later failure",
)
@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/hidden/p", "hidden": {"p": {"type": "string", "pattern": "(?=a)"}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {"(?=a)": {}}},
    ],
    ids=["ref-into-unknown-keyword", "draft-04-pattern-properties"],
)
def test_every_pattern_re2_cannot_run_is_e061(schema: dict) -> None:
    from qsolve.errors import WorkflowInvalid
    from qsolve.runtime import worker
    from qsolve.workflow.folder import check_schema

    with pytest.raises(worker.SchemaStopped, match="PatternRefused"):  # what validation does with it
        worker.schema_error(schema, "ab" if "$ref" in schema else {"ab": 1}, "the value")
    with pytest.raises(WorkflowInvalid, match="RE2"):
        check_schema(schema, "schemas/input.json")
