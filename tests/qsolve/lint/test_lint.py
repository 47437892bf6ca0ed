"""Every lint code: a workflow with the mistake gets it; the clean workflow gets none."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from qsolve.errors import format_loc
from qsolve.lint import CODES, lint
from tests.conftest import REPO, WorkflowDir


def codes_of(wf: WorkflowDir) -> list[str]:
    return lint(wf.root).codes


def test_clean_workflow_has_no_issue(wf: WorkflowDir) -> None:
    report = lint(wf.root)
    assert report.issues == ()
    assert report.ok


def test_max_cut_lints_clean() -> None:
    report = lint(REPO / "workflows" / "max-cut")
    assert [str(i) for i in report.issues] == []


def _manifest(**changes):
    def mutate(wf: WorkflowDir) -> None:
        for key, value in changes.items():
            target = wf.manifest
            *parents, last = key.split("__")
            for p in parents:
                target = target[p]
            if value is _DELETE:
                del target[last]
            else:
                target[last] = value
        wf.save()

    return mutate


_DELETE = object()


def _write(rel: str, content) -> Callable[[WorkflowDir], None]:
    return lambda wf: wf.write(rel, content)


def _remove(rel: str) -> Callable[[WorkflowDir], None]:
    return lambda wf: wf.path(rel).unlink()


def _hardware(cases) -> Callable[[WorkflowDir], None]:
    def mutate(wf: WorkflowDir) -> None:
        wf.cases["hardware_cases"] = cases
        wf.save()

    return mutate


def _symlink_out(rel: str, outside_name: str, content: str) -> Callable[[WorkflowDir], None]:
    def mutate(wf: WorkflowDir) -> None:
        outside = wf.root.parent / outside_name
        outside.write_text(content)
        wf.path(rel).unlink()
        os.symlink(outside, wf.path(rel))

    return mutate


HW = {"name": "hw", "input": {"x": 1}, "target": "ibm:ibm_fez"}

# (id, mutation, code, key path the issue must carry or None)
CASES: list[tuple[str, Callable[[WorkflowDir], None], str, str | None]] = [
    ("manifest missing", _remove("manifest.yaml"), "E001", None),
    ("manifest not yaml", _write("manifest.yaml", "name: [unclosed\n"), "E002", None),
    ("manifest a list", _write("manifest.yaml", "- a\n- b\n"), "E002", None),
    ("manifest not utf-8", _write("manifest.yaml", b"name: \xff\xfe\n"), "E002", None),
    ("unknown top key", _manifest(colour="red"), "E003", "colour"),
    ("unknown nested key", _manifest(metric__tolerence=0.1), "E003", "metric.tolerence"),
    ("version a number", _manifest(version=1.0), "E004", "version"),
    ("methods not a list", _manifest(methods="quantum"), "E004", "methods"),
    (
        "method kind unknown",
        _manifest(
            methods=[{"name": "quantum", "kind": "analog"}, {"name": "reference", "kind": "classical"}]
        ),
        "E004",
        "methods[0].kind",
    ),
    ("input_schema missing", _manifest(input_schema=_DELETE), "E005", "input_schema"),
    (
        "method without kind",
        _manifest(methods=[{"name": "quantum"}, {"name": "reference", "kind": "classical"}]),
        "E005",
        "methods[0].kind",
    ),
    ("bad name", _manifest(name="Max_Cut"), "E006", "name"),
    ("bad version", _manifest(version="1.0 beta"), "E006", "version"),
    ("schema path with ..", _manifest(input_schema="../input.json"), "E007", "input_schema"),
    ("schema path absolute", _manifest(output_schema="/etc/schema.json"), "E007", "output_schema"),
    (
        "module through a link",
        _symlink_out("workflow.py", "evil.py", "def evaluate(i, s): return 0\n"),
        "E007",
        "module",
    ),
    ("one method", _manifest(methods=[{"name": "reference", "kind": "classical"}]), "E010", "methods"),
    (
        "no reference",
        _manifest(methods=[{"name": "quantum", "kind": "quantum"}, {"name": "exact", "kind": "classical"}]),
        "E011",
        "methods",
    ),
    ("quantum_method classical", _manifest(quantum_method="reference"), "E012", "quantum_method"),
    ("quantum_method unknown", _manifest(quantum_method="qaoa"), "E012", "quantum_method"),
    (
        "no quantum method",
        _manifest(
            methods=[{"name": "quantum", "kind": "classical"}, {"name": "reference", "kind": "classical"}]
        ),
        "E013",
        "methods",
    ),
    (
        "duplicate method",
        _manifest(
            methods=[
                {"name": "quantum", "kind": "quantum"},
                {"name": "quantum", "kind": "quantum"},
                {"name": "reference", "kind": "classical"},
            ]
        ),
        "E014",
        "methods",
    ),
    ("unknown family", _manifest(targets={"qpu": ["ibm", "aws"]}), "E015", "targets.qpu"),
    ("metric kind", _manifest(metric={"kind": "accuracy"}), "E020", "metric.kind"),
    ("tolerance above 1", _manifest(metric={"tolerance": 1.5}), "E021", "metric.tolerance"),
    ("tolerance negative", _manifest(metric={"tolerance": -0.1}), "E021", "metric.tolerance"),
    ("tolerance_abs negative", _manifest(metric={"tolerance_abs": -0.001}), "E022", "metric.tolerance_abs"),
    ("note too long", _manifest(metric={"note": "x" * 601}), "E023", "metric.note"),
    ("timeout zero", _manifest(resources={"timeout_s": 0}), "E030", "resources.timeout_s"),
    ("timeout too long", _manifest(resources={"timeout_s": 7201}), "E030", "resources.timeout_s"),
    ("memory too big", _manifest(resources={"memory_mb": 9000}), "E031", "resources.memory_mb"),
    ("module missing", _remove("workflow.py"), "E040", None),
    ("module not python", _write("workflow.py", "def evaluate(:\n"), "E040", None),
    (
        "evaluate missing",
        _write("workflow.py", "def quantum(i, p, c): ...\ndef reference(i, p, c): ...\n"),
        "E041",
        None,
    ),
    (
        "method function missing",
        _write("workflow.py", "def evaluate(i, s): ...\ndef quantum(i, p, c): ...\n"),
        "E042",
        None,
    ),
    (
        "method function override missing",
        _manifest(
            methods=[
                {"name": "quantum", "kind": "quantum", "function": "run_qaoa"},
                {"name": "reference", "kind": "classical"},
            ]
        ),
        "E042",
        None,
    ),
    ("cases.yaml missing", _remove("benchmarks/cases.yaml"), "E050", None),
    ("cases.yaml not yaml", _write("benchmarks/cases.yaml", "hardware_cases: [\n"), "E052", None),
    ("hardware_cases not a list", _hardware({"name": "x"}), "E052", "hardware_cases"),
    (
        "hardware unknown key",
        _hardware([{**HW, "expect": {"max_gapp": 0.1}}]),
        "E052",
        "hardware_cases[0].expect.max_gapp",
    ),
    ("hardware mistyped seed", _hardware([{**HW, "seed": "one"}]), "E052", "hardware_cases[0].seed"),
    (
        "hardware without target",
        _hardware([{"name": "hw", "input": {"x": 1}}]),
        "E052",
        "hardware_cases[0].target",
    ),
    (
        "hardware target not ibm",
        _hardware([{**HW, "target": "fake:fez"}]),
        "E052",
        "hardware_cases[0].target",
    ),
    (
        "hardware target too long",
        _hardware([{**HW, "target": "ibm:" + "a" * 61}]),
        "E052",
        "hardware_cases[0].target",
    ),
    (
        "hardware target bad char",
        _hardware([{**HW, "target": "ibm:ibm fez"}]),
        "E052",
        "hardware_cases[0].target",
    ),
    ("four hardware cases", _hardware([HW] * 4), "E053", "hardware_cases"),
    ("hardware without qpu ibm", _manifest(targets={"qpu": []}), "E054", "hardware_cases"),
    ("schema missing", _remove("schemas/output.json"), "E060", None),
    ("schema not json", _write("schemas/input.json", "{type: object}"), "E060", None),
    ("schema invalid", _write("schemas/input.json", {"type": "objekt"}), "E061", "type"),
    (
        "params schema invalid",
        _manifest(params={"type": "object", "properties": {"shots": {"minimum": "1"}}}),
        "E061",
        "params.properties.shots.minimum",
    ),
    ("example not json", _write("examples/b.json", "{nope"), "E064", None),
    ("example not object", _write("examples/b.json", [1, 2]), "E064", None),
]


@pytest.mark.parametrize(("mutate", "code", "loc"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_mistake_gets_its_code(wf: WorkflowDir, mutate, code: str, loc: str | None) -> None:
    mutate(wf)
    report = lint(wf.root)
    hits = [i for i in report.issues if i.code == code]
    assert hits, f"expected {code}, got {[str(i) for i in report.issues]}"
    assert not report.ok
    if loc is not None:
        assert loc in [format_loc(i.loc) for i in hits], [str(i) for i in hits]


def test_every_code_is_tested_and_documented() -> None:
    tested = {c[2] for c in CASES} | {"W043"}  # the warning: test_a_method_that_cannot_take_its_arguments
    catalogue = {c.code for c in CODES}
    assert catalogue == tested
    doc = (REPO / "docs" / "lint-codes.md").read_text()
    documented = set(re.findall(r"^## ([EW]\d{3})\b", doc, re.M))
    assert documented == catalogue


def test_a_method_that_cannot_take_its_arguments_is_warned_of(wf: WorkflowDir) -> None:
    """Issue 37: ``def qaoa(input, ctx)`` failed every case at qsolve test with lint silent."""
    wf.write(
        "workflow.py",
        "def evaluate(input, solution, *, exact): ...\n"
        "def quantum(input, ctx): ...\n"
        "def reference(input, params, ctx, extra=1, *more, **kw): ...\n"
        "def estimate(*args): ...\n",
    )
    report = lint(wf.root)
    assert report.ok  # a warning: the gates give the verdict
    said = [str(i) for i in report.issues]
    assert said == [
        "W043 workflow.py: evaluate(input, solution, *, exact) at line 1 cannot be called as "
        "evaluate(input, solution): the platform passes these 2 arguments",
        "W043 workflow.py: quantum(input, ctx) at line 2 cannot be called as quantum(input, params, ctx): "
        "the platform passes these 3 arguments",
    ]


def test_an_async_method_is_warned_of(wf: WorkflowDir) -> None:
    """Issue 37 (attack 2): ``async def quantum(input, params, ctx)`` takes the right arguments, and its
    call gives a coroutine, not a result: every case fails at qsolve test."""
    wf.write(
        "workflow.py",
        "def evaluate(input, solution): ...\n"
        "async def quantum(input, params, ctx): ...\n"
        "def reference(input, params, ctx): ...\n"
        "async def helper(x): ...\n",  # not a function the platform calls: nothing said
    )
    report = lint(wf.root)
    assert report.ok
    assert [str(i) for i in report.issues] == [
        "W043 workflow.py: async def quantum at line 2 cannot be called as the platform calls it: "
        "quantum(input, params, ctx) would give a coroutine, not its result (define it with `def`; run any "
        "asyncio inside it with asyncio.run)"
    ]


def test_lint_never_checks_the_content_of_cases(wf: WorkflowDir) -> None:
    wf.cases["cases"] = [{"name": "bad", "expect": {"max_gapp": 1}, "colour": "red"}, {"nope": 1}]
    wf.save()
    assert lint(wf.root).issues == ()


def test_unknown_top_level_keys_of_cases_yaml_are_ignored(wf: WorkflowDir) -> None:
    wf.cases["comments"] = "free text"
    wf.save()
    assert lint(wf.root).issues == ()


def test_three_hardware_cases_are_allowed(wf: WorkflowDir) -> None:
    _hardware([HW] * 3)(wf)
    assert lint(wf.root).issues == ()


def test_note_of_600_characters_is_allowed(wf: WorkflowDir) -> None:
    _manifest(metric={"note": "x" * 600})(wf)
    assert lint(wf.root).issues == ()


def test_lint_does_not_import_the_module(wf: WorkflowDir, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    wf.write(
        "workflow.py",
        f"open({str(marker)!r}, 'w').close()\n"
        "def evaluate(i, s): ...\ndef quantum(i, p, c): ...\ndef reference(i, p, c): ...\n",
    )
    assert lint(wf.root).ok
    assert not marker.exists()


def test_imported_and_assigned_names_count_as_defined(wf: WorkflowDir) -> None:
    wf.write(
        "workflow.py",
        "from helpers import quantum\nfrom helpers import solve as reference\nevaluate = lambda i, s: 0\n",
    )
    assert lint(wf.root).issues == ()


def test_issue_names_file_key_path_and_code(wf: WorkflowDir) -> None:
    _hardware([HW, {**HW, "expect": {"max_gapp": 0.1}}])(wf)
    (issue,) = lint(wf.root).issues
    assert str(issue) == (
        "E052 benchmarks/cases.yaml: hardware_cases[1].expect.max_gapp: unknown key; did you mean 'max_gap'?"
    )
