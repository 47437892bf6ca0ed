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
    from qsolve_pipeline.flows.server import use_prefect

    use_prefect()


def begin_server(announce: bool = True):
    """:func:`use_server` for a command with work that needs no server: a temporary server is started
    and this returns at once; its ``wait()`` waits for it (one line if it does not start), its
    ``failed()`` says meanwhile whether it already has not (flows/server.py's ``begin_prefect``;
    ``announce=False``: its line said only once the command waits for it)."""
    from qsolve_pipeline.flows.server import begin_prefect

    return begin_prefect(announce=announce)


def compute_ahead(root: Any, *, gates: bool, process: Any, stop: Any) -> None:
    """The submission's lint, checks and (``gates``) gates' sandbox job in ``process``, computed before its
    flow runs, for its stages to record (tasks/ahead.py); none after ``stop()`` says true."""
    from qsolve_pipeline.tasks.ahead import compute

    compute(root, gates, process, stop)


def forget_ahead() -> None:
    """Drop what was computed ahead and no stage took."""
    from qsolve_pipeline.tasks.ahead import forget

    forget()


def load_engine() -> None:
    """What a flow's first call imports (Prefect's flow and task engines, the encoder of a flow run's
    parameters), loaded by a command while its server starts rather than after."""
    import contextlib

    import prefect.flow_engine  # noqa: F401
    import prefect.task_engine  # noqa: F401

    with contextlib.suppress(ImportError):
        import fastapi.encoders  # noqa: F401 - Prefect's serialisation of a flow run's parameters


def run_evaluation(**parameters: Any) -> dict[str, Any] | BaseException:
    """The evaluation flow (flows/evaluation.py) run here on ``parameters``; the run's summary (a run that
    ended failed or cancelled ends its flow run so, its summary kept with the ending), or what it
    raised."""
    server = begin_server()  # a temporary server starts; the flow loads meanwhile
    from qsolve_pipeline.flows.endings import outcome
    from qsolve_pipeline.flows.evaluation import evaluation_flow

    load_engine()
    server.wait()
    state = evaluation_flow(**parameters, return_state=True)
    return outcome(state.result(raise_on_failure=False, _sync=True))


def run_hardware(quote_id: str) -> Any:
    """The hardware flow (flows/hardware.py) run here on a confirmed quote: its outcomes, or what it
    raised."""
    server = begin_server()  # a temporary server starts; the flow loads meanwhile
    from qsolve_pipeline.flows.hardware import hardware_flow

    load_engine()
    server.wait()
    state = hardware_flow(quote=quote_id, return_state=True)
    return state.result(raise_on_failure=False, _sync=True)


def start_confirmed(quote_id: str) -> str:
    """How a confirmed quote's run starts: on the Prefect server of ``PREFECT_API_URL``, at once (the
    quote flow run waiting for it resumed, or the hardware deployment run); else what to run."""
    import os

    if os.environ.get("PREFECT_API_URL"):
        from qsolve_pipeline.flows.hardware import start_confirmed

        try:
            return start_confirmed(quote_id)
        except Exception as e:  # noqa: BLE001 - the quote stays confirmed: it can be run later
            return f"confirmed, but not started on the Prefect server ({type(e).__name__}: {e})"
    return (
        f"run it: qsolve confirm {quote_id} --yes (with a Prefect server in PREFECT_API_URL, the quote flow "
        "run waiting for it is resumed, or the hardware/hardware deployment run)"
    )


def start_submission(home: Any, data: bytes, file_name: str, account: str) -> str:
    """A workflow folder's zip submitted as ``account`` from the web pages (issue 33, item 2); its
    submission id, at once. The zip is unpacked by the safe zip reader into a fresh private temporary
    folder (:class:`~qsolve.workflow.upload.UploadRefused` before anything is recorded or started), the
    submission recorded (``storage.submissions``), and the submission flow run on it as ``account`` in a
    child process (``flows.web_submission``), which records the report and removes the folder. A thread of
    this process waits for the child: should it end without an outcome (killed, say), the submission is
    recorded as crashed and the folder removed here."""
    import os
    import subprocess
    import sys
    import threading
    from pathlib import Path

    from qsolve.home import qsolve_home
    from qsolve.workflow.upload import remove, unpack
    from qsolve_pipeline.storage.submissions import Submissions

    home = qsolve_home(home).resolve()
    staged = unpack(data)
    try:
        submissions = Submissions(home)
        request = submissions.new(account, Path(file_name.replace("\\", "/")).name or "workflow.zip")
        # where `-m qsolve_pipeline...` finds it: the folder holding it (a checkout, or site-packages)
        root = Path(sys.modules["qsolve_pipeline"].__file__).resolve().parents[1]
        child = subprocess.Popen(
            [sys.executable, "-m", "qsolve_pipeline.flows.web_submission", str(home), request.id,
             str(staged.temporary), str(staged.folder)],
            cwd=root, env={**os.environ, "QSOLVE_HOME": str(home)}, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    except BaseException:
        remove(staged.temporary)
        raise
    submissions.started(request.id, child.pid)

    def wait() -> None:
        code = child.wait()
        if submissions.finish(
            request.id, crashed=f"the submission process ended (exit code {code}) with no report"
        ):
            remove(staged.temporary)

    threading.Thread(target=wait, name=f"qsolve-submission-{request.id[:8]}", daemon=True).start()
    return request.id
