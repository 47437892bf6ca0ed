"""Leases: what keeps a run, and a history stage, alive while the process that owns it lives.

A :class:`Lease` is one process's token (host, pid, a random part). Everything created under it (its
runs, the history stage it claimed) carries the token and an expiry; a daemon thread renews them all,
in one transaction, every third of the lease's time (``QSOLVE_LEASE_SECONDS``, 30 s by default), but
only while the holder's work makes progress (:mod:`qsolve.runtime.heartbeat`). When the process dies, freezes
or is stuck, nothing renews them, and they lapse within that time.

Every expiry is written and judged by the state database's clock (``_rows.clock``), never a host's: a
host whose clock runs ahead does not end another's live run, nor one behind lose its own.

A run whose lease lapsed, or that is past its own deadline whatever its lease says, is ended
``platform_error`` by :meth:`Leases.end_lapsed_runs` (the maintenance pass, and the next history stage
of its version) and its credit hold is released in the same transaction. The UPDATE that ends it
repeats the lapse condition, so a lease renewed at that moment keeps its run: the database decides.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import Self

import sqlalchemy as sa

from qsolve.home import owner_token
from qsolve.runtime.heartbeat import beating
from qsolve_pipeline.storage.state._ledger import release_hold
from qsolve_pipeline.storage.state._models import FailureReason, RunStatus
from qsolve_pipeline.storage.state._rows import RUNS, clock, run_of
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import history_stages, runs

LEASE_VARIABLE = "QSOLVE_LEASE_SECONDS"
DEFAULT_LEASE_S = 30.0
LEASE_RANGE = (0.5, 60.0)  # a lease lapses within a minute of its owner's death
#: a run's deadline is its time limit and this much: the platform's own work before and after the job
DEADLINE_MARGIN = timedelta(minutes=2)
UNENDED = (RunStatus.CREATED.value, RunStatus.RUNNING.value)

log = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a lease lasts unrenewed: ``QSOLVE_LEASE_SECONDS``, else 30 s."""
    text = os.environ.get(LEASE_VARIABLE)
    if not text:
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{LEASE_VARIABLE}={text!r}: not a number of seconds") from None
    low, high = LEASE_RANGE
    if not low <= value <= high:
        raise ValueError(f"{LEASE_VARIABLE}={text!r}: a lease lasts {low:g} to {high:g} seconds")
    return value


class Leases(Store):
    """Renewing leases, and ending the runs whose lease lapsed."""

    def renew_leases(self, owner: str, seconds: float) -> set[int]:
        """Renew every unended run and unfinished history stage of ``owner``; the ids of the stages it
        still holds (one that another owner took after its lease lapsed is not among them)."""
        with self._write() as connection:
            until = clock(connection) + timedelta(seconds=seconds)
            connection.execute(
                runs.update()
                .where(runs.c.owner == owner, runs.c.status.in_(UNENDED))
                .values(lease_expires_at=until)
            )
            connection.execute(
                history_stages.update()
                .where(history_stages.c.owner == owner, history_stages.c.finished_at.is_(None))
                .values(lease_expires_at=until)
            )
            held = sa.select(history_stages.c.id).where(
                history_stages.c.owner == owner, history_stages.c.finished_at.is_(None)
            )
            return set(connection.execute(held).scalars())

    def end_lapsed_runs(
        self, unleased_after: timedelta, *, version_id: int | None = None, stage_id: int | None = None
    ) -> list[str]:
        """End ``platform_error`` every unended run whose lease lapsed, that is past its deadline, or
        that has no lease and was created more than ``unleased_after`` ago; release their holds.
        ``version_id`` or ``stage_id`` narrows it to one version's runs, or one stage's. The ids ended."""
        query = RUNS.where(runs.c.status.in_(UNENDED))
        if version_id is not None:
            query = query.where(runs.c.version_id == version_id)
        if stage_id is not None:
            query = query.where(runs.c.stage_id == stage_id)
        with self._read() as connection:
            at = clock(connection)
            lapsed = query.where(_lapsed(at, unleased_after)).order_by(runs.c.created_at)
            candidates = [run_of(row) for row in connection.execute(lapsed)]
        ended = []
        for run in candidates:
            if self._end(
                run.id, partial(_lapsed, unleased_after=unleased_after), _why(run, unleased_after, at)
            ):
                ended.append(run.id)
        return ended

    def end_runs_of_stage(self, stage_id: int, owner: str) -> list[str]:
        """End every unended run of a history stage that ``owner`` took over: the stage's lease had
        lapsed, so whoever created them stopped."""
        query = RUNS.where(runs.c.stage_id == stage_id, runs.c.status.in_(UNENDED), runs.c.owner != owner)
        with self._read() as connection:
            candidates = [run_of(row) for row in connection.execute(query)]
        detail = (
            "its history stage's owner stopped (the stage's lease lapsed and another process took it "
            "over); the case runs again there"
        )
        return [r.id for r in candidates if self._end(r.id, lambda _: runs.c.owner != owner, detail)]

    def end_stopped_runs(self, owner: str | None, detail: str, *, run_id: str | None = None) -> list[str]:
        """A platform stop: end ``platform_error`` (never recorded) every unended run of ``owner``, or
        only ``run_id``, and release their holds. The ids ended."""
        query = sa.select(runs.c.id).where(runs.c.status.in_(UNENDED))
        if owner is not None:
            query = query.where(runs.c.owner == owner)
        if run_id is not None:
            query = query.where(runs.c.id == run_id)
        with self._read() as connection:
            candidates = list(connection.execute(query).scalars())
        return [r for r in candidates if self._end(r, lambda _: sa.true(), detail)]

    def let_go(self, owner: str) -> None:
        """A stopped holder gives up its history stages at once (their lease ends now), so the next
        ``qsolve history`` resumes them without waiting for the lease to lapse."""
        with self._write() as connection:
            connection.execute(
                history_stages.update()
                .where(history_stages.c.owner == owner, history_stages.c.finished_at.is_(None))
                .values(lease_expires_at=clock(connection) - timedelta(seconds=1))
            )

    def _end(self, run_id: str, condition: Callable[[datetime], sa.ColumnElement[bool]], detail: str) -> bool:
        """In one transaction: the run ended ``platform_error`` if still unended and ``condition`` (of
        the database's time now) holds, and its open hold released."""
        with self._write() as connection:
            at = clock(connection)
            moved = connection.execute(
                runs.update()
                .where(runs.c.id == run_id, runs.c.status.in_(UNENDED), condition(at))
                .values(
                    status=RunStatus.FAILED.value,
                    reason=FailureReason.PLATFORM_ERROR.value,
                    detail=detail,
                    finished_at=at,
                )
            )
            if moved.rowcount != 1:
                return False
            release_hold(connection, run_id)
            return True


def _lapsed(at: datetime, unleased_after: timedelta) -> sa.ColumnElement[bool]:
    return sa.or_(
        runs.c.lease_expires_at < at,
        runs.c.deadline_at < at,
        sa.and_(runs.c.lease_expires_at.is_(None), runs.c.created_at < at - unleased_after),
    )


def _why(run, unleased_after: timedelta, at: datetime) -> str:
    if run.deadline_at is not None and run.deadline_at < at:
        return (
            f"past its time limit: still {run.status.value} at its deadline "
            f"{run.deadline_at:%Y-%m-%d %H:%M:%S} UTC, whatever its lease said"
        )
    if run.lease_expires_at is not None:
        return (
            f"its owner stopped: its lease lapsed at {run.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC "
            "unrenewed (the process running it died, or lost the state database)"
        )
    return (
        f"abandoned: still {run.status.value} more than {unleased_after.total_seconds():.0f} s after it "
        "was created, longer than any run may take (the worker running it stopped)"
    )


class Lease:
    """This process's token, renewed in the state database while its holder makes progress.

    The holder's work calls :func:`qsolve.runtime.heartbeat.beat` as it goes (entering the lease sends its
    beats here, to the tasks it submits too); a daemon thread renews the token's runs and stages every
    third of the lease's time, but only if a beat came in the last two thirds of it. A holder frozen
    (SIGSTOP) or stuck (waiting on a lock) beats no more: its lease lapses within 5/3 of the lease's
    time (50 s by default), and another process takes over.

    ``lost`` is set when a history stage the token held was taken by another owner (its lease had
    lapsed): the holder should start no more cases of it.
    """

    def __init__(self, db: Leases, seconds: float | None = None) -> None:
        self.db = db
        self.seconds = seconds if seconds is not None else lease_seconds()
        self.owner = owner_token()
        self.lost = threading.Event()
        self.stages: set[int] = set()
        self._last_beat = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="qsolve-lease", daemon=True)
        self._beats = contextlib.ExitStack()

    def __enter__(self) -> Self:
        self._beats.enter_context(beating(self.beat))
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._beats.close()

    def close(self) -> None:
        """Renew no more (a stopped holder, before it gives its stages up)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def beat(self) -> None:
        """The holder made progress: the lease is renewed at its next turns."""
        self._last_beat = time.monotonic()

    def hold(self, stage_id: int) -> None:
        """Watch a stage this token claimed."""
        self.stages.add(stage_id)

    def release(self, stage_id: int) -> None:
        """Stop watching a stage (before finishing it)."""
        self.stages.discard(stage_id)

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            idle = time.monotonic() - self._last_beat
            if idle > self.seconds * 2 / 3:
                log.debug("%s made no progress in %.1f s: not renewed", self.owner, idle)
                continue
            try:
                held = self.db.renew_leases(self.owner, self.seconds)
            except Exception as e:  # noqa: BLE001 - a busy or lost database: try again next time
                log.warning("could not renew the lease of %s: %s", self.owner, e)
                continue
            if self.stages - held:
                self.lost.set()
