"""A side-by-side line diff of two texts, for the compare page's expanded row (the seed's "Comparing
runs": the diagnosis JSON and the prompts as a diff). Pure: no web, no storage.

    rows = side_by_side(left_text, right_text)      # list[DiffRow]
    [(r.kind, r.left, r.right) for r in rows]        # kind: same, changed, removed, added, skipped

Long runs of equal lines are folded into one ``skipped`` row (with how many lines it stands for), keeping
``context`` lines on each side of a change. ``None`` on a side (no record there) diffs as no text.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal

from pydantic import BaseModel

Kind = Literal["same", "changed", "removed", "added", "skipped"]


class DiffRow(BaseModel):
    kind: Kind
    left_no: int | None = None
    left: str | None = None
    right_no: int | None = None
    right: str | None = None
    #: for a ``skipped`` row: how many equal lines it folds
    count: int = 0


def as_json_text(value: Any) -> str:
    """A value as indented JSON with sorted keys, so that two diagnoses diff field by field."""
    if value is None:
        return ""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _fold(rows: list[DiffRow], context: int) -> list[DiffRow]:
    out: list[DiffRow] = []
    i = 0
    while i < len(rows):
        if rows[i].kind != "same":
            out.append(rows[i])
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j].kind == "same":
            j += 1
        head = context if i > 0 else 0
        tail = context if j < len(rows) else 0
        if j - i > head + tail + 1:
            out.extend(rows[i : i + head])
            out.append(DiffRow(kind="skipped", count=j - i - head - tail))
            out.extend(rows[j - tail : j])
        else:
            out.extend(rows[i:j])
        i = j
    return out


def side_by_side(left: str | None, right: str | None, *, context: int = 3) -> list[DiffRow]:
    """The two texts line by line, changes paired where difflib pairs them."""
    a = (left or "").splitlines()
    b = (right or "").splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(
                DiffRow(kind="same", left_no=i + 1, left=a[i], right_no=j + 1, right=b[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            i, j = i1 + k, j1 + k
            has_left, has_right = i < i2, j < j2
            kind: Kind = "changed" if has_left and has_right else ("removed" if has_left else "added")
            rows.append(
                DiffRow(
                    kind=kind,
                    left_no=i + 1 if has_left else None,
                    left=a[i] if has_left else None,
                    right_no=j + 1 if has_right else None,
                    right=b[j] if has_right else None,
                )
            )
    return _fold(rows, context)


def differs(rows: list[DiffRow]) -> bool:
    return any(r.kind in ("changed", "removed", "added") for r in rows)
