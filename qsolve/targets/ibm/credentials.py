"""The person's IBM Quantum API key: ``QISKIT_IBM_TOKEN``, else the one kept under ``ibm`` in the keychain
or an owner-only file (``qsolve.providers.credentials.CredentialStore``; ``python -m qsolve.targets.ibm
save-key`` puts it there). It is handed to ``QiskitRuntimeService`` directly (``save_account``, a plain
file, is never called), and is in no log, message, record or receipt."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from qsolve.providers.credentials import CredentialStore, Secret
from qsolve.targets.ibm.errors import IbmUnavailable
from qsolve.targets.ibm.names import PROVIDER


def ibm_key(home: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[Secret, str]:
    """The person's IBM Quantum API key and where it was found: ``QISKIT_IBM_TOKEN``, else the keychain or
    the owner-only file ``CredentialStore`` keeps it in under ``ibm``."""
    env = os.environ if env is None else env
    if env.get("QISKIT_IBM_TOKEN"):
        return Secret(env["QISKIT_IBM_TOKEN"]), "the environment (QISKIT_IBM_TOKEN)"
    store = CredentialStore(home)
    secret = store.get(PROVIDER)
    if secret is None:
        raise IbmUnavailable(
            "no IBM Quantum API key: set QISKIT_IBM_TOKEN, or keep it with "
            "`QISKIT_IBM_TOKEN=... python -m qsolve.targets.ibm save-key` (the keychain, or a file only you "
            "can read); qsolve never reads or writes qiskit's saved accounts"
        )
    where = store.where(PROVIDER)
    return secret, where.label if where else "the credential store"
