"""Create the hardware runs' concurrency limits, one per device family, where they are missing:
``python -m deployments.limits`` (``prefect.yaml``'s pull step and the serve script run it; a flow run
that finds one missing creates it too). A limit that exists keeps the size the operator gave it."""

from __future__ import annotations

from flows.hardware import LIMITS, ensure_limits

if __name__ == "__main__":
    made = ensure_limits(print)
    for name in LIMITS:
        if name not in made:
            print(f"the concurrency limit {name} exists")
