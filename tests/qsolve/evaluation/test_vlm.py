"""The model through the openai package against the project's own local server: six at once, a failure
sent once more, an answer never asked again, greedy, single-turn, figures as data URLs, tokens."""

from __future__ import annotations

import base64
import hashlib
import threading

import pytest

from qsolve.evaluation.knowledge import derive_reference
from qsolve.evaluation.models import ModelUnavailable
from qsolve.evaluation.prompts import evaluation_requests
from qsolve.evaluation.questions import QUESTION_KEYS
from qsolve.evaluation.vlm import CONTEXT_WARNING_RATIO, VisionModel, data_url, media_type
from tests.qsolve.evaluation.model_server import ModelServer, answer, fail, garbage, slow

TASK = """# CheckT1

Measures the energy relaxation time T1.

## Expected plot

An exponential decay. A good result shows the decay reaching the baseline.

## Common failures

- Sweep too short — the points are still falling at the right edge
- Too few points — the plot shows fewer than eight data points

## Parameters to extract

- t1: T1 in microseconds
"""
REFERENCE = derive_reference(TASK, task="CheckT1")
EVIDENCE = {
    "task": "CheckT1",
    "target": "Q03",
    "status": "completed",
    "sweeps": [{"parameter": "delay", "unit": "us", "start": 0, "stop": 250, "points": 31, "step": 8.3}],
    "shots": 1024,
}


def png(n: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + f"figure {n}".encode()


def requests_for(figures: list[bytes], max_figures: int = 4):
    hashes = [hashlib.sha256(f).hexdigest() for f in figures]
    return evaluation_requests(REFERENCE, EVIDENCE, hashes, max_figures=max_figures), {
        h: f for h, f in zip(hashes, figures, strict=True)
    }


def ask(server: ModelServer, figures: list[bytes] | None = None, **spec_changes):
    requests, data = requests_for(figures or [png(1)])
    return VisionModel(server.spec(**spec_changes)).ask(requests, data)


def test_the_six_requests_go_out_at_once():
    with ModelServer(barrier=6) as server:
        got = ask(server)
    assert server.max_in_flight == 6
    assert sorted(r.question for r in server.received) == sorted(QUESTION_KEYS)
    assert all(a.text and a.attempts == 1 for a in got.answers.values())


def test_a_request_that_fails_is_sent_once_more_and_an_answer_never_again():
    script = {
        "fit_reliability": [fail(500), answer("Assessment: Reliable")],
        "technical_description": [garbage(), answer("{}")],
        "parameter_extraction": fail(503),  # fails every time
        "experimental_conclusion": answer("this is not any form the parser reads"),
        "calibration_diagnosis": answer(""),  # an empty answer is an answer
    }
    with ModelServer(script) as server:
        got = ask(server)
    a = got.answers
    assert (a["fit_reliability"].attempts, a["fit_reliability"].text) == (2, "Assessment: Reliable")
    assert (a["technical_description"].attempts, a["technical_description"].text) == (2, "{}")
    assert (a["parameter_extraction"].attempts, a["parameter_extraction"].text) == (2, None)
    assert "503" in (a["parameter_extraction"].error or "")
    assert a["experimental_conclusion"].attempts == 1
    assert a["calibration_diagnosis"].attempts == 1 and a["calibration_diagnosis"].text == ""
    counts = {key: server.asked(key) for key in QUESTION_KEYS}
    assert counts == {
        "technical_description": 2,
        "experimental_conclusion": 1,
        "experimental_significance": 1,
        "fit_reliability": 2,
        "parameter_extraction": 2,
        "calibration_diagnosis": 1,
    }
    failed = [c for c in got.calls if c.error]
    assert {c.question for c in failed} == {
        "technical_description",
        "fit_reliability",
        "parameter_extraction",
    }
    assert len(got.calls) == 9


def test_a_call_past_its_timeout_counts_as_failed_and_is_sent_once_more():
    script = {"experimental_significance": [slow("late", 2.0), answer("on time")]}
    with ModelServer(script) as server:
        got = ask(server, timeout_seconds=0.3)
    sig = got.answers["experimental_significance"]
    assert (sig.attempts, sig.text) == (2, "on time")
    assert "Timeout" in (
        got.calls[[c.question for c in got.calls].index("experimental_significance")].error or ""
    )


def test_greedy_single_turn_no_system_prompt_and_the_model_named_as_the_endpoint_knows_it():
    with ModelServer() as server:
        ask(server, model="nvidia/Ising-Calibration-1-8B")
    assert len(server.received) == 6
    for r in server.received:
        assert r.body["temperature"] == 0.0
        assert r.body["model"] == "nvidia/Ising-Calibration-1-8B"
        assert [m["role"] for m in r.body["messages"]] == ["user"]
        assert "max_tokens" not in r.body


def _images(body: dict) -> list[tuple[int, str]]:
    content = body["messages"][0]["content"]
    return [(i, p["image_url"]["url"]) for i, p in enumerate(content) if p["type"] == "image_url"]


def test_figures_go_as_data_urls_at_their_place_at_most_four_the_last_judged():
    figures = [png(n) for n in range(6)]
    requests, data = requests_for(figures)
    with ModelServer() as server:
        VisionModel(server.spec()).ask(requests, data)
    for r in server.received:
        content = r.body["messages"][0]["content"]
        images = _images(r.body)
        assert [base64.b64decode(url.split(",", 1)[1]) for _, url in images] == figures[-4:]
        assert all(url.startswith("data:image/png;base64,") for _, url in images)
        last = images[-1][0]
        assert content[last - 1]["text"].endswith("The figure to judge:")
        assert content[last + 1]["type"] == "text"  # the question follows the judged figure


def test_one_figure_stands_at_the_templates_image():
    with ModelServer() as server:
        ask(server)
    for r in server.received:
        content = r.body["messages"][0]["content"]
        ((position, url),) = _images(r.body)
        assert base64.b64decode(url.split(",", 1)[1]) == png(1)
        if r.question == "technical_description":  # nothing of the reference, only the context line
            assert content[0]["text"].startswith("Experiment context:")
        else:
            assert content[0]["text"].startswith("This is a CheckT1 experiment")
        assert content[position + 1]["type"] == "text"


def test_tokens_per_call_as_the_endpoint_reports_them_and_the_totals():
    script = {
        key: answer("x", prompt_tokens=100 + i, completion_tokens=10) for i, key in enumerate(QUESTION_KEYS)
    }
    script["calibration_diagnosis"] = answer("Status: SUCCESS", prompt_tokens=None)  # no usage reported
    with ModelServer(script) as server:
        got = ask(server)
    a = got.answers
    assert (a["technical_description"].input_tokens, a["technical_description"].output_tokens) == (100, 10)
    assert (a["calibration_diagnosis"].input_tokens, a["calibration_diagnosis"].output_tokens) == (None, None)
    assert got.input_tokens == sum(100 + i for i in range(5))
    assert got.output_tokens == 50
    assert got.peak is not None and got.peak.question == "parameter_extraction"
    assert got.peak.total_tokens == 114
    assert got.context_window == 16384 and not got.context_warning


def test_the_largest_call_is_flagged_at_ninety_percent_of_the_window():
    near = {"fit_reliability": answer("x", prompt_tokens=850, completion_tokens=50)}  # 900 of 1000
    with ModelServer(near) as server:
        got = ask(server, num_ctx=1000)
    assert got.peak.total_tokens == 900 and got.peak.ratio == CONTEXT_WARNING_RATIO
    assert got.peak.near_limit and got.context_warning
    below = {"fit_reliability": answer("x", prompt_tokens=850, completion_tokens=49)}
    with ModelServer(below) as server:
        got = ask(server, num_ctx=1000)
    assert not got.context_warning


def test_stop_reasons_are_kept():
    with ModelServer({"experimental_significance": answer("cut", finish_reason="length")}) as server:
        got = ask(server)
    assert got.answers["experimental_significance"].stop_reason == "length"
    assert got.answers["fit_reliability"].stop_reason == "stop"


def test_the_key_goes_to_the_endpoint_and_nowhere_else():
    secret = "sk-test-planted-1f2e3d4c5b6a"
    script = {"fit_reliability": [fail(401, echo_auth=True), fail(500, echo_auth=True)]}
    with ModelServer(script) as server:
        requests, data = requests_for([png(1)])
        spec = server.spec(api_key_env="QSOLVE_TEST_MODEL_KEY")
        got = VisionModel(spec, environ={"QSOLVE_TEST_MODEL_KEY": secret}).ask(requests, data)
    assert {r.authorization for r in server.received} == {f"Bearer {secret}"}
    stored = got.model_dump_json()
    assert secret not in stored
    assert "[redacted]" in (got.answers["fit_reliability"].error or "")


def test_a_missing_key_stops_before_any_call():
    with ModelServer() as server:
        requests, data = requests_for([png(1)])
        spec = server.spec(api_key_env="QSOLVE_TEST_UNSET_KEY")
        with pytest.raises(ModelUnavailable, match="QSOLVE_TEST_UNSET_KEY"):
            VisionModel(spec, environ={}).ask(requests, data)
    assert server.received == []


def test_a_cancelled_evaluation_sends_nothing_more():
    cancel = threading.Event()
    cancel.set()
    with ModelServer() as server:
        requests, data = requests_for([png(1)])
        got = VisionModel(server.spec()).ask(requests, data, cancel=cancel)
    assert server.received == []
    assert all(
        a.text is None and a.attempts == 0 and "cancelled" in (a.error or "") for a in got.answers.values()
    )


def test_media_types_and_data_urls():
    assert media_type(png(1)) == "image/png"
    assert media_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert data_url(b"ab") == "data:image/png;base64,YWI="


def test_an_answer_that_quotes_the_key_back_is_kept_with_the_key_redacted():
    """An endpoint whose completion quotes the request's Authorization header (found by the independent
    test of issue 25: the answer was kept byte for byte, the key in it)."""
    secret = "sk-test-planted-answer-7e6d5c4b"
    with ModelServer(
        {"calibration_diagnosis": answer("Status: SUCCESS\nNotes: you sent", echo_auth=True)}
    ) as server:
        requests, data = requests_for([png(1)])
        spec = server.spec(api_key_env="QSOLVE_TEST_MODEL_KEY")
        got = VisionModel(spec, environ={"QSOLVE_TEST_MODEL_KEY": secret}).ask(requests, data)
    assert secret not in got.model_dump_json()
    assert got.answers["calibration_diagnosis"].text == "Status: SUCCESS\nNotes: you sent Bearer [redacted]"


def test_an_openai_refusal_is_kept_as_the_answer():
    """``content`` null with ``refusal`` set: the refusal is what the model said, kept as its answer
    (it was recorded as an answer of None, the words lost)."""
    words = "I'm sorry, I can't help with judging this figure."
    with ModelServer({"calibration_diagnosis": answer(words, refusal=True)}) as server:
        requests, data = requests_for([png(1)])
        got = VisionModel(server.spec()).ask(requests, data)
    assert got.answers["calibration_diagnosis"].text == words
    assert got.answers["calibration_diagnosis"].error is None
