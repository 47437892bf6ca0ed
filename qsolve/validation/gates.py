"""The eight validation gates (seed: benchmarks-and-gates.md, "The validation gates").

The first five read the workflow; the last three judge its cases' runs. ``reproducible`` and
``estimate_honest`` are added only when at least one case ran to a result (it ran, none of its
methods crashed and its quantum methods ran), so a workflow whose every case raises, or whose quantum
method crashes or is unavailable on every case, shows six gates; both judge the first case that ran to
a result. A job stopped at its time limit
after a case ran to a result still shows them, failing with that reason where they could not be judged.
All must pass to publish.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from qsolve.errors import Issue, WorkflowInvalid
from qsolve.judging.results import CaseResult, numbers_close, without_wall_clock
from qsolve.runtime import worker
from qsolve.workflow.cases import Case
from qsolve.workflow.folder import CASES, Workflow, example_paths
from qsolve.workflow.params import bounded_schema_error
from qsolve.workflow.reading import read_json_object

ESTIMATE_RATIO = (0.5, 2.0)
NOISY_PREFIXES = ("fake:", "ibm:")


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    message: str


@dataclass
class GateInputs:
    """What the gates judge: the folder as read, and the runs of its cases."""

    root: Path
    run_target: str
    workflow: Workflow | None = None
    load_issues: list[Issue] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)
    rerun: CaseResult | None = None
    estimate: dict[str, Any] | None = None  # what estimate() said for the first case that ran
    estimate_error: str | None = None
    died: str | None = None  # why the sandbox job died, when it did
    module_seconds: float = 0.0  # importing the workflow's module

    @property
    def first_ran(self) -> CaseResult | None:
        """The first case that ran to a result (:attr:`CaseResult.to_a_result`: none of its methods
        crashed, and its quantum methods ran), which ``reproducible`` runs again and ``estimate_honest``
        judges."""
        return next((r for r in self.results if r.to_a_result), None)


def manifest(g: GateInputs) -> GateResult:
    """The manifest and both schemas load and validate."""
    bad = [str(i) for i in g.load_issues if i.file != CASES]
    if bad:
        return GateResult(name="manifest", passed=False, message="; ".join(bad))
    return GateResult(name="manifest", passed=True, message="the manifest and both schemas load and validate")


def example_inputs(g: GateInputs) -> GateResult:
    """At least one example exists and every example validates against the input schema."""
    paths = example_paths(g.root)
    if not paths:
        return GateResult(name="example_inputs", passed=False, message="no example in examples/ (*.json)")
    if g.workflow is None:
        return GateResult(name="example_inputs", passed=False, message="the input schema did not load")
    from qsolve.validation.checks import CHECKS_S

    # the examples' validations together bounded as the cases' are: each alone just under SCHEMA_S, a
    # thousand examples took the platform's job hours
    deadline = time.monotonic() + CHECKS_S
    with worker.kept() as validating:
        for label in paths:
            try:
                value = read_json_object(g.root, label)
            except WorkflowInvalid as e:
                return GateResult(name="example_inputs", passed=False, message=f"{label}: {e.message}")
            what = f"{label} against the input schema"
            try:
                schema = g.workflow.input_schema
                err = bounded_schema_error(schema, value, what, deadline=deadline, on=validating)
            except worker.WorkOutOfTime:
                message = (
                    f"the platform stopped validating {what}: the validations of all the examples reached "
                    f"their bound of {CHECKS_S:g} s (schemas this costly to check need simplifying)"
                )
                return GateResult(name="example_inputs", passed=False, message=message)
            except worker.SchemaStopped as e:
                return GateResult(name="example_inputs", passed=False, message=str(e))
            if err:
                message = f"{label} does not match {g.workflow.manifest.input_schema} {err}"
                return GateResult(name="example_inputs", passed=False, message=message)
    return GateResult(
        name="example_inputs", passed=True, message=f"{len(paths)} examples match the input schema"
    )


def benchmark_cases(g: GateInputs) -> GateResult:
    """At least one case is defined."""
    if g.workflow is None:
        cases_issues = [str(i) for i in g.load_issues if i.file == CASES]
        why = "; ".join(cases_issues) if cases_issues else "the workflow did not load"
        return GateResult(name="benchmark_cases", passed=False, message=why)
    n = len(g.workflow.cases.cases)
    if n == 0:
        return GateResult(name="benchmark_cases", passed=False, message="no case is defined under `cases`")
    return GateResult(name="benchmark_cases", passed=True, message=f"{n} cases defined")


def methods_declared(g: GateInputs) -> GateResult:
    """The manifest declares at least two methods."""
    if g.workflow is None:
        return GateResult(name="methods_declared", passed=False, message="the manifest did not load")
    n = len(g.workflow.manifest.methods)
    return GateResult(name="methods_declared", passed=n >= 2, message=f"{n} methods declared")


def fidelity_checked(g: GateInputs) -> GateResult:
    """At least one case sets a non-zero ``min_fidelity`` and runs on a ``fake:`` or ``ibm:`` target."""
    cases: list[Case] = g.workflow.cases.cases if g.workflow else []
    for case in cases:
        target = case.target or g.run_target
        if case.expect.min_fidelity and target.startswith(NOISY_PREFIXES):
            return GateResult(
                name="fidelity_checked",
                passed=True,
                message=f"{case.name} sets min_fidelity {case.expect.min_fidelity:g} on {target}",
            )
    return GateResult(
        name="fidelity_checked",
        passed=False,
        message="no case sets a non-zero min_fidelity on a fake: or ibm: target (add one on fake:fez@1.6)",
    )


def cases_pass(g: GateInputs) -> GateResult:
    """At least one case ran and every case meets its ``expect``."""
    if g.died:
        return GateResult(name="cases_pass", passed=False, message=g.died)
    if not any(r.ran for r in g.results):
        why = f": {g.results[0].message}" if g.results else ""
        return GateResult(name="cases_pass", passed=False, message=f"no case ran to a result{why}")
    failed = [r for r in g.results if not r.passed]
    if failed:
        shown = ", ".join(f"{r.name} ({r.cause or r.message or _gap_text(r)})" for r in failed)
        return GateResult(
            name="cases_pass", passed=False, message=f"{len(failed)} of {len(g.results)} cases fail: {shown}"
        )
    n = len(g.results)
    return GateResult(
        name="cases_pass", passed=True, message="the 1 case passes" if n == 1 else f"all {n} cases pass"
    )


def _gap_text(r: CaseResult) -> str:
    if r.gap is None:
        return "no result"
    return f"gap {r.gap:.4g}, abs error {r.abs_error:.4g}"


def reproducible(g: GateInputs) -> GateResult:
    """Re-running the first case that ran gives the same result hash, or numbers equal up to 1e-8."""
    first, again = g.first_ran, g.rerun
    if again is None:
        why = f": {g.died}" if g.died else ""
        return GateResult(name="reproducible", passed=False, message=f"{first.name} was not run again{why}")
    if again.result_hash == first.result_hash:
        return GateResult(
            name="reproducible", passed=True, message=f"{first.name} ran again with the same result hash"
        )
    a, b = (without_wall_clock(r.model_dump(mode="json")) for r in (first, again))
    if numbers_close(a, b):
        return GateResult(
            name="reproducible",
            passed=True,
            message=f"{first.name} ran again with every number equal up to 1e-8",
        )
    where = _method_difference(first, again) or f"a different result at {_first_difference(a, b)}"
    return GateResult(
        name="reproducible",
        passed=False,
        message=f"{first.name} ran again with {where}; {RNG_HINT}",
    )


RNG_HINT = (
    "a method's randomness must come from ctx.rng (seeded by the case's seed), never from an unseeded "
    "generator, the clock or the order of a set"
)


def _method_difference(first: CaseResult, again: CaseResult) -> str | None:
    """The first method whose own values differ between two runs: its objective, its stderr, then its
    solution (``method qaoa's objective -86 then -89``); ``None`` when every method's are equal."""
    twice = {m.name: m for m in again.methods}
    for m in first.methods:
        other = twice.get(m.name)
        if other is None:
            continue
        if (m.unavailable is None) != (other.unavailable is None):  # a crash in one run: named, never None
            return f"method {m.name}'s objective: {_answer(m)} then {_answer(other)}"
        for what in ("objective", "claimed", "stderr", "solution", "unavailable", "details"):
            x, y = getattr(m, what), getattr(other, what)
            if not numbers_close(x, y):
                if what in ("solution", "details"):
                    return f"method {m.name}'s {_first_difference(x, y, what)}"
                shown = "objective" if what == "claimed" else what
                return f"method {m.name}'s {shown}: {_short(x)} then {_short(y)}"
        sent = [[c.model_dump(mode="json") for c in r.circuits] for r in (m, other)]
        if not numbers_close(*sent):  # the same answer from other circuits: a random angle, say
            where = _first_difference(*sent, "circuits")
            return f"method {m.name}'s circuits differ, the same answer or not: {where}"
    return None


def _answer(m: Any) -> str:
    """A method's objective as a message shows it, or why it had none (``failed: ZeroDivisionError:
    division by zero (workflow.py:22)``, whole)."""
    return m.unavailable if m.unavailable is not None else _short(m.objective)


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b or not numbers_close(a[k], b[k]):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if not numbers_close(x, y):
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {_short(a)} then {_short(b)}"


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def estimate_honest(g: GateInputs) -> GateResult:
    """``estimate()`` within a factor of two of the circuits and shots the case sent (0.5 to 2.0)."""
    first = g.first_ran
    if g.died and g.estimate is None and g.estimate_error is None:
        return GateResult(
            name="estimate_honest", passed=False, message=f"{first.name}'s estimate was not asked: {g.died}"
        )
    if first.circuits == 0:  # the seed: it passes with a note when the run sent no circuits, whatever
        return GateResult(  # estimate() said or raised
            name="estimate_honest",
            passed=True,
            message=f"note: {first.name} sent no circuits, nothing to compare"
            + (f" ({g.estimate_error})" if g.estimate_error else ""),
        )
    if g.estimate_error:
        return GateResult(name="estimate_honest", passed=False, message=g.estimate_error)
    if g.estimate is None:
        return GateResult(
            name="estimate_honest", passed=True, message="note: the workflow gives no estimate()"
        )
    lo, hi = ESTIMATE_RATIO
    parts = []
    for key, sent in (("circuits", first.circuits), ("shots", first.shots)):
        said = g.estimate.get(key)
        if sent == 0:
            continue
        if not isinstance(said, int | float) or isinstance(said, bool):
            return GateResult(
                name="estimate_honest",
                passed=False,
                message=f"estimate() gave no number for {key!r}: {said!r}",
            )
        ratio = said / sent
        if not lo <= ratio <= hi:
            return GateResult(
                name="estimate_honest",
                passed=False,
                message=f"estimate() says {said:g} {key}, {first.name} sent {sent} "
                f"(ratio {ratio:.2f}, outside {lo} to {hi})",
            )
        parts.append(f"{key} {said:g} for {sent} (ratio {ratio:.2f})")
    return GateResult(name="estimate_honest", passed=True, message=f"{first.name}: " + ", ".join(parts))


STATIC_GATES: tuple[Callable[[GateInputs], GateResult], ...] = (
    manifest,
    example_inputs,
    benchmark_cases,
    methods_declared,
    fidelity_checked,
)
RUN_GATES: tuple[Callable[[GateInputs], GateResult], ...] = (reproducible, estimate_honest)


def judge(g: GateInputs) -> list[GateResult]:
    """Every gate, in the seed's order."""
    gates = [gate(g) for gate in STATIC_GATES] + [cases_pass(g)]
    if g.first_ran is not None:  # the seed: when at least one case ran, even if the job then stopped
        gates += [gate(g) for gate in RUN_GATES]
    return gates
