"""The verifier (§8.4): the receipt's own reasons, the reasons reported alone, inexact numbers, the first
form, each built-in kind's rows, the counts' edge cases, and the rules it does not run."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from qsolve.receipts.first_form import first_form_bytes
from qsolve.receipts.seal import Form, digest, seal, sealed_part
from qsolve.receipts.verdict import ReadAtMost
from qsolve.receipts.verifier import SERVICE_LIMITS, VERIFY_LIMITS, count_values, verify
from tests.conftest import VECTORS
from tests.qsolve.receipts.builders import KEY, OTHER_KEY, earlier_result, request, result, sealed

SPECCHECK = json.loads((VECTORS / "ed25519" / "speccheck-cases.json").read_text())


def _text(job: Any) -> bytes:
    return json.dumps(job).encode()


def _reasons(job: Any, **kw: Any) -> set[str]:
    return set(verify(_text(job) if not isinstance(job, bytes | str) else job, **kw).reasons)


def _receipt_changed(**changes: Any) -> dict[str, Any]:
    job = sealed()
    receipt = job["result"]["receipt"]
    for name, value in changes.items():
        if value is _REMOVE:
            del receipt[name]
        else:
            receipt[name] = value
    return job


_REMOVE = object()


# --- the reasons reported alone --------------------------------------------------------------------


def test_unreadable_not_a_job_and_no_receipt_are_reported_alone() -> None:
    v = verify(b'{"request": {}, "result": {"a": 1, "a": 2}}')
    assert v.reasons == ["unreadable"] and "twice" in (v.why or "") and not v.valid
    for job in ([], {"request": {}}, {"request": [], "result": {}}, {"request": {}, "result": "x"}, 7):
        assert verify(_text(job)).reasons == ["not_a_job"]
    job = sealed()
    del job["result"]["receipt"]
    job["result"]["method"] = "other"  # a rule that would apply is not reported beside it
    assert verify(_text(job)).reasons == ["no_receipt"]


def test_too_large_in_bytes_or_values_is_reported_alone_with_what_is_read() -> None:
    text = _text(sealed())
    small = ReadAtMost(bytes=len(text) - 1, values=10**6)
    v = verify(text, limits=small)
    assert v.reasons == ["too_large"] and v.read_at_most == small
    assert v.as_json()["read_at_most"] == {"bytes": len(text) - 1, "values": 10**6}
    values = count_values(text)
    assert verify(text, limits=ReadAtMost(bytes=10**6, values=values - 1)).reasons == ["too_large"]
    assert verify(text, limits=ReadAtMost(bytes=len(text), values=values)).valid
    # judged before it is read: an unreadable text past the limit is too large
    assert verify(b"[" * 100, limits=ReadAtMost(bytes=50, values=10**6)).reasons == ["too_large"]


def test_values_are_counted_outside_strings() -> None:
    assert count_values(b"1") == 1
    assert count_values(b'{"a": [1, 2], "b": {}}') == 1 + 2 + 2 + 1 + 2  # two , two : one [ two {
    assert count_values(b'["a,b:c[d{e", "\\",["]') == 1 + 1 + 1
    big = b'["' + b"," * 100 + b'"]'
    assert count_values(big) == 2 and count_values(big, limit=1000) == 102  # a bound under the limit


def test_the_surfaces_read_what_section_8_4_says() -> None:
    assert (VERIFY_LIMITS.bytes, VERIFY_LIMITS.values) == (384 * 2**20, 2**22)
    assert (SERVICE_LIMITS.bytes, SERVICE_LIMITS.values) == (4 * 2**20, 2**19)


# --- the receipt ----------------------------------------------------------------------------------

IDENTITY = (1).to_bytes(32, "little").hex()
OUTSIDE_SUBGROUP = SPECCHECK[3]["pub_key"]


@pytest.mark.parametrize(
    ("changes", "want"),
    [
        ({"alg": _REMOVE}, {"receipt_form"}),
        ({"alg": "Ed25519"}, {"receipt_form"}),
        ({"canon": None}, {"receipt_form"}),  # a canon other than rfc8785 names no form
        ({"canon": "jcs"}, {"receipt_form"}),
        ({"canon": _REMOVE}, {"digest_mismatch"}),  # the first form, under 0x01
        ({"key": _REMOVE}, {"receipt_form"}),
        ({"key": KEY.public_hex.upper()}, {"receipt_form"}),
        ({"key": KEY.public_hex[:62]}, {"receipt_form"}),
        ({"key": OTHER_KEY.public_hex}, {"bad_signature"}),
        ({"key": IDENTITY}, {"bad_key"}),
        ({"key": OUTSIDE_SUBGROUP}, {"bad_key"}),
        ({"key": "ff" * 32}, {"bad_key"}),  # y past p
        ({"digest": "00" * 32}, {"digest_mismatch", "bad_signature"}),
        ({"digest": "0" * 63}, {"receipt_form"}),
        ({"signature": "00" * 64}, {"bad_signature"}),
        ({"signature": 7}, {"receipt_form"}),
        ({"time": {"issued_ms": 5}}, {"digest_mismatch"}),  # put on after sealing
        ({"time": {"issued_ms": -1}}, {"receipt_form"}),
        ({"time": {"issued_ms": 2**53}}, {"receipt_form"}),
        ({"time": {"issued_ms": 5, "not_after_ms": 5}}, {"receipt_form"}),
        ({"time": {"issued_ms": 5, "not_after_ms": None}}, {"receipt_form"}),
        ({"time": {"issued_ms": 5, "zone": "UTC"}}, {"receipt_form"}),
        ({"time": {}}, {"receipt_form"}),
        ({"time": None}, {"receipt_form"}),
        ({"time": {"issued_ms": 5}, "canon": _REMOVE}, {"receipt_form"}),  # a time and no canon
        ({"note": "any other member is ignored"}, set()),
    ],
)
def test_the_receipts_own_reasons(changes: dict[str, Any], want: set[str]) -> None:
    assert _reasons(_receipt_changed(**changes)) == want


def test_a_receipt_that_is_no_object_is_not_of_its_form() -> None:
    for receipt in (None, [], "ed25519"):
        job = sealed()
        job["result"]["receipt"] = receipt
        assert _reasons(job) == {"receipt_form"}


def test_a_time_written_otherwise_is_read_by_value() -> None:
    job = sealed(issued_ms=150)
    text = _text(job).replace(b'"issued_ms": 150', b'"issued_ms": 1.5e2')
    v = verify(text)
    assert v.valid and v.time == {"sealed": True, "issued_ms": 150, "not_after_ms": None}


def test_a_body_changed_after_sealing_gives_digest_mismatch_alone() -> None:
    job = sealed()
    job["result"]["counts"]["00"] += 0  # unchanged
    job["result"]["ideal"]["hellinger_fidelity"] = 0.5
    assert _reasons(job) == {"digest_mismatch"}


def test_unsealed_members_of_the_body_change_nothing() -> None:
    job = sealed()
    job.update(status="done", id="j-1", method="provider", why="because", estimate={"free": True})
    v = verify(_text(job))
    assert v.valid


# --- inexact numbers -------------------------------------------------------------------------------

BIG = 2**60  # a double; 2**60 + 1 is not


def _sealed_with_big(where: str) -> bytes:
    """A receipt sealed over the double 2^60, its text then saying it as 1152921504606846977."""
    req, res = request(), result()
    (req if where == "request" else res)["big"] = 1.0 * BIG
    text = _text(seal(req, res, KEY)).decode()
    assert text.count("1.152921504606847e+18") == 1
    return text.replace("1.152921504606847e+18", str(BIG + 1)).encode()


@pytest.mark.parametrize("where", ["request", "result"])
def test_a_whole_number_no_double_holds_says_more_than_the_seal(where: str) -> None:
    text = _sealed_with_big(where)
    assert _reasons(text) == {"inexact_number"}  # the signature holds: it sealed the double
    for spelling in (str(BIG), "1152921504606847000", "1.152921504606847e18", "1152921504606846977.0"):
        assert _reasons(text.replace(str(BIG + 1).encode(), spelling.encode())) == set(), spelling


def test_a_whole_number_elsewhere_than_what_is_sealed_is_no_reason() -> None:
    job = sealed()
    job["id"] = 1  # unsealed
    job["result"]["receipt"]["extra"] = 1
    text = _text(job).replace(b'"id": 1', str(f'"id": {BIG + 1}').encode())
    text = text.replace(b'"extra": 1', str(f'"extra": {BIG + 1}').encode())
    assert _reasons(text) == set()


def test_a_receipt_of_no_form_reads_its_numbers_as_a_canonical_ones() -> None:
    text = _sealed_with_big("result").replace(b'"alg": "ed25519"', b'"alg": "none"')
    assert _reasons(text) == {"receipt_form", "inexact_number"}


# --- the first form --------------------------------------------------------------------------------


def _first_form_job(req: dict[str, Any], res: dict[str, Any], text_of: Any = None) -> dict[str, Any]:
    """A first-form receipt: the writer's text, under 0x01, signed; no canon."""
    d = digest(Form.FIRST, first_form_bytes(req), first_form_bytes(sealed_part(res)))
    receipt = {"alg": "ed25519", "key": KEY.public_hex, "digest": d.hex(), "signature": KEY.sign(d).hex()}
    return {"request": req, "result": {**res, "receipt": receipt}}


def test_a_first_form_receipt_verifies_as_its_signer_wrote_it() -> None:
    res = {**result(), "fraction": 0.5, "whole_double": 2.0, "big": 2**63}
    v = verify(_text(_first_form_job(request(), res)))
    assert v.valid and v.form == "first" and v.time == {"sealed": False}


def test_a_first_form_receipt_breaks_when_its_members_are_reordered() -> None:
    job = _first_form_job(request(), result())
    res = job["result"]
    job["result"] = dict(reversed(list(res.items())))
    assert _reasons(job) == {"digest_mismatch"}


def test_a_first_form_receipt_breaks_when_a_number_is_written_another_way() -> None:
    job = _first_form_job(request(), {**result(), "whole_double": 2.0})
    text = _text(job)
    assert b'"whole_double": 2.0' in text
    assert _reasons(text.replace(b'"whole_double": 2.0', b'"whole_double": 2')) == {"digest_mismatch"}


def test_a_first_form_receipt_seals_whole_numbers_in_its_writers_range_by_their_digits() -> None:
    res = {**result(), "big": 2**60 + 1, "past": 2**64 + 1}
    job = _first_form_job(request(), res)
    text = _text(job)
    # 2^60 + 1 is sealed by its digits in the first form; 2^64 + 1 is sealed as its double, which it is not
    assert _reasons(text) == {"inexact_number"}
    ok = _first_form_job(request(), {**result(), "big": 2**60 + 1})
    assert _reasons(ok) == set()


def test_the_forms_do_not_verify_as_each_other() -> None:
    job = sealed()
    del job["result"]["receipt"]["canon"]
    assert "digest_mismatch" in _reasons(job)
    first = _first_form_job(request(), result())
    first["result"]["receipt"]["canon"] = "rfc8785"
    assert "digest_mismatch" in _reasons(first)


# --- each built-in kind's rows (§8.3) --------------------------------------------------------------

STEPS = ("mitigation", "twirling", "decoupling", "remapping", "optimisation")


def _execution(
    fields: list[str], settings: dict[str, Any], verbatim: bool = False, **steps: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"stated_by": "client", **{s: steps.get(s, "default") for s in STEPS}}
    out.update(verbatim=verbatim, sent={"fields": fields, "settings": settings})
    return out


CLOUD_FIELDS = ["action", "clientToken", "deviceArn", "outputS3Bucket", "outputS3KeyPrefix", "shots"]
NATIVE_FIELDS = ["backend", "input", "settings", "shots", "type"]
NATIVE_SETTINGS = {"/input/gateset": "native", "/settings/error_mitigation/debiasing": False}
ROWS: dict[str, dict[str, Any]] = {
    "prx-circuits": _execution(["circuits", "shots"], {}),
    "native-turns": _execution(NATIVE_FIELDS, NATIVE_SETTINGS, mitigation="off"),
    "native-turns+noise": _execution(
        ["backend", "input", "noise", "settings", "shots", "type"],
        {**NATIVE_SETTINGS, "/noise/model": "ibm_fez 2026-11-20"},
        mitigation="off",
    ),
    "cloud-tasks@silicon": _execution(
        CLOUD_FIELDS, {"verbatim_box": True}, verbatim=True, remapping="off", optimisation="off"
    ),
    "cloud-tasks@simulator": _execution(CLOUD_FIELDS, {}),
}


def _kind_result(kind: str, provenance: str, source: str, execution: dict[str, Any]) -> dict[str, Any]:
    res = result(kind)
    res["provider"]["provenance"] = provenance
    res["accuracy"]["class"] = "measured" if provenance == "silicon" else "simulated"
    res["counts_source"] = source
    res["execution"] = execution
    res["compiled"]["qubit_names"] = {"0": "Q1", "1": "Q2"}
    return res


KIND_CASES = [
    ("prx-circuits", "silicon", "vendor_counts", "prx-circuits", set()),
    ("prx-circuits", "simulator", "vendor_counts", "prx-circuits", set()),
    ("prx-circuits", "silicon", "shots", "prx-circuits", {"counts_source"}),
    ("native-turns", "silicon", "probabilities", "native-turns", set()),
    ("native-turns", "emulator", "probabilities", "native-turns", set()),
    ("native-turns", "emulator: a noisy model", "probabilities", "native-turns+noise", set()),
    (
        "native-turns",
        "silicon",
        "probabilities",
        "native-turns+noise",
        {"execution"},
    ),  # noise: not on silicon
    ("native-turns", "simulator", "shots", "native-turns", {"counts_source"}),
    ("cloud-tasks", "silicon", "shots", "cloud-tasks@silicon", set()),
    ("cloud-tasks", "silicon", "probabilities", "cloud-tasks@silicon", set()),
    ("cloud-tasks", "silicon", "vendor_counts", "cloud-tasks@silicon", {"counts_source"}),
    ("cloud-tasks", "simulator", "shots", "cloud-tasks@simulator", set()),
    ("cloud-tasks", "simulator", "shots", "cloud-tasks@silicon", {"execution"}),  # the silicon row
    ("cloud-tasks", "silicon", "shots", "cloud-tasks@simulator", {"execution"}),
    ("sampler-v2", "silicon", "shots", "prx-circuits", {"execution"}),
]


@pytest.mark.parametrize(("kind", "provenance", "source", "row", "want"), KIND_CASES)
def test_each_kind_is_held_to_its_rows_for_its_provenance(
    kind: str, provenance: str, source: str, row: str, want: set[str]
) -> None:
    res = _kind_result(kind, provenance, source, copy.deepcopy(ROWS[row]))
    assert _reasons(seal(request(), res, KEY)) == want


def test_a_native_turns_noise_model_is_a_string_not_empty() -> None:
    execution = copy.deepcopy(ROWS["native-turns+noise"])
    execution["sent"]["settings"]["/noise/model"] = ""
    res = _kind_result("native-turns", "simulator", "probabilities", execution)
    assert _reasons(seal(request(), res, KEY)) == {"execution"}


NOBODY = {"stated_by": "nobody", **dict.fromkeys(STEPS, "unknown"), "verbatim": None}
PROVIDER_SAID = {"stated_by": "provider", **dict.fromkeys(STEPS, "none"), "twirling": "on", "verbatim": False}


@pytest.mark.parametrize(
    ("kind", "execution", "want"),
    [
        ("http", PROVIDER_SAID, set()),
        ("process", NOBODY, set()),
        ("http", ROWS["prx-circuits"], {"execution"}),  # a client's word on an open kind
        ("cloud-tasks", NOBODY, set()),  # any kind may be stated by nobody
        ("sampler-v2", PROVIDER_SAID, {"execution"}),
        ("some-later-kind", ROWS["prx-circuits"], set()),  # no rows known: §8.3's rules alone
        (
            "http",
            {**PROVIDER_SAID, "sent": {"fields": [], "settings": {}}},
            {"execution"},
        ),  # sent: client only
        ("http", {**PROVIDER_SAID, "twirling": "default"}, {"execution"}),  # default: a client's word
        ("http", {**NOBODY, "twirling": "off"}, {"execution"}),
        ("http", {**PROVIDER_SAID, "verbatim": True, "remapping": "unknown"}, {"execution"}),  # as written
        ("http", {**PROVIDER_SAID, "verbatim": True, "remapping": "off", "optimisation": "none"}, set()),
    ],
)
def test_open_kinds_record_the_providers_word_or_nobodys(
    kind: str, execution: dict[str, Any], want: set[str]
) -> None:
    res = _kind_result(kind, "silicon", "shots", copy.deepcopy(execution))
    res["provider"]["kind"] = kind
    assert _reasons(seal(request(), res, KEY)) - {"provider_members"} == want


@pytest.mark.parametrize(
    ("sent", "ok"),
    [
        ({"fields": ["a", "b"], "settings": {"/a/x": 1, "name": True}}, True),
        ({"fields": ["b", "a"], "settings": {"/a": 1}}, False),  # increasing order
        ({"fields": ["a", "a"], "settings": {"/a": 1}}, False),  # each once
        ({"fields": ["Z", "a", "é"], "settings": {"/é": 1}}, True),  # order of UTF-8 bytes
        ({"fields": ["a"], "settings": {"/b": 1}}, False),  # a pointer into a field not sent
        ({"fields": ["a/b"], "settings": {"/a~1b/c": 1}}, True),  # ~1 reads as /
        ({"fields": ["a~b"], "settings": {"/a~0b": 1}}, True),
        ({"fields": ["a"], "settings": {"": 1}}, False),  # a name, not empty
        ({"fields": ["a"], "settings": {}, "extra": 1}, False),
        ({"fields": ["a", 1], "settings": {"/a": 1}}, False),
    ],
)
def test_what_a_client_says_it_sent(sent: dict[str, Any], ok: bool) -> None:
    execution = {
        "stated_by": "client",
        **dict.fromkeys(STEPS, "default"),
        "twirling": "off",
        "verbatim": False,
    }
    execution["sent"] = sent
    res = _kind_result("some-later-kind", "silicon", "shots", execution)
    assert _reasons(seal(request(), res, KEY)) == (set() if ok else {"execution"})


# --- qubit names -----------------------------------------------------------------------------------


def _cloud(names: Any, qasm3: str | None = None, layout: list[Any] | None = None) -> dict[str, Any]:
    res = _kind_result("cloud-tasks", "silicon", "shots", copy.deepcopy(ROWS["cloud-tasks@silicon"]))
    if names is _REMOVE:
        del res["compiled"]["qubit_names"]
    else:
        res["compiled"]["qubit_names"] = names
    if qasm3 is not None:
        res["compiled"]["qasm3"] = qasm3
        res["compiled"]["program"] = blake3(qasm3.encode()).hexdigest()
    if layout is not None:
        res["compiled"]["layout"] = layout
    return res


@pytest.mark.parametrize(
    ("names", "qasm3", "layout", "ok"),
    [
        ({"0": "Q1", "1": "Q2"}, None, None, True),
        (_REMOVE, None, None, False),  # required of cloud-tasks stated by its client
        (None, None, None, False),  # null is given, and is no object
        ({"0": "Q1"}, None, None, False),  # $1 and layout's 1 are not named
        ({"0": "Q1", "01": "Q2", "1": "Q3"}, None, None, False),  # a leading zero
        ({"0": "Q1", "1": ""}, None, None, False),
        ({"0": "Q1", "1": 2}, None, None, False),
        ({"0": "Q1", "1": "Q2", "7": "Q8"}, None, None, True),  # more names than used
        ({"0": "Q1", "1": "Q2"}, "x $0012; y $; z $1", None, False),  # $0012 names 12
        ({"0": "Q1", "1": "Q2", "12": "Q"}, "x $0012; y $; z $1", None, True),
        ({"0": "Q1", "1": "Q2", "3": "Q"}, "h $0;", [0, 3.0], True),  # layout entries by value
        ({"0": "Q1", "1": "Q2"}, "h $0;", [0, 3], False),
    ],
)
def test_qubit_names(names: Any, qasm3: str | None, layout: list[Any] | None, ok: bool) -> None:
    res = _cloud(names, qasm3, layout)
    assert _reasons(seal(request(), res, KEY)) == (set() if ok else {"provider_members"})


def test_qubit_names_are_optional_where_not_required_but_checked_when_given() -> None:
    res = result()  # sampler-v2
    assert _reasons(seal(request(), res, KEY)) == set()
    res["compiled"]["qubit_names"] = {"0": "a"}
    assert _reasons(seal(request(), res, KEY)) == {"provider_members"}
    res = _cloud(_REMOVE)
    res["execution"] = copy.deepcopy(NOBODY)  # not stated by its client: optional
    assert _reasons(seal(request(), res, KEY)) == set()


# --- counts ----------------------------------------------------------------------------------------


def _counts(
    table: dict[str, Any], shots: Any, omitted: Any = 0, distinct: Any = None, **more: Any
) -> set[str]:
    res = result()
    res.update(counts=table, shots=shots, omitted_shots=omitted)
    res["distinct_outcomes"] = len(table) if distinct is None else distinct
    res.update(more)
    req = {**request(), "shots": shots}
    return _reasons(seal(req, res, KEY)) - {"request_shots"}


def test_counts_of_every_shot_or_of_the_accepted_ones() -> None:
    assert _counts({"0": 3, "1": 2}, 5) == set()
    assert _counts({"0": 3, "1": 2}, 6) == {"counts"}
    assert _counts({"0": 3, "1": 2}, 6, accepted_shots=5) == set()
    assert _counts({"0": 3, "1": 2}, 6, accepted_shots=5.0) == set()
    assert _counts({"0": 3, "1": 2}, 6, accepted_shots="5") == {"counts"}
    assert _counts({"0": 3}, 4, omitted=1) == {"counts"}  # omits with fewer than 65,536 listed
    assert _counts({}, 4) == {"counts"}
    assert _counts({"0": 2**53 - 1}, 2**53 - 1) == set()


def test_a_count_has_a_ceiling_and_a_sum_is_exact() -> None:
    # 2^53 - 1 and 2 sum to 2^53 + 1 exactly; as doubles they would round to 2^53
    assert _counts({"0": 2**53 - 1, "1": 2}, float(2**53)) == {"counts"}
    assert _counts({"0": 2**53 - 1, "1": 1}, float(2**53)) == set()
    assert _counts({"0": float(2**53)}, float(2**53)) == {"counts"}


def test_omitted_outcomes_list_exactly_65536_and_more_distinct() -> None:
    table = {format(i, "017b"): 1 for i in range(65_536)}
    assert _counts(table, 65_540, omitted=4, distinct=65_537) == set()
    assert _counts(table, 65_540, omitted=4, distinct=65_536) == {"counts"}
    del table[format(0, "017b")]
    assert _counts(table, 65_539, omitted=4, distinct=65_537) == {"counts"}


def test_distinct_outcomes_is_the_number_listed_when_none_is_omitted() -> None:
    assert _counts({"00": 1, "11": 1}, 2, distinct=3) == {"counts"}
    assert _counts({"00": 1, "11": 1}, 2, distinct=-0.0) == {"counts"}


# --- classes and methods --------------------------------------------------------------------------


def test_a_simulators_counts_are_simulated_and_approximate_only_there() -> None:
    res = result()
    res["provider"]["provenance"] = "simulator: aer 0.18"
    res["accuracy"].update({"class": "simulated", "approximate": True})
    v = verify(_text(seal(request(), res, KEY)))
    assert v.valid and v.provider is not None and v.provider.class_ == "simulated"


def test_a_result_of_another_method_with_a_devices_class() -> None:
    other = {"method": "statevector", "accuracy": {"class": "measured"}}
    assert _reasons(seal({"qasm": "x"}, other, KEY)) == {"provider_class"}
    assert _reasons(seal({"qasm": "x"}, {**other, "accuracy": {"class": "exact"}}, KEY)) == set()
    signoff = {"format": "wai.quantum.signoff/1", "accuracy": {"class": "measured"}}
    v = verify(_text(seal({"signoff": {}}, signoff, KEY)))
    assert v.reasons == [] and not v.valid  # a sign-off repeats its job's class; its verdict is not rechecked


def test_the_earlier_form_is_read_by_its_provenance_and_says_it_states_neither() -> None:
    res = earlier_result()
    res["provider"]["provenance"] = "simulator"
    v = verify(_text(seal(request(), res, KEY)))
    assert v.valid  # measured, whatever ran it
    assert v.provider is not None and v.provider.form == "earlier" and v.provider.class_ == "simulated"
    assert v.provider.notes and "neither" in v.provider.notes[0]


def test_what_a_verdict_states_of_a_stated_result() -> None:
    v = verify(_text(sealed())).as_json()
    assert v["provider"]["class"] == "measured" and v["provider"]["counts_source"] == "shots"
    assert v["provider"]["execution"]["stated_by"] == "client" and v["provider"]["counts_word"] == "host"
    assert v["time"] == {"sealed": False} and v["trust"] == {"held": False}
    assert v["form"] == "canonical" and v["key"] == KEY.public_hex
    res = result()
    res["execution"] = copy.deepcopy(NOBODY)
    v = verify(_text(seal(request(), res, KEY))).as_json()
    assert any("nobody" in n for n in v["provider"]["notes"])


def test_a_provider_result_with_no_receipt_is_still_described() -> None:
    job = sealed()
    del job["result"]["receipt"]
    v = verify(_text(job))
    assert v.reasons == ["no_receipt"] and v.provider is not None and v.provider.form == "stated"


def test_a_contracts_allowed_provider_is_named_by_the_planners_choice() -> None:
    req = {**request(), "contract": {"providers": "allowed"}}
    del req["provider"]
    res = {**result(), "planner": {"choice": "provider:ibm-fez"}}
    v = verify(_text(seal(req, res, KEY)))
    assert "request_provider" not in v.reasons
    res["planner"]["choice"] = "provider:other"
    assert "request_provider" in verify(_text(seal(req, res, KEY))).reasons
    req["contract"] = {"providers": "never"}
    res["planner"]["choice"] = "provider:ibm-fez"
    assert "request_provider" in verify(_text(seal(req, res, KEY))).reasons


# --- the rules not run here -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "res", "rules"),
    [
        ({"contract": {"exactness": "measured"}}, {}, "§8.7"),
        ({"intent": {"outcomes": ["00"], "tolerance": 0.1}}, {}, "§8.9"),
        ({}, {"verdict": {"level": "executed"}}, "§8.9"),
        ({"grade": {"task": {}, "program": ""}}, {}, "§8.10"),
        ({}, {"format": "wai.quantum.wasmq.result/2"}, "quantum-wasmq §6.5"),
        ({}, {"schema": "wai.quantum.landscape/1"}, "quantum-landscape §5.4"),
        ({}, {"protocol": "wai.quantum.landscape/2"}, "quantum-landscape §5.4"),
    ],
)
def test_a_job_needing_rules_not_run_here_is_never_called_valid(
    req: dict[str, Any], res: dict[str, Any], rules: str
) -> None:
    job = seal({**request(), **req}, {**result(), **res}, KEY)
    v = verify(_text(job))
    assert not v.valid and [u.rules for u in v.unchecked] == [rules]
    assert "unchecked" in v.as_json()
    # the rules that did run still report
    job["result"]["receipt"]["signature"] = "00" * 64
    assert "bad_signature" in verify(_text(job)).reasons


def test_a_wasmq_provider_job_is_held_to_the_provider_rules_too() -> None:
    job = seal(request(), {**result(), "format": "wai.quantum.wasmq.result/1", "shots": 7}, KEY)
    v = verify(_text(job))
    assert {"counts", "request_shots"} <= set(v.reasons) and v.unchecked[0].reasons == ["wasmq_form"]


@given(st.text(), st.text())
def test_strings_order_as_their_utf8_bytes(a: str, b: str) -> None:
    # sent.fields is held to the order of UTF-8 bytes by comparing strings: the same order
    assert (a < b) == (a.encode("utf-8") < b.encode("utf-8"))
