"""What a provider's program is given of this process's environment (quantum-provider-protocol §2.2): an
allowlist, however qsolve was started (the command line, a serve script, a worker).

What a program needs to start (``PATH``, ``TZ``, and ``LANG`` and the standard ``LC_*`` categories holding
a locale's name), ``HOME`` and ``TMPDIR`` (set by the transport to a scratch folder of its own), the
variables its entry in ``providers.yaml`` names (``env: [NAME, ...]``, the person's own non-secret
settings, never the host's own secrets or settings by name, :func:`host_variable`, nor a value that is a
secret, :func:`host_value`), and its own credential, as ``WAI_PROVIDER_CREDENTIAL``, never on its command
line (:func:`provider_environment`). Nothing else reaches it: no other provider's credential, no cloud key
(``QISKIT_IBM_TOKEN``, ``AWS_SECRET_ACCESS_KEY``), no database address.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from qsolve.providers.transport import TransportError

log = logging.getLogger(__name__)

CREDENTIAL_ENV = "WAI_PROVIDER_CREDENTIAL"
#: what a program needs to start, passed on from this process's environment when set (``LANG`` and the
#: locale categories only with a locale's value: :func:`locale_value`)
START_ENV = ("PATH", "LANG", "TZ")
#: the standard locale categories (POSIX and glibc's): no other ``LC_*`` variable is passed on
LOCALE_ENV = (
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_ADDRESS",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_NAME",
    "LC_PAPER",
    "LC_TELEPHONE",
)
#: a locale's name: ``C``, ``POSIX``, ``C.UTF-8``, ``en_US.UTF-8``, ``sr_RS@latin``, ``es_419.utf8``
LOCALE = re.compile(r"(C|POSIX|[a-z]{2,3}(_[A-Z]{2}|_[0-9]{3})?)(\.[A-Za-z0-9-]{1,20})?(@[A-Za-z0-9]{1,20})?")
#: set by the transport itself: a scratch folder, and the provider's own credential
OWN_ENV = ("HOME", "TMPDIR", CREDENTIAL_ENV)

#: the prefixes of the host's own secrets and settings, never passed on by ``env`` (:func:`host_variable`)
HOST_PREFIXES = (
    ("QSOLVE_", "qsolve's own setting"),
    ("PREFECT_", "Prefect's setting"),
    ("QISKIT_IBM_", "IBM Quantum's credential or setting"),
    ("IBM_", "IBM's credential or setting"),
    ("AWS_", "a cloud credential or setting (AWS)"),
    ("AZURE_", "a cloud credential or setting (Azure)"),
    ("GOOGLE_", "a cloud credential or setting (Google)"),
    ("GCP_", "a cloud credential or setting (Google Cloud)"),
    ("GCLOUD_", "a cloud credential or setting (Google Cloud)"),
    ("CLOUDSDK_", "a cloud credential or setting (Google Cloud)"),
    ("PG", "the database's (PostgreSQL) setting"),
    ("MYSQL", "a database's setting"),
    ("OPENAI_", "a model's key or setting"),
    ("ANTHROPIC_", "a model's key or setting"),
    ("HF_", "a model hub's key or setting"),
    ("HUGGING_FACE_", "a model hub's key or setting"),
    ("SSH_", "the host's SSH agent or setting"),
    ("GPG_", "the host's keys"),
)
#: whole names of the host's secrets and settings
HOST_NAMES = {
    "DATABASE_URL": "a database's address",
    "REDIS_URL": "a database's address",
    "KRB5CCNAME": "the host's Kerberos credential",
    "DBUS_SESSION_BUS_ADDRESS": "the host's session bus (the keychain)",
}
#: what in a name marks it as a secret's, wherever it is in the name
SECRET_MARKS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE",
    "DATABASE_URL",
    "COOKIE",
    "SESSION",
    "BEARER",
    "CONNECTION_STRING",
    "CONN_STR",
)
#: what marks a secret as a part of a name between underscores (``DB_PASS``, ``GITHUB_PAT``, ``SENTRY_DSN``)
SECRET_PARTS = ("PASS", "PWD", "AUTH", "DSN", "CRED", "CREDS", "PAT", "JWT", "HMAC", "PASSCODE", "OTP")
#: ... and as the end of one (``DBPASS``, ``SMTPPWD``, ``OAUTH``, ``PGDSN``)
SECRET_ENDS = ("PASS", "PWD", "AUTH", "DSN")
#: parts that end like a mark and are no secret's; the working directories are no secret either
NOT_SECRET_PARTS = {"BYPASS", "COMPASS", "SURPASS", "OVERPASS", "UNDERPASS"}
NOT_SECRET_NAMES = {"PWD", "OLDPWD"}
#: a URL whose userinfo holds a password (``scheme://user:pass@host``), anywhere in a value
URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]*@")
#: the shortest secret a value is compared with (equal to it); from this length, held anywhere in it
SECRET_MIN_CHARS, SECRET_HELD_CHARS = 4, 8


def secret_name(name: str) -> str | None:
    """Why ``name`` is a secret's by its spelling (``TOKEN``, ``DB_PASS``, ``GITHUB_PAT``...), or ``None``."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return None
    for mark in SECRET_MARKS:
        if mark in upper:
            return f"its name marks a secret ({mark})"
    for part in upper.split("_"):
        if part in NOT_SECRET_PARTS:
            continue
        for mark in SECRET_PARTS:
            if part == mark or (mark in SECRET_ENDS and part.endswith(mark)):
                return f"its name marks a secret ({mark})"
    if upper.endswith("KEY"):
        return "its name marks a secret (…KEY)"
    return None


def host_variable(name: str, credential_envs: Sequence[str] = ()) -> str | None:
    """Why ``name`` is the host's secret or setting and is never passed on to a provider program by its
    entry's ``env`` (docs/providers.md), or ``None`` for one that may be. ``credential_envs``: the
    variables that hold some provider's credential (``--credential-env``) or a model's key."""
    upper = name.upper()
    if name in credential_envs:
        return "it holds a credential (a provider's --credential-env, or the evaluation model's key)"
    if upper in HOST_NAMES:
        return HOST_NAMES[upper]
    for prefix, what in HOST_PREFIXES:
        if upper.startswith(prefix):
            return f"{what} ({prefix}*)"
    return secret_name(name)


def host_value(value: str, secret_values: Sequence[str] = ()) -> str | None:
    """Why a variable holding ``value`` is never passed on to a provider program whatever its name (its
    value is never said), or ``None``: a URL's password in it (``scheme://user:pass@host``), or one of
    ``secret_values`` (the providers' stored credentials, qsolve's own secrets: equal to one, or holding
    one of :data:`SECRET_HELD_CHARS` characters or more)."""
    if URL_PASSWORD.search(value):
        return "its value holds a URL with a password (scheme://user:pass@host)"
    for secret in secret_values:
        if len(secret) < SECRET_MIN_CHARS:
            continue
        if value == secret or (len(secret) >= SECRET_HELD_CHARS and secret in value):
            return "its value is a credential qsolve keeps (a provider's, or qsolve's own secret)"
    return None


def locale_value(value: str) -> bool:
    """Whether ``value`` is a locale's name (or empty), as ``LANG`` and ``LC_*`` hold."""
    return value == "" or LOCALE.fullmatch(value) is not None


def provider_environment(
    source: Mapping[str, str],
    names: Sequence[str] = (),
    *,
    scratch: str | Path,
    credential: str | None = None,
    credential_envs: Sequence[str] = (),
    secret_values: Sequence[str] = (),
    said: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """The whole environment of a provider process: from ``source`` (this process's), ``PATH`` and ``TZ``
    where set, ``LANG`` and the standard locale categories (:data:`LOCALE_ENV`) where set to a locale's
    name, and the ``names`` its entry passes on where set, but for the host's own secrets and settings
    (:func:`host_variable`) and any whose value is a secret (:func:`host_value`: a URL's password, one of
    ``secret_values``): skipped, each said in one line to ``said``, never its value; ``HOME`` and
    ``TMPDIR`` the ``scratch`` folder; ``WAI_PROVIDER_CREDENTIAL`` its ``credential``, when it has one.
    Nothing else."""
    env = {k: v for k, v in source.items() if k in ("PATH", "TZ")}
    env.update(
        {
            k: v
            for k, v in source.items()
            if k in ("LANG", *LOCALE_ENV) and isinstance(v, str) and locale_value(v)
        }
    )
    env.setdefault("PATH", os.defpath)
    for name in passed_names(names):
        why = host_variable(name, credential_envs)
        if why is None and name in source:
            why = host_value(source[name], secret_values)
        if why is not None:
            (said or log.warning)(f"env {name}: not passed on to the provider program: {why}")
            continue
        if name in source:
            env[name] = source[name]
    env["HOME"] = env["TMPDIR"] = str(scratch)
    if credential:
        env[CREDENTIAL_ENV] = credential
    return env


def passed_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names of the person's variables a provider process is given; one qsolve sets is refused."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TransportError("the variables passed on to a provider are a list of names")
    for name in names:
        if name in OWN_ENV:
            raise TransportError(f"{name} is set by qsolve for a provider process; it is not passed on")
    return tuple(names)
