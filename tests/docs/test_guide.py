"""docs/writing-a-workflow.md cannot go stale: its example is built from the page's own code blocks and
passes ``qsolve test``; and no document points at a file the repository does not have."""

from __future__ import annotations

import json
import re
from pathlib import Path

from qsolve.cli import main
from tests.conftest import REPO

GUIDE = REPO / "docs" / "writing-a-workflow.md"
#: a fenced block whose info string names a file: ```yaml manifest.yaml
FILE_BLOCK = re.compile(r"^```[a-z]+ ([\w./-]+)\n(.*?)^```$", re.M | re.S)


def guide_files() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in FILE_BLOCK.finditer(GUIDE.read_text())}


def test_the_guide_holds_every_file_of_its_example() -> None:
    assert sorted(guide_files()) == [
        "benchmarks/cases.yaml",
        "examples/four.json",
        "manifest.yaml",
        "schemas/input.json",
        "schemas/output.json",
        "workflow.py",
    ]


def test_the_guides_example_lints_clean_and_passes_all_eight_gates(tmp_path: Path, capsys) -> None:
    root = tmp_path / "hidden-string"
    for rel, text in guide_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert main(["lint", str(root)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["test", str(root), "--json"]) == 0, capsys.readouterr().out
    report = json.loads(capsys.readouterr().out)
    assert [g["name"] for g in report["gates"] if g["passed"]] == [
        "manifest", "example_inputs", "benchmark_cases", "methods_declared", "fidelity_checked",
        "cases_pass", "reproducible", "estimate_honest",
    ]  # fmt: skip
    assert [c["name"] for c in report["cases"]] == ["four-bits", "twelve-bits", "noise-model-four-bits"]


# --- every path a document names exists ------------------------------------------------------------

DOCS = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
TOP = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: `qsolve/validation/gates.py`, `tests/web/`: a path in backticks that starts at a folder of the repository
REPO_PATH = re.compile(r"`([\w.-]+(?:/[\w.*-]+)+/?)`")
#: DESIGN.md, CONTRIBUTING.md: a document named in capitals
CAPITAL_DOC = re.compile(r"\b([A-Z][A-Z_-]+\.md)\b")


def _generated() -> list[str]:
    """What the tests or the tools write (git-ignored): a document may name where it goes."""
    ignore = REPO / ".gitignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    return [line.strip().strip("/") for line in lines if line.strip() and not line.startswith("#")]


def missing(doc: Path) -> list[str]:
    text, out = doc.read_text(), []
    generated = _generated()
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        external = "://" in target or target.startswith("mailto:")
        if target and not external and not (doc.parent / target).exists():
            out.append(f"link {target}")
    for m in REPO_PATH.finditer(text):
        path = m.group(1)
        first = path.split("/")[0]
        if first in ("seeds", "shared"):
            out.append(f"path {path} (outside the repository)")
        elif first in TOP and "*" not in path and not (REPO / path).exists() and not any(
            path.strip("/").startswith(g) for g in generated
        ):
            out.append(f"path {path}")
    for m in CAPITAL_DOC.finditer(text):
        if not (REPO / m.group(1)).exists() and not (doc.parent / m.group(1)).exists():
            out.append(f"document {m.group(1)}")
    return out


def test_every_path_the_documents_name_exists() -> None:
    found = {str(d.relative_to(REPO)): missing(d) for d in DOCS}
    assert {d: m for d, m in found.items() if m} == {}


def test_the_check_finds_a_missing_file(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("See DESIGN.md §3, [the guide](nowhere.md), `qsolve/nowhere.py`, `seeds/x.md`.\n")
    assert missing(doc) == [
        "link nowhere.md",
        "path qsolve/nowhere.py",
        "path seeds/x.md (outside the repository)",
        "document DESIGN.md",
    ]
