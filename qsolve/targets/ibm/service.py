"""The client's service, opened with the key passed to it (never saved) and the settings' URLs (a
resolver appends ``/api/v1`` to ``QISKIT_IBM_URL``: the client's own rewrites the host and drops the port),
and the device's backend, refused when its gates are not those qsolve sends."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

from qsolve.providers.credentials import Secret
from qsolve.targets.ibm.device import _basis_check
from qsolve.targets.ibm.errors import IbmUnavailable, _scrub
from qsolve.targets.ibm.settings import IbmSettings


class _GivenKey(logging.Filter):
    """The client's warning that it was given a key rather than a saved account: that is how qsolve
    always opens it (a saved account is never read), so the warning only misleads the person."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Loading account with the given token")


_QUIET = _GivenKey()

#: the client's opt-out of its usage header: without it, each request walks the whole Python stack
#: (``inspect.stack()``, which reads the source of every frame's module) to name its caller, most of a
#: job's time on a busy machine (60 of 90 s of a run of two jobs, profiled); an operator's own value is kept
USAGE_DATA_OPT_OUT = "USAGE_DATA_OPT_OUT"


@contextlib.contextmanager
def _no_wire_dumps():
    """IBM's cloud SDK, built while its logger is at DEBUG, sets ``http.client``'s debug level for the
    whole process and replaces that module's ``print`` with one that joins its arguments as text: every
    later HTTP exchange of the process is dumped to a log (headers and all), and one answered ``100
    Continue`` fails (``sequence item 1: expected str instance, list found``: botocore's uploads to object
    storage, found in CI). The SDK's logger stays above DEBUG while the service is built, and
    ``http.client`` is left as it was."""
    import http.client

    sdk = logging.getLogger("ibm_cloud_sdk_core.base_service")
    level, debuglevel = sdk.level, http.client.HTTPConnection.debuglevel
    printer = http.client.__dict__.get("print")
    if sdk.isEnabledFor(logging.DEBUG):
        sdk.setLevel(logging.INFO)
    try:
        yield
    finally:
        sdk.setLevel(level)
        http.client.HTTPConnection.debuglevel = debuglevel
        if printer is None:
            http.client.__dict__.pop("print", None)
        else:
            http.client.print = printer


def connect(device: str, settings: IbmSettings, secret: Secret, where: str) -> tuple[Any, Any]:
    """The client's service, with the key passed to it (never saved), and the device's backend."""
    from qiskit.providers.exceptions import QiskitBackendNotFoundError
    from qiskit_ibm_runtime import QiskitRuntimeService
    from qiskit_ibm_runtime.accounts.exceptions import InvalidAccountError

    name = f"ibm:{device}"
    os.environ.setdefault(USAGE_DATA_OPT_OUT, "True")  # read by the client at each request
    logging.getLogger("qiskit_ibm_runtime.qiskit_runtime_service").addFilter(_QUIET)  # once: a set
    extra: dict[str, Any] = {}
    if settings.url is not None:
        extra = {"url": settings.url, "url_resolver": lambda u, i, p, c: f"{u}/api/v1"}
    try:
        with _no_wire_dumps():
            service = QiskitRuntimeService(
                channel=settings.channel, token=secret.reveal(), instance=settings.instance or "auto", **extra
            )
    except InvalidAccountError as e:
        raise IbmUnavailable(
            f"{name}: opening the device: IBM Quantum did not accept the API key from {where}: "
            f"{_scrub(str(e), secret)}"
        ) from None
    except Exception as e:
        raise IbmUnavailable(
            f"{name}: opening the device: IBM Quantum at {settings.service} could not be used: "
            f"{_scrub(f'{type(e).__name__}: {e}', secret)}",
            reason="backend_unavailable",
        ) from None
    try:
        backend = service.backend(device)
    except QiskitBackendNotFoundError:
        known = ""
        with contextlib.suppress(Exception):
            known = ", ".join(sorted(b.name for b in service.backends()))
        raise IbmUnavailable(
            f"{name}: opening the device: the instance has no device named {device}"
            + (f" (it has: {known})" if known else "")
        ) from None
    except Exception as e:
        raise IbmUnavailable(
            f"{name}: opening the device: {_scrub(f'{type(e).__name__}: {e}', secret)}",
            reason="backend_unavailable",
        ) from None
    _basis_check(name, backend)
    return service, backend


def unavailable(backend: Any, secret: Secret | None) -> str | None:
    """Why the device takes no job now (its status unreadable, or not operational), or None."""
    try:
        status = backend.status()
    except Exception as e:
        return f"the device's status could not be read ({_scrub(str(e), secret)})"
    if not status.operational:
        said = f" ({status.status_msg})" if status.status_msg else ""
        return f"the device is not available: IBM Quantum says it is not operational{said}"
    return None
