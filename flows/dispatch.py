"""Prefect's dispatch for the front doors (the command line, the web pages): a Prefect server to run a
flow on, and the flows they run, each called with its parameters and its result returned (issue 27).

Importing this module imports no Prefect: :func:`use_server` sets Prefect's settings up first (telemetry
off, which server), then each function imports its flow.
"""

from __future__ import annotations

from typing import Any


def use_server() -> None:
    """Prefect for a command that runs a flow (flows/server.py): telemetry off (an offline
    machine), and the server of ``PREFECT_API_URL`` if it answers, else the one ``qsolve server start``
    keeps, else a temporary one started now with a time-out a busy machine meets (one progress line).
    A server that does not answer is a :class:`~flows.server.ServerError`: one line, exit 2."""
    from flows.server import use_prefect

    use_prefect()


def run_evaluation(**parameters: Any) -> dict[str, Any] | BaseException:
    """The evaluation flow (flows/evaluation.py) run here on ``parameters``; its result, or what it
    raised."""
    use_server()
    from flows.evaluation import evaluation_flow

    state = evaluation_flow(**parameters, return_state=True)
    return state.result(raise_on_failure=False, _sync=True)


def run_hardware(quote_id: str) -> Any:
    """The hardware flow (flows/hardware.py) run here on a confirmed quote: its outcomes, or what it
    raised."""
    use_server()
    from flows.hardware import hardware_flow

    state = hardware_flow(quote=quote_id, return_state=True)
    return state.result(raise_on_failure=False, _sync=True)


def start_confirmed(quote_id: str) -> str:
    """How a confirmed quote's run starts: on the Prefect server of ``PREFECT_API_URL``, at once (the
    quote flow run waiting for it resumed, or the hardware deployment run); else what to run."""
    import os

    if os.environ.get("PREFECT_API_URL"):
        from flows.hardware import start_confirmed

        try:
            return start_confirmed(quote_id)
        except Exception as e:  # noqa: BLE001 - the quote stays confirmed: it can be run later
            return f"confirmed, but not started on the Prefect server ({type(e).__name__}: {e})"
    return (
        f"run it: qsolve confirm {quote_id} --yes (with a Prefect server in PREFECT_API_URL, the quote flow "
        "run waiting for it is resumed, or the hardware/hardware deployment run)"
    )
