"""How circuits are sent to an IBM device (our interface over the client's SamplerV2, with dynamical
decoupling and twirling set off explicitly and nothing else set), and what was sent: the body of each job
the client posted, read back from the client's own HTTP session as the response arrives."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from qiskit import QuantumCircuit


class _Bodies:
    """The body of each job the client posted, keyed by the id IBM gave it: read from the client's own
    HTTP session as each response arrives, so ``execution.sent`` states what went, not what was meant."""

    def __init__(self) -> None:
        self.by_job: dict[str, dict[str, Any]] = {}
        self.hooked = False

    def attach(self, service: Any) -> None:
        clients = [
            getattr(service, "_active_api_client", None),
            *getattr(service, "_api_clients", {}).values(),
        ]
        for client in clients:
            session = getattr(client, "_session", None)
            hooks = getattr(session, "hooks", None)
            if isinstance(hooks, dict) and self._seen not in hooks.setdefault("response", []):
                hooks["response"].append(self._seen)
                self.hooked = True

    def _seen(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        request = response.request
        if request.method == "POST" and urlsplit(request.url).path.endswith("/jobs") and response.ok:
            with contextlib.suppress(Exception):  # a body it cannot read is no body: the job is not sealed
                body = request.body.decode("utf-8") if isinstance(request.body, bytes) else request.body
                self.by_job[str(response.json()["id"])] = json.loads(body)
        return response


class IbmSampler:
    """How circuits are sent to an IBM device: SamplerV2 today, with dynamical decoupling and twirling set
    off explicitly and nothing else set (qiskit-ibm-runtime deprecates SamplerV2 in favour of
    ``executor_sampler.Sampler``, which sends another program, ``executor``: replacing this class, and adding
    §8.3's row for what it sends, is all that changes)."""

    program_id = "sampler"

    def __init__(self, backend: Any) -> None:
        from qiskit_ibm_runtime import SamplerV2
        from qiskit_ibm_runtime.options.utils import Unset

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*SamplerV2.*")
            self._sampler = SamplerV2(mode=backend)
        options = self._sampler.options
        options.dynamical_decoupling.enable = False
        options.twirling.enable_gates = False
        options.twirling.enable_measure = False
        # The job's body holds `log_level` unless it is unset; the option's type has no "unset" for it, so
        # it is unset under the validation: the body is then exactly backend, params and program_id.
        object.__setattr__(options.environment, "log_level", Unset)

    def settings(self) -> dict[str, Any]:
        """What the options set, as the job's body holds them (JSON Pointers)."""
        options = self._sampler.options
        return {
            "/params/options/dynamical_decoupling/enable": options.dynamical_decoupling.enable,
            "/params/options/twirling/enable_gates": options.twirling.enable_gates,
            "/params/options/twirling/enable_measure": options.twirling.enable_measure,
        }

    def run(self, isa_circuits: Sequence[QuantumCircuit], shots: int) -> Any:
        """One job of these ISA circuits, ``shots`` each: the client's job (``job_id()``, ``status()``,
        ``result()``, ``cancel()``)."""
        return self._sampler.run(list(isa_circuits), shots=shots)

    @staticmethod
    def counts(result: Any, circuit: QuantumCircuit, index: int = 0) -> dict[str, int]:
        """The counts of pub ``index`` from its shots: every classical register's bits joined, keyed with
        the highest classical bit first."""
        bits = [b for creg in circuit.cregs for b in creg]
        if bits != list(circuit.clbits):
            raise ValueError("the circuit's classical registers do not hold its bits once each, in order")
        pub = result[index]
        return {
            k: int(v) for k, v in pub.join_data(names=[c.name for c in circuit.cregs]).get_counts().items()
        }


def _is_transport(e: Exception) -> bool:
    import requests
    from qiskit_ibm_runtime.api.exceptions import RequestsApiError

    if isinstance(e, requests.exceptions.RequestException):
        return True
    return isinstance(e, RequestsApiError) and getattr(e, "status_code", -1) in (-1, 500, 502, 503, 504)
