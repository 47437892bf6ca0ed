"""Hardware runs on Prefect (issue 13, items 2-3, 8): the ``hardware`` flow runs every confirmed quote of
a batch (or one quote) as an ordinary platform run, thin over ``tasks.hardware.run_quote``. Quotes are
asked for with ``qsolve quote`` and confirmed with ``qsolve confirm``; an unconfirmed or lapsed quote
never runs. The quote table is published as an artifact.
"""

from __future__ import annotations

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from storage.state import connect
from tasks.hardware import HardwareOutcome, run_quote


@task(name="hardware run", cache_policy=NO_CACHE, task_run_name="hardware run {quote_id}")
def hardware_run(quote_id: str) -> HardwareOutcome:
    with connect() as db:
        outcome = run_quote(db, quote_id)
    get_run_logger().info(outcome.line())
    return outcome


@flow(name="hardware", log_prints=True)
def hardware_flow(batch: str | None = None, quote: str | None = None) -> list[HardwareOutcome]:
    """Run the confirmed quotes of ``batch`` (or the one ``quote``), one at a time."""
    with connect() as db:
        db.expire_quotes()
        ids = [quote] if quote else [q.id for q in db.quotes_to_run(batch)]
    outcomes = [hardware_run(i) for i in ids]
    rows = "\n".join(
        f"| `{o.quote}` | {o.case} | {o.target} | {o.status} | {o.reason or ''} | {len(o.receipts)} |"
        for o in outcomes
    )
    create_markdown_artifact(
        key="hardware-runs",
        markdown="| quote | case | target | status | reason | receipts |\n|---|---|---|---|---|---|\n" + rows,
        description="Confirmed hardware quotes run by this flow run",
    )
    return outcomes
