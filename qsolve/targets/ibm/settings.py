"""Where the client goes: ``QISKIT_IBM_CHANNEL``, ``QISKIT_IBM_INSTANCE`` and ``QISKIT_IBM_URL`` (a base URL
used as it is, with ``/api/v1`` beneath it), and the client's own ``IAM_URL``, ``GLOBAL_SEARCH_URL`` and
``GLOBAL_CATALOG_URL``, refused where they would send the API key in clear or to a host made up from the
URL; and whether the service is IBM Quantum's own (the provenance rule: docs/ibm.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from qsolve.targets.ibm.errors import IbmUnavailable

CHANNELS = ("ibm_quantum_platform", "ibm_cloud")
IBM_DEFAULT_URL = "https://cloud.ibm.com"
#: the environment a person sets (the client reads the last three itself)
ENVIRONMENT = (
    "QISKIT_IBM_TOKEN",
    "QISKIT_IBM_INSTANCE",
    "QISKIT_IBM_CHANNEL",
    "QISKIT_IBM_URL",
    "IAM_URL",
    "GLOBAL_SEARCH_URL",
    "GLOBAL_CATALOG_URL",
)


@dataclass(frozen=True)
class IbmSettings:
    """Where the client goes: the channel, the instance (a CRN or a name, or none: the client picks), and
    the service's base URL when it is not IBM Quantum's default."""

    channel: str = "ibm_quantum_platform"
    instance: str | None = None
    url: str | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> IbmSettings:
        env = os.environ if env is None else env
        channel = env.get("QISKIT_IBM_CHANNEL") or "ibm_quantum_platform"
        if channel not in CHANNELS:
            raise IbmUnavailable(f"QISKIT_IBM_CHANNEL={channel!r}: use {' or '.join(CHANNELS)}")
        url = (env.get("QISKIT_IBM_URL") or "").rstrip("/") or None
        settings = cls(channel=channel, instance=env.get("QISKIT_IBM_INSTANCE") or None, url=url)
        settings.check(env)
        return settings

    @property
    def service(self) -> str:
        return self.url or IBM_DEFAULT_URL

    @property
    def is_ibm(self) -> bool:
        """The service is IBM Quantum's own: its default, or an https URL on cloud.ibm.com."""
        if self.url is None:
            return True
        parts = urlsplit(self.url)
        host = (parts.hostname or "").lower()
        return parts.scheme == "https" and (host == "cloud.ibm.com" or host.endswith(".cloud.ibm.com"))

    def check(self, env: Mapping[str, str]) -> None:
        """Refuse settings that would send the API key in clear over the network, or to a host made up
        from the URL: the client sends the key to IAM, and, when IAM does not answer, to the API host."""
        from qsolve.providers.transport import is_loopback

        for name, value in (("QISKIT_IBM_URL", self.url), *((n, env.get(n)) for n in ENVIRONMENT[4:])):
            if not value:
                continue
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise IbmUnavailable(f"{name}={value!r}: not an http:// or https:// address")
            if parts.scheme == "http" and not is_loopback(parts.hostname):
                raise IbmUnavailable(
                    f"{name}={value!r}: the API key goes over https:// only, or to this machine"
                )
        if self.url is not None and not self.is_ibm:
            missing = [n for n in ENVIRONMENT[4:] if not env.get(n)]
            if missing:
                raise IbmUnavailable(
                    f"QISKIT_IBM_URL={self.url!r} is not IBM Quantum's: set {', '.join(missing)} too (the "
                    "client otherwise makes their hosts up from the URL's, and after IAM fails sends the key "
                    "itself)"
                )

    def public(self) -> dict[str, Any]:
        """What a record keeps of them (a later process collects the job with the same ones)."""
        return {"channel": self.channel, "instance": self.instance, "url": self.url}
