"""The heartbeats a deployment's flow runs send (issue 15, item 12): one every
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds, so that the automation of ``deployments.automations`` marks
a run whose process died Crashed."""

from __future__ import annotations

import os

HEARTBEAT_S = 30


def heartbeats() -> None:
    """Flow runs of this process's deployments send heartbeats (unless the operator set another period)."""
    os.environ.setdefault("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", str(HEARTBEAT_S))
