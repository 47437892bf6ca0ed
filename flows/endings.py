"""How a flow run ends when it ends as expected (issue 36, items 2 and 6): in the state qsolve's own
record says (Failed, Cancelled), with one line, and no ``ERROR`` or traceback in the run's log.

Prefect's engine, on a process worker, raises the final state's data as an exception when the state is
Failed or Cancelled, and logs it as "Engine execution exited with unexpected exception" with its
traceback (a state whose data is not an exception at all is a ``TypeError`` on top). So an expected
ending carries an :class:`Ended` (or a :class:`~qsolve.validation.submission.SubmissionRejected`) as
its data, and :class:`OneLine`, installed on Prefect's run and engine loggers when a flow module loads,
logs such an exception as its one line, at the INFO level.

A flow run also records, as labels of its own (``qsolve.*``), the qsolve runs it started, so that its
``on_cancellation`` and ``on_crashed`` hooks find them whatever parameters requested it
(:func:`record`, :func:`recorded`).
"""

from __future__ import annotations

import logging
from typing import Any

LABEL_PREFIX = "qsolve."


class Ended(Exception):  # noqa: N818 - what the run did, as its final state carries it
    """A flow run's expected ending (a rejection, a refusal, a cancel, a failed qsolve run): its message,
    one line, is the state's message; ``data`` what the run returns besides (a summary)."""

    state_name = "Failed"

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(" ".join(str(message).splitlines()))
        self.data = data


def _expected(exc: BaseException | None) -> bool:
    if exc is None:
        return False
    from qsolve.validation.submission import SubmissionRejected

    return isinstance(exc, Ended | SubmissionRejected)


class OneLine(logging.Filter):
    """An expected ending that Prefect logs as an engine error, with its traceback, is logged as the
    state's one line at the INFO level instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if _expected(exc):
            state = getattr(exc, "state_name", "Failed")
            record.msg, record.args = f"flow run ended {state}: {exc}", ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def install() -> None:
    """Put :class:`OneLine` on Prefect's flow-run and engine loggers, once a process."""
    for name in ("prefect.flow_runs", "prefect.engine"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, OneLine) for f in logger.filters):
            logger.addFilter(OneLine())


class Cancelled(Ended):
    """A flow run ended Cancelled: its qsolve run was cancelled or interrupted."""

    state_name = "Cancelled"


class Failed(Ended):
    """A flow run ended Failed: its qsolve run failed, or its request was refused."""

    state_name = "Failed"


def failed(message: str, data: Any = None):
    """A Failed state whose message is ``message`` (one line), its data an :class:`Ended`."""
    from prefect.states import Failed as FailedState

    ended = Failed(message, data)
    return FailedState(message=str(ended), data=ended)


def cancelled(message: str, data: Any = None):
    """A Cancelled state whose message is ``message`` (one line), its data an :class:`Ended`."""
    from prefect.states import Cancelled as CancelledState

    ended = Cancelled(message, data)
    return CancelledState(message=str(ended), data=ended)


def outcome(result: Any) -> Any:
    """What a flow run returned, an expected ending's ``data`` in place of the ending itself."""
    return result.data if isinstance(result, Ended) and result.data is not None else result


def record(**labels: str) -> None:
    """Add ``qsolve.NAME: value`` labels to the current flow run (where there is one and a server to tell),
    for its hooks to find; a server that does not answer is logged, never fatal."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    try:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            client.update_flow_run_labels(
                context.flow_run.id, {LABEL_PREFIX + k: str(v) for k, v in labels.items()}
            )
    except Exception as e:  # noqa: BLE001 - its hooks then know only its parameters
        logging.getLogger("qsolve.flows").warning("could not label the flow run: %s", e)


def recorded(flow_run: Any, name: str) -> str | None:
    """The label ``qsolve.NAME`` of ``flow_run`` as the server has it now (the flow run given to a hook
    may predate it), else as given; None when it has none."""
    key = LABEL_PREFIX + name
    try:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            labels = client.read_flow_run(flow_run.id).labels or {}
    except Exception:  # noqa: BLE001 - no server: what the hook was given
        labels = getattr(flow_run, "labels", None) or {}
    value = labels.get(key)
    return str(value) if value else None


def crashed(flow, flow_run, state) -> str:
    """An ``on_crashed`` hook: the Crashed state's message says what is left to finish and the command
    that finishes it (a version's history stage, recorded as the label ``qsolve.history``: ``NAME
    VERSION``), and no task run stays Running or Pending under the crashed flow run. The message set."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    message = " ".join((state.message or "the flow run's process stopped").splitlines())
    left = recorded(flow_run, "history")
    if left and " " in left:
        name, version = left.split(" ", 1)
        message += (
            f"; left to finish: the history stage of {name} {version} "
            f"(qsolve history {name} --version {version} runs the cases with no recorded run)"
        )
    with get_client(sync_client=True) as client:
        unended = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])),
            task_run_filter=TaskRunFilter(
                state=TaskRunFilterState(
                    type=TaskRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING])
                )
            ),
        )
        for task_run in unended:
            client.set_task_run_state(task_run.id, Crashed(message="its flow run crashed"), force=True)
        client.set_flow_run_state(flow_run.id, Crashed(message=message), force=True)
    return message
