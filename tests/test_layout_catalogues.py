"""Issue 27, items 2 and 7, as an independent tester held them: each package's ``__init__`` is a catalogue
of exactly the modules in it (README: "Each package's ``__init__`` says what is in it"), naming none that
moved away. tests/test_layout.py only asks for a docstring of two lines; these hold it to the folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the subpackages of the core and the front doors (issue 27, item 2), and storage's (whose modules moved too)
PACKAGES = sorted(
    init.parent
    for root in ("qsolve", "storage")
    for init in (REPO / root).rglob("__init__.py")
    if "templates" not in init.parts and "migrations" not in init.parts and init.parent != REPO / root
)
CORE_PACKAGES = [p for p in PACKAGES if p.is_relative_to(REPO / "qsolve")]


def present(package: Path) -> set[str]:
    """The modules and subpackages directly in the package (``__main__`` is an entry point, not a part)."""
    return {
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
        or (p / "__init__.py").is_file()
    }


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def listed(doc: str) -> set[str]:
    """The names a catalogue's lines begin with (``name   what it is``, ``a.py, b.py   what they are``),
    and every ``name.py`` it mentions (not ``flows/name.py``, another folder's)."""
    names: set[str] = set(re.findall(r"(?<![\w/.])([a-z_][a-z0-9_]*)\.py\b", doc))
    for line in doc.splitlines():
        m = re.match(r"\s*((?:[a-z_][a-z0-9_]*(?:\.py)?)(?:, [a-z_][a-z0-9_]*(?:\.py)?)*)\s{2,}\S", line)
        if m:
            names |= {n.removesuffix(".py") for n in re.split(r",\s*", m.group(1))}
    return names


@pytest.mark.parametrize("package", CORE_PACKAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_catalogue_names_every_module_of_its_package(package: Path) -> None:
    doc = docstring(package)
    words = set(re.findall(r"[A-Za-z_]\w*", doc))
    missing = sorted(m for m in present(package) - words if not m.startswith("_"))
    assert not missing, f"{package.relative_to(REPO)}/__init__.py does not name {missing}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_catalogue_names_no_module_that_is_not_there(package: Path) -> None:
    stale = sorted(listed(docstring(package)) - present(package) - {"python", "qsolve"})
    assert not stale, f"{package.relative_to(REPO)}/__init__.py lists {stale}, not in the package"


def test_the_readme_lists_every_module_of_the_command_line() -> None:
    readme = (REPO / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| `qsolve/cli/`")]
    named = set(re.findall(r"`(\w+)`", row))
    missing = sorted(present(REPO / "qsolve" / "cli") - named)
    assert not missing, f"README's row for qsolve/cli/ does not name {missing}"


def test_no_module_of_the_core_builds_a_command_line() -> None:
    """Issue 27, item 1 ("Domain packages hold no command-line code"); tests/test_layout.py looks only for
    ``add_subparsers`` and ``def add_commands``. One program is not qsolve's command line and keeps its
    own: the reference provider (``python -m qsolve.providers.reference``), a device's provider that runs as
    a process of its own and speaks only the protocol; its options module is what ``qsolve providers
    reference`` starts it with."""
    own_program = {"qsolve/providers/reference.py", "qsolve/providers/reference_options.py"}
    found = []
    for path in sorted((REPO / "qsolve").rglob("*.py")):
        relative = path.relative_to(REPO / "qsolve")
        if relative.parts[0] in ("cli", "web") or relative.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text())
        if f"qsolve/{relative}" in own_program:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module == "argparse" or "argparse" in names:
                found.append(f"qsolve/{relative}:{node.lineno}")
    assert not found, f"argparse in the core: {found}"
