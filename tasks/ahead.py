"""The submission's stages computed ahead of its flow (issue 39, item 1): ``qsolve submit`` runs lint,
the checks and the gates' sandbox job while Prefect's temporary server starts, and the flow's stages then
record what was computed (the same results, the same task runs, states and artifacts as when they
compute it), each taken once: nothing runs twice. No Prefect here: the command computes before it loads
Prefect.

What is kept is keyed by the stage and the folder's resolved path; a stage finding nothing kept computes
as before (a deployment's run, the web pages' submissions, a folder the command did not compute ahead).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qsolve.sandbox.process import JobProcess

_kept: dict[tuple[str, str], Any] = {}


def _key(stage: str, folder: str | Path) -> tuple[str, str]:
    return stage, str(Path(folder).resolve())


def keep(stage: str, folder: str | Path, value: Any) -> None:
    _kept[_key(stage, folder)] = value


def take(stage: str, folder: str | Path) -> Any | None:
    """What was computed ahead for ``stage`` of ``folder``, once (None when nothing was)."""
    return _kept.pop(_key(stage, folder), None)


def forget() -> None:
    """Drop whatever no stage took (a flow that stopped before it, a command that failed)."""
    _kept.clear()


def progress_line(event: dict) -> tuple[int, str] | None:
    """The gates stage's log line for a sandbox job's event, with its level (None: not logged)."""
    if event.get("event") != "result":
        return None
    level = logging.INFO if event["passed"] else logging.WARNING
    return level, f"case {event['index'] + 1}/{event['total']} {event['name']}: {event['why']}"


@dataclass
class GatesAhead:
    """The gates' report computed ahead, and the lines its task run would have logged meanwhile."""

    report: Any
    digest: str  # of the snapshot the checks read, which the gates ran
    lines: list[tuple[int, str]] = field(default_factory=list)

    def ran_on(self, checks: Any) -> bool:
        """Whether these gates ran on what ``checks`` read (the same snapshot of the folder)."""
        snapshot = getattr(checks, "snapshot", None)
        return checks.ok and snapshot is not None and snapshot.digest == self.digest


def compute(
    folder: Path, gates: bool, process: JobProcess | None, stop: Callable[[], bool] = lambda: False
) -> None:
    """Lint, the checks, then (``gates``: the version is not published already) the gates' sandbox job in
    ``process``, as the submission flow runs them, each kept for its stage; none after a stage that
    fails, nor once ``stop()`` says the flow will not run (its server did not start)."""
    from qsolve.lint import lint

    report = lint(folder)
    keep("lint", folder, report)
    if not report.ok or stop():
        return
    from qsolve.validation.checks import check_submission

    checks = check_submission(folder)
    keep("checks", folder, checks)
    if not checks.ok or not gates or stop():
        return
    from qsolve.validation.jobs import confinement_required
    from qsolve.validation.pipeline import run_gates

    lines: list[tuple[int, str]] = []

    def progress(event: dict) -> None:
        if (line := progress_line(event)) is not None:
            lines.append(line)

    kept = run_gates(
        folder, checks, on_event=progress, process=process, require_confinement=confinement_required(),
        tell=lambda line: lines.append((logging.WARNING, line)),
    )  # fmt: skip
    keep("gates", folder, GatesAhead(kept, checks.snapshot.digest, lines))
