"""Create the hardware runs' concurrency limits, one per device family, where they are missing, never
resizing one that exists: ``python -m deployments.limits``, or as ``prefect.yaml``'s build step
(``prefect deploy`` calls :func:`create_limits`); the serve script does it too, and a flow run that finds
one missing creates it before it runs anything."""

from __future__ import annotations

from flows.hardware import LIMITS, ensure_limits


def create_limits() -> dict[str, list[str]]:
    """The build step: the limits made (a Prefect step returns a dict of outputs)."""
    made = ensure_limits(print)
    for name in LIMITS:
        if name not in made:
            print(f"the concurrency limit {name} exists")
    return {"created": made}


if __name__ == "__main__":
    create_limits()
