"""Cancelling recorded provider jobs (quantum-provider-protocol §5.6, §5.7; issue 21, item 8).

``qsolve providers cancel JOB`` and a cancelled hardware run (:func:`cancel_run`) pass the cancel on to
the provider of each job its device may still run, from any process, through the record in the state
database:

- a job recorded and never sent is marked ``cancelled`` (its submit, if a process is about to send it,
  then finds it so and sends nothing);
- a job whose submit did not complete has no id to cancel: it is said so, and where to look;
- a job the provider took is cancelled with §5.6's ``cancel``, unless the description it was compiled
  against says ``cancels: false``: then nothing is sent, and the person is told it runs on (and may be
  billed) and how to read it later. A provider's answer is kept: ``cancelled`` and ``failed`` end the
  record so, and ``done`` leaves it for ``qsolve providers follow`` to seal;
- an IBM Quantum job (the ``ibm:`` target's records) is cancelled through IBM's own client.

A job that has ended (done, failed, cancelled) is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENDED = ("done", "failed", "cancelled")
IN_FLIGHT = ("recorded", "submitting", "submitted")


@dataclass(frozen=True)
class Cancel:
    """What became of one job's cancel: ``stopped`` when the device no longer runs it (cancelled, or it
    had ended), and the line that says so."""

    record: str
    stopped: bool
    line: str


def cancel_job(book: Any, record: str, *, home: Path | None = None) -> Cancel:
    """Pass a cancel on for the recorded job ``record`` (a ``ProviderJobs`` book: the state database)."""
    from qsolve.errors import RecordStateError

    job = book.get_provider_job(record)
    from qsolve.providers.errors import job_shown

    who = f"provider job {record} ({job.provider}, its id {job_shown(job.job)})"
    if job.status in ENDED:
        return Cancel(record, True, f"{who}: already {job.status}: nothing to cancel")
    try:
        if job.status == "recorded":
            book.provider_job_ended(record, "cancelled", "cancelled before it was sent")
            return Cancel(record, True, f"{who}: cancelled before it was sent: nothing was sent")
        if job.status == "submitting":
            return Cancel(
                record,
                False,
                f"{who}: its submit did not complete, so there is no id to cancel; if {job.provider} took "
                "it, it runs on there and may be billed: cancel it at the provider",
            )
        if _is_ibm(job):
            return _cancel_ibm(book, job, who, home)
        return _cancel_provider(book, job, who, home)
    except RecordStateError:  # another process ended it meanwhile
        return Cancel(record, True, f"{who}: now {book.get_provider_job(record).status}: nothing to cancel")


def cancel_run(book: Any, run_id: str, *, home: Path | None = None) -> list[Cancel]:
    """The cancel passed on to every job of the run ``run_id`` that its device may still run."""
    jobs = [j for j in book.list_provider_jobs() if j.run_id == run_id and j.status in IN_FLIGHT]
    return [cancel_job(book, j.id, home=home) for j in jobs]


def _cancel_provider(book: Any, job: Any, who: str, home: Path | None) -> Cancel:
    from qsolve.errors import shown
    from qsolve.providers.connect import open_client
    from qsolve.providers.errors import ProviderError, job_shown
    from qsolve.providers.jobs import other_device

    if job.description.get("cancels") is False:
        return Cancel(
            job.id,
            False,
            f"{who}: {job.provider} cannot cancel a job (its describe says cancels: false): nothing was "
            f"sent; the job runs on and may be billed; `qsolve providers follow {job.id}` reads it",
        )
    try:
        client, _ = open_client(job.provider, home)
    except (OSError, ValueError) as e:  # the provider is no longer in providers.yaml, say
        return Cancel(job.id, False, f"{who}: not cancelled: {str(e).splitlines()[0]}")
    try:
        if why := other_device(job.provider, client.describe().answer, job.description):
            return Cancel(job.id, False, f"{who}: not cancelled: {why}; nothing was sent")
        answer = client.cancel(job.job)
    except ProviderError as e:
        return Cancel(job.id, False, f"{who}: not cancelled: {e}")
    finally:
        client.close()
    if answer.status == "cancelled":
        book.provider_job_ended(job.id, "cancelled", f"cancelled at {job.provider} (§5.6)")
        return Cancel(job.id, True, f"{who}: cancelled")
    if answer.status == "failed":
        reason = f": {answer.reason}" if answer.reason else ""
        why = shown(f"provider {job.provider}: job {job_shown(job.job)} failed{reason}")
        book.provider_job_ended(job.id, "failed", why)
        return Cancel(job.id, True, shown(f"{who}: it had failed ({answer.reason or 'no reason given'})"))
    return Cancel(
        job.id,
        True,
        f"{who}: it had finished; `qsolve providers follow {job.id}` reads and seals its counts",
    )


def _is_ibm(job: Any) -> bool:
    from qsolve.targets.ibm.names import KIND, PROVIDER

    return job.provider == PROVIDER and job.context.get("kind") == KIND


def _cancel_ibm(book: Any, job: Any, who: str, home: Path | None) -> Cancel:
    from qsolve.errors import QsolveError
    from qsolve.targets.ibm import cancel

    try:
        done = cancel(job.id, book=book, home=home)
    except QsolveError as e:
        return Cancel(job.id, False, f"{who}: not cancelled: {e}")
    return Cancel(job.id, True, f"{who}: " + ("cancelled at IBM Quantum" if done else "it had already ended"))
