"""The automation that ends a silent flow run (issue 15, item 12):
``python -m qsolve_pipeline.deployments.automations``.

A deployment's flow run whose process is killed stays Running for ever unless something notices. Its
process sends a heartbeat event every ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (30, set for every
deployment in ``prefect.yaml`` and by ``deployments/serve.py``); this automation, Prefect's own
"detect zombie flows" recipe, marks a run Crashed once no heartbeat and no final state followed its
last heartbeat for three periods. ``serve.py`` creates it at start; after ``prefect deploy --all``, run
this file once against the server. Creating it again changes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from qsolve_pipeline.flows.heartbeats import HEARTBEAT_S, heartbeats

__all__ = ["HEARTBEAT_S", "NAME", "SILENT_AFTER", "crash_silent_runs", "heartbeats"]

NAME = "qsolve: crash flow runs that stopped sending heartbeats"
SILENT_AFTER = timedelta(seconds=3 * HEARTBEAT_S)


def crash_silent_runs():
    """The automation, created on the server unless one of that name is already there."""
    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    try:
        return Automation.read(name=NAME)
    except ValueError:  # Automation.read raises it for a name it does not find
        pass
    return Automation(
        name=NAME,
        description="A flow run whose process died (killed, out of memory, a lost machine) is Crashed "
        "within about a minute and a half instead of Running for ever.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={
                "prefect.flow-run.heartbeat",
                "prefect.flow-run.Completed",
                "prefect.flow-run.Failed",
                "prefect.flow-run.Cancelled",
                "prefect.flow-run.Crashed",
            },
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=SILENT_AFTER,
        ),
        actions=[
            ChangeFlowRunState(
                state=StateType.CRASHED,
                message=f"no heartbeat for {SILENT_AFTER.total_seconds():.0f} s: its process stopped",
            )
        ],
    ).create()


if __name__ == "__main__":
    print(f"automation {crash_silent_runs().name!r} is on the server")
