"""The regular expressions of a workflow's schemas, matched by RE2: in linear time, never backtracking.

A JSON Schema's ``pattern`` and ``patternProperties`` (and ``additionalProperties`` or
``unevaluatedProperties`` beside them) are the submitter's to write, and jsonschema matches them with
Python's ``re``, which backtracks: ``^(a|a)+$`` against 34 ``a``'s and a ``!`` runs for minutes, in the
platform's own work (issue 22). :func:`install` makes jsonschema match every pattern with RE2 (its
time is linear in the text, whatever the pattern), so no validation of the platform's backtracks.

RE2 has no backreferences and no lookaround: a schema with a pattern RE2 cannot run is refused when it
is checked (:func:`problem`, lint's E061), before any case is validated against it.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 prints every refused pattern to stderr otherwise (a message per group)
#: what RE2 may take to compile one pattern, its own default; a larger one is refused (lint's E061). It
#: bounds RE2's program, not the compiling: at 32 MiB, the nine characters ``\pL{1000}`` compiled in
#: 1.2 s and held 100 MB (60 such patterns 54 s and 830 MB, in one worker); at 8 MiB they are refused in
#: 0.06 s, and ``\pL{200}`` still compiles (0.2 s). Lint's metaschema check (Python's ``re``, which has no
#: ``\p``) refuses these too, but not a pattern it never sees (a ``$ref`` into a keyword no metaschema knows)
_OPTIONS.max_mem = 8 * 2**20
#: where jsonschema matches a pattern (``re.search``, in each of these modules)
_MATCHERS = ("jsonschema._keywords", "jsonschema._utils", "jsonschema._legacy_keywords")


class PatternRefused(ValueError):
    """A pattern RE2 cannot run; the message says why."""


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        reason = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise PatternRefused(reason) from None


def search(pattern: str, text: str) -> object | None:
    """``re.search(pattern, text)`` as jsonschema calls it, by RE2."""
    return _compiled(pattern).search(text)


def problem(pattern: str) -> str | None:
    """Why RE2 cannot run ``pattern`` (a backreference, a lookaround, a size past its bound); ``None``
    when it can."""
    try:
        _compiled(pattern)
    except PatternRefused as e:
        return str(e)
    return None


class _Engine:
    """What jsonschema's matching modules see as ``re``: ``search`` by RE2, anything else Python's."""

    search = staticmethod(search)

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)


def install() -> None:
    """Every pattern jsonschema matches, in this process, matched by RE2."""
    engine = _Engine()
    for name in _MATCHERS:
        __import__(name)
        sys.modules[name].re = engine
