"""The client side of ``wai.quantum.provider/1``: six operations over a transport (§3, §5).

    client = ProviderClient.reference("ref")    # or .over_http(name, url) / .over_process(name, argv)
    description = client.describe()
    estimate = client.estimate(program, 1000)          # shown before anything is submitted (§7)
    job = client.submit(program, 1000, seed=1)
    client.status(job); client.result(job, 1000); client.cancel(job)

Each operation builds its message (``protocol``, ``op``, the person's ``settings``), exchanges it, and
reads the answer. Whatever goes wrong is a :class:`~qsolve.providers.errors.ProviderError` naming the
provider and the operation: an ``"ok": false`` answer with the provider's code (§3; a code this text
does not know is ``internal``), an answer that breaks the protocol ``protocol``, a transport that fails
``transport``, no answer in time ``timeout``, and a message the client would not send ``invalid``.

The client knows the credential and takes it out of everything the provider says (answers, errors,
what the transport reports), since a provider may echo it; it never appears in what the client raises
or returns.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qsolve.providers.errors import PROVIDER_CODES, ProviderError, redact, redact_value
from qsolve.providers.messages import (
    AnswerRefused,
    CancelAnswer,
    CancelRequest,
    DescribeRequest,
    Description,
    Estimate,
    EstimateRequest,
    ProviderAnswerError,
    Request,
    ResultAnswer,
    ResultRequest,
    Status,
    StatusRequest,
    SubmitRequest,
    read_cancel,
    read_description,
    read_envelope,
    read_estimate,
    read_result,
    read_status,
    read_submit,
    unknown_estimate,
)
from qsolve.providers.transport import Transport, TransportError


def _reveal(credential: Any) -> str | None:
    """A credential given as a string, or as a secret that reveals one (``credentials.Secret``)."""
    if credential is None:
        return None
    if hasattr(credential, "reveal"):
        credential = credential.reveal()
    return str(credential) or None


class ProviderClient:
    """A provider the person brought, under the name they gave it."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        settings: Mapping[str, Any] | None = None,
        credential: Any = None,
        timeout: float = 60,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be above 0 seconds")
        self.name = name
        self.transport = transport
        self.settings = dict(settings) if settings is not None else None
        self.timeout = float(timeout)
        given = (_reveal(credential), _reveal(getattr(transport, "credential", None)))
        self._secrets = tuple(dict.fromkeys(s for s in given if s))
        #: the operations whose answer quoted the credential (taken out before anyone saw it; §3)
        self.quoted: list[str] = []

    def __repr__(self) -> str:
        return f"ProviderClient({self.name!r}, {self.transport!r})"

    # ---- building one --------------------------------------------------------------------------

    @classmethod
    def over_http(
        cls,
        name: str,
        url: str,
        *,
        credential: Any = None,
        settings: Mapping[str, Any] | None = None,
        timeout: float = 60,
        verify: bool | str = True,
    ) -> ProviderClient:
        """A provider at ``url`` (§2.1); a credential over ``http://`` to another machine is refused."""
        from qsolve.providers.over_http import HttpTransport

        secret = _reveal(credential)
        try:
            transport = HttpTransport(url, credential=secret, verify=verify)
        except TransportError as exc:
            raise ProviderError(name, "connect", exc.code, str(exc), secrets=(secret,)) from None
        return cls(name, transport, settings=settings, credential=secret, timeout=timeout)

    @classmethod
    def over_process(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        credential: Any = None,
        settings: Mapping[str, Any] | None = None,
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        cwd: str | Path | None = None,
        log_path: str | Path | None = None,
    ) -> ProviderClient:
        """A provider that is the program ``argv`` (§2.2), started at the first message, in the
        allowlisted environment of :func:`~qsolve.providers.program_env.provider_environment`."""
        from qsolve.providers.over_process import ProcessTransport

        secret = _reveal(credential)
        try:
            transport = ProcessTransport(
                argv, credential=secret, env=env, pass_env=pass_env, cwd=cwd, log_path=log_path
            )
        except TransportError as exc:
            raise ProviderError(name, "connect", exc.code, str(exc), secrets=(secret,)) from None
        return cls(name, transport, settings=settings, credential=secret, timeout=timeout)

    @classmethod
    def reference(cls, name: str = "reference", *args: str, timeout: float = 60) -> ProviderClient:
        """The reference provider (:mod:`qsolve.providers.reference`) as a local process."""
        argv = [sys.executable, "-m", "qsolve.providers.reference", "--stdio", *args]
        return cls.over_process(name, argv, timeout=timeout)

    # ---- the six operations (§5) ----------------------------------------------------------------

    def describe(self) -> Description:
        answer = self._call("describe", DescribeRequest)
        return self._read("describe", read_description, answer)

    def estimate(self, program: Mapping[str, Any], shots: int) -> Estimate:
        """The provider's estimate; one of none of §5.2's forms is ``refused``, a cost unknown."""
        answer = self._call("estimate", EstimateRequest, program=dict(program), shots=shots)
        return self._read("estimate", read_estimate, answer)

    def cost(self, program: Mapping[str, Any], shots: int) -> Estimate:
        """:meth:`estimate`, with a provider that does not estimate (``unsupported``) read as a cost
        unknown (§5.2, §7) rather than raised."""
        try:
            return self.estimate(program, shots)
        except ProviderError as exc:
            if exc.code != "unsupported":
                raise
            return unknown_estimate(f"the provider gives no estimate: {exc.detail}")

    def submit(self, program: Mapping[str, Any], shots: int, seed: int | None = None) -> str:
        """Submit the job; its id."""
        answer = self._call("submit", SubmitRequest, program=dict(program), shots=shots, seed=seed)
        return self._read("submit", read_submit, answer)

    def status(self, job: str) -> Status:
        answer = self._call("status", StatusRequest, job=job)
        return self._read("status", read_status, answer)

    def result(self, job: str, shots: int, *, bits: int | None = None) -> ResultAnswer:
        """The job's counts, held to the ``shots`` it asked (and to ``bits`` outcomes, when given)."""
        answer = self._call("result", ResultRequest, job=job)
        return self._read("result", lambda a: read_result(a, shots, bits=bits), answer)

    def cancel(self, job: str) -> CancelAnswer:
        answer = self._call("cancel", CancelRequest, job=job)
        return self._read("cancel", read_cancel, answer)

    def raw(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``message`` as it is and return the answer as it came, the credential taken out
        (the conformance checker's malformed messages). Only the transport's failures raise."""
        op = message.get("op")
        return self._exchange(op if isinstance(op, str) and op else "raw", dict(message))

    # ---- the exchange ---------------------------------------------------------------------------

    def error(self, op: str, code: str, detail: str) -> ProviderError:
        """A ProviderError of this provider, the credential taken out of it."""
        return ProviderError(self.name, op, code, detail, secrets=self._secrets)

    def _call(self, op: str, request: type[Request], **fields: Any) -> dict[str, Any]:
        try:
            message = request(settings=self.settings, **fields).message()
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            raise self.error(op, "invalid", f"the message was not sent: {problems}") from None
        answer = self._exchange(op, message)
        try:
            return read_envelope(answer)
        except ProviderAnswerError as exc:
            if exc.code in PROVIDER_CODES:
                raise self.error(op, exc.code, exc.message) from None
            raise self.error(op, "internal", f"(code {exc.code!r}) {exc.message}") from None
        except AnswerRefused as exc:
            raise self.error(op, "protocol", exc.reason) from None

    def _exchange(self, op: str, message: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = self.transport.exchange(message, self.timeout)
        except TransportError as exc:
            raise self.error(op, exc.code, str(exc) or type(exc).__name__) from None
        except (TypeError, ValueError) as exc:  # a message that is not JSON (NaN, an object of Python's)
            raise self.error(op, "invalid", f"the message was not sent: it is not JSON: {exc}") from None
        except OSError as exc:  # a pipe or socket the transport did not expect to fail
            raise self.error(op, "transport", f"{type(exc).__name__}: {exc}") from None
        redacted = redact_value(answer, self._secrets)
        if redacted != answer:
            self.quoted.append(op)
        return redacted

    def _read(self, op: str, reader: Any, answer: dict[str, Any]) -> Any:
        try:
            return reader(answer)
        except AnswerRefused as exc:
            raise self.error(op, "protocol", exc.reason) from None

    # ---- ending ---------------------------------------------------------------------------------

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> ProviderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log(self) -> str | None:
        """The provider's own log, when its transport keeps one (a process's standard error)."""
        log = getattr(self.transport, "log", None)
        return redact(log(), self._secrets) if callable(log) else None
