"""Two runs side by side, and a run scored against known answers (issue 14, items 10 and 11; the seed's
"Comparing runs").

``compare``: the settings with the differing ones flagged (the knowledge's and the evaluator's hashes
among them, read off the records), the totals, and one row per record of either run: joined by task
result where both runs judged the same result, by entity (task, chip, qid) otherwise, with both results
under the entity and ``results_differ`` when they are not the same, so the totals and the rows always
agree; each side's record status (``record_status``:
completed, failed, cancelled, ...), its diagnosis's success, status, fit assessment and outcome, and
each reviewer's current verdict (``verdicts``); a
change to one of those four is a *decision* difference, a change to any other field of the diagnosis
(extracted parameters, suggested range, notes) a *content* difference, and a record that ended
otherwise than the other (one failed, say, so it has no diagnosis) the decision difference
``record_status``; and the largest call of each run, so the cost of in-context examples shows beside
their effect.

``score``: each completed record's status, outcome and fit assessment against the task result's true
status where it has one (``faults.known_answer``); an answer that states no reading is counted as
unread (``status_unread``, ...), never right; the status is scored both by our reading and by
QCalEval's own (``qcaleval_status``, any allowed code anywhere in the answer); and against reviewers'
verdicts where there are some, per task, per known-answer set (``standard``: the fixed faults;
``held_apart``: :mod:`.held_apart`'s drawn ones) and in total, so two models, two prompt settings, or the
classical judge and a vision model are weighed on the same known-answer set. An unknown run is
:class:`storage.state.NotFound`, naming it, as for ``compare``.
"""

from __future__ import annotations

from typing import Any

DECISION = ("success", "status", "fit_assessment", "outcome")
SETTINGS = (
    "model", "chosen_by", "fallback", "with_examples", "max_figures", "knowledge_draft_id", "question",
    "mode",
)  # fmt: skip
#: settings read off the records: the knowledge each task was judged against, and the evaluator
RECORD_SETTINGS = ("knowledge_sha256", "evaluator_sha256", "evaluator_version")


def _output(record) -> dict[str, Any] | None:
    """The record's output as every load derives it (success, complete, missing_keys never as stored)."""
    from qsolve.evaluation.evaluate import loaded_output

    return loaded_output(record.output)


def _diagnosis(record) -> dict[str, Any] | None:
    output = _output(record)
    return None if output is None else output.get("diagnosis")


def _peak(records) -> dict[str, Any] | None:
    peaks = [r.output.get("peak") for r in records if r.output and r.output.get("peak")]
    return max(peaks, key=lambda p: p.get("total_tokens") or 0, default=None)


def _totals(records) -> dict[str, Any]:
    done = [r for r in records if r.status == "completed"]
    return {
        "records": len(records),
        "completed": len(done),
        "failed": sum(1 for r in records if r.status == "failed"),
        "success": sum(1 for r in done if (_diagnosis(r) or {}).get("success") is True),
        "complete": sum(1 for r in done if (_output(r) or {}).get("complete")),
        "model_seconds": sum(r.model_seconds or 0.0 for r in done),
    }


def _record_setting(records, name: str) -> str | None:
    """A setting read off a run's records: the one value they share, else each task's (``task=value``,
    sorted), or None when no record holds it."""
    values: dict[str, set[str]] = {}
    for r in records:
        if name == "knowledge_sha256":
            value = (r.input or {}).get("knowledge_sha256")
        elif name == "evaluator_sha256":
            value = (r.evaluator or {}).get("source_sha256")
        else:
            value = (r.evaluator or {}).get("version")
        if value:
            values.setdefault(r.task, set()).add(str(value))
    every = set().union(*values.values()) if values else set()
    if not every:
        return None
    if len(every) == 1:
        return next(iter(every))
    return ", ".join(f"{task}={'|'.join(sorted(v))}" for task, v in sorted(values.items()))


def pairs(left: list, right: list) -> list[tuple[Any, Any]]:
    """Every record of both runs in exactly one pair: joined by task result where both judged the same
    result, the rest by entity (task, chip, qid) in task-result order, a side None where one run has
    more records of the entity than the other."""
    out: list[tuple[Any, Any]] = []
    entities: dict[tuple[str, str, str], tuple[list, list]] = {}
    for side, records in ((0, left), (1, right)):
        for r in records:
            entities.setdefault((r.task, r.chip, r.qid), ([], []))[side].append(r)
    for key in sorted(entities):
        a_side, b_side = (sorted(x, key=lambda r: (r.task_result_id, r.id)) for x in entities[key])
        b_by_result: dict[str, list] = {}
        for r in b_side:
            b_by_result.setdefault(r.task_result_id, []).append(r)
        rest_a = []
        for r in a_side:
            match = b_by_result.get(r.task_result_id)
            if match:
                out.append((r, match.pop(0)))
            else:
                rest_a.append(r)
        rest_b = sorted(
            (m for ms in b_by_result.values() for m in ms), key=lambda r: (r.task_result_id, r.id)
        )
        for i in range(max(len(rest_a), len(rest_b))):
            out.append((rest_a[i] if i < len(rest_a) else None, rest_b[i] if i < len(rest_b) else None))
    return out


def compare(db, a: str, b: str) -> dict[str, Any]:
    """Runs ``a`` and ``b`` side by side: one row per record of either run (see :func:`pairs`), so the
    totals and the rows always agree."""
    runs = [db.get_evaluation_run(a), db.get_evaluation_run(b)]
    records = [db.evaluation_records(a), db.evaluation_records(b)]
    settings = []
    for name in SETTINGS:
        left, right = ((run.model if name == "model" else run.settings.get(name)) for run in runs)
        settings.append({"setting": name, "a": left, "b": right, "differs": left != right})
    for name in RECORD_SETTINGS:
        left, right = (_record_setting(side, name) for side in records)
        settings.append({"setting": name, "a": left, "b": right, "differs": left != right})
    rows = []
    for left, right in pairs(records[0], records[1]):
        da, db_ = (None if r is None else _diagnosis(r) for r in (left, right))
        decision = [k for k in DECISION if (da or {}).get(k) != (db_ or {}).get(k)]
        content = sorted(
            k
            for k in set(da or {}) | set(db_ or {})
            if k not in DECISION and (da or {}).get(k) != (db_ or {}).get(k)
        )
        if da is None or db_ is None:  # a side without a diagnosis: only how the records ended can differ
            decision, content = [], []
        if left is not None and right is not None and left.status != right.status:
            decision = ["record_status", *decision]
        one = left or right
        same = left is not None and right is not None and left.task_result_id == right.task_result_id
        rows.append(
            {
                "task": one.task,
                "chip": one.chip,
                "qid": one.qid,
                "same_result": same,
                #: both sides judged different task results of the entity
                "results_differ": left is not None and right is not None and not same,
                "a": _side(left, da, db),
                "b": _side(right, db_, db),
                "decision_differences": decision,
                "content_differences": content,
            }
        )
    return {
        "a": a,
        "b": b,
        "settings": settings,
        "totals": {"a": _totals(records[0]), "b": _totals(records[1])},
        "rows": rows,
        "tokens": {"a": _peak(records[0]), "b": _peak(records[1])},
    }


def _side(record, diagnosis: dict[str, Any] | None, state) -> dict[str, Any] | None:
    """One side of a row: the record, how it ended (``record_status``), its diagnosis's four decision
    fields (``status`` among them: the diagnosis's, None without a diagnosis; ``fit_assessment`` its fit
    quality) and each reviewer's current verdict on it (``verdicts``: reviewer to agree, disagree or
    unsure, with the area of a disagreement)."""
    if record is None:
        return None
    d = diagnosis or {}
    return {
        "record": record.id,
        "task_result_id": record.task_result_id,
        "record_status": record.status.value,
        **{k: d.get(k) for k in DECISION},
        "verdicts": {
            reviewer: {"verdict": v.verdict, "area": v.area}
            for reviewer, v in sorted(state.current_verdicts(record.id).items())
        },
    }


def score(db, store, run_id: str) -> dict[str, Any]:
    """The run's records against the known answers and the reviewers' verdicts; an unknown run raises
    :class:`storage.state.NotFound`."""
    from qsolve.calibration.faults import known_answer
    from qsolve.calibration.held_apart import is_held_apart

    db.get_evaluation_run(run_id)  # an unknown run: NotFound, naming it
    per_task: dict[str, dict[str, int]] = {}
    per_set = {"standard": _tally(), "held_apart": _tally()}
    total = _tally()
    for record in db.evaluation_records(run_id):
        if record.status != "completed":
            continue
        result = store.get(record.task_result_id)
        known = known_answer(result.task, result.true_status)
        d = _diagnosis(record) or {}
        tally = per_task.setdefault(record.task, _tally())
        in_set = per_set["held_apart" if is_held_apart(result.fault) else "standard"]
        verdicts = db.current_verdicts(record.id)
        for t in (tally, in_set, total):
            t["judged"] += 1
            if known is not None:
                t["known"] += 1
                status = d.get("status")
                t["status"] += status is not None and status == known["status"]
                t["status_unread"] += status is None
                t["qcaleval_status"] += d.get("qcaleval_status", status) == known["status"]
                outcome = d.get("outcome")
                t["outcome"] += outcome is not None and outcome == known["outcome"]
                t["outcome_unread"] += outcome is None
                if known["fit_assessment"] is not None:
                    t["fit_known"] += 1
                    fit = d.get("fit_assessment")
                    t["fit_assessment"] += fit is not None and fit == known["fit_assessment"]
                    t["fit_unread"] += fit is None
            t["agreed"] += sum(1 for v in verdicts.values() if v.verdict == "agree")
            t["disagreed"] += sum(1 for v in verdicts.values() if v.verdict == "disagree")
    return {"run": run_id, "per_task": per_task, "per_set": per_set, "total": total}


def _tally() -> dict[str, int]:
    return dict.fromkeys(
        (
            "judged",
            "known",
            "status",
            "status_unread",
            "qcaleval_status",
            "outcome",
            "outcome_unread",
            "fit_known",
            "fit_assessment",
            "fit_unread",
            "agreed",
            "disagreed",
        ),
        0,
    )
