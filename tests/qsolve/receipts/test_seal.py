"""Sealing (§8.2 "The seal", "The time"): domain bytes, lengths, the time, what a host refuses to seal."""

from __future__ import annotations

import json

import pytest
from blake3 import blake3

from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.seal import Form, Unsealable, digest, job_digest, seal
from qsolve.receipts.signature import verify_strict
from qsolve.receipts.verifier import verify
from tests.qsolve.receipts.builders import KEY, request, result, sealed


def _by_hand(domain: int, *texts: bytes) -> bytes:
    """The digest written out from §8.2's words, apart from the code under test."""
    out = b"wai:quantum-service-receipt" + bytes([domain])
    for text in texts:
        out += len(text).to_bytes(8, "big") + text
    return blake3(out).digest()


def test_the_digest_is_blake3_of_the_domain_and_the_texts_with_their_lengths() -> None:
    q, t, v = b'{"a":1}', b'{"b":[]}', b'{"issued_ms":5}'
    assert len(b"wai:quantum-service-receipt") == 27
    assert digest(Form.FIRST, q, t) == _by_hand(0x01, q, t)
    assert digest(Form.CANONICAL, q, t) == _by_hand(0x02, q, t)
    assert digest(Form.TIMED, q, t, v) == _by_hand(0x03, q, t, v)
    assert len({digest(Form.FIRST, q, t), digest(Form.CANONICAL, q, t)}) == 2
    with pytest.raises(ValueError):
        digest(Form.CANONICAL, q, t, v)
    with pytest.raises(ValueError):
        digest(Form.TIMED, q, t)


def test_a_sealed_job_signs_the_canonical_digest_with_the_host_key() -> None:
    job = sealed()
    receipt = job["result"]["receipt"]
    assert set(receipt) == {"alg", "canon", "key", "digest", "signature"}
    assert receipt["alg"] == "ed25519" and receipt["canon"] == "rfc8785" and receipt["key"] == KEY.public_hex
    body = {k: v for k, v in job["result"].items() if k != "receipt"}
    expected = _by_hand(0x02, canonical_bytes(job["request"]), canonical_bytes(body))
    assert receipt["digest"] == expected.hex()
    assert verify_strict(KEY.public_key, bytes.fromhex(receipt["signature"]), expected)
    assert verify(json.dumps(job)).valid


def test_no_time_is_sealed_unless_asked_and_then_the_same_job_gives_the_same_bytes() -> None:
    assert json.dumps(sealed()) == json.dumps(sealed())
    assert "time" not in sealed()["result"]["receipt"]


def test_a_time_goes_inside_the_digest_under_0x03() -> None:
    job = sealed(issued_ms=1_700_000_000_000, not_after_ms=1_800_000_000_000)
    receipt = job["result"]["receipt"]
    assert receipt["time"] == {"issued_ms": 1_700_000_000_000, "not_after_ms": 1_800_000_000_000}
    body = {k: v for k, v in job["result"].items() if k != "receipt"}
    v = b'{"issued_ms":1700000000000,"not_after_ms":1800000000000}'
    assert (
        receipt["digest"] == _by_hand(0x03, canonical_bytes(job["request"]), canonical_bytes(body), v).hex()
    )
    verdict = verify(json.dumps(job))
    assert verdict.valid
    assert verdict.time == {"sealed": True, "issued_ms": 1_700_000_000_000, "not_after_ms": 1_800_000_000_000}
    # Q and T are the same as without a time: the time is the receipt's alone.
    assert job_digest(job["request"], body, Form.CANONICAL).hex() == sealed()["result"]["receipt"]["digest"]


@pytest.mark.parametrize(
    ("issued", "end"),
    [(-1, None), (2**53, None), (1.5, None), (True, None), (10, 10), (10, 5), (None, 10), (10, 2**53)],
)
def test_a_time_not_of_its_form_is_not_sealed(issued: object, end: object) -> None:
    with pytest.raises(Unsealable):
        sealed(issued_ms=issued, not_after_ms=end)


@pytest.mark.parametrize("n", [2**53, -(2**53), 2**64])
def test_a_request_holding_a_whole_number_past_2_53_is_refused(n: int) -> None:
    with pytest.raises(Unsealable, match="2\\^53"):
        seal({**request(), "seed": n}, result(), KEY)
    seal({**request(), "seed": 2**53 - 1}, result(), KEY)


def test_a_result_writes_a_whole_number_no_double_holds_as_the_double_it_seals() -> None:
    job = seal(request(), {**result(), "big": 2**60 + 1}, KEY)
    assert job["result"]["big"] == float(2**60)
    assert verify(json.dumps(job)).valid
    with pytest.raises(Unsealable):
        seal(request(), {**result(), "huge": 10**400}, KEY)


@pytest.mark.parametrize(
    "bad",
    [float("nan"), float("inf"), {1: 2}, {"a": {3}}, b"bytes", "\ud800"],
)
def test_what_has_no_canonical_text_is_not_sealed(bad: object) -> None:
    with pytest.raises(Unsealable):
        seal(request(), {**result(), "bad": bad}, KEY)
    with pytest.raises(Unsealable):
        seal({**request(), "bad": bad}, result(), KEY)


def test_a_request_and_result_are_objects() -> None:
    with pytest.raises(Unsealable):
        seal([], result(), KEY)  # type: ignore[arg-type]


def test_a_receipt_already_there_is_replaced() -> None:
    job = seal(request(), {**result(), "receipt": {"alg": "none"}}, KEY)
    assert job["result"]["receipt"]["alg"] == "ed25519" and verify(json.dumps(job)).valid


def test_the_engine_names_the_protocol_and_us() -> None:
    from qsolve.receipts.seal import engine

    made = engine()
    assert made["name"] == "wai-quantum" and made["version"].startswith("qsolve/")
    assert verify(json.dumps(seal(request(), {**result(), "engine": made}, KEY))).valid
