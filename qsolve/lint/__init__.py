"""``qsolve lint DIR``: what can be found wrong in a workflow folder without running it.

The manifest is read first; the rules below then run in order, each given the folder and the
manifest (``None`` when it did not read). Codes and their fixes: :mod:`qsolve.lint.codes`.

codes            every lint code, its severity and its fix
manifest_rules   the manifest and the three schemas it names (E001 to E031, E060, E061)
module_rules     the workflow module by its syntax tree, never imported (E040 to E042)
example_rules    ``examples/``: each file one JSON object (E064)
benchmark_rules  ``benchmarks/cases.yaml`` (the benchmark codes)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qsolve.errors import Issue
from qsolve.lint.benchmark_rules import benchmarks
from qsolve.lint.codes import BY_CODE, CODES
from qsolve.lint.example_rules import examples
from qsolve.lint.manifest_rules import read_manifest, schemas
from qsolve.lint.module_rules import module

RULES = (schemas, module, examples, benchmarks)


@dataclass(frozen=True)
class LintReport:
    issues: tuple[Issue, ...]

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def codes(self) -> list[str]:
        return sorted({i.code for i in self.issues if i.code})


def lint(root: Path | str) -> LintReport:
    root = Path(root)
    manifest, issues = read_manifest(root)
    for rule in RULES:
        issues.extend(rule(root, manifest))
    return LintReport(tuple(issues))


__all__ = ["BY_CODE", "CODES", "RULES", "LintReport", "lint"]
