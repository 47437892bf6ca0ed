"""A platform stop: SIGTERM, SIGINT, a Prefect cancellation or any abort of a flow (issue 24).

A flow that runs cases opens a :class:`Stop` around them (:func:`stopping`). When the flow is aborted
(Prefect turns SIGTERM and a cancellation into ``TerminationSignal`` in the flow's thread, SIGINT is
``KeyboardInterrupt``, anything else is an exception), the flow sets it before it leaves: every
sandbox job of its cases ends at once (:mod:`qsolve.sandbox.process` looks at it while it waits),
no new case starts, and each case ends its run as the platform's failure, never the workflow's. The
flow waits for its cases and only then removes its folders.

The stop reaches the cases' threads through a context variable: Prefect runs each task in a copy of
the context that submitted it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Stop:
    """One flow's stop: set once, with why."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.why = ""

    def set(self, why: str) -> None:
        if not self._event.is_set():
            self.why = why
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def __bool__(self) -> bool:
        return self._event.is_set()


_current: contextvars.ContextVar[Stop | None] = contextvars.ContextVar("qsolve_stop", default=None)


def current() -> Stop | None:
    """The stop of the flow this thread works for, if it opened one."""
    return _current.get()


def stopped() -> str | None:
    """Why this thread's flow was stopped, or ``None`` while it goes on."""
    stop = _current.get()
    return stop.why if stop is not None and stop.is_set() else None


def why_of(error: BaseException) -> str:
    """What stopped a flow, in words: the signal, the cancellation, or the exception."""
    name = type(error).__name__
    if name == "TerminationSignal":
        signal = getattr(error, "signal", None)
        return f"the platform stopped the flow (signal {signal}: SIGTERM or a Prefect cancellation)"
    if isinstance(error, KeyboardInterrupt):
        return "the platform stopped the flow (SIGINT)"
    return f"the flow was aborted ({name}: {str(error)[:200]})"


@contextmanager
def stopping() -> Iterator[Stop]:
    """A stop for the cases started inside; set as the block is left by any exception, which then
    goes on (the caller waits for its cases before it leaves its own folders)."""
    stop = Stop()
    token = _current.set(stop)
    try:
        yield stop
    except BaseException as e:
        stop.set(why_of(e))
        raise
    finally:
        _current.reset(token)
