"""Version numbers in publication order (issue 33, item 1): a name's versions only go up, and "the latest
published version" (benchmarks-and-gates.md) is the highest by Semantic Versioning 2.0.0 precedence
(semver.org §11), not the last published in time.

A version is published only as ``MAJOR.MINOR.PATCH``, with an optional ``-PRERELEASE`` and ``+BUILD``
(:func:`publication_error` says what is wrong). Build metadata takes no part in precedence, so ``1.0.0+b``
is not above ``1.0.0+a``. Versions published before this rule that are not semantic versions rank below
every semantic version, among themselves in publication order (:func:`order_key`).
"""

from __future__ import annotations

import re

_NUMBER = r"(?:0|[1-9][0-9]*)"  # ASCII digits only: \d would take any Unicode digit
_PRE = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_RE = re.compile(
    rf"({_NUMBER})\.({_NUMBER})\.({_NUMBER})"
    rf"(?:-({_PRE}(?:\.{_PRE})*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)

#: what a published version must look like, said in every refusal
FORM = "MAJOR.MINOR.PATCH, optionally -PRERELEASE and +BUILD (semver.org), e.g. 1.0.0 or 2.1.0-rc.1"


def precedence(version: str) -> tuple | None:
    """The version's semver precedence as a tuple that compares as §11 says; None for a non-semver one."""
    m = SEMVER_RE.fullmatch(version)
    if m is None:
        return None
    major, minor, patch, pre = int(m[1]), int(m[2]), int(m[3]), m[4]
    if pre is None:
        return (major, minor, patch, 1, ())
    # numeric identifiers numerically and below alphanumeric ones; a shorter set of equal prefix is lower
    idents = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (major, minor, patch, 0, idents)


def order_key(version: str, published: int) -> tuple:
    """A total order of a name's published versions: semantic versions by precedence (ties by
    ``published``, the publication's sequence number), below them every other version by ``published``."""
    found = precedence(version)
    return (1, found, published) if found is not None else (0, (), published)


def publication_error(version: str) -> str | None:
    """Why ``version`` cannot be published (it is not a semantic version), or None."""
    if SEMVER_RE.fullmatch(version):
        return None
    return f"version {version!r} is not a semantic version: publish {FORM}"
