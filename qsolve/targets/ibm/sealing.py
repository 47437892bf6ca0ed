"""The ``sampler-v2`` receipt's ``execution`` (quantum-provider-protocol §8.3): built from the body the
client posted (or, for a job collected by a later process, from what the sampler set when it was
recorded), and checked to be §8.3's ``sampler-v2`` row before anything is sealed; the ``protocol`` a
receipt names."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

from qsolve.targets.ibm.names import KIND

#: the settings this client sends, as JSON Pointers into the job's body, with their values (§8.3)
SETTINGS = {
    "/params/options/dynamical_decoupling/enable": False,
    "/params/options/twirling/enable_gates": False,
    "/params/options/twirling/enable_measure": False,
}
FIELDS = ("backend", "params", "program_id")


def execution_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """§8.3's ``execution`` stated by this client, built from the job's body as it was posted."""
    settings = {pointer: _at(body, pointer) for pointer in SETTINGS}
    settings = {k: v for k, v in settings.items() if v is not _ABSENT}

    def step(*pointers: str) -> str:
        values = [settings.get(p, _ABSENT) for p in pointers]
        if all(v is False for v in values):
            return "off"
        if any(v is True for v in values):
            return "on"
        return "default"

    return {
        "stated_by": "client",
        "mitigation": "default",
        "twirling": step("/params/options/twirling/enable_gates", "/params/options/twirling/enable_measure"),
        "decoupling": step("/params/options/dynamical_decoupling/enable"),
        "remapping": "default",
        "optimisation": "default",
        "verbatim": False,
        "sent": {"fields": sorted(body, key=lambda k: k.encode("utf-8")), "settings": settings},
    }


_ABSENT = object()


def _at(body: Any, pointer: str) -> Any:
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(body, Mapping) or token not in body:
            return _ABSENT
        body = body[token]
    return body


def is_the_row(execution: Mapping[str, Any], provenance: str) -> bool:
    """``execution`` is §8.3's ``sampler-v2`` row, as the verifier holds it."""
    from qsolve.receipts.execution import execution_breaks_rules, rows_for

    return not execution_breaks_rules(dict(execution)) and any(
        row.matches(dict(execution)) for row in rows_for(KIND, provenance.split(":", 1)[0])
    )


def _execution_from(sent: Mapping[str, Any]) -> dict[str, Any]:
    """The execution of a record whose posted body this process did not see (a job collected later): what
    the sampler set when the job was recorded, in the body's form."""
    body: dict[str, Any] = {name: {} for name in sent["fields"]}
    for pointer, value in sent["settings"].items():
        tokens = pointer.lstrip("/").split("/")
        node = body
        for token in tokens[:-1]:
            node = node.setdefault(token, {})
        node[tokens[-1]] = value
    return execution_of(body)


def _protocol() -> str:
    return f"qiskit-ibm-runtime {version('qiskit-ibm-runtime')} (IBM Quantum Platform REST API, SamplerV2)"
