"""Whose key, and when (§8.8): reading a trust list whole or not at all, and the five reasons."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.trust import HeldTo, TrustList, TrustListRefused, transition_digest
from qsolve.receipts.verifier import verify
from tests.qsolve.receipts.builders import KEY, OTHER_KEY, sealed

FORMAT = "wai.quantum.receipt-keys/1"


def _list(*entries: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"format": FORMAT, "keys": list(entries), **more}


def _read(value: Any) -> TrustList:
    return TrustList.read(json.dumps(value).encode())


def test_a_list_of_the_published_form_reads() -> None:
    listing = _read(
        _list(
            {
                "key": KEY.public_hex,
                "not_before_ms": 0,
                "not_after_ms": None,
                "did": "did:web:x",
                "note": "ours",
            },
            {"key": OTHER_KEY.public_hex, "revoked_from_ms": 1.5e3, "current": True},
            algorithm="ed25519",
            successor="ignored",
        )
    )
    assert listing.entries[KEY.public_hex].not_before_ms == 0
    assert listing.entries[KEY.public_hex].not_after_ms is None
    assert listing.entries[OTHER_KEY.public_hex].revoked_from_ms == 1500


@pytest.mark.parametrize(
    "value",
    [
        [],
        {"keys": []},
        _list(format="wai.quantum.receipt-keys/2"),
        _list(algorithm="ecdsa"),
        _list(algorithm=None),
        {"format": FORMAT, "keys": {}},
        _list("key"),
        _list({}),
        _list({"key": KEY.public_hex.upper()}),
        _list({"key": KEY.public_hex}, {"key": KEY.public_hex}),  # a key is listed once
        _list({"key": KEY.public_hex, "not_before_ms": -1}),
        _list({"key": KEY.public_hex, "not_after_ms": 2**53}),
        _list({"key": KEY.public_hex, "revoked_from_ms": 1.5}),
        _list({"key": KEY.public_hex, "revoked_from_ms": "0"}),
        _list({"key": KEY.public_hex, "not_after_ms": True}),
        _list({"key": KEY.public_hex}, {"key": "no"}),  # one entry refuses the whole list
        _list({"key": KEY.public_hex, "transition": "rotated"}),
    ],
)
def test_a_list_not_of_its_form_in_any_entry_is_refused_whole(value: Any) -> None:
    with pytest.raises(TrustListRefused):
        _read(value)


def test_a_list_that_does_not_read_is_refused_whole() -> None:
    for text in (b"", b"{", b'{"format": "x", "format": "y"}', b"\xef\xbb\xbf{}"):
        with pytest.raises(TrustListRefused, match="does not read"):
            TrustList.read(text)


def _transition(retiring: Any = KEY, successor: Any = OTHER_KEY, **changes: Any) -> dict[str, Any]:
    statement = {
        "format": "wai.quantum.key-transition/1",
        "retiring": retiring.public_hex,
        "successor": successor.public_hex,
        "at_ms": 1_700_000_000_000,
    }
    statement.update(changes.pop("statement", {}))
    message = transition_digest(statement)
    out = {
        "statement": statement,
        "retiring_signature": retiring.sign(message).hex(),
        "successor_signature": successor.sign(message).hex(),
    }
    out.update(changes)
    return out


def test_a_transition_is_signed_by_both_keys_over_its_statement() -> None:
    statement = _transition()["statement"]
    expected = b"wai:quantum-key-transition" + b"\x01" + canonical_bytes(statement)
    from blake3 import blake3

    assert transition_digest(statement) == blake3(expected).digest()
    _read(_list({"key": KEY.public_hex, "not_after_ms": 1_700_000_000_000, "transition": _transition()}))
    _read(_list({"key": KEY.public_hex, "transition": None}))


@pytest.mark.parametrize(
    "transition",
    [
        _transition(retiring=OTHER_KEY, successor=KEY),  # it must name the entry's key as the one retiring
        _transition(retiring_signature="00" * 64),
        _transition(successor_signature=_transition()["retiring_signature"]),
        _transition(successor_signature="AB" * 64),
        _transition(statement={"format": "wai.quantum.key-transition/2"}),
        _transition(statement={"at_ms": -5}),
        _transition(statement={"successor": "xyz"}),
    ],
)
def test_a_transition_that_does_not_hold_refuses_the_list(transition: dict[str, Any]) -> None:
    with pytest.raises(TrustListRefused):
        _read(_list({"key": KEY.public_hex, "transition": transition}))


# --- the reasons -----------------------------------------------------------------------------------

ISSUED, END = 1_000_000, 2_000_000


def _held(entry: dict[str, Any] | None = None, at: int | None = None, skew: int = 0) -> HeldTo:
    trust = None if entry is None else TrustList.from_value(_list({"key": KEY.public_hex, **entry}))
    return HeldTo(trust=trust, at_ms=at, skew_ms=skew)


TIMED = sealed(issued_ms=ISSUED, not_after_ms=END)
UNTIMED = sealed()


@pytest.mark.parametrize(
    ("job", "held", "want"),
    [
        (TIMED, HeldTo(), set()),
        (TIMED, _held({}), set()),
        (TIMED, _held({"not_before_ms": ISSUED}), set()),
        (TIMED, _held({"not_before_ms": ISSUED + 1}), {"key_window"}),
        (TIMED, _held({"not_after_ms": ISSUED + 1}), set()),
        (TIMED, _held({"not_after_ms": ISSUED}), {"key_window"}),  # half-open: its successor's first moment
        (TIMED, _held({"revoked_from_ms": ISSUED + 1}), set()),
        (TIMED, _held({"revoked_from_ms": ISSUED}), {"key_revoked"}),
        (TIMED, _held({"revoked_from_ms": 0, "not_after_ms": 5}), {"key_revoked", "key_window"}),
        (UNTIMED, _held({"not_before_ms": 5}), set()),  # a window with no end
        (UNTIMED, _held({"not_after_ms": 5 * 10**12}), {"key_window"}),  # precedes no moment
        (UNTIMED, _held({"revoked_from_ms": 5 * 10**12}), {"key_revoked"}),
        (TIMED, _held(None, at=END - 1), set()),
        (TIMED, _held(None, at=END), {"expired"}),
        (TIMED, _held(None, at=ISSUED - 1), {"issued_later"}),
        (TIMED, _held(None, at=ISSUED - 10, skew=10), set()),
        (TIMED, _held(None, at=ISSUED - 11, skew=10), {"issued_later"}),
        (UNTIMED, _held(None, at=0), set()),  # held to a time alone, it states nothing to hold to one
        (TIMED, _held({"not_after_ms": 5}, at=END), {"key_window", "expired"}),
    ],
)
def test_held_to_a_list_a_time_or_both(job: dict[str, Any], held: HeldTo, want: set[str]) -> None:
    assert set(verify(json.dumps(job), held=held).reasons) == want


def test_a_key_not_listed_is_untrusted_and_held_to_no_window() -> None:
    trust = TrustList.from_value(_list({"key": OTHER_KEY.public_hex}))
    v = verify(json.dumps(UNTIMED), held=HeldTo(trust=trust))
    assert v.reasons == ["key_untrusted"] and v.trust == {"listed": False}
    empty = TrustList.from_value(_list())
    assert verify(json.dumps(TIMED), held=HeldTo(trust=empty, at_ms=END)).reasons == [
        "expired",
        "key_untrusted",
    ]


def test_what_the_verdict_states_of_what_it_was_held_to() -> None:
    v = verify(json.dumps(TIMED), held=_held({"not_after_ms": END}, at=ISSUED, skew=7)).as_json()
    assert v["valid"] is True
    assert v["time"] == {"sealed": True, "issued_ms": ISSUED, "not_after_ms": END}
    assert v["trust"] == {"listed": True, "not_before_ms": None, "not_after_ms": END, "revoked_from_ms": None}
    assert v["checked_at_ms"] == ISSUED and v["skew_ms"] == 7
    v = verify(json.dumps(UNTIMED)).as_json()
    assert v["trust"] == {"held": False} and "checked_at_ms" not in v


def test_the_reasons_apply_to_a_receipt_of_its_form_only() -> None:
    job = json.loads(json.dumps(UNTIMED))
    job["result"]["receipt"]["alg"] = "none"
    empty = TrustList.from_value(_list())
    assert verify(json.dumps(job), held=HeldTo(trust=empty)).reasons == ["receipt_form"]
    job = json.loads(json.dumps(UNTIMED))
    job["result"]["shots"] = 1  # a digest that does not match: still held to the list
    assert {"digest_mismatch", "key_untrusted"} <= set(
        verify(json.dumps(job), held=HeldTo(trust=empty)).reasons
    )
    assert verify(b"[", held=HeldTo(trust=empty)).reasons == ["unreadable"]


def test_a_time_to_hold_to_is_a_whole_number_of_milliseconds() -> None:
    for bad in ({"at_ms": -1}, {"at_ms": 2**53}, {"at_ms": 1.5}, {"skew_ms": -1}):
        with pytest.raises(ValueError):
            HeldTo(**bad)  # type: ignore[arg-type]
