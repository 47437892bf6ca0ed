"""The readers of wai.quantum.provider/1's answers: each form accepted, each other shape refused with a
reason (quantum-provider-protocol §3, §5, §6, §8.3, §10)."""

from __future__ import annotations

import pytest

from qsolve.providers.errors import ProviderError, job_shown, redact, redact_value
from qsolve.providers.messages import (
    PROTOCOL,
    AnswerRefused,
    Description,
    EstimateRequest,
    ProviderAnswerError,
    SubmitRequest,
    read_billing,
    read_cancel,
    read_description,
    read_envelope,
    read_estimate,
    read_result,
    read_status,
    read_submit,
)

# ---- billing (§5.1) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("billing", "kind"),
    [
        ({"free": True}, "free"),
        ({"free": True, "free_tier": "everything"}, "free"),
        ({"unit": "shot", "price": "0.0003", "currency": "USD"}, "priced"),
        (
            {"free": False, "unit": "second", "price": "1.60", "currency": "EUR", "free_tier": {"s": 60}},
            "priced",
        ),
        ({"free": False, "priced": False}, "unpriced"),
        ({"free": False, "priced": False, "free_tier": "10 minutes a month"}, "unpriced"),
        ({"free": True, "later_field": 1}, "free"),
        # none of the three forms: the cost is unknown, and the checker refuses the description
        ({}, "refused"),
        ({"free": False}, "refused"),
        ({"free": "true"}, "refused"),
        ({"priced": False}, "refused"),
        ({"free": False, "priced": True}, "refused"),
        ({"free": True, "priced": False}, "refused"),
        ({"free": False, "priced": False, "price": "1", "unit": "shot", "currency": "USD"}, "refused"),
        ({"unit": "shot", "price": 0.0003, "currency": "USD"}, "refused"),
        ({"unit": "shot", "price": "0.0003"}, "refused"),
        ({"unit": "shot", "price": "cheap", "currency": "USD"}, "refused"),
        ({"free": True, "unit": "shot", "price": "1", "currency": "USD"}, "refused"),
        ("free", "refused"),
        (None, "refused"),
    ],
)
def test_billing_forms(billing, kind):
    read = read_billing(billing)
    assert read.kind == kind
    if kind == "refused":
        assert read.reason and not read.free
    else:
        assert read.reason is None
        expected = {k: v for k, v in billing.items() if k != "later_field"}
        if kind == "priced":
            expected.pop("free", None)
        assert read.wire() == expected


def test_priced_billing_keeps_its_price():
    read = read_billing({"unit": "shot", "price": "0.0003", "currency": "USD"})
    assert (read.unit, read.price, read.currency) == ("shot", "0.0003", "USD")
    assert "0.0003 USD" in read.text()


# ---- estimates (§5.2) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("estimate", "kind"),
    [
        ({"free": True}, "free"),
        ({"free": True, "seconds": 2, "note": "a simulator"}, "free"),
        ({"free": False, "amount": "0.30", "currency": "USD"}, "priced"),
        (
            {"free": False, "amount": "12", "currency": "credits", "unit": "second", "at_least": True},
            "priced",
        ),
        ({"free": False, "priced": False}, "unpriced"),
        (
            {"free": False, "priced": False, "seconds": 30, "note": "no price yet", "operations": 4},
            "unpriced",
        ),
        ({"free": True, "unknown_later_member": [1]}, "free"),
        # of none of the three forms
        ({"free": False}, "refused"),
        ({"free": False, "amount": 0.3, "currency": "USD"}, "refused"),
        ({"free": False, "amount": "0.30"}, "refused"),
        ({"free": False, "amount": "1e3", "currency": "USD"}, "refused"),
        ({"free": False, "amount": "-1", "currency": "USD"}, "refused"),
        ({"amount": "0.30", "currency": "USD"}, "refused"),
        ({"free": False, "priced": False, "amount": "1", "currency": "USD"}, "refused"),
        ({"free": False, "priced": False, "unit": "shot"}, "refused"),
        ({"free": False, "priced": False, "at_least": True}, "refused"),
        ({"free": False, "priced": False, "currency": "USD"}, "refused"),
        ({"free": True, "priced": False}, "refused"),
        ({"free": False, "priced": True}, "refused"),
        ({"free": False, "priced": "false"}, "refused"),
        ({"free": False, "priced": 0}, "refused"),
        ({"free": "no"}, "refused"),
        ({}, "refused"),
        ({"free": True, "seconds": "soon"}, "refused"),
        ([], "refused"),
    ],
)
def test_estimate_forms(estimate, kind):
    read = read_estimate(estimate)
    assert read.kind == kind
    shown = read.shown()
    if kind == "refused":
        assert read.reason and "three forms" in read.reason
        assert not read.cost_known and not read.free
        assert "amount" not in shown and "unknown" in shown  # no figure of it is shown
    if kind == "unpriced":
        assert shown["priced"] is False and "unknown" in shown and "amount" not in shown
        assert not read.cost_known
    if kind == "priced":
        assert shown["amount"] == estimate["amount"] and shown["currency"] == estimate["currency"]


def test_a_refused_estimate_shows_no_figure_of_what_it_held():
    read = read_estimate({"free": False, "amount": 12.5, "currency": "USD"})
    assert read.amount is None and read.currency is None
    assert "12.5" not in read.text() and "12.5" not in str(read.shown())


# ---- results (§5.5, §6, §8.3) ------------------------------------------------------------------------

EXECUTION = {
    "mitigation": "none",
    "twirling": "off",
    "decoupling": "unknown",
    "remapping": "off",
    "optimisation": "none",
    "verbatim": True,
}


def test_result_kept_of_every_shot():
    read = read_result({"counts": {"01": 60, "11": 40}, "shots": 100}, 100)
    assert read.counts == {"01": 60, "11": 40}
    assert read.kept_shots == 100 and read.accepted_shots is None
    assert read.counts_source == "vendor_counts"  # absent: the provider's own counts
    assert read.execution is None and read.bits == 2


def test_result_kept_of_the_accepted_shots():
    read = read_result({"counts": {"00": 70, "11": 20}, "shots": 100, "accepted_shots": 90}, 100)
    assert read.kept_shots == 90
    more = read_result({"counts": {"00": 70, "11": 50}, "accepted_shots": 120.0}, 100)
    assert more.accepted_shots == 120


def test_a_result_holds_no_more_outcomes_than_the_shots_asked():
    # an outcome counted 0 is dropped as it is read: a result of 2**20 zeros beside one outcome holds one
    zeros = {format(i, "020b"): 0 for i in range(1, 2**16)}
    assert read_result({"counts": {"0" * 20: 4, **zeros}}, 4, bits=20).counts == {"0" * 20: 4}
    # a device that ran more than asked is read, but never more outcomes than the job asked shots
    many = {format(i, "020b"): 1 for i in range(5)}
    with pytest.raises(AnswerRefused, match="5 outcomes that occurred, more than the 4 shots asked"):
        read_result({"counts": many, "accepted_shots": 5}, 4, bits=20)


def test_result_full_form():
    read = read_result(
        {
            "counts": {"0": 3, "1": 0},
            "shots": 3,
            "counts_source": "shots",
            "execution": {**EXECUTION, "note": "as sent"},
            "charged": {"amount": "0.01", "currency": "USD"},
            "energy": {"kwh": 0.002},
            "calibration": {"id": "cal-7"},
            "later": True,
        },
        3,
        bits=1,
    )
    assert read.counts == {"0": 3} and read.counts_source == "shots"  # an outcome counted 0 is dropped
    assert read.execution.verbatim and read.execution.note == "as sent"
    assert read.charged.amount == "0.01" and read.energy.kwh == 0.002 and read.calibration.id == "cal-7"


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"counts": {"01": 60, "11": 39}}, "sum to 99"),
        ({"counts": {"01": 60, "11": 40}, "accepted_shots": 90}, "sum to 100, not to the 90"),
        ({"counts": {"01": 60, "11": 40}, "accepted_shots": 0}, "accepted_shots"),
        ({"counts": {"01": 60, "11": 40}, "accepted_shots": 99.5}, "accepted_shots"),
        ({"counts": {"01": 60, "11": 40}, "accepted_shots": "100"}, "accepted_shots"),
        ({"counts": {"01": 60, "11": 40}, "accepted_shots": True}, "accepted_shots"),
        ({"counts": {"01": 60, "11": 40}, "shots": 1000}, "1000 shots"),
        ({"counts": {"21": 100}}, "0 and 1"),
        ({"counts": {"0b1": 100}}, "0 and 1"),
        ({"counts": {"": 100}}, "0 and 1"),
        ({"counts": {"01": 50, "1": 50}}, "bits"),
        ({"counts": {"01": 50.5, "11": 49.5}}, "whole number"),
        ({"counts": {"01": -1, "11": 101}}, "whole number"),
        ({"counts": {"01": True, "11": 99}}, "whole number"),
        ({"counts": {"01": "60", "11": 40}}, "whole number"),
        ({"counts": {}}, "counts"),
        ({"counts": [["01", 100]]}, "counts"),
        ({}, "counts"),
        ({"counts": {"01": 100}, "counts_source": "estimated"}, "counts_source"),
        ({"counts": {"01": 100}, "counts_source": None}, "counts_source"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "remapping": "on"}}, "verbatim"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "optimisation": "unknown"}}, "verbatim"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "mitigation": "default"}}, "execution"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "stated_by": "provider"}}, "execution"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "verbatim": "yes"}}, "execution"),
        ({"counts": {"01": 100}, "execution": {**EXECUTION, "note": 3}}, "execution"),
        (
            {"counts": {"01": 100}, "execution": {k: v for k, v in EXECUTION.items() if k != "twirling"}},
            "twirling",
        ),
        ({"counts": {"01": 100}, "execution": None}, "execution"),
        ({"counts": {"01": 100}, "charged": {"amount": 0.3, "currency": "USD"}}, "charged"),
        ({"counts": {"01": 100}, "energy": {"kwh": -1}}, "energy"),
    ],
)
def test_result_refused(answer, words):
    with pytest.raises(AnswerRefused) as caught:
        read_result(answer, 100)
    assert words in caught.value.reason


def test_result_outcomes_held_to_the_programs_bits():
    read_result({"counts": {"101": 10}}, 10, bits=3)
    with pytest.raises(AnswerRefused, match="has 3 characters: an outcome is exactly the program.s 2 bits"):
        read_result({"counts": {"101": 10}}, 10, bits=2)


def test_result_execution_verbatim_false_may_remap():
    read = read_result(
        {"counts": {"1": 1}, "execution": {**EXECUTION, "verbatim": False, "remapping": "on"}}, 1
    )
    assert read.execution.remapping == "on"


# ---- describe (§5.1) -------------------------------------------------------------------------------

DESCRIPTION = {
    "ok": True,
    "protocol": PROTOCOL,
    "provider": "lab",
    "device": "five",
    "provenance": "silicon",
    "qubits": 5,
    "native_gates": ["prx", "cz", "move"],
    "connectivity": [[0, 4], [1, 4], [2, 4], [3, 4]],
    "resonators": [4],
    "moves": [[0, 4], [1, 4]],
    "durations": {"unit": "ns", "gates": {"prx": 40, "cz": 80}, "measure": 1500},
    "calibration": {
        "id": "2025-01-01",
        "qubits": [{"qubit": 0, "readout_error": 0.02, "error_1q": 0.001, "t1_us": 40, "t2_us": 20}],
        "edges": [{"qubits": [0, 4], "error": 0.01}],
    },
    "billing": {"unit": "second", "price": "0.50", "currency": "EUR"},
    "max_shots": 10000,
    "cancels": False,
    "landscape": {"protocol": "wai.quantum.landscape/1", "ops": ["run"]},  # §11: not read here
    "something_later": {"x": 1},
}


def test_description_reads_every_field():
    d = read_description(DESCRIPTION)
    assert d.provider == "lab" and d.device_name == "five" and d.provenance_label == "silicon"
    assert d.billing.kind == "priced" and d.billing.price == "0.50"
    assert d.calibration.qubits[0].t1_us == 40 and d.calibration.edges[0].qubits == (0, 4)
    assert d.durations.gates == {"prx": 40, "cz": 80}
    assert d.cancels is False and d.max_shots == 10000
    device = d.device()
    assert device.resonators == (4,) and device.moves == ((0, 4), (1, 4))
    assert device.basis() == "prxcz" and device.connects(4, 2)
    assert d.answer == DESCRIPTION  # as it came, unknown fields included
    dumped = d.model_dump(mode="json", exclude_none=True)
    assert dumped["device"] == "five" and dumped["billing"] == DESCRIPTION["billing"]
    assert "something_later" not in dumped
    assert Description.model_validate(dumped).model_dump() == d.model_dump()


def test_description_simulator_sentence_and_problems():
    d = read_description(
        {**DESCRIPTION, "provenance": "simulator", "simulator": "a state vector", "billing": {}}
    )
    assert d.provenance_label == "simulator: a state vector"
    assert d.billing.kind == "refused"
    assert any("billing" in p for p in d.problems())
    bare = read_description({**DESCRIPTION, "provenance": "emulator"})
    assert any("sentence" in p for p in bare.problems())
    assert (
        read_description({k: v for k, v in DESCRIPTION.items() if k != "billing"}).billing.kind == "refused"
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"protocol": "wai.quantum.provider/2"}, "protocol"),
        ({"qubits": "5"}, "qubits"),
        ({"qubits": True}, "qubits"),
        ({"provenance": "quantum"}, "provenance"),
        ({"connectivity": [[0, 9]]}, "connectivity pair"),
        ({"connectivity": [[0, 1, 2]]}, "connectivity"),
        ({"connectivity": "some"}, "connectivity"),
        ({"native_gates": "cz"}, "native_gates"),
        ({"resonators": None}, "moves"),
        ({"moves": [[4, 0]]}, "move"),
        ({"calibration": {"qubits": []}}, "calibration.id"),
        ({"calibration": {"id": "c", "edges": [{"qubits": [0, 1], "error": 1.5}]}}, "error"),
        ({"durations": {"unit": "minutes"}}, "durations.unit"),
        ({"max_shots": 0}, "max_shots"),
    ],
)
def test_description_refused(change, words):
    with pytest.raises(AnswerRefused) as caught:
        read_description({**DESCRIPTION, **change})
    assert words in caught.value.reason


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"device": "D" * 257}, "device: a name of 257 characters, past the bound of 256"),
        ({"provider": "P" * 300}, "provider: a name of 300 characters"),
        ({"native_gates": ["cz", "g" * 257]}, "native_gates[1]: a name of 257"),
        ({"calibration": {"id": "c" * 257}}, "calibration.id: a name"),
        ({"simulator": "s" * 4097}, "simulator: a string of 4097 characters, past the bound of 4096"),
        ({"later": {"notes": ["n" * 4097]}}, "later.notes[0]: a string of 4097"),
        ({"later": {"k" * 257: 1}}, "later: a key of 257 characters, past the bound of 256"),
    ],
)
def test_a_descriptions_strings_are_bounded_before_anything_is_kept(change, words):
    """Round-2 finding 14: every string of a describe answer (names, sentences, fields a later text
    adds, keys) is held to a bound, the field and the bound named, and nothing of it quoted."""
    with pytest.raises(AnswerRefused) as caught:
        read_description({**DESCRIPTION, **change})
    assert words in caught.value.reason and len(caught.value.reason) < 200
    assert read_description({**DESCRIPTION, "device": "D" * 256, "simulator": "s" * 4096}).device_name


def test_a_description_is_bounded_in_all_whatever_its_strings():
    """Many short strings, or numbers, in a field a later text adds are held to the bound of the whole
    (what is kept with each job), refused before it is read."""
    from qsolve.providers.messages import MAX_DESCRIPTION_CHARS

    for later in (["n" * 4096] * 2100, [0.5] * (MAX_DESCRIPTION_CHARS // 4)):
        with pytest.raises(AnswerRefused, match="the answer is longer than 8388608 characters"):
            read_description({**DESCRIPTION, "later": later})
    assert read_description({**DESCRIPTION, "later": ["n" * 4096] * 1000}).answer["later"]


def test_what_a_provider_says_shows_no_character_that_hides_or_reverses_text():
    """Round-2 finding 15: bidirectional overrides, zero-width, tag, private-use and unassigned
    characters are escaped where a provider's words are shown; other letters are kept as they are."""
    said = "cost 1 USD\u202e0001\u2066\u200b\U000e0041\ue000\U000effff\u3164"
    said += " r\u00e9sum\u00e9 \u65e5\u672c \u2026"
    e = ProviderError("lab\u202e", "status", "internal", said)
    assert str(e) == (
        "provider lab\\u202e: status: internal: cost 1 USD\\u202e0001\\u2066\\u200b\\U000e0041\\ue000"
        "\\U000effff\\u3164 r\u00e9sum\u00e9 \u65e5\u672c \u2026"
    )


def test_description_missing_field():
    with pytest.raises(AnswerRefused, match="device"):
        read_description({k: v for k, v in DESCRIPTION.items() if k != "device"})


# ---- the envelope, submit, status, cancel ---------------------------------------------------------


def test_envelope():
    assert read_envelope({"ok": True, "job": "j"}) == {"ok": True, "job": "j"}
    with pytest.raises(ProviderAnswerError) as caught:
        read_envelope({"ok": False, "error": {"code": "not_found", "message": "no job j-17"}})
    assert (caught.value.code, caught.value.message) == ("not_found", "no job j-17")
    for bad in (
        {"job": "j"},
        {"ok": "true"},
        {"ok": False},
        {"ok": False, "error": {"code": 4, "message": ""}},
        [],
    ):
        with pytest.raises(AnswerRefused):
            read_envelope(bad)


def test_submit_status_cancel():
    assert read_submit({"ok": True, "job": "j-1"}) == "j-1"
    for bad in ({}, {"job": ""}, {"job": 17}):
        with pytest.raises(AnswerRefused, match="submit"):
            read_submit(bad)
    assert read_status({"status": "failed", "reason": "lost"}).reason == "lost"
    assert read_status({"status": "running"}).ended is False
    for bad in ({"status": "finished"}, {}, {"status": "done", "reason": 3}):
        with pytest.raises(AnswerRefused, match="status"):
            read_status(bad)
    assert read_cancel({"status": "cancelled"}).status == "cancelled"
    assert read_cancel({"status": "failed", "reason": "calibration lost"}).reason == "calibration lost"
    with pytest.raises(AnswerRefused, match="cancel"):
        read_cancel({"status": "running"})


def test_request_messages():
    program = {"format": "wai.native/1", "basis": "rzsxxcz", "bits": 1, "gates": [], "measure": []}
    assert EstimateRequest(program=program, shots=10).message() == {
        "protocol": PROTOCOL,
        "op": "estimate",
        "program": program,
        "shots": 10,
    }
    sent = SubmitRequest(program=program, shots=10, seed=3, settings={"region": "eu"}).message()
    assert sent["seed"] == 3 and sent["settings"] == {"region": "eu"}
    for bad in ({"shots": 0}, {"shots": True}, {"shots": "10"}, {"shots": 1, "seed": -1}):
        with pytest.raises(ValueError):
            SubmitRequest(program=program, **bad)


# ---- errors and redaction ---------------------------------------------------------------------------


def test_provider_error_names_provider_and_op_and_redacts():
    e = ProviderError(
        "ref", "submit", "unauthorized", "wrong token s3cr3t-TOKEN-123", secrets=["s3cr3t-TOKEN-123"]
    )
    assert str(e) == "provider ref: submit: unauthorized: wrong token [credential redacted]"
    assert (e.provider, e.op, e.code) == ("ref", "submit", "unauthorized")
    assert ProviderError("ref", "status", "made-up", "x").code == "internal"
    assert redact("a s3cr3t b s3cr3t", ["s3cr3t", None]) == "a [credential redacted] b [credential redacted]"
    assert redact_value({"s3cr3t": ["x s3cr3t", 1]}, ["s3cr3t"]) == {
        "[credential redacted]": ["x [credential redacted]", 1]
    }


def test_a_provider_error_is_one_line_whatever_the_provider_wrote():
    """Issue 38: a message holding new lines, a carriage return or a terminal escape is folded where the
    error is formed, the credential taken out first; and it survives a pickle as it was."""
    import pickle

    e = ProviderError("ref", "describe", "internal", "down\nTraceback s3cr3t\r\x1b[2J", secrets=["s3cr3t"])
    assert str(e) == "provider ref: describe: internal: down\\nTraceback [credential redacted]\\r\\x1b[2J"
    assert pickle.loads(pickle.dumps(e)) == e and str(pickle.loads(pickle.dumps(e))) == str(e)


def test_a_job_id_is_printed_as_given_only_when_all_of_it_prints():
    assert job_shown("ref-0123abcd") == "ref-0123abcd"
    assert job_shown("arn:aws:braket:us-east-1:123456789012:quantum-task/" + "f" * 36).endswith("f" * 36)
    assert job_shown(None) == "never given"
    assert job_shown("s-1\n") == "'s-1\\n'"
    assert job_shown(" s-1") == "' s-1'" and job_shown("") == "''"
    forged = "s-1\nqsolve run: the job finished; nothing is left to follow"
    assert job_shown(forged) == "'s-1\\nqsolve run: the job '… (59 characters)"
