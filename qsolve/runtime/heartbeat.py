"""Progress: what keeps a lease renewed (issue 24: a lease lives only while its holder makes progress).

The work of a lease's holder calls :func:`beat` as it goes (a case's every step in the state database,
its sandbox job's wait, each second, a device job's poll); the lease is renewed only when some beat
came since the last renewal. A holder frozen (SIGSTOP) or stuck (waiting for ever on a lock) beats no
more, its lease lapses, and another process takes its work over.

The beat reaches the holder's threads through a context variable: Prefect runs each task in a copy of
the context that submitted it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_current: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "qsolve_heartbeat", default=None
)


def beat() -> None:
    """This thread's work made progress (nothing, outside a lease)."""
    on_beat = _current.get()
    if on_beat is not None:
        on_beat()


@contextmanager
def beating(on_beat: Callable[[], None]) -> Iterator[None]:
    """Send the beats of the work done inside (and of the tasks it submits) to ``on_beat``."""
    token = _current.set(on_beat)
    try:
        yield
    finally:
        _current.reset(token)
