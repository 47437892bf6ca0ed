"""Running one case: every method on the case's target, objectives recomputed, the case decided.

Seed: benchmarks-and-gates.md, "Expectations" and "Comparison with the baseline"; DESIGN.md §3 for
what a method is given and may return.
"""

from __future__ import annotations

import copy
import math
import time
from types import ModuleType
from typing import Any

from qsolve import params as run_params
from qsolve.cases import Case
from qsolve.context import ClassicalContext
from qsolve.errors import MethodUnavailable
from qsolve.judging import Evidence, compare, first_failure, gap, meets_expect
from qsolve.manifest import Manifest, Method
from qsolve.method import MethodResult
from qsolve.quantum_context import QuantumContext
from qsolve.results import CaseResult, MethodOutcome, quality, to_json_value
from qsolve.targets import open_target
from qsolve.targets.base import Backend


class ParamsInvalid(ValueError):
    """A case's parameters, merged over the manifest's defaults, cannot run."""


def case_params(manifest: Manifest, case: Case) -> dict[str, Any]:
    problems = run_params.problems(manifest.params, case.params)
    if problems:
        raise ParamsInvalid("; ".join(problems))
    return run_params.merge(manifest.params, case.params)


def run_case(
    manifest: Manifest,
    module: ModuleType,
    case: Case,
    input: dict,
    run_target: str,
    output_schema: dict[str, Any] | None = None,
) -> CaseResult:
    """Run every method of the workflow on one case and decide it. Never raises for the workflow's faults."""
    target = case.target or run_target
    try:
        params = case_params(manifest, case)
        backend = open_target(target)
        outcomes = [
            run_method(module, m, input, params, case.seed, backend, output_schema) for m in manifest.methods
        ]
    except Exception as e:  # the case raised before it had a result
        return CaseResult.failed(case, target, f"{type(e).__name__}: {e}")
    return decide(manifest, case, target, params, outcomes)


def run_method(
    module: ModuleType,
    method: Method,
    input: dict,
    params: dict,
    seed: int,
    backend: Backend,
    output_schema: dict[str, Any] | None = None,
) -> MethodOutcome:
    """One method, timed. One that raises is unavailable: ``failed: Type: message`` if it crashed."""
    ctx = QuantumContext(seed, backend) if method.kind == "quantum" else ClassicalContext(seed)
    fields: dict[str, Any] = {"name": method.name, "kind": method.kind}
    start = time.perf_counter()
    try:
        fn = getattr(module, method.function_name)
        raw = fn(copy.deepcopy(input), dict(params), ctx)
        result = raw if isinstance(raw, MethodResult) else MethodResult.model_validate(raw)
    except MethodUnavailable as e:
        fields["unavailable"] = str(e) or "unavailable"
    except (Exception, SystemExit) as e:
        fields["unavailable"] = f"failed: {type(e).__name__}: {e}"
    else:
        fields.update(_recompute(module, input, result, output_schema))
    fields["seconds"] = time.perf_counter() - start
    if isinstance(ctx, QuantumContext):
        fields["seconds"] -= ctx.scoring_in_method  # the platform's, not the method's
        fields["circuits"] = ctx.records
        fields["dispatches"] = ctx.dispatches
        fields["postselection"] = ctx.postselection
        fields["scoring_seconds"] = ctx.scoring_seconds + ctx.scoring_in_method
    return MethodOutcome(**fields)


def _recompute(
    module: ModuleType, input: dict, result: MethodResult, output_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """The platform's number: ``evaluate(solution)`` where there is a solution, else the method's own.
    A solution that does not match the output schema makes the method fail (``SolutionInvalid``)."""
    out: dict[str, Any] = {
        "stderr": result.stderr,
        "solution": to_json_value(result.solution),
        "details": to_json_value(result.details),
    }
    if result.solution is None:
        out["objective"] = _finite_or_none(result.objective)
        return out
    out["claimed"] = _finite_or_none(result.objective)
    problem = run_params.schema_error(output_schema, out["solution"]) if output_schema is not None else None
    if problem:
        out["unavailable"] = (
            f"failed: SolutionInvalid: the solution does not match the output schema {problem}"
        )
        return out
    try:
        out["objective"] = _finite_or_none(float(module.evaluate(copy.deepcopy(input), result.solution)))
    except Exception as e:
        out["unavailable"] = f"failed: {type(e).__name__}: {e} (in evaluate)"
    return out


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
    numbers: dict[str, Any] = {}
    passed = False
    if quantum.usable and baseline.usable:
        q, r = quantum.objective, baseline.objective
        n_test = quantum.details.get("n_test")
        cmp = compare(manifest.metric, q, r, quantum.stderr, int(n_test) if n_test else None)
        numbers = {
            "quantum": q,
            "baseline": r,
            "gap": gap(q, r),
            "abs_error": abs(q - r),
            "accuracy": cmp.accuracy,
            "accuracy_pm": cmp.accuracy_pm,
            "verdict": cmp.verdict,
        }
        passed = message is None and meets_expect(case.expect, q, r)
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
        **numbers,
    ).with_hash()
