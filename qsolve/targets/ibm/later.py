"""A recorded IBM job, from any process (the one that sent it may have ended): ``collect`` follows it and
seals it, ``cancel`` passes a cancellation on to IBM. The device and the client's settings are the
record's (settings in the environment win). The caller gives the book holding the record (the state
database) and keeps it: it is not closed here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from qsolve.providers.jobs import Sealed
from qsolve.targets.ibm.errors import IbmUnavailable
from qsolve.targets.ibm.names import KIND, PROVIDER
from qsolve.targets.ibm.target import IbmBackend, open_ibm


def _backend_of(record: str, book: Any, keep: Any, home: Path | None, **kwargs: Any) -> IbmBackend:
    row = book.get_provider_job(record)
    if row.provider != PROVIDER or row.context.get("kind") != KIND:
        raise IbmUnavailable(f"provider job {record} is {row.provider}'s, not an IBM Quantum job")
    given = kwargs.pop("env", None)
    env = dict(os.environ if given is None else given)
    recorded = row.context.get("settings") or {}
    for name, key in (
        ("QISKIT_IBM_CHANNEL", "channel"),
        ("QISKIT_IBM_INSTANCE", "instance"),
        ("QISKIT_IBM_URL", "url"),
    ):
        if not env.get(name) and recorded.get(key):
            env[name] = recorded[key]
    return open_ibm(f"ibm:{row.context['device']}", book=book, keep=keep, home=home, env=env, **kwargs)


def collect(record: str, *, book: Any, keep: Any, home: Path | None = None, **kwargs: Any) -> Sealed:
    """Collect a recorded IBM job from any process (its first client may have ended): follow it, seal it
    (``book``: the state database holding the record; ``keep``: the keeper of sealed jobs, blobs)."""
    return _backend_of(record, book, keep, home, **kwargs).follow(record)  # the book stays the caller's


def cancel(record: str, *, book: Any, home: Path | None = None, **kwargs: Any) -> bool:
    """Pass a cancellation on to IBM for a recorded job, from any process (``book``: the state database
    holding the record)."""
    return bool(_backend_of(record, book, _seals_nothing, home, **kwargs).cancel(record))


def _seals_nothing(text: str) -> tuple[str, str]:
    raise AssertionError("a cancellation seals no job")  # pragma: no cover - cancel never seals
