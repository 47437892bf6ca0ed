"""The work queues of qsolve's process work pool, made where missing (issue 36, item 1; docs/deploy.md).

A Prefect worker started on a queue its pool lacks is answered "not found" on every poll and takes
nothing from any of its queues, saying nothing at the default level. So every queue a worker may poll
exists before it polls: ``python -m qsolve_pipeline.deployments.pool`` makes ``default``, ``ibm`` and the
queue of each provider the state database knows (``provider-NAME``); ``qsolve worker`` makes the queues it is
about to poll (and makes again, saying so, one deleted while it runs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from qsolve.targets.routing import IBM_QUEUE, PROVIDER_QUEUE_PREFIX

DEFAULT_QUEUE = "default"
#: the scheduled maintenance passes' queue: served by flows.maintenance_runner (one long-lived process
#: beside each ``qsolve worker``, which makes it where missing), never polled by Prefect's worker
MAINTENANCE_QUEUE = "maintenance"


def pool_queues(known_providers: Iterable[str] = (), held: Iterable[str] = ()) -> list[str]:
    """Every queue a worker of the pool may poll: ``default``, ``ibm``, each known provider's
    ``provider-NAME``, and the queues ``held`` by any host; sorted, ``default`` first."""
    queues = {IBM_QUEUE, *held, *(PROVIDER_QUEUE_PREFIX + name for name in known_providers)}
    queues.discard(DEFAULT_QUEUE)
    return [DEFAULT_QUEUE, *sorted(queues)]


def known_queues(database_url: str | None = None) -> tuple[list[str], str | None]:
    """The queues of every provider the state database at ``database_url`` knows (each provider with a
    recorded holder, each queue a host registered; none read without a URL) and this machine's own
    (``providers.yaml``, an IBM key); with one line saying what was not read, or None."""
    from qsolve.providers.registry import RegistryError
    from qsolve.targets.routing import held_queues

    providers: set[str] = set()
    held: set[str] = set()
    problem = None
    try:
        held.update(held_queues())
    except RegistryError as e:
        problem = str(e)
    if database_url:
        try:
            from qsolve_pipeline.storage.state import connect

            with connect(database_url) as db:
                providers.update(db.provider_holdings())
                held.update(db.holder_queues())
        except Exception as e:  # noqa: BLE001 - the database does not answer: the queues known here
            problem = f"the state database was not read ({type(e).__name__}: {e})"
    return pool_queues(providers, held), problem


def ensure_queues(pool: str, queues: Iterable[str], log: Callable[[str], None] | None = None) -> list[str]:
    """Create each of ``queues`` that ``pool`` lacks (the pool itself, a process pool with Prefect's own
    template, where it is missing); the queues created, each said to ``log``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    made = []
    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(pool)
        except ObjectNotFound:
            from prefect.workers.process import ProcessWorker

            template = ProcessWorker.get_default_base_job_template()
            with contextlib.suppress(ObjectAlreadyExists):  # made meanwhile by another worker
                client.create_work_pool(WorkPoolCreate(name=pool, type="process", base_job_template=template))
            if log is not None:
                log(f"created the work pool {pool} (process): it was missing")
        existing = {q.name for q in client.read_work_queues(work_pool_name=pool)}
        for queue in dict.fromkeys(queues):
            if queue in existing:
                continue
            try:
                client.create_work_queue(name=queue, work_pool_name=pool)
            except ObjectAlreadyExists:  # made meanwhile by another worker
                continue
            made.append(queue)
            if log is not None:
                log(f"created the work queue {queue} of pool {pool}: it was missing")
    return made


def missing_queues(pool: str, queues: Iterable[str]) -> list[str]:
    """Which of ``queues`` the pool lacks (all of them when the pool itself is missing)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            existing = {q.name for q in client.read_work_queues(work_pool_name=pool)}
        except ObjectNotFound:
            existing = set()
    return [q for q in dict.fromkeys(queues) if q not in existing]
