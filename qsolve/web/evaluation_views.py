"""What the evaluation pages show of a run, a record and a comparison, read off what the core returns
(``qsolve.evaluation.runs.summary``, ``compare.compare``, the records and verdicts of the state
database): the same fields ``qsolve evaluations show`` and ``compare`` print, arranged for a page. No
rule is decided here; this module only picks fields and formats them.
"""

from __future__ import annotations

import json
from typing import Any

from qsolve.evaluation.questions import QUESTION_KEYS
from qsolve.web.evaluation_diff import DiffRow, as_json_text, differs, side_by_side

#: the media types a figure is served as; anything else is sent as a download, never rendered
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
#: the judged figure is written into the run page as a ``data:`` URL up to this size
INLINE_FIGURE_BYTES = 2 * 2**20


def seconds(value: float | None) -> str:
    """``12.3 s``, ``-`` when there is no value (a run that has not finished)."""
    return "-" if value is None else f"{value:.1f} s"


def shown(value: Any) -> str:
    """A parsed reading as people read it: text as it is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def counts_text(counts: dict[str, int]) -> str:
    """``2 completed, 1 failed``, as ``qsolve evaluations list`` prints the counts."""
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no records"


def tokens(output: dict[str, Any] | None) -> dict[str, Any] | None:
    """The record's largest call (prompt plus answer) against its window, with the 90% flag; None when
    the evaluator reports no input tokens (the seed: such records show no token figure)."""
    peak = (output or {}).get("peak")
    if not peak:
        return None
    ratio = peak.get("ratio")
    return {
        "question": peak.get("question"),
        "total": peak.get("total_tokens"),
        "input": peak.get("input_tokens"),
        "output": peak.get("output_tokens"),
        "window": peak.get("context_window"),
        "percent": None if ratio is None else f"{100 * ratio:.1f}%",
        "flagged": bool((output or {}).get("context_warning")),
    }


def answers(output: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per question, in the six keys' order: the answer as returned beside its reading."""
    got = (output or {}).get("answers") or {}
    asked = (output or {}).get("questions") or []
    rows = []
    for key in QUESTION_KEYS:
        a = got.get(key)
        if a is None and key not in asked:
            continue
        a = a or {}
        rows.append(
            {
                "question": key,
                "asked": key in asked,
                "answer": a.get("answer"),
                "reading": shown(a.get("reading")),
                "declined": bool(a.get("declined")),
                "error": a.get("error"),
                "attempts": a.get("attempts"),
                "stop_reason": a.get("stop_reason"),
                "input_tokens": a.get("input_tokens"),
                "output_tokens": a.get("output_tokens"),
                "seconds": a.get("duration_seconds"),
            }
        )
    return rows


def figures(record) -> list[dict[str, Any]]:
    """The figures the record's judge was shown (the last one judged), by SHA-256."""
    found = []
    for f in (record.input or {}).get("figures") or []:
        if isinstance(f, dict) and f.get("sha256"):
            found.append(
                {
                    "sha256": f["sha256"],
                    "role": f.get("role"),
                    "bytes": f.get("bytes"),
                    "image": f.get("media_type") in IMAGE_TYPES,
                }
            )
    return found


def record_view(record, history: list) -> dict[str, Any]:
    """A record as the run page shows it: its output as every load derives it (success, complete,
    missing_keys from its diagnosis, never as stored)."""
    from qsolve.evaluation.evaluate import loaded_output

    output = loaded_output(record.output) or {}
    current = {v.reviewer: v for v in history}
    return {
        "id": record.id,
        "task": record.task,
        "chip": record.chip,
        "qid": record.qid,
        "task_result_id": record.task_result_id,
        "status": record.status.value,
        "error": record.error,
        "model": output.get("model"),
        "diagnosis": output.get("diagnosis") or {},
        "complete": output.get("complete"),
        "missing_keys": output.get("missing_keys") or [],
        "model_seconds": record.model_seconds,
        "tokens": tokens(output),
        "answers": answers(output),
        "figures": figures(record),
        "prompts": (record.input or {}).get("prompts") or {},
        "reads": (record.input or {}).get("reads"),
        "context": (record.input or {}).get("context"),
        "knowledge_sha256": (record.input or {}).get("knowledge_sha256"),
        "knowledge_chars": (record.input or {}).get("knowledge_chars"),
        "evaluator": record.evaluator or {},
        "current_verdicts": list(current.values()),
        "history": history,
    }


def _kind(row: dict[str, Any]) -> tuple[str, str]:
    """(css class, words) of a compare row, as ``qsolve evaluations compare`` names it."""
    if row["a"] is None or row["b"] is None:
        return "only", f"only in {'b' if row['a'] is None else 'a'}"
    if row["decision_differences"]:
        return "decision", "decision: " + ", ".join(row["decision_differences"])
    if row["content_differences"]:
        return "content", "content: " + ", ".join(row["content_differences"])
    return "same", "same"


def _prompt_diffs(left, right) -> list[dict[str, Any]]:
    pa = ((left.input or {}).get("prompts") or {}) if left is not None else {}
    pb = ((right.input or {}).get("prompts") or {}) if right is not None else {}
    out = []
    for key in [k for k in QUESTION_KEYS if k in pa or k in pb]:
        rows: list[DiffRow] = side_by_side(pa.get(key), pb.get(key))
        out.append({"question": key, "rows": rows, "differs": differs(rows)})
    return out


def compare_rows(c: dict[str, Any], records: dict[str, Any]) -> list[dict[str, Any]]:
    """The compare result's rows, each with its kind and, for the expanded row, the diagnosis JSON and
    the prompts as side-by-side diffs. ``records`` holds the records by id."""
    from qsolve.evaluation.evaluate import loaded_output

    def diagnosis_of(record) -> Any:
        return None if record is None else (loaded_output(record.output) or {}).get("diagnosis")

    rows = []
    for row in c["rows"]:
        left = records.get(row["a"]["record"]) if row["a"] else None
        right = records.get(row["b"]["record"]) if row["b"] else None
        css, words = _kind(row)
        diagnosis = side_by_side(
            as_json_text(diagnosis_of(left)), as_json_text(diagnosis_of(right)), context=100
        )
        rows.append(
            {
                **row,
                "kind": css,
                "kind_text": words,
                "diagnosis_diff": diagnosis,
                "prompt_diffs": _prompt_diffs(left, right),
            }
        )
    return rows
