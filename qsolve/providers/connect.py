"""A provider opened from ``providers.yaml``: its transport, its credential from the store (handed to
that transport only), and a client that names it in every error. A process provider gets the
allowlisted environment of :func:`~qsolve.providers.program_env.provider_environment`, with the
variables its entry's ``env`` names, and runs confined (:mod:`qsolve.providers.confined`): it reads only
the runtime, its command's files and its entry's ``allow_read``, and writes only its scratch folder and
its entry's ``allow_write``, and connects over TCP only to port 443 and its entry's ``allow_port``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qsolve.home import qsolve_home
from qsolve.providers.credentials import CredentialStore
from qsolve.providers.registry import ProviderEntry, Registry, known_credential_envs, known_secret_values

#: ``open_client``'s credential: the one kept for the provider
STORED = object()


def open_client(
    name: str, home: Path | None = None, *, entry: ProviderEntry | None = None, credential: Any = STORED
):
    """``(client, entry)`` for the provider named ``name``; the caller closes the client. ``credential``
    other than :data:`STORED` is sent in place of the provider's own (the conformance checker's wrong
    credential, or ``None``: none at all)."""
    from qsolve.providers.client import ProviderClient

    home = home or qsolve_home()
    entry = entry or Registry(home).get(name)
    if credential is STORED:
        secret = CredentialStore(home).get(name) if entry.credential else None
        credential = secret.reveal() if secret is not None else None
    if entry.transport == "http":
        from qsolve.providers.over_http import HttpTransport

        transport = HttpTransport(entry.url, credential=credential)
    else:
        from qsolve.providers.confined import Confinement
        from qsolve.providers.over_process import ProcessTransport

        logs = home / "providers" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        transport = ProcessTransport(
            entry.command,
            credential=credential,
            pass_env=entry.env,
            log_path=logs / f"{name}.log",
            confinement=Confinement(
                read=entry.allow_read,
                write=entry.allow_write,
                ports=entry.allow_port,
                accept_unconfined=entry.accept_unconfined,
            ),
            home=home,
            credential_envs=known_credential_envs(home),
            secret_values=known_secret_values(home),
        )
    client = ProviderClient(
        name, transport, settings=entry.settings or None, credential=credential, timeout=entry.timeout_s
    )
    return client, entry
