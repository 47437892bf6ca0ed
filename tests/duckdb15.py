"""The DuckDB an analyst installs from the package index (1.5, with its httpfs extension), in a virtual
environment of its own: ``.ci/run`` makes it at ``REPO/.venv-duckdb15``::

    python3 -m venv .venv-duckdb15
    .venv-duckdb15/bin/pip install 'duckdb==1.5.5' duckdb-extension-httpfs 'duckdb-cli==1.5.*'

``$QSOLVE_DUCKDB1_PYTHON`` / ``$QSOLVE_DUCKDB1_CLI`` name others. Where none is found the tests that need
it skip, saying so; with ``QSOLVE_REQUIRE_DUCKDB15=1`` (CI) they fail instead.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv-duckdb15"
MAKE_IT = (
    "python3 -m venv .venv-duckdb15 && .venv-duckdb15/bin/pip install"
    " 'duckdb==1.5.5' duckdb-extension-httpfs 'duckdb-cli==1.5.*'"
)


def _found(variable: str, default: Path, args: list[str], pattern: str) -> str | None:
    for candidate in (os.environ.get(variable), str(default)):
        if candidate and Path(candidate).is_file():
            done = subprocess.run([candidate, *args], capture_output=True, text=True, timeout=120)
            if done.returncode == 0 and re.match(pattern, done.stdout.strip()):
                return candidate
    return None


def _missing(what: str) -> None:
    said = f"no {what} at {VENV} (make it: {MAKE_IT})"
    if os.environ.get("QSOLVE_REQUIRE_DUCKDB15"):
        pytest.fail(said)
    pytest.skip(said)


@functools.cache
def _python() -> str | None:
    version = ["-c", "import duckdb; print(duckdb.__version__)"]
    return _found("QSOLVE_DUCKDB1_PYTHON", VENV / "bin" / "python", version, r"1\.")


@functools.cache
def _cli() -> str | None:
    return _found("QSOLVE_DUCKDB1_CLI", VENV / "bin" / "duckdb", ["--version"], r"v1\.")


@functools.cache
def _httpfs() -> str | None:
    python = _python()
    if python is None:
        return None
    code = (
        "import pathlib, duckdb_extension_httpfs as m;"
        "print(next(pathlib.Path(m.__file__).parent.rglob('httpfs.duckdb_extension')))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def python1() -> str:
    found = _python()
    if found is None:
        _missing("DuckDB 1.x Python")
    return found


def cli1() -> str:
    found = _cli()
    if found is None:
        _missing("DuckDB 1.x command line")
    return found


def httpfs1() -> tuple[str, str]:
    """The 1.5 Python and its httpfs extension's file."""
    python = python1()
    found = _httpfs()
    if found is None:
        _missing("httpfs extension for DuckDB 1.5 (duckdb-extension-httpfs)")
    return python, found
