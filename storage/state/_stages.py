"""History stages: exactly one at a time per version, claimed in the database.

A version's history stage is a row of ``history_stages`` per round: round 1 after publication, one more
for each run ``again``. ``(version_id, round)`` is unique, so of two processes starting a round at once
one inserts it and the other is told it is in progress. A round is held by one owner at a time (a
:class:`~storage.state._leases.Lease` token) and passes to another only by a conditional UPDATE once the
holder's lease has lapsed, or, once finished, when some case of it has no recordable run.

Inside a round each case holds one place: a partial unique index over ``(stage_id, case_index)`` for
runs that are live or ended in a result the track record keeps. A second run of a case while the first
lives is refused by the database (``CaseTaken``), whatever the processes believe; a run ended for a
platform reason frees its place, so the case can run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import StageLost
from qsolve_pipeline.storage.state._leases import Leases
from qsolve_pipeline.storage.state._models import Claim, ClaimStatus, Run, Stage, Version
from qsolve_pipeline.storage.state._rows import RUNS, clock, row_of, run_of
from qsolve_pipeline.storage.state._tables import SLOT_TAKEN, history_stages, runs


class HistoryStages(Leases):
    """Claiming, holding and finishing a version's history stage."""

    def claim_history_stage(
        self,
        version: Version,
        owner: str,
        cases: Sequence[tuple[str, str]],
        *,
        seconds: float,
        again: bool = False,
    ) -> Claim:
        """Claim the version's history stage for ``owner``, its lease lasting ``seconds``.

        ``cases`` are the version's cases in order, ``(name, target)``. A new round (the first, or
        ``again``) runs them all. The current round is resumed when its owner's lease lapsed (its unended
        runs are ended) or when, finished, some case has no recordable run: only those cases run. A
        round held by a live owner is in progress; a finished one with every case recorded, recorded.
        """
        try:
            with self._write() as connection:
                latest = _latest(connection, version.id, lock=True)
                at = clock(connection)  # the database's: a lease is written and judged by one clock
                until = at + timedelta(seconds=seconds)
                busy = latest is not None and latest.finished_at is None and latest.lease_expires_at > at
                if busy and latest.owner != owner:
                    return Claim(ClaimStatus.IN_PROGRESS, _stage(latest))
                if latest is None or again:
                    if latest is not None and latest.finished_at is None:  # lapsed: closed for good
                        _update(connection, latest.id, finished_at=at)
                    stage_id = connection.execute(
                        history_stages.insert().values(
                            version_id=version.id,
                            round=1 if latest is None else latest.round + 1,
                            owner=owner,
                            lease_expires_at=until,
                            started_at=at,
                        )
                    ).inserted_primary_key[0]
                    stage = _stage(_by_id(connection, stage_id))
                    return Claim(ClaimStatus.CLAIMED, stage, tuple(range(len(cases))))
                if latest.finished_at is not None and not _missing(connection, latest.id, cases):
                    return Claim(ClaimStatus.RECORDED, _stage(latest))
                guard = [history_stages.c.owner == latest.owner]
                if latest.finished_at is None:
                    guard.append(history_stages.c.lease_expires_at == latest.lease_expires_at)
                else:
                    guard.append(history_stages.c.finished_at.is_not(None))
                if not _update(
                    connection, latest.id, *guard, owner=owner, lease_expires_at=until, finished_at=None
                ):
                    return Claim(ClaimStatus.IN_PROGRESS, _stage(_by_id(connection, latest.id)))
                stage = _stage(_by_id(connection, latest.id))
        except IntegrityError:  # another process started the round at the same moment
            with self._read() as connection:
                return Claim(ClaimStatus.IN_PROGRESS, _stage(_latest(connection, version.id)))
        ended = self.end_runs_of_stage(stage.id, owner)
        with self._read() as connection:
            todo = _missing(connection, stage.id, cases)
        return Claim(ClaimStatus.RESUMED, stage, tuple(todo), tuple(ended))

    def history_stage(self, version: Version) -> Stage | None:
        """The version's latest round, or ``None`` before its first."""
        with self._read() as connection:
            row = _latest(connection, version.id)
        return None if row is None else _stage(row)

    def stage_runs(self, stage_id: int) -> list[Run]:
        """A round's runs, oldest first."""
        query = RUNS.where(runs.c.stage_id == stage_id).order_by(runs.c.created_at, runs.c.id)
        with self._read() as connection:
            return [run_of(row) for row in connection.execute(query)]

    def finish_history_stage(self, stage_id: int, owner: str) -> Stage:
        """Mark the round finished; StageLost when ``owner`` no longer holds it."""
        with self._write() as connection:
            if not _update(
                connection,
                stage_id,
                history_stages.c.owner == owner,
                history_stages.c.finished_at.is_(None),
                finished_at=clock(connection),
            ):
                raise StageLost(
                    f"history stage {stage_id} is no longer held by {owner}: its lease lapsed and "
                    "another process took it over",
                    stage_id=stage_id,
                    owner=owner,
                )
            return _stage(_by_id(connection, stage_id))


def _latest(connection: sa.Connection, version_id: int, *, lock: bool = False) -> sa.Row | None:
    query = (
        sa.select(history_stages)
        .where(history_stages.c.version_id == version_id)
        .order_by(history_stages.c.round.desc())
        .limit(1)
    )
    return connection.execute(query.with_for_update() if lock else query).first()


def _by_id(connection: sa.Connection, stage_id: int) -> sa.Row:
    return connection.execute(sa.select(history_stages).where(history_stages.c.id == stage_id)).one()


def _update(connection: sa.Connection, stage_id: int, *guard: sa.ColumnElement[bool], **values) -> bool:
    done = connection.execute(
        history_stages.update().where(history_stages.c.id == stage_id, *guard).values(**values)
    )
    return done.rowcount == 1


def _missing(connection: sa.Connection, stage_id: int, cases: Sequence[tuple[str, str]]) -> list[int]:
    """Positions of the cases with no live or recordable run in the round. Runs filed before cases
    had positions (schema 0001) count for the case of their name and target."""
    taken = connection.execute(
        sa.select(runs.c.case_index, runs.c.case_name, runs.c.target).where(
            runs.c.stage_id == stage_id, sa.text(SLOT_TAKEN)
        )
    ).all()
    positions = {index for index, _, _ in taken if index is not None}
    named = {(name, target) for index, name, target in taken if index is None}
    return [i for i, case in enumerate(cases) if i not in positions and tuple(case) not in named]


def _stage(row: sa.Row) -> Stage:
    return row_of(Stage, row)
