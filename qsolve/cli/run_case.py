"""``qsolve run DIR --case NAME --target T [--yes] [--json]``: one case of a workflow, outside
validation, on any target, a ``provider:<name>`` (issue 12, item 11) or an ``ibm:<device>`` (issue 13)
among them.

The case is priced first (its ``estimate()``, asked in the sandbox's workflow process, and the
platform's price table); on a provider each job's own estimate, or that its cost is unknown, is shown
before it is sent, and a job that is not free is sent only with ``--yes`` or a yes when asked (IBM states
no price: every job on ``ibm:`` is of unknown cost, and needs it). The
methods run in the workflow process; compiling, sending, sealing and scoring are platform code. The
result is printed like ``qsolve test``'s cases, with the receipts of the provider jobs. Nothing is
recorded in the track record.

Ctrl-C (or SIGTERM) while a provider job is waited on stops the run: the job is not cancelled, and stays
recorded; the line printed names its record and ``qsolve providers follow RECORD``, then every job sent
(exit 130, or 143). A provider whose ``describe`` fails, or breaks the protocol, ends the run with one
line naming the provider and the rule.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

SPENDS = "on a provider:<name> or ibm:<device> target this can spend money on the provider's account"
INTERRUPTED, TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM, as a shell says them


def run_case_here(root: Path, case_name: str, target: str, *, yes: bool, as_json: bool) -> int:
    from rich.console import Console

    from qsolve.judging.results import CaseResult
    from qsolve.validation.jobs import Limits, held_from_admission, run_case_job
    from qsolve.workflow.folder import load_workflow

    err = Console(stderr=True, highlight=False)
    workflow = load_workflow(root)
    matches = [i for i, c in enumerate(workflow.cases.cases) if c.name == case_name]
    if not matches:
        names = ", ".join(c.name for c in workflow.cases.cases)
        raise LookupError(f"no case named {case_name!r} in {root}/benchmarks/cases.yaml (cases: {names})")
    index = matches[0]
    if len(matches) > 1:
        err.print(f"[yellow]{len(matches)} cases are named {case_name}: running cases[{index}][/yellow]")
    backend = None
    if target.startswith("provider:"):
        from qsolve.providers.errors import ProviderError
        from qsolve.targets import use
        from qsolve.targets.provider import ProviderBackend
        from qsolve_pipeline.storage.sessions import provider_session

        try:
            session = provider_session(target.split(":", 1)[1], yes=yes)
        except ProviderError as e:  # a transport that cannot be opened: one line naming the provider
            print(f"qsolve run: {e}", file=sys.stderr)
            return 1
        try:
            backend = ProviderBackend(session)  # its describe: an error, or an answer breaking a rule
        except ProviderError as e:
            session.close()
            print(f"qsolve run: {e}: nothing was sent", file=sys.stderr)
            return 1
        use(backend)
    elif target.startswith("ibm:"):
        from qsolve.providers.jobs import Confirmation
        from qsolve.targets import use
        from qsolve.targets.ibm import IbmUnavailable
        from qsolve_pipeline.storage.sessions import ask_on_terminal, ibm_backend

        try:
            backend = ibm_backend(target, confirmation=Confirmation(yes=yes, ask=ask_on_terminal()))
        except IbmUnavailable as e:
            print(f"qsolve run: {e}", file=sys.stderr)
            return 1
        use(backend)

    def approve(event: dict[str, Any]) -> bool:
        said, error = event.get("estimate") or {}, event.get("error")
        if error:
            err.print(f"price: unknown ({error})")
        elif "circuits" in said and "shots" in said:
            err.print(f"price: the workflow estimates {said['circuits']} circuits and {said['shots']} shots")
        else:
            err.print("price: the workflow gives no estimate")
        if target.startswith("ibm:"):
            err.print(f"IBM Quantum states no price: each job's cost on {target} is unknown, and needs --yes")
        elif backend is not None:
            err.print(
                f"each job on {target} is priced by the provider before it is sent; a job that is not free "
                "is sent only with --yes or a yes, and spends your money on the provider's account"
            )
        return True

    from qsolve.providers.jobs import SIGTERM, Interrupted, how_stopped

    limits = Limits.of(workflow.manifest.resources)
    previous = _stop_on_sigterm()
    try:
        # a provider job's wait is the job's time, counted once it is admitted (issue 35)
        with held_from_admission(backend):
            outcome = run_case_job(root, index, target, limits, approve, on_target=True)
    except KeyboardInterrupt as e:  # a job waited on stays recorded, never cancelled; each sent is named
        how = how_stopped(e)
        said = str(e) if isinstance(e, Interrupted) else f"interrupted ({how}): {case_name} did not finish"
        print(f"qsolve run: {said}", file=sys.stderr)
        if backend is not None:
            for line in _jobs_text(_jobs_sent(backend), target):
                print(line, file=sys.stderr)
        return TERMINATED if how == SIGTERM else INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if backend is not None:
            backend.close()
    receipts = [job.path for job in backend.sealed] if backend is not None else []
    for why in dict.fromkeys(backend.stopped if backend is not None else []):
        err.print(f"[yellow]{why}[/yellow]", soft_wrap=True)
    jobs = _jobs_sent(backend)
    if outcome.report is None:
        print(f"qsolve run: {case_name} on {target} did not run: {outcome.died}", file=sys.stderr)
        for line in _jobs_text(jobs, target):  # whatever failed, a job sent is named
            print(line, file=sys.stderr)
        return 1
    result = CaseResult.model_validate(outcome.report["result"])
    if as_json:
        print(json.dumps({"case": result.summary(), "receipts": receipts, "jobs": jobs}, indent=2))
    else:
        from qsolve.cli.report_view import print_cases

        console = Console(width=None if sys.stdout.isatty() else 140)
        print_cases([result], console)
        if backend is not None:
            label = _label(
                backend.description if target.startswith("ibm:") else backend.session.description()
            )
            if receipts:
                print(f"{len(receipts)} provider jobs sealed from {target}, their counts {label}")
            for line in _jobs_text(jobs, target):
                print(line)
            for path in receipts:
                print(f"  receipt: {path}")
            if receipts:
                print(f"  each checks with: qsolve verify {receipts[0]}")
    return 0 if result.passed else 1


def _stop_on_sigterm() -> Any:
    """SIGTERM taken as Ctrl-C is (a ``KeyboardInterrupt`` of ``SIGTERM``), so that a job waited on is
    named the same way; the handler it replaced, or None off the main thread (none is set there)."""
    from qsolve.providers.jobs import SIGTERM

    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(SIGTERM)

    return signal.signal(signal.SIGTERM, stop)


def _jobs_sent(backend: Any) -> list[dict[str, Any]]:
    """Each provider job whose ``submit`` went out, from its record in the state database: ``record``,
    ``job`` (the provider's id), ``status`` and ``error``, in the order they were recorded."""
    if backend is None:
        return []
    records = getattr(backend, "records", None)
    if records is None:
        records = getattr(getattr(backend, "session", None), "records", [])
    if not records:
        return []
    from qsolve_pipeline.storage.state import connect

    out = []
    with connect() as db:
        for record in records:
            job = db.get_provider_job(record)
            if job.status != "recorded":  # recorded and never sent: nothing went out
                out.append({"record": job.id, "job": job.job, "status": job.status, "error": job.error})
    return out


def _jobs_text(jobs: list[dict[str, Any]], target: str) -> list[str]:
    """What the person is told of the jobs sent: each one's record and state; "not sent" only when no
    submit went out (a job sent may be billed, however it ended)."""
    if not jobs:
        return [f"no provider job was sent to {target}"]
    lines = [f"{len(jobs)} provider job(s) sent to {target}:"]
    from qsolve.providers.errors import job_shown

    for job in jobs:
        given = job_shown(job["job"])
        line = f"  job record {job['record']} (the provider's id {given}): {job['status']}"
        if job["status"] != "done":
            line += f"; qsolve providers follow {job['record']}"
        lines.append(line)
    return lines


def _label(described: dict[str, Any]) -> str:
    """How the counts are labelled wherever they are shown: ``simulated`` unless silicon measured them."""
    if described.get("provenance") == "silicon":
        return "measured by the provider's processor (its word, sealed)"
    return f"simulated (the provider's device is a {described.get('provenance')}), not measured"
