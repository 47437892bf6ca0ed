"""Where a hardware run goes: to a machine that holds its provider (issue 26, item 3; docs/deploy.md).

A provider's credential stays with the machine that holds it (the keychain or an owner-only file,
``credentials.py``). Each device family that needs one has a Prefect work queue of its own in the work
pool: ``provider-NAME`` for ``provider:NAME``, ``ibm`` for ``ibm:<device>``; simulators and fake devices
need none and run from any queue. A worker started with ``qsolve worker`` serves the queues of the
providers its machine holds (and registers them in the state database); a hardware run whose provider
this machine does not hold is sent to its provider's queue, where it waits, named for the provider, until
a worker that holds it takes it. Nothing here imports Prefect: the flows do the sending.
"""

from __future__ import annotations

import os
from pathlib import Path

from qsolve.home import qsolve_home
from qsolve.providers.credentials import CredentialStore
from qsolve.providers.registry import Registry

IBM_QUEUE = "ibm"
PROVIDER_QUEUE_PREFIX = "provider-"


def queue_for(target: str) -> str | None:
    """The work queue of ``target``'s provider; None for a target any machine runs (sim-cpu, fake:)."""
    family, _, name = target.partition(":")
    if family == "provider" and name:
        return PROVIDER_QUEUE_PREFIX + name
    if family == "ibm":
        return IBM_QUEUE
    return None


def provider_of(queue: str) -> str:
    """What a queue's runs need, said for a person: ``provider lab``, ``an IBM Quantum key``."""
    if queue == IBM_QUEUE:
        return "an IBM Quantum key"
    return f"provider {queue.removeprefix(PROVIDER_QUEUE_PREFIX)}"


def held_queues(home: Path | None = None) -> list[str]:
    """The queues of the providers this machine holds: each provider in ``providers.yaml`` (with its
    credential here, where it has one), and ``ibm`` where an IBM Quantum key is (``QISKIT_IBM_TOKEN``, or
    the credential store)."""
    from qsolve.targets.ibm.names import PROVIDER as IBM

    home = qsolve_home(home)
    store = CredentialStore(home)
    queues = [
        PROVIDER_QUEUE_PREFIX + name
        for name, entry in Registry(home).load().items()
        if not entry.credential or store.get(name) is not None
    ]
    if os.environ.get("QISKIT_IBM_TOKEN") or store.get(IBM) is not None:
        queues.append(IBM_QUEUE)
    return sorted(queues)


def holds(target: str, home: Path | None = None) -> bool:
    """Whether this machine can run ``target``'s jobs: it needs no provider, or this machine holds it."""
    queue = queue_for(target)
    return queue is None or queue in held_queues(home)
