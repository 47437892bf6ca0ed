"""Create the hardware runs' concurrency limits, one per device family, and the evaluation runs' limit
(``evaluation``, ``EVALUATION_RUNS`` slots, 2 by default), where they are missing, never resizing one
that exists: ``python -m qsolve_pipeline.deployments.limits``, or as ``prefect.yaml``'s build step
(``prefect deploy`` calls :func:`create_limits`); the serve script does it too, and a flow run that finds
one missing creates it before it runs anything."""

from __future__ import annotations

from qsolve_pipeline.flows.evaluation import LIMIT as EVALUATION_LIMIT
from qsolve_pipeline.flows.evaluation import ensure_limit as ensure_evaluation_limit
from qsolve_pipeline.flows.hardware import LIMITS, ensure_limits


def create_limits() -> dict[str, list[str]]:
    """The build step: the limits made (a Prefect step returns a dict of outputs)."""
    made = ensure_limits(print)
    if ensure_evaluation_limit(print):
        made.append(EVALUATION_LIMIT)
    for name in [*LIMITS, EVALUATION_LIMIT]:
        if name not in made:
            print(f"the concurrency limit {name} exists")
    return {"created": made}


if __name__ == "__main__":
    create_limits()
