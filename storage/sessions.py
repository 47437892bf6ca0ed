"""The core's devices opened over a home's storage: the state database as the book of their jobs and the
keeper of the host's key, blobs as the keeper of sealed jobs. The core takes these as arguments and
imports no storage; the front doors and the tasks open a device through here.

provider_session   a ``provider:<name>`` session (``qsolve run``, ``providers follow``, a hardware run)
opened             a provider's client, a transport that cannot be opened one line naming the provider
ibm_backend        an ``ibm:<device>`` backend, with the state database of its own
ask_on_terminal    the person's yes or no at the terminal, for a confirmation
keeper             a function that keeps a sealed job's text as a blob: its digest and where it is
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qsolve.home import qsolve_home
from qsolve_pipeline.storage.blobs import BlobStore


def keeper(home: Path, book: Any = None) -> Callable[[str], tuple[str, str]]:
    """Keep a sealed job's text as a blob of ``home``'s store: its digest and where it is; its size
    recorded in ``book`` (the state database), where given, so that a read of it stops there."""
    blobs = BlobStore(home)

    def keep(text: str) -> tuple[str, str]:
        data = text.encode("utf-8")
        digest = blobs.put(data)
        if book is not None:
            book.record_blob_sizes({digest: len(data)})
        return digest, blobs.where(digest)

    return keep


def ask_on_terminal() -> Callable[[str], bool] | None:
    """A yes-or-no question put to the person at the terminal; none where standard input is not one."""
    return _ask if sys.stdin.isatty() else None


def _ask(question: str) -> bool:
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _tell(line: str) -> None:
    print(line, file=sys.stderr)


def provider_session(
    name: str,
    *,
    yes: bool,
    run_id: str | None = None,
    home: Path | None = None,
    run: dict[str, str] | None = None,
):
    """A provider session for platform code: its client, the state database as its book, the host's
    key (registered there, a new one made where it was retired), blobs as the keeper of sealed jobs,
    and this run's confirmation (``yes``, or a question when standard input is a terminal); ``run``
    (``qsolve.providers.sealing.run_member``): the platform run each job's request seals."""
    from qsolve.providers.jobs import Confirmation, ProviderSession
    from qsolve_pipeline.storage.state import connect

    home = home or qsolve_home()
    client, entry = opened(name, home)
    book = connect(home=home)
    return ProviderSession(
        name=name,
        kind=entry.transport,
        client=client,
        book=book,
        signer=book.signing_key(home, tell=_tell),
        keep=keeper(home, book),
        confirmation=Confirmation(yes=yes, ask=ask_on_terminal() if not yes else None),
        tell=_tell,
        run_id=run_id,
        sealed_run=run,
    )


def opened(name: str, home: Path | None = None):
    """:func:`~qsolve.providers.connect.open_client`, a transport that cannot be opened (a URL that names
    a password, say) a one-line :class:`~qsolve.providers.errors.ProviderError` naming the provider."""
    from qsolve.providers.connect import open_client
    from qsolve.providers.errors import ProviderError
    from qsolve.providers.transport import TransportError

    try:
        return open_client(name, home)
    except TransportError as e:
        raise ProviderError(name, "connect", e.code, str(e)) from None


def ibm_backend(spec: str, *, home: Path | None = None, **kwargs: Any):
    """``ibm:<device>`` opened (:func:`qsolve.targets.ibm.open_ibm`) over ``home``'s state database, which
    the backend closes with itself, and its blobs."""
    from qsolve.targets.ibm import open_ibm
    from qsolve_pipeline.storage.state import connect

    home = qsolve_home(home)
    book = connect(home=home)
    try:
        return open_ibm(spec, book=book, keep=keeper(home, book), home=home, **kwargs)
    except BaseException:
        book.close()
        raise
