"""Which host's workers hold which provider (issue 26, item 3; docs/deploy.md "Hardware runs go where
the provider is"). A provider's credential never leaves the machine that holds it: a worker started with
``qsolve worker`` registers here the work queues of the providers its machine holds (``provider-NAME``,
``ibm``; :mod:`qsolve.targets.routing`), and serves them. The routing itself is Prefect's (a flow run
sent to a work queue); this table lets a run that waits say whether any host holds its provider.

A worker renews its rows while it lives (``qsolve worker``, every minute); a host not seen for
:data:`STALE_AFTER` (its worker stopped, its machine gone) is no longer counted as holding anything, so a
run that waits is not told a dead worker will take it. ``seen_at`` is the database's clock, written and
judged alike."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import sqlalchemy as sa

from qsolve_pipeline.storage.state._rows import clock, upsert
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import provider_holders

#: a holder not seen for this long is not counted (a worker renews every ``worker.RENEW_S``, 60 s)
STALE_AFTER = timedelta(minutes=10)


class ProviderHolders(Store):
    def register_holder(self, host: str, queues: Iterable[str]) -> list[str]:
        """``host`` holds exactly these queues' providers now (its earlier rows for others are removed)."""
        queues = sorted(set(queues))
        with self._write() as connection:
            at = clock(connection)
            connection.execute(
                provider_holders.delete().where(
                    provider_holders.c.host == host, provider_holders.c.queue.not_in(queues or [""])
                )
            )
            for queue in queues:
                upsert(
                    connection,
                    provider_holders,
                    ("host", "queue"),
                    {"host": host, "queue": queue, "seen_at": at},
                )
        return queues

    def holders(self, queue: str) -> list[tuple[str, datetime]]:
        """The hosts registered as holding ``queue``'s provider, with when each last registered."""
        query = (
            sa.select(provider_holders.c.host, provider_holders.c.seen_at)
            .where(provider_holders.c.queue == queue)
            .order_by(provider_holders.c.host)
        )
        with self._read() as connection:
            return [(row.host, row.seen_at) for row in connection.execute(query)]

    def holder_queues(self) -> list[str]:
        """Every queue any host registered (live or not), sorted: the queues the work pool needs."""
        query = sa.select(provider_holders.c.queue).distinct().order_by(provider_holders.c.queue)
        with self._read() as connection:
            return list(connection.execute(query).scalars())

    def live_holders(
        self, queue: str, stale_after: timedelta = STALE_AFTER
    ) -> tuple[list[tuple[str, datetime]], list[tuple[str, datetime]]]:
        """The hosts holding ``queue``'s provider, as ``(live, stale)``: those seen within
        ``stale_after`` (by the database's clock), and those not seen since, each with when it last was."""
        query = (
            sa.select(provider_holders.c.host, provider_holders.c.seen_at)
            .where(provider_holders.c.queue == queue)
            .order_by(provider_holders.c.host)
        )
        with self._read() as connection:
            cutoff = clock(connection) - stale_after
            rows = [(row.host, row.seen_at) for row in connection.execute(query)]
        return [r for r in rows if r[1] >= cutoff], [r for r in rows if r[1] < cutoff]
