"""Serve every deployment from one process: ``python -m qsolve_pipeline.deployments.serve``.

Needs a Prefect server (``prefect server start``, with ``PREFECT_API_URL`` pointing at it): schedules
and cancellation need one. Then trigger a deployment from the UI or with
``prefect deployment run 'submission/submission' --param folder=workflows/max-cut --param account=dev1``
(the account it publishes for). Its flow runs
send heartbeats, and the automation of ``deployments/automations.py`` (created here) marks one whose
process died Crashed.
"""

from __future__ import annotations

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
from prefect import serve

from qsolve_pipeline.deployments.automations import crash_silent_runs, heartbeats
from qsolve_pipeline.flows.calibration import calibration_flow
from qsolve_pipeline.flows.evaluation import ensure_limit as ensure_evaluation_limit
from qsolve_pipeline.flows.evaluation import evaluation_flow
from qsolve_pipeline.flows.hardware import ensure_limits, hardware_flow, quote_flow
from qsolve_pipeline.flows.history import history_flow
from qsolve_pipeline.flows.maintenance import maintenance_flow
from qsolve_pipeline.flows.submission import submission_flow


def deployments() -> list:
    return [
        submission_flow.to_deployment(
            name="submission", description="Lint, checks, gates, publication and history of a workflow folder"
        ),
        history_flow.to_deployment(
            name="history", description="Run a published version's cases again as track-record runs"
        ),
        quote_flow.to_deployment(
            name="quote",
            description="Price a workflow's hardware cases, wait for each quote's confirmation, run it; it "
            "can spend the developer's money (credits, a provider's own price), within what each "
            "confirmation authorised",
        ),
        hardware_flow.to_deployment(
            name="hardware",
            description="Run the confirmed hardware quotes of a batch, paid by the developer; it can spend "
            "the developer's money (credits, a provider's own price), within what each confirmation "
            "authorised",
        ),
        evaluation_flow.to_deployment(
            name="evaluation", description="Judge calibration figures: a task and a chip, a day, or ids"
        ),
        calibration_flow.to_deployment(
            name="calibration", description="Calibration experiments on a fake device, with known answers"
        ),
        maintenance_flow.to_deployment(
            name="maintenance",
            description="Abandoned runs ended, stale holds released, ended runs filed, compaction",
            interval=60,
        ),
    ]


if __name__ == "__main__":
    heartbeats()  # each flow run this process serves sends a heartbeat every 30 s ...
    crash_silent_runs()  # ... and one that stops is Crashed, not Running for ever
    ensure_limits(print)  # hardware runs take turns per device family
    ensure_evaluation_limit(print)  # and evaluation runs, EVALUATION_RUNS at a time
    serve(*deployments())
