"""A local OpenAI-compatible model for tests: ``POST /v1/chat/completions`` on 127.0.0.1, answering from a
script keyed by the question (issue 14, "Tests and benchmark"). No mock of the ``openai`` package: the
client talks HTTP to this server as it would to vLLM or Ollama.

The question is recognised from the prompt's text by a phrase of each template (:data:`MARKERS`). A
script gives each question a step, or a list of steps taken in turn (the last one repeating):

    answer(text)             200 with the text, usage (prompt/completion tokens) and finish_reason
                             (echo_auth=True appends the request's Authorization header to it;
                             refusal=True sends it as OpenAI's ``refusal``, ``content`` null)
    fail(500)                an HTTP error (the body may be given: echo_auth=True puts the request's
                             Authorization header in it, to prove a key never reaches a record)
    garbage()                200 with a body that is no JSON
    slow(text, seconds)      the answer after a wait (stop() ends every wait)

Every request received is kept (:attr:`ModelServer.received`): its question, JSON body and
Authorization header; :attr:`ModelServer.max_in_flight` is the most handled at once. ``barrier=6``
holds each request until six are in flight (or fails it after a timeout), so a test sees that the six
requests go out at once.

    with ModelServer({"fit_reliability": [fail(), answer("Assessment: Reliable")]}) as server:
        spec = server.spec()
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from qsolve.evaluation.models import ModelSpec

#: a phrase of each question's template (qsolve/evaluation/questions.py)
MARKERS: dict[str, tuple[str, ...]] = {
    "technical_description": ("Describe this figure as one JSON object",),
    "experimental_conclusion": ("Classify the outcome of this experiment",),
    "experimental_significance": ("What does this result mean for the calibration",),
    "fit_reliability": ("Is the fit in this figure reliable",),
    "parameter_extraction": (
        "Read these parameters from this figure",
        "Read from this figure the parameters",
    ),
    "calibration_diagnosis": ("Decide the status of this experiment",),
}

#: a healthy evaluation's answers, one in each form the parser reads
HEALTHY: dict[str, str] = {
    "technical_description": (
        "```json\n"
        '{"plot_type": "scatter with fit",'
        ' "x_axis": {"label": "Delay (µs)", "unit": "µs", "scale": "linear"},'
        ' "y_axis": {"label": "P(1)", "unit": null, "scale": "linear"},'
        ' "main_features": ["an exponential decay that levels off"]}\n'
        "```"
    ),
    "experimental_conclusion": "Classification: **Expected behavior**\nReason: A clean decay to the floor.",
    "experimental_significance": "T1 is well measured; accept it and go on to CheckT2Echo.",
    "fit_reliability": "**Assessment:** Reliable.\nReason: The curve follows the points across the sweep.",
    "parameter_extraction": 'The parameters: {"t1": 49.1}',
    "calibration_diagnosis": "Status: SUCCESS\nSuggested range: none\nNotes: The decay levels off.",
}


@dataclass(frozen=True)
class Step:
    kind: Literal["answer", "fail", "garbage"] = "answer"
    text: str | None = ""
    status: int = 500
    body: str = '{"error": {"message": "the model is not ready", "type": "server_error"}}'
    echo_auth: bool = False
    delay: float = 0.0
    prompt_tokens: int | None = 120
    completion_tokens: int | None = 30
    finish_reason: str = "stop"
    #: answer: the text as OpenAI's ``refusal``, with ``content`` null
    refusal: bool = False


def answer(text: str | None, **kw: Any) -> Step:
    return Step(kind="answer", text=text, **kw)


def fail(status: int = 500, **kw: Any) -> Step:
    return Step(kind="fail", status=status, **kw)


def garbage() -> Step:
    return Step(kind="garbage")


def slow(text: str, seconds: float, **kw: Any) -> Step:
    return Step(kind="answer", text=text, delay=seconds, **kw)


def question_of(body: Mapping[str, Any]) -> str | None:
    """The question a request asks, from the marker phrase in its text parts."""
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
            )
    text = "\n".join(texts)
    for key, phrases in MARKERS.items():
        if any(p in text for p in phrases):
            return key
    return None


@dataclass
class Received:
    question: str | None
    body: dict[str, Any]
    authorization: str | None
    at: float
    step: str


@dataclass
class _State:
    script: dict[str, deque[Step]]
    default: Step | None
    barrier: threading.Barrier | None
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)

    def next_step(self, question: str | None) -> Step:
        with self.lock:
            queue = self.script.get(question or "")
            if queue:
                return queue.popleft() if len(queue) > 1 else queue[0]
        if self.default is not None:
            return self.default
        return answer(HEALTHY.get(question or "", "I cannot tell."))


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, b'{"error": {"message": "not JSON"}}')
            return
        question = question_of(body)
        step = state.next_step(question)
        auth = self.headers.get("Authorization")
        with state.lock:
            state.received.append(Received(question, body, auth, time.monotonic(), step.kind))
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if state.barrier is not None:
                try:
                    state.barrier.wait()
                except threading.BrokenBarrierError:
                    self._send(503, b'{"error": {"message": "the barrier broke: not all at once"}}')
                    return
            if step.delay:
                state.stopping.wait(step.delay)
            self._respond(step, body, auth)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _respond(self, step: Step, body: dict[str, Any], auth: str | None) -> None:
        if step.kind == "fail":
            text = step.body
            if step.echo_auth:
                text = json.dumps({"error": {"message": f"rejected the request with Authorization: {auth}"}})
            self._send(step.status, text.encode())
            return
        if step.kind == "garbage":
            self._send(200, b"<html>this is no completion</html>", "application/json")
            return
        response: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": step.text}
                    | ({"content": None, "refusal": step.text} if step.refusal else {})
                    | ({"content": f"{step.text} {auth}"} if step.echo_auth else {}),
                    "finish_reason": step.finish_reason,
                }
            ],
        }
        if step.prompt_tokens is not None:
            response["usage"] = {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "total_tokens": step.prompt_tokens + (step.completion_tokens or 0),
            }
        self._send(200, json.dumps(response).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class ModelServer:
    """The server, on a free port of 127.0.0.1; a context manager that starts and stops it."""

    def __init__(
        self,
        script: Mapping[str, Step | Sequence[Step]] | None = None,
        *,
        default: Step | None = None,
        barrier: int | None = None,
        barrier_timeout: float = 5.0,
    ) -> None:
        steps = {
            key: deque([value] if isinstance(value, Step) else list(value))
            for key, value in (script or {}).items()
        }
        self.state = _State(
            script=steps,
            default=default,
            barrier=threading.Barrier(barrier, timeout=barrier_timeout) if barrier else None,
        )
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.state.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def received(self) -> list[Received]:
        with self.state.lock:
            return list(self.state.received)

    @property
    def max_in_flight(self) -> int:
        return self.state.max_in_flight

    def asked(self, question: str) -> int:
        return sum(1 for r in self.received if r.question == question)

    def spec(self, **changes: Any) -> ModelSpec:
        """A declared model that points here (a keyless one unless ``api_key_env`` is given)."""
        values: dict[str, Any] = {
            "id": "Ising-Calibration-test",
            "base_url": self.url,
            "num_ctx": 16384,
            "images": True,
            "timeout_seconds": 5.0,
        }
        values.update(changes)
        return ModelSpec(**values)
