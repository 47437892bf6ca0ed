"""Calibration runs: tasks on qubits of a fake chip, healthy or with a known fault, as task results.

:func:`run_task` runs one task on one qubit: the experiment's plan (changed by the fault, if any), its
circuits on the qubit's noisy simulator with a seed derived from the run's identity, the analysis and
the figure. The same chip, task, qubit, fault and seed give the same counts, fit and figure bytes.

:func:`calibrate` runs several tasks on several qubits. With ``faults``, each qubit also gets at most one
injected fault per task, after its healthy result, in rotation: for a task with faults f1..fk, the qubit
at position p of the list gets f_j when ``p % (k + 1) == j`` (j from 1), and none when it is 0. So the
latest result of a task per qubit (what a bulk evaluation selects) mixes healthy and faulty ones, and
the day's results hold both for every faulted qubit.

:func:`write_examples` regenerates the figures of the knowledge examples (``task-knowledge/<Task>/
examples/*.md``) from the run each names in its frontmatter's ``source``, and their labels.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from qsolve.calibration.experiments import INTEGER_OUTPUTS, TASKS, experiment, open_qubit, run
from qsolve.calibration.faults import SUCCESS, fault, faults_of, healthy_status, known_answer
from qsolve.calibration.task_result import Interval, Settings, TaskResult, figure_ref

EXAMPLE_TYPE = "qdash.calibration-example"
EXAMPLE_PROFILE = "qdash-calibration/v1"


@dataclass(frozen=True)
class Calibrated:
    """A task result and the bytes of its figures, by SHA-256 (stored as blobs when recorded)."""

    result: TaskResult
    figures: dict[str, bytes]


@dataclass(frozen=True)
class _Taken:
    """A held-apart case as the result records it: its name and its true status."""

    name: str
    true_status: str | None


@dataclass(frozen=True)
class RunSpec:
    task: str
    qubit: int
    fault: str | None = None


def use_device_cache(home: Path) -> None:
    """Read fake devices from ``home``'s cache (``cache/devices/``), as every platform process does."""
    from qsolve.targets import devices

    devices.use_cache(Path(home).resolve() / "cache" / "devices")


def today() -> str:
    return date.today().isoformat()


def run_seed(seed: int, chip: str, task: str, qubit: int, fault_name: str | None) -> int:
    """The simulator's seed of one run, from the calibration's seed and the run's identity."""
    text = f"{seed}|{chip}|{task}|{qubit}|{fault_name or ''}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big") & 0x7FFF_FFFF


_clock = threading.Lock()
_last = datetime.min.replace(tzinfo=UTC)


def _now() -> datetime:
    """Now, and strictly after the previous call: results of one process keep their order."""
    global _last
    with _clock:
        _last = max(datetime.now(UTC), _last + timedelta(microseconds=1))
        return _last


def run_task(
    chip: str,
    task: str,
    qubit: int,
    *,
    fault_name: str | None = None,
    day: str | None = None,
    seed: int = 0,
    case=None,
) -> Calibrated:
    """One task on one qubit; with ``fault_name``, that fault injected and its true status recorded;
    with ``case``, a held-apart case (:class:`~.held_apart.Case`) taken and its true status."""
    exp = experiment(task)
    q = open_qubit(chip, qubit)
    plan = exp.plan(q)
    injected = fault(fault_name, task) if fault_name else None
    if injected is not None:
        plan = injected.apply(task, plan, q)
    if case is not None:
        plan = case.apply(task, plan, q)
        injected = _Taken(case.name, case.true_status(task, plan, q))
        fault_name = case.name
    simulator_seed = run_seed(seed, chip, task, qubit, fault_name)
    p1 = run(exp.circuits(plan, q), q, plan, simulator_seed)
    analysis = exp.analyse(plan, q, p1)
    png = exp.figure(plan, q, analysis)
    figure = figure_ref(f"{task}_{q.qid}.png", png)
    result = TaskResult(
        task=task,
        chip=chip,
        qid=q.qid,
        day=day or today(),
        status=analysis.status,
        message=analysis.message,
        figures=[figure],
        sweep=plan.sweep,
        settings=Settings(shots=plan.shots, interval=Interval(value=plan.interval, unit="us")),
        outputs=analysis.outputs,
        fit=analysis.summary,
        true_status=injected.true_status if injected else healthy_status(task, q),
        fault=injected.name if injected else None,
        seed=seed,
        created_at=_now(),
    )
    return Calibrated(result, {figure.sha256: png})


def plan_runs(tasks: Sequence[str], qubits: Sequence[int], *, faults: bool = False) -> list[RunSpec]:
    """Every task on every qubit, healthy; with ``faults``, each qubit's fault (in rotation) after it."""
    out = []
    for task in tasks:
        experiment(task)  # an unknown task is refused before anything runs
        applicable = faults_of(task)
        for position, qubit in enumerate(qubits):
            out.append(RunSpec(task, qubit))
            j = position % (len(applicable) + 1)
            if faults and j:
                out.append(RunSpec(task, qubit, applicable[j - 1].name))
    return out


def calibrate(
    chip: str,
    tasks: Sequence[str],
    qubits: Sequence[int],
    *,
    faults: bool = False,
    day: str | None = None,
    seed: int = 0,
    each: Callable[[Calibrated], None] | None = None,
) -> list[Calibrated]:
    """Run the plan of :func:`plan_runs`; ``each`` is called with every result as soon as it is made."""
    day = day or today()
    out = []
    for spec in plan_runs(tasks, qubits, faults=faults):
        done = run_task(chip, spec.task, spec.qubit, fault_name=spec.fault, day=day, seed=seed)
        if each is not None:
            each(done)
        out.append(done)
    return out


def parse_qubits(text: str) -> list[int]:
    """``0-3,7`` -> ``[0, 1, 2, 3, 7]`` (in the order given, each once)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-")
        try:
            span = range(int(lo), int(hi) + 1) if sep else [int(lo)]
        except ValueError:
            raise ValueError(f"qubits {text!r}: {part!r} is not a number or a range like 0-7") from None
        if not span or int(lo) < 0:
            raise ValueError(f"qubits {text!r}: {part!r} is an empty range")
        out.extend(q for q in span if q not in out)
    return out


def parse_tasks(text: str | None) -> list[str]:
    if not text:
        return list(TASKS)
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}: the tasks are {', '.join(TASKS)}")
    return list(dict.fromkeys(tasks))


# the knowledge examples' figures and labels


def suggested_range(chip: str, task: str, qubit: int) -> str | None:
    """The healthy sweep's range as the status question asks for it: ``(0, 250) [us]``."""
    exp = experiment(task)
    sweep = exp.plan(open_qubit(chip, qubit)).sweep
    if sweep is None:
        return None
    return f"({sweep.start:g}, {sweep.stop:g}) [{sweep.unit}]"


def example_labels(done: Calibrated) -> dict:
    """The labels of an example made from ``done``: its true status, the outcome a correct judge gives,
    the corrective range, and the parameters a reader can extract (a healthy run's outputs)."""
    r = done.result
    answer = known_answer(r.task, r.true_status) or {}
    qubit = int(r.qid[1:])
    parameters = {}
    if r.true_status == SUCCESS:
        parameters = {
            name: int(out.value) if name in INTEGER_OUTPUTS else float(f"{out.value:.3g}")
            for name, out in r.outputs.items()
        }
    return {
        "outcome": answer.get("outcome"),
        "status": r.true_status,
        "suggested_range": suggested_range(r.chip, r.task, qubit),
        "parameters": parameters,
    }


def read_frontmatter(text: str) -> tuple[dict, str]:
    """YAML frontmatter between ``---`` lines, and the body after it."""
    import yaml

    if not text.startswith("---\n"):
        return {}, text
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        return {}, text
    return (yaml.safe_load(head) or {}), body


def write_frontmatter(front: dict, body: str) -> str:
    import yaml

    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{head}---\n{body}"


def example_files(root: Path) -> Iterable[Path]:
    yield from sorted(Path(root).glob("*/examples/*.md"))


def write_examples(root: Path, *, check: bool = False) -> list[str]:
    """Regenerate each example's figure and labels from its ``source`` (``chip``, ``qubit``, ``fault``,
    ``seed``). With ``check``, write nothing: list the examples whose figure or labels would change."""
    changed = []
    for md in example_files(root):
        front, body = read_frontmatter(md.read_text(encoding="utf-8"))
        source = front.get("source")
        if not isinstance(source, dict):
            continue
        task = front.get("task") or md.parent.parent.name
        done = run_task(
            source["chip"],
            task,
            int(source["qubit"]),
            fault_name=source.get("fault"),
            day="2000-01-01",
            seed=int(source.get("seed", 0)),
        )
        png = next(iter(done.figures.values()))
        figure = md.parent / (front.get("figure") or md.with_suffix(".png").name)
        labels = example_labels(done) | {"figure": figure.name}
        head = {"type": EXAMPLE_TYPE, "profile": EXAMPLE_PROFILE, "task": task, "title": front.get("title")}
        updated = {k: v for k, v in head.items() if v is not None} | labels
        updated |= {k: v for k, v in front.items() if k not in updated}  # source, and anything else, last
        text = write_frontmatter(updated, body)
        stale = not figure.exists() or figure.read_bytes() != png or md.read_text(encoding="utf-8") != text
        if stale:
            changed.append(str(md.relative_to(root)))
            if not check:
                figure.write_bytes(png)
                md.write_text(text, encoding="utf-8")
    return changed
