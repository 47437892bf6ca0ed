"""Task results imported from a folder of figures and JSON (``qsolve calibrate --import DIR``).

Every ``*.json`` file under the folder (subfolders included, in path order) is one task result::

    {
      "task": "CheckT1",                     required: the task's name, as its knowledge names it
      "chip": "fake:fez",                    required
      "qid": "Q03",                          required: a qubit, or a coupling "Q03-Q04"
      "day": "2026-12-01",                   required: ISO date
      "status": "completed",                 required: the task run's own status, completed or failed
      "message": "Successfully finished",    the task's message (default "")
      "figures": ["t1_q03.png"],             the figure files, relative to this JSON file's folder
      "sweep": {"parameter": "delay", "unit": "us", "start": 0, "stop": 1000, "points": 31,
                "step": 33.33},              optional; step defaults to (stop - start) / (points - 1)
      "settings": {"shots": 1000, "interval": {"value": 1500, "unit": "us"}},      required; interval optional
      "outputs": {"t1": {"value": 215.0, "unit": "us", "error": 6.1}},              optional
      "fit": {"model": "A·exp(−t/τ) + B", "r2": 0.998, "reduced_chi2": 1.1, "dof": 28},  optional
      "true_status": "SUCCESS",              optional: the known answer, a status code of the task
      "fault": null,                         optional: the injected fault's name
      "id": "…32 hex digits…",               optional: by default derived from the file's content
      "created_at": "2026-12-01T09:30:00Z"   optional: by default the day's midnight, UTC
    }

A figure is a PNG, JPEG or WebP file (told by its bytes, not its name) of at most 10 MiB, inside the
folder. The JSON is read strictly: no duplicate keys, no NaN or infinities, no unknown keys. All files
are checked before anything is stored, and every problem is reported, each naming its file and key
(``t1.json: sweep.points: ...``): a folder with one bad file imports nothing. Importing the same folder
again records nothing new (the ids come from the content).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from qsolve.calibration.task_result import Fit, Output, Settings, Sweep, TaskResult, figure_ref
from qsolve.errors import Issue, QsolveError, issues_from_validation

MAX_FIGURE_BYTES = 10 * 1024 * 1024
MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


@dataclass
class ImportInvalid(QsolveError):
    """The folder does not import; ``issues`` says which file and key, each."""

    issues: list[Issue] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(i) for i in self.issues) or self.message


class _SweepIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    parameter: str
    unit: str
    start: float
    stop: float
    points: int = Field(ge=1)
    step: float | None = None


class _ResultIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    task: str
    chip: str
    qid: str
    day: str
    status: str
    message: str = ""
    figures: list[str] = Field(default_factory=list)
    sweep: _SweepIn | None = None
    settings: Settings
    outputs: dict[str, Output] = Field(default_factory=dict)
    fit: Fit | None = None
    true_status: str | None = None
    fault: str | None = None
    id: str | None = None
    created_at: datetime | None = None


def read_folder(folder: Path) -> list[tuple[TaskResult, dict[str, bytes]]]:
    """Every result of the folder with its figures' bytes (by SHA-256), or :class:`ImportInvalid`."""
    root = Path(folder)
    if not root.is_dir():
        raise ImportInvalid(f"{folder}: not a folder", [Issue(file=str(folder), message="not a folder")])
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    issues: list[Issue] = []
    if not files:
        issues.append(Issue(file=str(folder), message="no *.json task results in this folder"))
    out: list[tuple[TaskResult, dict[str, bytes]]] = []
    seen: dict[str, str] = {}
    for path in files:
        name = path.relative_to(root).as_posix()
        read = _read_one(root, path, name, issues)
        if read is None:
            continue
        if read[0].id in seen:
            issues.append(Issue(file=name, loc=("id",), message=f"the same id as {seen[read[0].id]}"))
            continue
        seen[read[0].id] = name
        out.append(read)
    if issues:
        raise ImportInvalid(f"{folder}: {len(issues)} problem(s)", issues)
    return out


def import_folder(folder: Path, store) -> list[TaskResult]:
    """Read the whole folder, then record every result (one transaction) in ``store``."""
    return store.record_all(read_folder(folder))


def _read_one(root: Path, path: Path, name: str, issues: list[Issue]):
    raw = path.read_bytes()
    try:
        data = _strict_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        issues.append(Issue(file=name, message=f"not JSON: {e}"))
        return None
    if not isinstance(data, dict):
        issues.append(Issue(file=name, message="a task result is a JSON object"))
        return None
    try:
        given = _ResultIn.model_validate(data)
    except ValidationError as e:
        issues.extend(issues_from_validation(e, name))
        return None
    figures, refs, before = {}, [], len(issues)
    for i, rel in enumerate(given.figures):
        loaded = _figure(root, path.parent, rel, name, ("figures", i), issues)
        if loaded is not None:
            data_bytes, media_type = loaded
            ref = figure_ref(Path(rel).name, data_bytes, media_type)
            if any(r.name == ref.name for r in refs):
                ref = ref.model_copy(update={"name": f"{i}-{ref.name}"})
            refs.append(ref)
            figures[ref.sha256] = data_bytes
    if len(issues) > before:
        return None
    content = hashlib.sha256(raw + b"".join(r.sha256.encode() for r in refs)).hexdigest()
    values: dict[str, Any] = given.model_dump(exclude={"figures", "sweep", "id", "created_at"})
    values["figures"] = refs
    values["id"] = given.id or content[:32]
    if given.sweep is not None:
        s = given.sweep
        sweep = Sweep.linear(s.parameter, s.unit, s.start, s.stop, s.points)
        values["sweep"] = sweep if s.step is None else sweep.model_copy(update={"step": s.step})
    created = given.created_at
    if created is None:
        try:
            created = datetime.strptime(given.day, "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            created = datetime.now(UTC)  # the day itself is refused below, with its key
    elif created.tzinfo is None:
        issues.append(Issue(file=name, loc=("created_at",), message="a time needs its zone (Z or +hh:mm)"))
        return None
    values["created_at"] = created
    try:
        return TaskResult.model_validate(values), figures
    except ValidationError as e:
        issues.extend(issues_from_validation(e, name))
        return None


def _figure(root: Path, here: Path, rel: str, name: str, loc: tuple, issues: list[Issue]):
    path = (here / rel).resolve()
    if Path(rel).is_absolute() or not path.is_relative_to(root.resolve()):
        issues.append(Issue(file=name, loc=loc, message=f"{rel!r} is outside the folder"))
        return None
    if not path.is_file():
        issues.append(Issue(file=name, loc=loc, message=f"no figure file {rel!r}"))
        return None
    size = path.stat().st_size
    if size > MAX_FIGURE_BYTES:
        issues.append(Issue(file=name, loc=loc, message=f"{rel!r} is {size} bytes, more than 10 MiB"))
        return None
    data = path.read_bytes()
    for magic, media_type in MAGIC:
        if data.startswith(magic):
            return data, media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return data, "image/webp"
    issues.append(Issue(file=name, loc=loc, message=f"{rel!r} is not a PNG, JPEG or WebP image"))
    return None


def _strict_json(text: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"the key {key!r} appears twice in one object")
            out[key] = value
        return out

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not a JSON number")

    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
