"""The layout shows the architecture (DESIGN.md §2, issue 27): the core by role, each package with a
catalogue, and every part of the core under the import rule that keeps it apart from the edge."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "qsolve"
FRONT_DOORS = {"cli", "web"}


def parts() -> set[str]:
    """The packages and modules directly in qsolve/."""
    return {
        p.stem if p.is_file() else p.name
        for p in CORE.iterdir()
        if (p.is_file() and p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }


def contract(name_start: str) -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (found,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(name_start)]
    return found


def test_every_part_of_the_core_is_under_the_rule_that_keeps_it_from_the_edge() -> None:
    rule = contract("the domain core imports neither")
    named = {m.removeprefix("qsolve.") for m in rule["source_modules"]}
    assert named == parts() - FRONT_DOORS  # a new part of qsolve/ is named there, or this fails
    forbidden = set(rule["forbidden_modules"])
    assert {f"qsolve_pipeline.{p}" for p in ("storage", "flows", "tasks", "deployments")} <= forbidden
    assert {"prefect", "qsolve.cli", "qsolve.web"} <= forbidden


def test_the_top_of_the_core_holds_at_most_15_modules() -> None:
    modules = [p for p in CORE.glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= 15, sorted(p.name for p in modules)


def test_each_package_of_the_core_says_what_is_in_it() -> None:
    for init in CORE.rglob("__init__.py"):
        if "templates" in init.parts or "__pycache__" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.splitlines()) >= 2, f"{init.relative_to(REPO)}: no catalogue docstring"


def test_no_command_line_code_in_the_domain_packages() -> None:
    for path in CORE.rglob("*.py"):
        relative = path.relative_to(CORE)
        if relative.parts[0] in FRONT_DOORS or relative.name == "__main__.py":
            continue
        text = path.read_text()
        assert "add_subparsers" not in text and "def add_commands" not in text, str(relative)
