"""The providers a person has brought: ``QSOLVE_HOME/providers.yaml`` (name, transport, URL or command
with its arguments, non-secret ``settings``, time-outs). Credentials are not here: they are in the
keychain or an owner-only file (``credentials.py``); an entry says only whether it has one. A process
provider's ``env`` names the variables of qsolve's environment passed on to it besides what every
provider process gets (``program_env.provider_environment``).

    providers:
      ref:
        transport: process
        command: [python, -m, qsolve.providers.reference, --stdio]
        env: [LAB_REGION]       # the person's own non-secret variables it is given
        allow_read: [/opt/lab]  # what its confined program may read besides the runtime (--allow-read)
        allow_write: [/var/lab/jobs]  # all it may write besides its scratch folder (--allow-write)
        allow_port: [8443]      # TCP ports it may connect to besides 443 (--allow-port)
        settings: {}
        timeout_s: 60
      lab:
        transport: http
        url: https://lab.example/wai
        credential: true

The file is written whole (a temporary file, fsynced, renamed), so a reader never sees half of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qsolve.errors import shown
from qsolve.home import qsolve_home
from qsolve.providers.credentials import NAME_RE
from qsolve.providers.errors import REDACTED
from qsolve.providers.transport import is_loopback

FILE = "providers.yaml"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class RegistryError(ValueError):
    """providers.yaml cannot be read, or an entry is not one: the message names the file and the key."""


class ProviderEntry(BaseModel):
    """One provider as the person named it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: Literal["http", "process"]
    url: str | None = None
    command: tuple[str, ...] = ()
    settings: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    credential: bool = False
    #: the name (never the value) of the variable its credential was read from (``--credential-env``):
    #: never passed on to any provider program (``program_env.host_variable``)
    credential_env: str | None = None
    env: tuple[str, ...] = ()
    #: what a process provider's confined program may read besides the runtime and the files its command
    #: names (``--allow-read``); never QSOLVE_HOME or the keychain (:mod:`qsolve.providers.confined`)
    allow_read: tuple[str, ...] = ()
    #: all its confined program may write besides a scratch folder of its own (``--allow-write``): the
    #: paths its command names are only read
    allow_write: tuple[str, ...] = ()
    #: the TCP ports its confined program may connect to besides 443 (``--allow-port``); never the state
    #: database's or the Prefect API's (:func:`qsolve.providers.confined.check_ports`)
    allow_port: tuple[int, ...] = ()
    #: the operator accepted, by the provider's name, to run it where the kernel cannot confine it
    accept_unconfined: bool = False

    @model_validator(mode="after")
    def _where(self) -> ProviderEntry:
        if self.transport == "http":
            if not self.url or self.command:
                raise ValueError("an http provider has a url and no command")
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"url {shown_url(self.url)!r}: not an http:// or https:// address")
            if self.credential and parts.scheme == "http" and not is_loopback(parts.hostname):
                raise ValueError(
                    f"url {shown_url(self.url)!r}: a credential goes over https:// only, or to this machine"
                )
        elif not self.command or self.url:
            raise ValueError("a process provider has a command and no url")
        if self.env and self.transport != "process":
            raise ValueError("env: only a process provider is given variables")
        confinement = self.allow_read or self.allow_write or self.allow_port or self.accept_unconfined
        if confinement and self.transport != "process":
            raise ValueError(
                "allow_read, allow_write, allow_port, accept_unconfined: only a process provider's program "
                "is confined"
            )
        for port in self.allow_port:
            if not 1 <= port <= 65535:
                raise ValueError(f"allow_port: {port} is not a TCP port (1 to 65535)")
        for key, paths in (("allow_read", self.allow_read), ("allow_write", self.allow_write)):
            for path in paths:
                if not path.startswith("/"):
                    raise ValueError(f"{key}: {path!r} is not an absolute path")
        from qsolve.providers.program_env import OWN_ENV

        if self.credential_env is not None and not ENV_NAME.fullmatch(self.credential_env):
            raise ValueError(
                f"credential_env: {self.credential_env!r} is not the name of an environment variable"
            )
        for name in self.env:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"env: {name!r} is not the name of an environment variable")
            if name in OWN_ENV:
                raise ValueError(f"env: {name} is set by qsolve for a provider process, not passed on")
        return self

    def describe_where(self) -> str:
        return shown_url(self.url or "") if self.transport == "http" else " ".join(self.command)


#: a URL as a WHATWG reader (a browser; httpx) reads an http(s) one: its scheme, the slashes and
#: backslashes after it (any number, or none), its authority up to the first of / \\ ? #, and the rest
_URL = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*:[/\\]*)(?P<authority>[^/\\?#]*)(?P<rest>.*)", re.S)
#: a query's values and a fragment as they are printed: either may carry a key (``?api_key=...``)
HIDDEN = "[hidden]"


def _parts(url: str) -> tuple[str, str, str]:
    """``(scheme and slashes, authority, the rest)`` as a WHATWG reader splits ``url``: tabs and new lines
    taken out, and control characters and spaces around it; with no scheme, the authority is what comes
    before the first of / \\ ? #."""
    text = re.sub(r"[\t\n\r]", "", url).strip("\x00- ")
    if m := _URL.fullmatch(text):
        return m["head"], m["authority"], m["rest"]
    authority = re.split(r"[/\\?#]", text, maxsplit=1)[0]
    return "", authority, text[len(authority) :]


def names_userinfo(url: str) -> bool:
    """Whether ``url`` carries a user or a password (``user:pass@``, ``TOKEN@``) however it is written:
    as urlsplit reads it, or as a WHATWG reader does (``http:u:pw@host/``, ``http:\\\\u:pw@host/``), or
    with no scheme at all. ``providers add`` refuses such a URL (§1: a credential goes through
    ``--credential-env``)."""
    if "@" in _parts(url)[1]:
        return True
    try:
        parts = urlsplit(url)
        return parts.username is not None or parts.password is not None
    except ValueError:
        return "@" in url


def shown_url(url: str) -> str:
    """``url`` as it may be printed (§1: a credential never in what the host prints): its userinfo
    (``user:pass@``, ``TOKEN@``, as a WHATWG reader finds it; one stored before ``providers add``
    refused it) replaced by :data:`~qsolve.providers.errors.REDACTED`, each item of its query
    (``?api_key=...``) and its fragment by :data:`HIDDEN`, its control characters escaped."""
    head, authority, rest = _parts(url)
    if "@" in authority:
        authority = f"{REDACTED}@{authority.rsplit('@', 1)[1]}"
    path, hash_, _ = rest.partition("#")
    path, question, query = path.partition("?")
    if query:
        items = (item.partition("=") for item in query.split("&"))
        query = "&".join(f"{k}={HIDDEN}" if sep else HIDDEN for k, sep, _ in items)
    return shown(f"{head}{authority}{path}{question}{query}{hash_}{HIDDEN if hash_ else ''}")


def known_credential_envs(home: Path | None = None) -> tuple[str, ...]:
    """The variables named as holding a credential on this host, never passed on to a provider program
    (``program_env.host_variable``): every provider's ``--credential-env`` in ``providers.yaml`` and the
    evaluation models' ``api_key_env`` (what cannot be read adds none)."""
    names: list[str] = []
    with contextlib.suppress(Exception):
        names += [e.credential_env for e in Registry(home).load().values() if e.credential_env]
    names += _model_key_envs(home or qsolve_home())
    return tuple(dict.fromkeys(names))


#: the credential qsolve keeps for IBM Quantum (``qsolve.targets.ibm.names.PROVIDER``), in the same store
IBM_CREDENTIAL = "ibm"


def known_secret_values(
    home: Path | None = None, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The values never passed on to a provider program, whatever the name of the variable that holds
    them (``program_env.host_value``): every credential the store keeps (each provider's of
    ``providers.yaml``, each file of the credentials folder, IBM Quantum's key), and qsolve's own secrets
    in ``environ`` (this process's environment): the values, of 8 characters or more, of the variables that
    hold a credential (:func:`known_credential_envs`) or whose name marks a secret
    (``program_env.secret_name``: qsolve's database address, a cloud's or a model's key...). What cannot
    be read adds none. For the platform
    only: never printed, never handed to a provider."""
    from qsolve.providers.credentials import CredentialStore
    from qsolve.providers.program_env import SECRET_HELD_CHARS, secret_name

    home = home or qsolve_home()
    environ = os.environ if environ is None else environ
    store = CredentialStore(home)
    names = [IBM_CREDENTIAL]
    with contextlib.suppress(Exception):
        names += [name for name, entry in Registry(home).load().items() if entry.credential]
    with contextlib.suppress(OSError):
        names += sorted(p.name for p in store.folder.iterdir() if NAME_RE.match(p.name))
    values: list[str] = []
    for name in dict.fromkeys(names):
        with contextlib.suppress(Exception):  # a file others can read, a keychain that refuses
            if (secret := store.get(name)) is not None:
                values.append(secret.reveal())
    held = set(known_credential_envs(home))
    # a host's variable's value from 8 characters (DESKTOP_SESSION=ubuntu is no secret a LAB_OS may not hold)
    values += [
        v
        for k, v in environ.items()
        if len(v) >= SECRET_HELD_CHARS and (k in held or secret_name(k) is not None)
    ]
    return tuple(dict.fromkeys(values))


def _model_key_envs(home: Path) -> list[str]:
    """Each ``api_key_env`` of the evaluation models' file, found where ``qsolve.evaluation.models``
    finds it (``QSOLVE_EVALUATION_CONFIG``, else ``QSOLVE_HOME/evaluation.yaml``, else the checkout's
    ``config/evaluation.yaml``, else the package's); read here, not imported (evaluation reaches the
    providers through calibration and targets)."""
    package = Path(__file__).resolve().parents[1]
    given = os.environ.get("QSOLVE_EVALUATION_CONFIG")
    candidates = [Path(given)] if given else []
    candidates += [home / "evaluation.yaml", package.parent / "config" / "evaluation.yaml"]
    candidates.append(package / "evaluation" / "evaluation.yaml")
    for path in candidates:
        if not path.is_file():
            continue
        try:
            models = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or []
            return [m["api_key_env"] for m in models if isinstance(m.get("api_key_env"), str)]
        except (OSError, ValueError, AttributeError, TypeError, yaml.YAMLError):
            return []
    return []


class Registry:
    """``providers.yaml`` under one home."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home or qsolve_home()
        self.path = self.home / FILE

    def load(self) -> dict[str, ProviderEntry]:
        if not self.path.is_file():
            return {}
        try:
            doc = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:  # its text quotes the line, which may hold a URL's password
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            raise RegistryError(f"{self.path}: not YAML{where}") from None
        entries = doc.get("providers", {}) if isinstance(doc, dict) else None
        if not isinstance(entries, dict):
            raise RegistryError(f"{self.path}: providers: not a mapping of names to providers")
        out = {}
        for name, entry in entries.items():
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise RegistryError(f"{self.path}: providers: {name!r} is not a provider name")
            try:
                out[name] = ProviderEntry.model_validate(entry)
            except ValidationError as e:
                first = e.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise RegistryError(
                    f"{self.path}: providers.{name}{'.' + where if where else ''}: {first['msg']}"
                ) from None
        return out

    def get(self, name: str) -> ProviderEntry:
        entries = self.load()
        if name not in entries:
            known = ", ".join(sorted(entries)) or "none yet (qsolve providers add)"
            raise RegistryError(f"no provider named {name!r} in {self.path}; known: {known}")
        return entries[name]

    def put(self, name: str, entry: ProviderEntry) -> None:
        if not NAME_RE.match(name):
            raise RegistryError(
                f"{name!r} is not a provider name: lower-case letters, digits, '-' and '_', at most 63"
            )
        entries = self.load()
        entries[name] = entry
        self._write(entries)

    def remove(self, name: str) -> bool:
        entries = self.load()
        if entries.pop(name, None) is None:
            return False
        self._write(entries)
        return True

    def _write(self, entries: dict[str, ProviderEntry]) -> None:
        doc = {
            "providers": {
                n: e.model_dump(mode="json", exclude_defaults=True) | {"transport": e.transport}
                for n, e in sorted(entries.items())
            }
        }
        self.home.mkdir(parents=True, exist_ok=True)
        tmp = self.home / f".tmp-{FILE}-{secrets.token_hex(4)}"
        try:
            with open(tmp, "x", encoding="utf-8") as f:
                yaml.safe_dump(doc, f, sort_keys=False)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
