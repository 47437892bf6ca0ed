"""A set's receipt (§8.6): its items, the Merkle tree exactly as specified, and its reasons."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from blake3 import blake3

from qsolve.receipts.seal import seal
from qsolve.receipts.sets import item_leaf, merkle_path, merkle_root, path_length, root_from_path, seal_set
from qsolve.receipts.verifier import verify
from tests.qsolve.receipts.builders import KEY, OTHER_KEY, request, result

# --- the tree, written out again from §8.6's words -------------------------------------------------


def _leaf_hash(leaf: bytes) -> bytes:
    return blake3(b"moq-jwp:merkle-leaf" + b"\x01" + leaf).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return blake3(b"moq-jwp:merkle-node" + b"\x01" + left + right).digest()


def _root(leaves: list[bytes]) -> bytes:
    level = [_leaf_hash(x) for x in leaves]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [_node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


@pytest.mark.parametrize("n", range(1, 12))
def test_the_tree_and_its_paths(n: int) -> None:
    leaves = [bytes([i]) * 32 for i in range(n)]
    root = merkle_root(leaves)
    assert root == _root(leaves)
    assert path_length(n) == (0 if n == 1 else math.ceil(math.log2(n)))
    for i, leaf in enumerate(leaves):
        path = merkle_path(leaves, i)
        assert len(path) == path_length(n)
        assert root_from_path(leaf, i, path) == root
        if path:
            assert root_from_path(leaf, i, path[:-1]) != root


def test_the_root_of_one_leaf_is_its_hash_and_the_root_alone_does_not_fix_the_count() -> None:
    assert merkle_root([b"x" * 32]) == _leaf_hash(b"x" * 32)
    a, b, c = (bytes([i]) * 32 for i in range(3))
    assert merkle_root([a, b, c]) == merkle_root([a, b, c, c])  # hence `count`, sealed in the head


# --- sets ------------------------------------------------------------------------------------------

BASE_REQUEST = {"provider": "ibm-fez", "shots": 1000, "dry_run": False}


def _programs_set(seed: Any = None, **kw: Any) -> dict[str, Any]:
    req: dict[str, Any] = {**BASE_REQUEST, "programs": ["qasm a", {"qasm": "qasm b", "shots": 500}, "qasm c"]}
    items: list[tuple[dict[str, Any], Any]] = [
        ({"provider": "ibm-fez", "shots": 1000, "qasm": "qasm a"}, result()),
        ({"provider": "ibm-fez", "shots": 500, "qasm": "qasm b"}, "the device was busy"),
        ({"provider": "ibm-fez", "shots": 1000, "qasm": "qasm c"}, result()),
    ]
    if seed is not None:
        req["seed"] = seed
        for item_request, _ in items:
            item_request["seed"] = seed
    return seal_set(req, {"method": "set", "note": "three programs"}, items, KEY, **kw)


def _sweep_set() -> dict[str, Any]:
    req = {
        "qasm": "rz(theta) q; rx(phi) q;",
        "shots": 1000,
        "provider": "ibm-fez",
        "sweep": {"theta": [0.1, 0.2], "phi": [1, 2, 3]},
    }
    items = [
        ({"provider": "ibm-fez", "shots": 1000, "qasm": f"rz({t}) q; rx({p}) q;"}, result())
        for t in (0.1, 0.2)
        for p in (1, 2, 3)
    ]
    return seal_set(req, {"method": "set"}, items, KEY)


def _reasons(job: Any) -> set[str]:
    return set(verify(json.dumps(job).encode()).reasons)


def _resealed(job: dict[str, Any]) -> dict[str, Any]:
    """The set's head and request sealed again as they now stand, its items kept."""
    return seal(job["request"], job["result"], KEY)


def test_a_set_of_programs_and_a_sweep_verify() -> None:
    for job in (_programs_set(), _sweep_set(), _programs_set(issued_ms=1_700_000_000_000)):
        v = verify(json.dumps(job))
        assert v.valid, v.reasons
        assert v.provider is None and v.set_ is not None and len(v.set_["items"]) == job["result"]["count"]


def test_the_set_receipt_seals_the_head_and_the_items_are_bound_by_the_root() -> None:
    job = _programs_set()
    job["result"]["note"] = "changed"
    assert _reasons(job) == {"digest_mismatch"}
    job = _programs_set()
    job["result"]["items"][0]["status"] = "done"  # an item's own unsealed member
    job["result"]["items"][0]["result"]["receipt"]["extra"] = 1  # beyond the five, ignored
    assert _reasons(job) == set()


def test_an_item_with_an_error_and_one_whose_result_is_that_error_have_one_leaf() -> None:
    req = {"qasm": "x"}
    assert item_leaf({"request": req, "error": "e"}) == item_leaf({"request": req, "result": {"error": "e"}})


@pytest.mark.parametrize(
    "break_items",
    [
        lambda items: items.clear(),
        lambda items: items[0].update(index=1),
        lambda items: items[0].update(index="0"),
        lambda items: items[1].update(result={}),  # both result and error
        lambda items: items[0].pop("result"),  # neither
        lambda items: items[0].update(result=None),
        lambda items: items[1].update(error=None),  # present whatever its value: not a string
        lambda items: items[0].update(request=[]),
        lambda items: items[0].update(path=["AB" * 32]),
        lambda items: items[0].pop("path"),
        lambda items: items.__setitem__(0, "item"),
    ],
)
def test_items_not_of_their_form_give_set_items_alone(break_items: Any) -> None:
    job = _programs_set()
    break_items(job["result"]["items"])
    assert _reasons(_resealed(job)) == {"set_items"}


def test_items_that_are_not_an_array_give_set_items() -> None:
    job = _programs_set()
    job["result"]["items"] = {}
    assert _reasons(_resealed(job)) == {"set_items"}
    del job["result"]["items"]
    assert _reasons(_resealed(job)) == {"set_items"}


def test_an_index_is_a_whole_number_however_written() -> None:
    job = _programs_set()
    job["result"]["items"][1]["index"] = 1.0
    assert _reasons(_resealed(job)) == set()


def test_count_is_the_number_of_items() -> None:
    job = _programs_set()
    job["result"]["count"] = 4
    assert _reasons(_resealed(job)) == {"set_items"}
    job["result"]["count"] = 3.0
    assert _reasons(_resealed(job)) == set()
    job["result"]["count"] = True
    assert _reasons(_resealed(job)) == {"set_items"}


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(programs=["qasm a", "qasm b", "qasm c"]),  # item 1 was asked 500 shots
        lambda r: r["programs"].append("qasm d"),
        lambda r: r.update(shots=999),
        lambda r: r.update(sweep={"theta": [1]}),  # both
        lambda r: r.pop("programs"),  # neither
        lambda r: r.update(programs="qasm a"),
        lambda r: r["programs"].__setitem__(0, 7),
    ],
)
def test_items_that_are_not_the_ones_the_request_gives(change: Any) -> None:
    job = _programs_set()
    change(job["request"])
    assert _reasons(_resealed(job)) == {"set_items"}


def test_requests_are_compared_as_json_values() -> None:
    job = _programs_set()
    job["request"]["shots"] = 1000.0
    job["request"] = dict(reversed(list(job["request"].items())))
    assert _reasons(_resealed(job)) == set()
    job = _sweep_set()
    job["request"]["programs"] = None  # a member that is null is none
    assert _reasons(_resealed(job)) == set()
    job["request"]["programs"] = []
    assert _reasons(_resealed(job)) == {"set_items"}  # both


def test_a_sweep_gives_the_product_of_its_values_lengths() -> None:
    job = _sweep_set()
    job["request"]["sweep"]["phi"].append(4)
    assert _reasons(_resealed(job)) == {"set_items"}
    job = _sweep_set()
    job["request"]["sweep"]["psi"] = []
    assert _reasons(_resealed(job)) == {"set_items"}
    job = _sweep_set()
    job["request"]["qasm"] = "another program"  # each item writes the program out at its point: not checked
    assert _reasons(_resealed(job)) == set()


def test_an_item_that_is_not_a_valid_job_gives_set_item() -> None:
    bad = result()
    bad["counts"]["00"] += 1  # a provider rule, under a valid seal
    req = {**BASE_REQUEST, "programs": ["a"]}
    job = seal_set(req, {}, [({"provider": "ibm-fez", "shots": 1000, "qasm": "a"}, bad)], KEY)
    v = verify(json.dumps(job))
    assert set(v.reasons) == {"set_item"} and v.set_["items"][0]["reasons"] == ["counts"]  # type: ignore[index]


def test_an_item_changed_after_sealing_breaks_its_receipt_and_the_root() -> None:
    job = _programs_set()
    job["result"]["items"][0]["result"]["shots"] = 1
    assert _reasons(job) == {"set_item", "set_root"}


def test_an_item_under_another_key_or_a_set_as_item_gives_set_item() -> None:
    job = _programs_set()
    item = job["result"]["items"][2]
    item["result"] = seal(item["request"], item["result"], OTHER_KEY)["result"]
    v = verify(json.dumps(job))
    assert set(v.reasons) == {"set_item"} and "another key" in v.set_["items"][2]["why"]  # type: ignore[index]
    inner = _programs_set()
    nested = seal_set(
        {**BASE_REQUEST, "programs": [inner["request"]]},
        {},
        [({**BASE_REQUEST, **inner["request"]} | {"dry_run": False}, inner["result"])],
        KEY,
    )
    assert "set_item" in _reasons(nested)


def test_an_item_is_compared_to_the_sets_key_member_as_it_stands() -> None:
    job = _programs_set()
    job["result"]["receipt"]["key"] = KEY.public_hex.upper()
    assert _reasons(job) == {"receipt_form", "set_item"}


def _say_more_than_sealed(job: dict[str, Any], which: int) -> str:
    """The text of a set whose seed 2^60 is written, at occurrence ``which``, as 2^60 + 1."""
    parts = json.dumps(job).split("1.152921504606847e+18")
    return "".join(
        p + ("" if i == len(parts) - 1 else str(2**60 + 1) if i == which else "1.152921504606847e+18")
        for i, p in enumerate(parts)
    )


def test_an_error_items_request_is_held_to_what_its_leaf_could_seal() -> None:
    job = _programs_set(seed=2.0**60)
    # occurrences: the set's request, then each item's request (and the first item's result's request)
    text = _say_more_than_sealed(job, 2)  # the error item's request
    assert json.loads(text)["result"]["items"][1]["request"]["seed"] == 2**60 + 1
    v = verify(text)
    assert set(v.reasons) == {"set_item"} and v.set_["items"][1]["reasons"] == ["inexact_number"]  # type: ignore[index]


def test_a_sets_own_request_is_held_to_inexact_number() -> None:
    text = _say_more_than_sealed(_programs_set(seed=2.0**60), 0)
    assert json.loads(text)["request"]["seed"] == 2**60 + 1
    assert set(verify(text).reasons) == {"inexact_number"}


def test_a_wrong_root_or_path_gives_set_root() -> None:
    job = _programs_set()
    job["result"]["root"] = "00" * 32
    assert _reasons(_resealed(job)) == {"set_root"}
    job["result"]["root"] = "not hex"
    assert _reasons(_resealed(job)) == {"set_root"}
    job = _programs_set()
    path = job["result"]["items"][0]["path"]
    path.append(path[-1])  # a path of another length does not lead to the root
    assert _reasons(job) == {"set_root"}
    job = _programs_set()
    job["result"]["items"][2]["path"][0] = "11" * 32
    assert _reasons(job) == {"set_root"}


def test_the_provider_rules_do_not_apply_to_a_head() -> None:
    job = _programs_set()
    job["result"].update(method="provider", accuracy={"class": "simulated"})
    assert _reasons(_resealed(job)) == set()


def test_a_set_item_needing_rules_not_run_here_keeps_the_set_from_being_valid() -> None:
    req = {**BASE_REQUEST, "programs": [{"qasm": "a", "intent": {"outcomes": ["0"]}}]}
    item_request = {"provider": "ibm-fez", "shots": 1000, "qasm": "a", "intent": {"outcomes": ["0"]}}
    job = seal_set(req, {}, [(item_request, {**result(), "verdict": {}})], KEY)
    v = verify(json.dumps(job))
    assert v.reasons == [] and not v.valid and [u.rules for u in v.unchecked] == ["§8.9"]


def test_a_set_is_placed_by_its_own_receipt() -> None:
    from qsolve.receipts.trust import HeldTo, TrustList

    job = _programs_set()
    other = TrustList.from_value(
        {"format": "wai.quantum.receipt-keys/1", "keys": [{"key": OTHER_KEY.public_hex}]}
    )
    assert set(verify(json.dumps(job), held=HeldTo(trust=other)).reasons) == {"key_untrusted"}
    mine = TrustList.from_value({"format": "wai.quantum.receipt-keys/1", "keys": [{"key": KEY.public_hex}]})
    assert verify(json.dumps(copy.deepcopy(job)), held=HeldTo(trust=mine)).valid


def test_a_job_request_is_not_a_set_item_request() -> None:
    assert "programs" not in request()
