"""A bundle replayed: checked (:mod:`.checks`), then every case of its rows run again in the sandbox with
the platform's own runner (``qsolve.validation.jobs.run_cases_job``, as ``qsolve test`` runs cases):

- a ``sim-`` or ``fake:`` row: its case with the row's input, params, target and seed, its result held
  to the row's (:mod:`.compare`). Rows of the same case, target, params and seed share one run;
- a ``provider:`` row: its case again on a replay target answering each circuit with the counts its
  receipts sealed (:mod:`.sealed`), so its objective, gap, accuracy, verdict and fidelity are computed
  again from the device's own counts; only where its receipts all verify;
- any other row (an ``ibm:`` device's): not recomputed, and why.

A bundle whose checks fail runs nothing: its verdict is FAIL, naming the first problem.

Nothing here reads a state database or the network.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .bundle import Bundle
from .checks import Checked, check
from .rows import Row

Outcome = Literal["reproduced", "close", "recomputed", "different", "not_recomputed", "not_run"]
PASSING = ("reproduced", "close", "recomputed")
SHOWN = {
    "reproduced": "reproduced exactly",
    "close": "equal within tolerance",
    "recomputed": "recomputed from its receipts",
    "different": "different",
    "not_recomputed": "not recomputed",
    "not_run": "not run",
}


class RowReplay(BaseModel):
    run_id: str
    case: str
    target: str
    source: str
    outcome: Outcome
    detail: str | None = None
    receipts: int = 0


class ReplayReport(BaseModel):
    """What ``qsolve replay`` prints (``--json``: this, as one object)."""

    workflow: str
    version: str
    digest: str
    platform: dict[str, str]
    problems: list[str]  # what the bundle's checks found: the log, checkpoint, files, rows, archive
    checked: list[str]  # what held
    rows: list[RowReplay]
    trust: str = ""  # whose keys the checks rest on, and where they came from
    seconds: float
    ok: bool
    verdict: str


def replay(
    bundle: Bundle,
    trust: Any | None = None,
    *,
    tell: Callable[[str], None] = lambda line: None,
    require_confinement: bool | None = None,
) -> ReplayReport:
    """Check ``bundle`` and run its rows again (see the module's docstring). The bundle's code is
    another's: it runs only in a workflow process with the full boundary, as a platform run does, unless
    ``QSOLVE_ACCEPT_UNCONFINED_CODE=1`` (``require_confinement`` None) or ``require_confinement`` says."""
    start = time.monotonic()
    checked = check(bundle, trust)
    if checked.problems:  # nothing of a bundle that does not verify is the platform's: nothing runs
        why = "the bundle does not verify (see its problems)"
        rows = [RowReplay(**_base(r), outcome="not_run", detail=why) for r in checked.rows]
    else:
        rows = _run(bundle, checked, tell, require_confinement)
    passing = sum(r.outcome in PASSING for r in rows)
    ok = not checked.problems and bool(rows) and passing == len(rows)
    return ReplayReport(
        workflow=bundle.index.workflow,
        version=bundle.index.version,
        digest=bundle.index.digest,
        platform=bundle.index.platform.model_dump(),
        problems=checked.problems,
        checked=checked.said,
        rows=rows,
        trust=checked.trust,
        seconds=time.monotonic() - start,
        ok=ok,
        verdict=_verdict(checked, rows, ok),
    )


def _verdict(checked: Checked, rows: list[RowReplay], ok: bool) -> str:
    counts = {o: sum(r.outcome == o for r in rows) for o in SHOWN}
    said = ", ".join(f"{n} {SHOWN[o]}" for o, n in counts.items() if n)
    if ok:
        return f"PASS: {len(rows)} rows: {said}; the log, its checkpoint and every receipt verify"
    first = (
        checked.problems[0]
        if checked.problems
        else next(
            (
                f"row {r.run_id[:12]} ({r.case} on {r.target}): {SHOWN[r.outcome]}: {r.detail}"
                for r in rows
                if r.outcome not in PASSING
            ),
            "the bundle holds no row",
        )
    )
    more = len(checked.problems) + sum(r.outcome not in PASSING for r in rows) - 1
    return f"FAIL: {first}" + (f" (and {more} more)" if more > 0 else "") + (f"; {said}" if said else "")


def _base(row: Row) -> dict[str, Any]:
    return dict(run_id=row.run_id, case=row.case_name, target=row.target, source=row.source)


def _cases(bundle: Bundle) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cases = bundle.cases.get("cases") if isinstance(bundle.cases, dict) else None
    hardware = bundle.cases.get("hardware_cases") if isinstance(bundle.cases, dict) else None
    return list(cases or []), list(hardware or [])


def _case_for(row: Row, cases: list[dict[str, Any]], hardware: list[dict[str, Any]]):
    """The row's case, with the row's params, seed and target; or why there is none."""
    from qsolve.workflow.cases import Case

    pool = cases if row.simulated else hardware
    named = [c for c in pool if c.get("name") == row.case_name]
    own = [c for c in named if (c.get("target") or "sim-cpu") == row.target] or named
    if not own:
        return (
            None,
            f"no case {row.case_name!r} in the bundle's {'cases' if row.simulated else 'hardware cases'}",
        )
    found = dict(own[0]) | {"params": row.run_params, "seed": row.seed, "target": row.target}
    try:
        return Case.model_validate(found), None
    except Exception as e:  # noqa: BLE001 - a case that does not read is named
        return None, f"its case does not read ({type(e).__name__})"


def _run(
    bundle: Bundle, checked: Checked, tell: Callable[[str], None], require_confinement: bool | None
) -> list[RowReplay]:
    from qsolve.errors import Unconfined
    from qsolve.judging.results import CaseResult
    from qsolve.targets import use
    from qsolve.validation.jobs import Limits, run_cases_job
    from qsolve.workflow.folder import load_manifest
    from qsolve.workflow.publication import unpack

    from .compare import compare
    from .sealed import SealedCounts

    cases, hardware = _cases(bundle)
    out: dict[str, RowReplay] = {}
    plan: list[tuple[Any, list[Row], SealedCounts | None]] = []  # (case, its rows, its replay target)
    shared: dict[tuple, int] = {}
    for row in checked.rows:
        base = _base(row)
        case, why = _case_for(row, cases, hardware)
        if case is None:
            out[row.run_id] = RowReplay(
                **base, outcome="not_run" if row.simulated else "not_recomputed", detail=why
            )
            continue
        if row.simulated:
            key = (row.case_name, row.target, row.params, row.seed)
            if key in shared:
                plan[shared[key]][1].append(row)
            else:
                shared[key] = len(plan)
                plan.append((case, [row], None))
            continue
        receipts = checked.receipts.get(row.run_id)
        base["receipts"] = len(row.receipts)
        if not row.target.startswith("provider:"):
            out[row.run_id] = RowReplay(
                **base, outcome="not_recomputed", detail="only provider: devices' receipts are replayed here"
            )
        elif receipts is None or receipts.problems:
            why = receipts.problems[0] if receipts else "its receipts were not checked"
            out[row.run_id] = RowReplay(**base, outcome="not_recomputed", detail=why)
        else:
            digest = receipts.jobs[0]["result"]["provider"]["describe"]
            describe = bundle.providers.get(digest)
            if describe is None or _describe_digest(describe) != digest:
                why = f"the provider's describe answer {digest[:12]} is not in the bundle, or not its digest"
                out[row.run_id] = RowReplay(**base, outcome="not_recomputed", detail=why)
            else:
                plan.append((case, [row], SealedCounts(row.target, describe, receipts.jobs)))
    if plan:
        with tempfile.TemporaryDirectory(prefix="qsolve-replay-") as tmp:
            folder = unpack(bundle.archive, Path(tmp) / "workflow")
            limits = Limits.of(load_manifest(folder).resources)

            def before(i: int, case: Any) -> None:
                target = plan[i][2]
                if target is not None:
                    use(target)
                tell(f"case {i + 1} of {len(plan)}: {case.name} on {case.target}")

            try:
                outcome = run_cases_job(
                    folder, [p[0] for p in plan], limits, before, require_confinement=require_confinement
                )
                died = outcome.died
            except Unconfined as e:  # the bundle's code is another's: never run without the boundary
                outcome, died = None, f"{e} (QSOLVE_ACCEPT_UNCONFINED_CODE=1 runs it all the same)"
        results = ((outcome.report if outcome else None) or {}).get("results", [])
        for i, (_, rows, target) in enumerate(plan):
            for row in rows:
                base = _base(row)
                if i >= len(results):
                    why = died or "the sandbox job ended before it"
                    out[row.run_id] = RowReplay(**base, outcome="not_run", detail=why)
                    continue
                result = CaseResult.model_validate(results[i])
                how, detail = compare(row, result)
                if target is not None:
                    base["receipts"] = len(row.receipts)
                    if target.problem is not None:
                        how, detail = "not_recomputed", target.problem
                    elif target.used != len(target.jobs):
                        how, detail = (
                            "not_recomputed",
                            f"{target.used} circuits sent, {len(target.jobs)} sealed",
                        )
                    elif how != "different":
                        how = "recomputed"
                        detail = (
                            "equal within tolerance"
                            if detail is None and result.result_hash != row.result_hash
                            else None
                        )
                outcome_name = {"exact": "reproduced"}.get(how, how)
                out[row.run_id] = RowReplay(**base, outcome=outcome_name, detail=detail)
    return [out[r.run_id] for r in checked.rows]


def _describe_digest(describe: dict[str, Any]) -> str:
    from qsolve.providers.sealing import describe_digest

    return describe_digest(describe)


def table(report: ReplayReport) -> str:
    """The report as a table, then its verdict."""
    lines = [f"replay of {report.workflow} {report.version} (archive {report.digest[:16]})"]
    p = report.platform
    lines.append(
        f"exported by qsolve {p.get('qsolve')}, qiskit {p.get('qiskit')}, qiskit-aer {p.get('qiskit_aer')}, "
        f"Python {p.get('python')}"
    )
    lines += [f"  holds: {s}" for s in report.checked]
    if report.trust:
        lines.append(f"  rests on: {report.trust}")
    lines += [f"  problem: {s}" for s in report.problems]
    width = max([len(r.case) for r in report.rows] + [4])
    twidth = max([len(r.target) for r in report.rows] + [6])
    lines.append(f"{'run':<12}  {'case':<{width}}  {'target':<{twidth}}  outcome")
    for r in report.rows:
        said = SHOWN[r.outcome] + (f" ({r.receipts} receipts)" if r.receipts else "")
        lines.append(
            f"{r.run_id[:12]:<12}  {r.case:<{width}}  {r.target:<{twidth}}  {said}"
            + (f": {r.detail}" if r.detail else "")
        )
    lines.append(report.verdict)
    return "\n".join(lines)


def report_json(report: ReplayReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2)
