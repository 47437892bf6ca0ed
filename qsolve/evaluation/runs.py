"""Evaluation runs (issue 14, item 6; the calibration-evaluation seed, "Entry points and runs").

A run is requested with a selection (a task and a chip: the latest evaluable result per qubit or
coupling; a day; or exact task-result ids, taken as they are) and a declared model; it stores one
pending record per task result and reports the entities without an evaluable result as skipped. It is
executed a few records at a time (``EVALUATION_CONCURRENCY``, default 2) by one owner, which keeps a
durable heartbeat in the state database every ``EVALUATION_HEARTBEAT_SECONDS`` (30). A read that finds
the heartbeat older than ``EVALUATION_STALE_AFTER_SECONDS`` (1800) marks the run interrupted. Retry
runs only the failed, interrupted and cancelled records, with the stored selection; cancel marks the
unfinished records cancelled, and the owner stops at its next check (between records, and at each
heartbeat). Each record is claimed in the database, so none is judged twice.

The task knowledge is read from ``QSOLVE_TASK_KNOWLEDGE`` (default: the repository's
``task-knowledge/``), or from a knowledge draft the run names.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, field_validator, model_validator

from qsolve.errors import QsolveError

CONCURRENCY_VARIABLE = "EVALUATION_CONCURRENCY"
RUNS_VARIABLE = "EVALUATION_RUNS"
HEARTBEAT_VARIABLE = "EVALUATION_HEARTBEAT_SECONDS"
STALE_VARIABLE = "EVALUATION_STALE_AFTER_SECONDS"
KNOWLEDGE_VARIABLE = "QSOLVE_TASK_KNOWLEDGE"
REPO_KNOWLEDGE = Path(__file__).resolve().parents[2] / "task-knowledge"
MAX_SNAPSHOT_BYTES = 10 * 2**20  # a figure an evaluation saw is kept as an asset up to this size


class RunRefused(QsolveError):
    """A run that cannot be requested or executed as asked; the message says why."""


#: each setting's default, whether it is a whole number, and the most it may be: 64 records at a time,
#: a heartbeat at least every hour, a run taken as interrupted after at most a week without one (past
#: these a wait or a date overflows: a heartbeat's thread dies, a read of the runs fails)
SETTINGS = {
    CONCURRENCY_VARIABLE: (2, True, 64),
    RUNS_VARIABLE: (2, True, 64),
    HEARTBEAT_VARIABLE: (30, False, 3600),
    STALE_VARIABLE: (1800, False, 7 * 24 * 3600),
}


def _number(name: str) -> float:
    """The setting ``name`` from the environment, or its default; a value that is not a number above 0
    (for ``EVALUATION_CONCURRENCY``, a whole number of at least 1), or one past its most, is refused,
    naming it and the rule."""
    default, whole, most = SETTINGS[name]
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or (whole and not value.is_integer()):
        rule = "a whole number of at least 1" if whole else "a number of seconds above 0"
        raise RunRefused(f"{name}={text!r} is not {rule} (default {default})")
    if value > most:
        unit = "" if whole else " seconds"
        raise RunRefused(f"{name}={text!r} is past the most it may be, {most}{unit} (default {default})")
    return value


def settings_problems() -> list[str]:
    """What is wrong with the ``EVALUATION_*`` settings of this environment: one line each, or none."""
    problems = []
    for name in SETTINGS:
        try:
            _number(name)
        except RunRefused as e:
            problems.append(str(e))
    return problems


def check_settings() -> None:
    """Refuse (:class:`RunRefused`, one line) an environment whose ``EVALUATION_*`` settings a run could
    not be executed under: checked before a run is stored and before one is started."""
    problems = settings_problems()
    if problems:
        raise RunRefused("; ".join(problems))


def check_request(model: str | None = None):
    """Refuse, before a run is stored, what ``qsolve evaluate`` and the evaluation flow both refuse: a bad
    ``EVALUATION_*`` setting (:class:`RunRefused`), an undeclared model (``UnknownModel``), or one whose
    key's variable is not set (``ModelUnavailable``; never the key itself). The model chosen."""
    from qsolve.evaluation.models import api_key, choose_model

    check_settings()
    choice = choose_model(model)
    if not choice.model.is_classical:
        api_key(choice.model)
    return choice


def concurrency() -> int:
    return int(_number(CONCURRENCY_VARIABLE))


def runs_at_once() -> int:
    """How many evaluation runs a Prefect server executes at once (``EVALUATION_RUNS``, default 2): the
    size its ``evaluation`` concurrency limit is created with, so that a model endpoint sees at most that
    many runs times ``EVALUATION_CONCURRENCY`` records."""
    return int(_number(RUNS_VARIABLE))


def heartbeat_seconds() -> float:
    return _number(HEARTBEAT_VARIABLE)


def stale_after(*, reading: bool = False) -> timedelta:
    """How old a heartbeat is when its run is taken as interrupted. ``reading``: for a read (a run shown,
    listed or compared), where a bad value falls back to the default instead of failing the read (the
    caller says so with :func:`settings_problems`); a run is never stored or started under one."""
    try:
        return timedelta(seconds=_number(STALE_VARIABLE))
    except RunRefused:
        if not reading:
            raise
        return timedelta(seconds=SETTINGS[STALE_VARIABLE][0])


def knowledge_root() -> Path:
    return Path(os.environ.get(KNOWLEDGE_VARIABLE) or REPO_KNOWLEDGE)


class RunRequest(BaseModel):
    """What a run is asked to judge, and how."""

    task: str | None = None
    chip: str | None = None
    day: str | None = None
    task_ids: list[str] | None = None
    model: str | None = None
    with_examples: bool = False
    knowledge_draft_id: str | None = None
    question: str | None = None
    #: how many of a result's figures are shown, the last judged (1 to 4; the seed's max_figures)
    max_figures: int = 1

    @field_validator("max_figures")
    @classmethod
    def _figures(cls, value: int) -> int:
        from qsolve.evaluation.prompts import check_max_figures

        return check_max_figures(value)

    @model_validator(mode="after")
    def _one_selection(self) -> RunRequest:
        if self.task_ids:
            return self
        if self.day:
            return self
        if not (self.task and self.chip):
            raise ValueError("select a task and a chip, a day, or task-result ids")
        return self

    @property
    def trigger(self) -> str:
        return "single" if self.task_ids and len(self.task_ids) == 1 else "bulk"

    def selection(self) -> dict[str, Any]:
        return self.model_dump(include={"task", "chip", "day", "task_ids"}, exclude_none=True)


def selection_problem(
    *,
    run_id: str | None = None,
    task: str | None = None,
    chip: str | None = None,
    day: str | None = None,
    task_ids: list[str] | None = None,
) -> str | None:
    """What is wrong with a selection, one line, as ``qsolve evaluate`` refuses it; None when it is one
    selection: a task and a chip, a day (a chip, if given, narrows it), task-result ids, or a run's id
    alone. Nothing given is refused, not taken as some default."""
    given = [
        name
        for name, value in (("run_id", run_id), ("task", task), ("day", day), ("task_ids", task_ids))
        if value
    ]
    if len(given) > 1:
        return (
            f"{' and '.join(given)} given: select one: a task and a chip, a day, task-result ids, or a run id"
        )
    if run_id and chip:
        return "run_id and chip given: a run id names a stored run, which has its own selection"
    if task and not chip:
        return "task needs chip (the latest evaluable result per qubit of that chip)"
    if not given:
        return "chip given alone: " * bool(chip) + "select a task and a chip, a day, or task-result ids"
    return None


def summary_line(s: dict[str, Any]) -> str:
    """A run's summary on one line, as ``qsolve evaluations list`` shows it."""
    counts = ", ".join(f"{n} {k}" for k, n in sorted(s["counts"].items())) or "no records"
    wall = f"{s['wall_seconds']:.1f} s" if s["wall_seconds"] is not None else "-"
    return (
        f"{s['id']}  {s['status']:<11}  {s['model']}  {s['records']} records ({counts})  "
        f"wall {wall}, model {s['model_seconds']:.1f} s"
        + (f"; {s['failed_questions']} questions got no answer" if s.get("failed_questions") else "")
    )


def select(store, request: RunRequest) -> tuple[list, list[dict[str, Any]]]:
    """The task results a run judges, and the entities it skips with why."""
    from qsolve.errors import RecordNotFound

    skipped: list[dict[str, Any]] = []
    if request.task_ids:
        chosen = []
        for result_id in dict.fromkeys(request.task_ids):
            try:
                result = store.get(result_id)
            except RecordNotFound:
                skipped.append({"task_result_id": result_id, "why": "no such task result"})
                continue
            if result.evaluable:
                chosen.append(result)
            else:
                skipped.append({"task_result_id": result_id, "qid": result.qid, "why": _why_not(result)})
        return chosen, skipped
    if request.day:
        every = store.list(task=request.task, chip=request.chip, day=request.day)
        chosen = [r for r in every if r.evaluable]
        skipped = [
            {"task_result_id": r.id, "qid": r.qid, "why": _why_not(r)} for r in every if not r.evaluable
        ]
        return chosen, skipped
    chosen = store.latest(request.task, request.chip)
    judged = {r.qid for r in chosen}
    for r in store.list(task=request.task, chip=request.chip):
        if r.qid not in judged:
            judged.add(r.qid)
            skipped.append({"qid": r.qid, "why": "no evaluable result (no figure, or the task failed)"})
    skipped.extend({"qid": qid, "why": NO_RESULT} for qid in _no_result(request.chip, judged))
    return chosen, skipped


#: why an entity of the chip with no result of the task at all is skipped
NO_RESULT = "no result"


def _no_result(chip: str, seen: set[str]) -> list[str]:
    """The chip's entities the task has no result for: its couplings when the task's results are of
    couplings (``Q03-Q04``), else its qubits; none for a chip that cannot be named (an imported one)."""
    from qsolve.calibration.experiments import chip_entities

    qubits, couplings = chip_entities(chip)
    entities = couplings if any("-" in qid for qid in seen) else qubits
    return [qid for qid in entities if qid not in seen]


def _why_not(result) -> str:
    if result.status != "completed":
        return f"the task {result.status}"
    return "no figure"


def request_run(db, store, request: RunRequest, *, home: Path | None = None):
    """Store a run and its pending records; refuses an undeclared model and a draft of another task."""
    from qsolve.evaluation.models import choose_model

    check_settings()  # a run is never stored under settings it could not be executed with
    choice = choose_model(request.model)
    results, skipped = select(store, request)
    settings: dict[str, Any] = {
        "with_examples": request.with_examples,
        "max_figures": request.max_figures,
        "question": request.question,
        "chosen_by": choice.chosen_by,
        "fallback": choice.fallback,
        "mode": "direct",
    }
    if request.knowledge_draft_id:
        from qsolve.evaluation.drafts import DraftStore

        drafts = DraftStore(home)
        draft = drafts.get(request.knowledge_draft_id)
        for task in {r.task for r in results} | ({request.task} if request.task else set()):
            drafts.for_task(draft.id, task)  # a draft of another task is refused
        settings |= {"knowledge_draft_id": draft.id, "knowledge_draft_name": draft.file_name}
    return db.create_evaluation_run(
        trigger=request.trigger,
        selection=request.selection(),
        model=choice.id,
        settings=settings,
        results=[(r.id, r.task, r.chip, r.qid) for r in results],
        skipped=skipped,
    )


def execute_run(
    db,
    store,
    run_id: str,
    *,
    home: Path | None = None,
    owner: str | None = None,
    workers: int | None = None,
    beat_s: float | None = None,
    on_record: Callable[[Any], None] = lambda record: None,
):
    """Judge the run's pending records, a few at a time, under a heartbeat; the run as it ended."""
    from qsolve.home import owner_token

    owner = owner or owner_token()
    check_settings()  # before the run is started: a bad value never leaves it running
    run = db.get_evaluation_run(run_id, stale_after=stale_after())
    if not db.start_evaluation_run(run_id, owner):
        raise RunRefused(f"evaluation run {run_id} is {run.status.value}: only a pending run is executed")
    stop = threading.Event()
    beating = threading.Thread(
        target=_beat, args=(db, run_id, owner, beat_s or heartbeat_seconds(), stop), daemon=True
    )
    beating.start()
    judge = _Judge(db, store, run, home)
    pending = [r for r in db.evaluation_records(run_id) if r.status == "pending"]

    def one(record) -> None:
        if stop.is_set() or db.get_evaluation_run(run_id).status != "running":  # cancelled meanwhile
            stop.set()
            return
        if not db.claim_evaluation_record(record.id):
            return
        try:
            got = judge.record(record, stop)
        except Exception as e:  # noqa: BLE001 - the record fails with why; the run goes on
            db.finish_evaluation_record(record.id, "failed", error=f"{type(e).__name__}: {e}")
        else:
            failed = got.output.failed_keys
            db.finish_evaluation_record(
                record.id,
                "failed" if failed else "completed",
                error=failed_error(got.output) if failed else None,
                input=got.input.model_dump(mode="json"),
                output=got.output.model_dump(mode="json"),
                evaluator=got.evaluator.model_dump(mode="json"),
                model_seconds=got.output.model_seconds,
            )
        on_record(db.get_evaluation_record(record.id))

    try:
        with ThreadPoolExecutor(workers or concurrency(), thread_name_prefix="evaluation") as pool:
            list(pool.map(one, pending))
    finally:
        stop.set()
        beating.join()
    return db.finish_evaluation_run(run_id, owner)


def failed_error(output) -> str:
    """A failed record's error: how many questions got no answer after the resend, and why."""
    parts = [f"{k}: {output.answers[k].error or 'no answer'}" for k in output.failed_keys]
    return f"{len(parts)} of {len(output.questions)} questions got no answer: " + "; ".join(parts)


def _beat(db, run_id: str, owner: str, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            if not db.evaluation_heartbeat(run_id, owner):  # cancelled, or taken as interrupted
                stop.set()
                return
        except Exception:  # noqa: BLE001, S112 - a busy database: the next beat tries again
            continue


class _Judge:
    """What one record needs: its task result, figures, knowledge and model."""

    def __init__(self, db, store, run, home: Path | None) -> None:
        self.db, self.store, self.run, self.home = db, store, run, home
        self._knowledge: dict[str, tuple[Any, list]] = {}
        self._choice = None
        self._lock = threading.Lock()

    def knowledge(self, task: str) -> tuple[Any, list]:
        """(reference, examples) of a task: the draft's, the published directory's, or none."""
        with self._lock:
            if task not in self._knowledge:
                self._knowledge[task] = self._read(task)
            return self._knowledge[task]

    def _read(self, task: str) -> tuple[Any, list]:
        draft_id = self.run.settings.get("knowledge_draft_id")
        if draft_id:
            from qsolve.evaluation.drafts import DraftStore

            drafts = DraftStore(self.home)
            drafts.for_task(draft_id, task)
            read = drafts.knowledge_of(draft_id)
            return read.reference, read.examples
        folder = knowledge_root() / task
        if not (folder / "task.md").is_file():
            return None, []
        from qsolve.evaluation.examples import examples_of
        from qsolve.evaluation.knowledge import read_task

        return read_task(folder).reference, examples_of(folder)

    def choice(self):
        """The run's model as the run chose it: its ``chosen_by`` and ``fallback`` are the run's settings
        (how the run's request resolved an omitted model), not those of naming its id again."""
        from qsolve.evaluation.models import ModelChoice, choose_model

        settings = self.run.settings
        spec = choose_model(self.run.model).model
        return ModelChoice(
            model=spec,
            chosen_by=settings.get("chosen_by") or "explicit",
            fallback=bool(settings.get("fallback")),
        )

    def record(self, record, stop: threading.Event):
        from qsolve.evaluation.classical_judge import FitEvidence
        from qsolve.evaluation.evaluate import evaluate

        result = self.store.get(record.task_result_id)
        figures = [self.store.figure_bytes(f) for f in result.figures]
        for ref, data in zip(result.figures, figures, strict=True):
            if len(data) <= MAX_SNAPSHOT_BYTES:  # a larger one is read from its task result, by hash
                self.db.keep_asset(ref.sha256, ref.blob or "", len(data), ref.media_type)
        reference, examples = self.knowledge(result.task)
        settings = self.run.settings
        with self._lock:
            if self._choice is None:
                self._choice = self.choice()
        return evaluate(
            reference,
            result.evidence(),
            figures,
            model=self._choice,
            with_examples=bool(settings.get("with_examples")),
            examples=examples,
            fit_evidence=FitEvidence.from_result(result),
            question=settings.get("question"),
            # a run stored before max_figures was a setting showed up to four
            max_figures=int(settings.get("max_figures") or 4),
            cancel=stop,
            # a failed record, or one cancelled or interrupted after its answers arrived: only what
            # did not arrive is asked again
            previous=record.output or None,
        )


def summary(db, run_id: str) -> dict[str, Any]:
    """A run and its records' counts, the questions that got no answer, its wall time (the time its
    records were being judged, over every execution: a retry adds to it) and the completed records'
    model time."""
    run = db.get_evaluation_run(run_id, stale_after=stale_after(reading=True))
    records = db.evaluation_records(run_id)
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    wall = wall_seconds(records)
    if wall is None and run.finished_at and run.started_at:
        wall = (run.finished_at - run.started_at).total_seconds()
    done = [r for r in records if r.status == "completed"]
    failed_questions = sum(len((r.output or {}).get("failed_keys") or []) for r in records)
    return {
        "id": run.id,
        "trigger": run.trigger,
        "status": run.status.value,
        "model": run.model,
        "selection": run.selection,
        "settings": run.settings,
        "records": len(records),
        "counts": counts,
        "skipped": run.skipped,
        "failed_records": counts.get("failed", 0),
        "failed_questions": failed_questions,
        "wall_seconds": wall,
        "model_seconds": sum(r.model_seconds or 0.0 for r in done),
        "created_at": run.created_at.isoformat(),
    }


def wall_seconds(records) -> float | None:
    """The length of the union of the intervals the records were judged in: each record's last
    [started, finished], and every earlier exchange its output keeps (a retried record's first
    answers), so the time before a retry is counted and the pause between them is not."""
    from datetime import datetime, timedelta

    spans: list[tuple[datetime, datetime]] = []
    for r in records:
        if r.started_at and r.finished_at:
            spans.append((r.started_at, r.finished_at))
        for earlier in (r.output or {}).get("earlier_spans") or []:  # before a retry (storage keeps them)
            try:
                spans.append((datetime.fromisoformat(earlier[0]), datetime.fromisoformat(earlier[1])))
            except (IndexError, TypeError, ValueError):
                continue
        for e in (r.output or {}).get("exchanges") or []:
            try:
                start = datetime.fromisoformat(e["started_at"])
                spans.append((start, start + timedelta(seconds=float(e.get("duration_seconds") or 0))))
            except (KeyError, TypeError, ValueError):
                continue
    if not spans:
        return None
    total, end = 0.0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            total += (stop - start).total_seconds()
            end = stop
        elif stop > end:
            total += (stop - end).total_seconds()
            end = stop
    return total
