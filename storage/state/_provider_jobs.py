"""Provider jobs that outlast their client (quantum-provider-protocol §5.7).

A job is recorded before its ``submit`` is sent, with the program and the description it was compiled
against; ``submitting`` is set in its own transaction just before the message goes; the provider's id
is stored as soon as the answer gives it. A record left ``submitting`` is a submit that did not
complete: the provider may have taken (and billed) it, so it is sent again only on the person's word.
Each move is a conditional UPDATE on the job's status, so two followers never both finish a job.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from qsolve_pipeline.storage.state._errors import NotFound, RunStateError
from qsolve_pipeline.storage.state._models import ProviderJob, ProviderJobStatus
from qsolve_pipeline.storage.state._rows import now, row_of
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import provider_jobs

S = ProviderJobStatus


class ProviderJobs(Store):
    """The record of every provider job this platform sent or is about to send."""

    def record_provider_job(
        self,
        provider: str,
        program: Mapping[str, Any],
        description: Mapping[str, Any],
        shots: int,
        *,
        seed: int | None = None,
        context: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> ProviderJob:
        job_id = uuid.uuid4().hex
        with self._write() as connection:
            connection.execute(
                provider_jobs.insert().values(
                    id=job_id,
                    provider=provider,
                    run_id=run_id,
                    status=S.RECORDED.value,
                    shots=shots,
                    seed=seed,
                    program=dict(program),
                    description=dict(description),
                    context=dict(context or {}),
                    created_at=now(),
                )
            )
            return _job(_row(connection, job_id))

    def get_provider_job(self, job_id: str) -> ProviderJob:
        with self._read() as connection:
            return _job(_row(connection, job_id))

    def list_provider_jobs(self, provider: str | None = None) -> list[ProviderJob]:
        query = sa.select(provider_jobs).order_by(provider_jobs.c.created_at, provider_jobs.c.id)
        if provider is not None:
            query = query.where(provider_jobs.c.provider == provider)
        with self._read() as connection:
            return [_job(r) for r in connection.execute(query)]

    def run_receipts(self, run_id: str) -> list[str]:
        """The receipts (blob digests) of a run's sealed device jobs, in the order they were made."""
        query = (
            sa.select(provider_jobs.c.receipt)
            .where(provider_jobs.c.run_id == run_id, provider_jobs.c.receipt.is_not(None))
            .order_by(provider_jobs.c.created_at, provider_jobs.c.id)
        )
        with self._read() as connection:
            return list(connection.execute(query).scalars())

    def receipt_jobs(self, digests: list[str]) -> dict[str, ProviderJob]:
        """Receipt (blob digest) -> the job the platform recorded sealing it, for each of ``digests`` it
        recorded: the run it was sent for, its shots and the counts its answer gave."""
        if not digests:
            return {}
        query = sa.select(provider_jobs).where(provider_jobs.c.receipt.in_(sorted(set(digests))))
        with self._read() as connection:
            return {row.receipt: _job(row) for row in connection.execute(query)}

    def provider_job_submitting(self, job_id: str) -> ProviderJob:
        """``recorded`` to ``submitting``: the submit is about to be sent."""
        return self._move(job_id, {S.RECORDED}, status=S.SUBMITTING.value)

    def provider_job_submitted(self, job_id: str, job: str) -> ProviderJob:
        """The provider's id, stored as soon as its answer gives it."""
        return self._move(job_id, {S.SUBMITTING}, status=S.SUBMITTED.value, job=job, submitted_at=now())

    def provider_job_resubmitting(self, job_id: str) -> ProviderJob:
        """A submit that did not complete, sent again on the person's word: ``submitting`` once more."""
        return self._move(job_id, {S.SUBMITTING}, status=S.SUBMITTING.value)

    def provider_job_polled(self, job_id: str, count: int = 1) -> ProviderJob:
        """``count`` more polls of its status: one write for a whole wait, never one a poll."""
        with self._write() as connection:
            connection.execute(
                provider_jobs.update()
                .where(provider_jobs.c.id == job_id)
                .values(polls=provider_jobs.c.polls + int(count))
            )
            return _job(_row(connection, job_id))

    def provider_job_done(self, job_id: str, answer: Mapping[str, Any], receipt: str) -> ProviderJob:
        """Its counts read, checked and sealed: the answer and the sealed job's blob digest."""
        return self._move(
            job_id,
            {S.SUBMITTED},
            status=S.DONE.value,
            answer=dict(answer),
            receipt=receipt,
            finished_at=now(),
        )

    def provider_job_ended(self, job_id: str, status: ProviderJobStatus | str, error: str) -> ProviderJob:
        """``failed`` or ``cancelled``, with why; nothing sealed."""
        status = S(status)
        if status not in (S.FAILED, S.CANCELLED):
            raise ValueError(f"a provider job ends failed or cancelled here, not {status}")
        return self._move(
            job_id,
            {S.RECORDED, S.SUBMITTING, S.SUBMITTED},
            status=status.value,
            error=error,
            finished_at=now(),
        )

    def _move(self, job_id: str, allowed: set[ProviderJobStatus], **values: Any) -> ProviderJob:
        with self._write() as connection:
            moved = connection.execute(
                provider_jobs.update()
                .where(provider_jobs.c.id == job_id, provider_jobs.c.status.in_([s.value for s in allowed]))
                .values(**values)
            )
            row = _row(connection, job_id)
            if moved.rowcount != 1:
                raise RunStateError(
                    f"provider job {job_id} is {row.status}: it cannot become {values.get('status')}",
                    run_id=row.run_id or "",
                    status=row.status,
                )
            return _job(row)


def _row(connection: sa.Connection, job_id: str) -> sa.Row:
    row = connection.execute(sa.select(provider_jobs).where(provider_jobs.c.id == job_id)).first()
    if row is None:
        raise NotFound(f"no provider job {job_id}", kind="provider job", key=job_id)
    return row


def _job(row: sa.Row) -> ProviderJob:
    return row_of(ProviderJob, row, status=S(row.status))
