"""Where everything lives: ``QSOLVE_HOME``, by default ``./.qsolve`` (DESIGN.md §6)."""

from __future__ import annotations

import os
from pathlib import Path

HOME_VARIABLE = "QSOLVE_HOME"
DEFAULT_HOME = ".qsolve"


def qsolve_home(home: Path | str | None = None) -> Path:
    """``home`` if given, else ``QSOLVE_HOME``, else ``./.qsolve`` (relative to the working directory)."""
    if home is None:
        home = os.environ.get(HOME_VARIABLE) or DEFAULT_HOME
    return Path(home).expanduser()


ACCOUNT_VARIABLE = "QSOLVE_ACCOUNT"


def local_account(given: str | None = None) -> str:
    """The account a command acts for: ``given`` (its ``--account``), else the local operator's, which it
    acts for when it names none (``qsolve submit``, ``quote``, ``confirm``, ``providers``):
    ``QSOLVE_ACCOUNT``, else the operating system's user."""
    import getpass

    return given or os.environ.get(ACCOUNT_VARIABLE) or getpass.getuser()


HOST_VARIABLE = "QSOLVE_HOST_NAME"


def host_name() -> str:
    """This machine's name among the platform's hosts: ``QSOLVE_HOST_NAME``, else the system's host name.
    It labels the host's receipt key and the providers its workers hold in the state database."""
    import socket

    return (os.environ.get(HOST_VARIABLE) or socket.gethostname() or "localhost")[:200]


def owner_token() -> str:
    """A token naming this process as the holder of a lease or a run: its host, its pid and a random
    part (unique even where a pid is reused)."""
    import secrets
    import socket

    return f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(6)}"
