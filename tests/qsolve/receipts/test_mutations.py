"""A generated table of single mutations of a valid receipt, each giving exactly the reasons §8.4 names.

Every member of the request and the result (less its receipt), at every depth, is removed, set to
``null``, retyped and changed; each mutated job is verified re-sealed (the rules' reasons alone) and not
re-sealed (the same reasons and ``digest_mismatch``: the signature over the stated digest still holds).
``EXPECTED`` says, by the spec, what each gives; the first pattern that matches a path wins, and every
pattern must match some path, so the table covers the result whole and nothing else.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import pytest

from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.seal import seal
from qsolve.receipts.verifier import verify
from tests.qsolve.receipts.builders import KEY, earlier_result, request, result

KINDS = ("remove", "null", "retype", "change")
ALL = "all"
Expect = dict[str, frozenset[str]]


def _e(default: set[str] | None = None, **kinds: set[str]) -> Expect:
    out = {k: frozenset(kinds.get(k, default if default is not None else set())) for k in KINDS}
    return out


PM = {"provider_members"}

# Pattern -> reasons for each kind of mutation (remove, null, retype, change). First match wins.
EXPECTED: list[tuple[str, Expect]] = [
    # the request
    ("request.provider", _e({"request_provider"})),
    ("request.shots", _e({"request_shots"})),
    ("request.qasm", _e()),
    # the method and the class
    ("result.method", _e({"provider_class"})),  # another method's result with a device's class
    ("result.accuracy", _e({"provider_class"})),
    ("result.accuracy.class", _e({"provider_class"})),
    ("result.accuracy.note", _e()),
    # the provider
    ("result.provider", _e({"provider_class", "request_provider", "provider_members"})),
    ("result.provider.name", _e({"request_provider", "provider_members"}, change={"request_provider"})),
    ("result.provider.kind", _e(PM, change=set())),  # a kind this verifier does not know has no rows
    ("result.provider.protocol", _e(PM, change=set())),
    ("result.provider.device", _e(PM, change=set())),
    ("result.provider.provenance", _e({"provider_class", "provider_members"})),
    ("result.provider.qubits", _e(PM, change=set())),
    ("result.provider.basis", _e(PM)),
    ("result.provider.describe", _e(PM)),
    ("result.calibration", _e(PM, null=set(), change=set())),
    # the program sent
    ("result.compiled", _e(PM)),
    ("result.compiled.basis", _e(PM)),
    ("result.compiled.qasm3", _e(PM, change={"compiled_program"})),
    ("result.compiled.program", _e(PM)),  # "-x" makes it no hex: a member of the wrong type
    ("result.compiled.hash", _e()),
    ("result.compiled.native_gates", _e(PM, change=set())),
    ("result.compiled.two_qubit_gates", _e(PM, change=set())),
    ("result.compiled.swaps", _e(PM, change=set())),
    ("result.compiled.layout", _e(PM)),
    ("result.compiled.layout.*", _e(PM, remove=set(), change=set())),
    ("result.compiled.final_layout", _e(PM)),
    ("result.compiled.final_layout.*", _e(PM, remove=set(), change=set())),
    ("result.compiled.checked", _e(PM, change=set())),
    ("result.compiled.placement*", _e()),
    ("result.job", _e(PM)),
    ("result.job.id", _e(PM, change=set())),
    ("result.job.polls", _e(PM, change=set())),
    # the counts
    ("result.counts", _e({"counts"})),
    ("result.counts.*", _e({"counts"})),
    ("result.distinct_outcomes", _e({"counts"})),
    ("result.omitted_shots", _e({"counts"})),
    ("result.shots", _e({"counts", "request_shots"})),
    # where they come from, and how the device was asked to run them
    ("result.counts_source", _e({"counts_source"})),
    ("result.execution", _e({"execution"})),
    ("result.execution.*", _e({"execution"})),
    # the host's word, unchecked beyond its types
    ("result.ideal", _e(PM)),
    ("result.ideal.computed", _e(PM, change=set())),
    ("result.ideal.*", _e()),
    ("result.cost", _e(PM)),
    ("result.cost.free", _e(PM, change={"cost_confirmation"})),
    ("result.cost.confirmed", _e(PM, change={"cost_confirmation"})),
    ("result.cost.estimate", _e(PM)),
    ("result.cost.estimate.*", _e()),
    ("result.cost.charged", _e(PM, null=set())),
    ("result.cost.charged.*", _e(PM, change=set())),
    ("result.energy", _e(PM)),
    ("result.energy.unmetered", _e(PM, change=set())),
    ("result.engine", _e(PM)),
    ("result.engine.name", _e(PM)),  # the protocol's constant: wai-quantum
    ("result.engine.version", _e(PM, change=set())),
    ("result.schema", _e(PM)),
]

EARLIER = {"provider_class", "request_provider", "request_shots", "counts"}
# The earlier form reads no class from its provenance: its class is measured whatever ran it.
EARLIER_OVERRIDES: list[tuple[str, Expect]] = [
    ("result.provider", _e({"request_provider"})),
    ("result.provider.provenance", _e()),
]


def _paths(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            if path == ("result",) and k == "receipt":
                continue
            yield (*path, k)
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*path, i)
            yield from _paths(v, (*path, i))


def _retyped(v: Any) -> Any:
    if isinstance(v, bool):
        return "true"
    if isinstance(v, str):
        return 7
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, dict):
        return []
    if isinstance(v, list):
        return {}
    return None


def _changed(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, str):
        return v + "-x"
    if isinstance(v, int | float):
        return v + 1
    return None  # containers change through their members


def _mutate(job: dict[str, Any], path: tuple[Any, ...], kind: str) -> dict[str, Any] | None:
    job = copy.deepcopy(job)
    parent = job
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    old = parent[last]
    if kind == "remove":
        del parent[last]
    elif kind == "null":
        parent[last] = None
    elif kind == "retype":
        parent[last] = _retyped(old)
    else:
        new = _changed(old)
        if new is None:
            return None
        parent[last] = new
    return job


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def _expected(path: str, kind: str, table: list[tuple[str, Expect]]) -> frozenset[str]:
    for pattern, expect in table:
        if fnmatchcase(path, pattern):
            return expect[kind]
    raise AssertionError(f"no expectation for {path}")


def _cases(base: dict[str, Any], table: list[tuple[str, Expect]], codes: set[str] | None) -> list[Any]:
    out = []
    for path in _paths(base, ()):
        if path[0] not in ("request", "result") or len(path) < 2:
            continue
        for kind in KINDS:
            mutated = _mutate(base, path, kind)
            if mutated is None:
                continue
            want = _expected(_dotted(path), kind, table)
            if codes is not None:
                want = want & codes
            out.append(pytest.param(mutated, want, id=f"{_dotted(path)}:{kind}"))
    return out


BASE = {"request": request(), "result": result()}
BASE_EARLIER = {"request": request(), "result": earlier_result()}
STATED_CASES = _cases(BASE, EXPECTED, None)
EARLIER_CASES = _cases(BASE_EARLIER, EARLIER_OVERRIDES + EXPECTED, EARLIER)


def _verify_both_ways(mutated: dict[str, Any], base: dict[str, Any]) -> tuple[set[str], set[str]]:
    resealed = seal(mutated["request"], mutated["result"], KEY)
    kept = copy.deepcopy(mutated)
    kept["result"]["receipt"] = seal(base["request"], base["result"], KEY)["result"]["receipt"]
    return set(verify(json.dumps(resealed)).reasons), set(verify(json.dumps(kept)).reasons)


def test_the_bases_are_valid() -> None:
    for base in (BASE, BASE_EARLIER):
        assert verify(json.dumps(seal(base["request"], base["result"], KEY))).valid


def test_every_pattern_is_used_and_every_member_is_covered() -> None:
    used = {pattern for pattern, _ in EXPECTED}
    paths = [_dotted(p) for p in _paths(BASE, ()) if len(p) >= 2]
    for pattern in used:
        assert any(fnmatchcase(p, pattern) for p in paths), f"{pattern} matches nothing"
    assert len(STATED_CASES) > 300


@pytest.mark.parametrize(("mutated", "want"), STATED_CASES)
def test_a_single_mutation_of_a_stated_result(mutated: dict[str, Any], want: frozenset[str]) -> None:
    resealed, kept = _verify_both_ways(mutated, BASE)
    assert resealed == set(want)
    assert kept == set(want) | {"digest_mismatch"}


@pytest.mark.parametrize(("mutated", "want"), EARLIER_CASES)
def test_a_single_mutation_of_an_earlier_form_result(mutated: dict[str, Any], want: frozenset[str]) -> None:
    resealed, kept = _verify_both_ways(mutated, BASE_EARLIER)
    assert resealed == set(want)
    assert kept == set(want) | {"digest_mismatch"}


# --- members added, and chosen changes the generated table does not make ---------------------------


def _with(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    job = copy.deepcopy(base or BASE)
    *parents, last = path.split(".")
    target = job
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[last] = value
    return job


CHOSEN = [
    # the provider's kind and provenance against the rows of §8.3
    ("result.provider.kind", "http", {"execution"}),  # a client's word on an open kind
    ("result.provider.kind", "process", {"execution"}),
    ("result.provider.kind", "cloud-tasks", {"execution", "provider_members"}),  # qubit_names required
    ("result.provider.kind", "prx-circuits", {"counts_source", "execution", "provider_members"}),
    ("result.provider.kind", "native-turns", {"counts_source", "execution"}),
    ("result.provider.kind", "", PM),
    ("result.provider.provenance", "simulator", {"provider_class"}),
    ("result.provider.provenance", "emulator: a noisy model of the device", {"provider_class"}),
    ("result.provider.provenance", "silicon: the real one", {"provider_class", "provider_members"}),
    ("result.provider.qubits", 0, PM),
    ("result.provider.qubits", 156.0, set()),  # a whole number however written
    ("result.provider.qubits", 1.5, PM),
    ("result.provider.basis", "prxcz", PM),
    ("result.provider.describe", "A" * 64, PM),
    ("result.provider.describe", "0" * 64, set()),
    ("result.provider.protocol", "", PM),
    ("result.compiled.basis", "prxcz", PM),
    ("result.compiled.program", "0" * 64, {"compiled_program"}),
    ("result.compiled.swaps", -1, PM),
    ("result.compiled.layout", [0, -1], PM),
    ("result.compiled.layout", [0, 1.0], set()),
    ("result.job.id", "", PM),
    ("result.accuracy.class", "simulated", {"provider_class"}),
    ("result.accuracy.class", "exact", {"provider_class"}),
    ("result.accuracy.approximate", True, {"provider_class"}),  # only on a simulated class
    ("result.accuracy.approximate", False, {"provider_class"}),  # present and not true
    ("result.request_shots_unrelated", 1, set()),  # a member no rule reads
    # counts
    ("result.accepted_shots", 1000, set()),
    ("result.accepted_shots", 999, {"counts"}),
    ("result.accepted_shots", None, {"counts"}),
    ("result.accepted_shots", 0, {"counts"}),
    ("result.counts.00", 488.0, set()),
    ("result.counts.00", 0, {"counts"}),
    ("result.counts.011", 1, {"counts"}),  # outcomes of one length
    ("result.counts.0x", 1, {"counts"}),
    ("result.distinct_outcomes", 4.0, set()),
    ("result.shots", 1000.0, set()),
    ("request.shots", 1000.0, set()),  # by value
    ("request.shots", None, {"request_shots"}),  # 1024 when it gives null
    ("result.counts_source", "vendor_counts", {"counts_source"}),
    ("result.counts_source", "probabilities", {"counts_source"}),
    ("result.counts_source", "ensemble", {"counts_source"}),
    # execution
    ("result.execution.twirling", "on", {"execution"}),
    ("result.execution.stated_by", "nobody", {"execution"}),  # its steps would all be unknown
    ("result.execution.verbatim", True, {"execution"}),
    ("result.execution.note", "the client's own words", set()),
    ("result.execution.note", None, {"execution"}),
    ("result.execution.extra", 1, {"execution"}),
    ("result.execution.sent.settings", {}, {"execution"}),  # off said without a setting
    (
        "result.execution",
        {
            "stated_by": "nobody",
            **dict.fromkeys(("mitigation", "twirling", "decoupling", "remapping", "optimisation"), "unknown"),
            "verbatim": None,
        },
        set(),
    ),
    # cost and confirmation
    ("result.cost.confirmed_by", "submit", set()),
    ("result.cost.confirmed_by", None, {"cost_confirmation"}),
    ("result.cost.confirmed_by", "person", {"cost_confirmation"}),
    ("result.cost.charged", None, set()),
    ("result.cost.charged", {"amount": 1.6, "currency": "USD"}, PM),
    ("result.energy.service_kwh", 0.002, PM),
    ("result.energy.service_kwh_is", "the provider's own figure", set()),
    ("result.calibration", None, set()),
    ("result.engine.name", "qsolve", PM),
    ("result.schema", "wai.quantum.job-result/2", PM),
    # §8.7, for a job with no contract
    ("result.planner", {"format": "wai.quantum.planner/1"}, {"planner_form"}),
    ("result.planner", None, {"planner_form"}),
    ("result.shadow", {"ran": False}, {"shadow"}),
    ("result.stopped", {"joules": 1}, {"stopped"}),
    ("request.contract", None, set()),  # null is no contract
]


SAME_TEXT = [
    ("result.provider.qubits", 156.0),
    ("result.compiled.layout", [0, 1.0]),
    ("result.counts.00", 488.0),
    ("result.distinct_outcomes", 4.0),
    ("result.shots", 1000.0),
    ("request.shots", 1000.0),
]
"""Changes of spelling only: ``1000.0`` has the canonical text of ``1000``, so the seal still holds (§8.2)."""


@pytest.mark.parametrize(("path", "value", "want"), CHOSEN, ids=[f"{p}={v!r}"[:60] for p, v, _ in CHOSEN])
def test_a_chosen_change(path: str, value: Any, want: set[str]) -> None:
    job = _with(path, value)
    resealed, kept = _verify_both_ways(job, BASE)
    assert resealed == want
    same_text = canonical_bytes(job) == canonical_bytes(BASE)
    assert same_text == any(path == p and json.dumps(value) == json.dumps(v) for p, v in SAME_TEXT)
    assert kept == want | (set() if same_text else {"digest_mismatch"})


def test_planner_is_reported_alone_of_section_8_7() -> None:
    job = _with("result.planner", {}, _with("result.shadow", {}, _with("result.stopped", {})))
    resealed, _ = _verify_both_ways(job, BASE)
    assert resealed == {"planner_form"}
