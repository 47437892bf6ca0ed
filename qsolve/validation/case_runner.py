"""Running one case: every method on the case's target, objectives recomputed, the case decided.

Seed: benchmarks-and-gates.md, "Expectations" and "Comparison with the baseline"; DESIGN.md §3 for
what a method is given and may return.
"""

from __future__ import annotations

import math
import time
from typing import Any

from qsolve.errors import WorkflowProcessFailed
from qsolve.judging.deciding import (
    MAX_N_TEST,
    Evidence,
    broken_bound,
    case_warnings,
    compare,
    first_failure,
    gap,
    meets_expect,
)
from qsolve.judging.quantum_context import QuantumContext
from qsolve.judging.results import CaseResult, MethodOutcome, quality
from qsolve.runtime.worker import SchemaStopped
from qsolve.sandbox.calls import MethodReturn, WorkflowCode
from qsolve.targets import open_target
from qsolve.targets.base import Backend
from qsolve.workflow import params as run_params
from qsolve.workflow.cases import Case
from qsolve.workflow.context import ClassicalContext
from qsolve.workflow.manifest import Manifest, Method
from qsolve.workflow.params import bounded_schema_error


class ParamsInvalid(ValueError):
    """A case's parameters, merged over the manifest's defaults, cannot run."""


def case_params(manifest: Manifest, case: Case) -> dict[str, Any]:
    problems = run_params.problems(manifest.params, case.params)
    if problems:
        raise ParamsInvalid("; ".join(problems))
    return run_params.merge(manifest.params, case.params)


def run_case(
    manifest: Manifest,
    code: WorkflowCode,
    case: Case,
    input: dict,
    run_target: str,
    output_schema: dict[str, Any] | None = None,
) -> CaseResult:
    """Run every method of the workflow on one case and decide it. Never raises for the workflow's
    faults, but for a workflow process that can no longer be used (:class:`WorkflowProcessFailed`)."""
    target = case.target or run_target
    try:
        params = case_params(manifest, case)
        backend = open_target(target)
        outcomes = [
            run_method(code, m, input, params, case.seed, backend, output_schema) for m in manifest.methods
        ]
    except WorkflowProcessFailed:
        raise
    except Exception as e:  # the case raised before it had a result
        return CaseResult.failed(case, target, f"{type(e).__name__}: {e}")
    return decide(manifest, case, target, params, outcomes)


def run_method(
    code: WorkflowCode,
    method: Method,
    input: dict,
    params: dict,
    seed: int,
    backend: Backend,
    output_schema: dict[str, Any] | None = None,
) -> MethodOutcome:
    """One method, timed, its circuits run by the platform's context. One that raised is unavailable."""
    ctx = QuantumContext(seed, backend) if method.kind == "quantum" else ClassicalContext(seed)
    fields: dict[str, Any] = {"name": method.name, "kind": method.kind}
    start = time.perf_counter()
    try:
        doing = f"method {method.name}"
        returned = code.call(method.function_name, method.kind, input, params, ctx)
        if returned.unavailable is not None:
            fields["unavailable"] = returned.unavailable
        else:
            doing = f"evaluate, on method {method.name}'s solution"
            fields.update(_recompute(code, input, returned, output_schema))
    except WorkflowProcessFailed as e:  # a time limit, a process that died: what it was doing, named
        e.doing = doing  # type: ignore[attr-defined]
        raise
    fields["seconds"] = time.perf_counter() - start
    if isinstance(ctx, QuantumContext):
        fields["seconds"] -= ctx.scoring_in_method  # the platform's, not the method's
        fields["circuits"] = ctx.records
        fields["dispatches"] = ctx.dispatches
        fields["postselection"] = returned.postselection
        fields["scoring_seconds"] = ctx.scoring_seconds + ctx.scoring_in_method
    return MethodOutcome(**fields)


def _recompute(
    code: WorkflowCode, input: dict, result: MethodReturn, output_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """The platform's number: ``evaluate(solution)`` where there is a solution, else the method's own.
    A solution that does not match the output schema makes the method fail (``SolutionInvalid``)."""
    out: dict[str, Any] = {"stderr": result.stderr, "solution": result.solution, "details": result.details}
    if result.solution is None:
        out["objective"] = result.objective
        return out
    out["claimed"] = result.objective if result.not_finite is None else result.not_finite
    try:
        problem = _solution_error(code, output_schema, result.solution) if output_schema is not None else None
    except SchemaStopped as e:
        out["unavailable"] = f"failed: SolutionInvalid: {e}"
        return out
    if problem:
        out["unavailable"] = (
            f"failed: SolutionInvalid: the solution does not match the output schema {problem}"
        )
        return out
    answer = code.evaluate(input, result.solution)
    if answer.returned is not None:  # a bool, a string: refused, never read as a number
        out["unavailable"] = f"failed: TypeError: {answer.returned}"
    elif answer.error is not None:
        out["unavailable"] = f"failed: evaluate(solution) raised {answer.error}"
    elif answer.value is None:  # not a finite number
        out["objective"] = None
    elif isinstance(answer.value, int | float) and not isinstance(answer.value, bool):
        out["objective"] = _finite_or_none(float(answer.value))
    else:
        out["unavailable"] = f"failed: TypeError: evaluate() gave {type(answer.value).__name__}, not a number"
    return out


def _solution_error(code: WorkflowCode, schema: dict[str, Any], solution: Any) -> str | None:
    """How the solution fails the output schema, checked where the platform can stop it (a platform
    worker, by the job's deadline where the code runs in a sandbox job)."""
    what = "the solution against the output schema"
    bounded = getattr(code, "schema_error", None)
    return bounded(schema, solution, what) if bounded else bounded_schema_error(schema, solution, what)


def _n_test(method: str, details: dict[str, Any]) -> tuple[int | None, str | None]:
    """``details["n_test"]``, the test-set size, when given: a whole number from 1 to
    :data:`MAX_N_TEST` (``10**400`` or ``1e308`` would overflow the Wilson interval), else why not, the
    workflow's mistake, naming the method."""
    n = details.get("n_test")
    if n is None:
        return None, None
    whole = not isinstance(n, bool) and (
        isinstance(n, int) or (isinstance(n, float) and math.isfinite(n) and n.is_integer())
    )  # an int is compared whole: 10**400 is past any double, and no float() of it is taken
    if not (whole and 1 <= n <= MAX_N_TEST):
        return None, (
            f"method {method}'s details['n_test'] must be a whole number from 1 to 2**53 (the test set's "
            f"size), got {_shown(n)}"
        )
    return int(n), None


def _shown(value: Any) -> str:
    """A value as a message shows it, at most 40 characters; a whole number too long for that by its
    size (``an int of 1329 bits``: ``repr`` of a long enough one raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**39:
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def decide(
    manifest: Manifest, case: Case, target: str, params: dict, outcomes: list[MethodOutcome]
) -> CaseResult:
    by_name = {o.name: o for o in outcomes}
    quantum = by_name[manifest.headline_method.name]
    baseline = by_name["reference"]
    qual = quality(quantum.circuits, quantum.postselection)
    message = first_failure(Evidence(outcomes, quantum, baseline, case.expect, qual))
    cause = None if message is None or message.startswith("method ") else cause_of(quantum, baseline)
    numbers: dict[str, Any] = {}
    warned: list[str] = []
    passed = False
    if quantum.usable and baseline.usable:
        q, r = quantum.objective, baseline.objective
        n_test, why = _n_test(quantum.name, quantum.details)
        message = message or why
        cmp = compare(manifest.metric, q, r, quantum.stderr, n_test)
        numbers = {
            "quantum": q,
            "baseline": r,
            "gap": gap(q, r),
            "abs_error": abs(q - r),
            "accuracy": cmp.accuracy,
            "accuracy_pm": cmp.accuracy_pm,
            "verdict": cmp.verdict,
        }
        warned = case_warnings(manifest.metric, quantum, q, r)
        passed = message is None and meets_expect(case.expect, q, r)
        numbers["bound"] = None if message else broken_bound(case.expect, q, r)
    sent = [c for o in outcomes for c in o.circuits]
    return CaseResult(
        name=case.name,
        target=target,
        seed=case.seed,
        params=params,
        passed=passed,
        message=message,
        fidelity=qual.fidelity,
        coverage=qual.coverage,
        postselection=qual.postselection,
        max_two_qubit_gates=max((c.two_qubit_gates for c in quantum.circuits), default=None),
        circuits=len(sent),
        shots=sum(c.shots for c in sent),
        methods=outcomes,
        cause=cause,
        expect=case.expect.model_dump(mode="json"),
        warnings=warned,
        **numbers,
    ).with_hash()


def cause_of(*headline: MethodOutcome) -> str | None:
    """Why the quantum method or the reference gave no usable value, when one did not:
    ``method vqe failed: ZeroDivisionError: field is zero (workflow.py:41)``."""
    said = []
    for m in headline:
        if m.unavailable is not None:
            why = m.unavailable if m.unavailable.startswith("failed:") else f"unavailable: {m.unavailable}"
            said.append(f"method {m.name} {why}")
        elif not m.usable:
            said.append(f"method {m.name} gave no finite objective")
    return "; ".join(said) or None
