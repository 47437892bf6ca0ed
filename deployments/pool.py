"""The process work pool qsolve's deployments run on, its job variables carrying qsolve's settings:
``python -m qsolve_pipeline.deployments.pool [--pool qsolve] [--home DIR] [--database-url URL] [--storage-url
URL]`` (docs/deploy.md).

The pool is created where missing, else its base job template is updated: Prefect's own process
template, with the ``env`` variable's default holding ``QSOLVE_HOME``, ``QSOLVE_DATABASE_URL`` and
``QSOLVE_STORAGE_URL`` (each from its option, else this environment; one that is neither is left out).
Every flow run of the pool gets them, whichever machine's worker runs it; a deployment's own ``env``
(``prefect.yaml``: the heartbeat) is laid over them, not in their place. What is set is printed with
the database URL's password hidden; keep the password out of it where you can (``~/.pgpass`` or
``PGPASSWORD`` on each worker, which the process worker passes on).

Every work queue a worker may poll is made where missing (issue 36, item 1): ``default``, ``ibm``, and
``provider-NAME`` for each provider the state database knows (a recorded holder, a host that registered
it) or this machine's ``providers.yaml`` lists; a worker polling a queue its pool lacks takes nothing at
all (``qsolve worker`` also makes the queues it polls).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

SETTINGS = ("QSOLVE_HOME", "QSOLVE_DATABASE_URL", "QSOLVE_STORAGE_URL")
DEFAULT_POOL = "qsolve"


def job_template(settings: dict[str, str]) -> dict[str, Any]:
    """Prefect's process base job template, ``env`` defaulting to ``settings``."""
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    template["variables"]["properties"]["env"]["default"] = dict(settings)
    return template


def settings_from(given: dict[str, str | None]) -> dict[str, str]:
    """Each of SETTINGS from ``given``, else this environment; those that are neither left out."""
    return {name: value for name in SETTINGS if (value := given.get(name) or os.environ.get(name))}


def ensure_pool(name: str, settings: dict[str, str]) -> str:
    """Create the pool with these settings, or update its template; ``created`` or ``updated``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
    from prefect.exceptions import ObjectNotFound

    template = job_template(settings)
    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))
            return "created"
        client.update_work_pool(name, WorkPoolUpdate(base_job_template=template))
        return "updated"


def shown(settings: dict[str, str]) -> str:
    import sqlalchemy as sa

    said = dict(settings)
    if url := said.get("QSOLVE_DATABASE_URL"):
        said["QSOLVE_DATABASE_URL"] = sa.make_url(url).render_as_string(hide_password=True)
    return ", ".join(f"{k}={v}" for k, v in said.items()) or "none of " + ", ".join(SETTINGS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qsolve_pipeline.deployments.pool", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--pool", default=DEFAULT_POOL, help=f"the work pool (default {DEFAULT_POOL})")
    parser.add_argument("--home", help="QSOLVE_HOME on every worker (default: this environment's)")
    parser.add_argument("--database-url", help="QSOLVE_DATABASE_URL: the state database (PostgreSQL)")
    parser.add_argument("--storage-url", help="QSOLVE_STORAGE_URL: object storage, s3://BUCKET/PREFIX")
    args = parser.parse_args(argv)
    settings = settings_from(
        {
            "QSOLVE_HOME": args.home,
            "QSOLVE_DATABASE_URL": args.database_url,
            "QSOLVE_STORAGE_URL": args.storage_url,
        }
    )
    done = ensure_pool(args.pool, settings)
    print(f"work pool {args.pool} {done}: its flow runs get {shown(settings)}")
    from qsolve_pipeline.flows.queues import ensure_queues, known_queues

    queues, problem = known_queues(settings.get("QSOLVE_DATABASE_URL"))
    if problem:
        print(f"work pool {args.pool}: {problem}: only the queues known here are made")
    made = ensure_queues(args.pool, queues)
    print(f"work pool {args.pool}: queues {', '.join(queues)} ({len(made)} made now)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
