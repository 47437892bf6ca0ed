"""Two runs side by side, and a run scored against known answers (issue 14, items 10 and 11; the seed's
"Comparing runs").

``compare``: the settings with the differing ones flagged, the totals, one row per entity joined by
qid (saying whether both judged the same task result), each side's record status (``record_status``:
completed, failed, cancelled, ...) and its diagnosis's success, status, fit assessment and outcome; a
change to one of those four is a *decision* difference, a change to any other field of the diagnosis
(extracted parameters, suggested range, notes) a *content* difference, and a record that ended
otherwise than the other (one failed, say, so it has no diagnosis) the decision difference
``record_status``; and the largest call of each run, so the cost of in-context examples shows beside
their effect.

``score``: each completed record's status, outcome and fit assessment against the task result's true
status where it has one (``faults.known_answer``); an answer that states no reading is counted as
unread (``status_unread``, ...), never right; the status is scored both by our reading and by
QCalEval's own (``qcaleval_status``, any allowed code anywhere in the answer); and against reviewers'
verdicts where there are some, per task and in total, so two models, two prompt settings, or the
classical judge and a vision model are weighed on the same known-answer set. An unknown run is
:class:`storage.state.NotFound`, naming it, as for ``compare``.
"""

from __future__ import annotations

from typing import Any

DECISION = ("success", "status", "fit_assessment", "outcome")
SETTINGS = ("model", "with_examples", "knowledge_draft_id", "question", "mode", "fallback")


def _diagnosis(record) -> dict[str, Any] | None:
    return None if record.output is None else record.output.get("diagnosis")


def _peak(records) -> dict[str, Any] | None:
    peaks = [r.output.get("peak") for r in records if r.output and r.output.get("peak")]
    return max(peaks, key=lambda p: p.get("total_tokens") or 0, default=None)


def _totals(records) -> dict[str, Any]:
    done = [r for r in records if r.status == "completed"]
    return {
        "records": len(records),
        "completed": len(done),
        "success": sum(1 for r in done if (_diagnosis(r) or {}).get("success") is True),
        "complete": sum(1 for r in done if r.output and r.output.get("complete")),
        "model_seconds": sum(r.model_seconds or 0.0 for r in done),
    }


def compare(db, a: str, b: str) -> dict[str, Any]:
    """Runs ``a`` and ``b`` side by side."""
    runs = [db.get_evaluation_run(a), db.get_evaluation_run(b)]
    records = [db.evaluation_records(a), db.evaluation_records(b)]
    settings = []
    for name in SETTINGS:
        left, right = ((run.model if name == "model" else run.settings.get(name)) for run in runs)
        settings.append({"setting": name, "a": left, "b": right, "differs": left != right})
    by_entity = [{(r.task, r.chip, r.qid): r for r in side} for side in records]
    rows = []
    for key in sorted(set(by_entity[0]) | set(by_entity[1])):
        left, right = by_entity[0].get(key), by_entity[1].get(key)
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
        rows.append(
            {
                "task": key[0],
                "chip": key[1],
                "qid": key[2],
                "same_result": left is not None
                and right is not None
                and left.task_result_id == right.task_result_id,
                "a": _side(left, da),
                "b": _side(right, db_),
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


def _side(record, diagnosis: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    """One side of a row: the record, how it ended (``record_status``), and its diagnosis's four decision
    fields (``status`` among them: the diagnosis's, None without a diagnosis)."""
    d = diagnosis or {}
    return {
        "record": record.id,
        "task_result_id": record.task_result_id,
        "record_status": record.status.value,
        **{k: d.get(k) for k in DECISION},
    }


def score(db, store, run_id: str) -> dict[str, Any]:
    """The run's records against the known answers and the reviewers' verdicts; an unknown run raises
    :class:`storage.state.NotFound`."""
    from qsolve.calibration.faults import known_answer

    db.get_evaluation_run(run_id)  # an unknown run: NotFound, naming it
    per_task: dict[str, dict[str, int]] = {}
    total = _tally()
    for record in db.evaluation_records(run_id):
        if record.status != "completed":
            continue
        result = store.get(record.task_result_id)
        known = known_answer(result.task, result.true_status)
        d = _diagnosis(record) or {}
        tally = per_task.setdefault(record.task, _tally())
        verdicts = db.current_verdicts(record.id)
        for t in (tally, total):
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
    return {"run": run_id, "per_task": per_task, "total": total}


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
