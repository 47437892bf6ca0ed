"""The evaluation model: the six requests to an OpenAI-compatible endpoint (issue 14, item 4).

Each request is one single-turn chat completion with no system prompt (:meth:`Request.openai_messages`),
its figures as ``data:`` URLs of their bytes at their ``<image>`` positions, decoded greedily
(``temperature: 0.0``). The six go out at once, on a pool of six threads. A request that fails (an
exception: a connection error, an HTTP error status, a timeout, a body that is no completion) is sent
once more; an answer that arrived is never asked again, whatever it says. The ``openai`` client's own
retries are off (``max_retries=0``), so that rule is the only one.

Each call is recorded (:class:`Call`): its duration, the input and output tokens as the endpoint reports
them (``usage.prompt_tokens``, ``usage.completion_tokens``; None when it reports none), its stop reason
(``finish_reason``) and, for a failure, the error. The largest call (prompt plus answer) is flagged when
it reaches :data:`CONTEXT_WARNING_RATIO` of the model's ``num_ctx``.

The key is read from the variable the model names, handed to the client, and nowhere else: it is never
logged, and an error's text has it replaced by ``[redacted]`` before it is kept.

    answers = VisionModel(spec).ask(requests, figures={sha256: png_bytes})
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from qsolve.evaluation.models import ModelSpec, api_key
from qsolve.evaluation.prompts import ImagePart, Request
from qsolve.evaluation.questions import QuestionKey

#: the requests of one evaluation sent at once
CONCURRENCY = 6
#: attempts of one request: the first, and once more when it fails
ATTEMPTS = 2
#: the largest call is flagged once prompt plus answer reach this share of the context window
CONTEXT_WARNING_RATIO = 0.9
#: an error's text is kept to this many characters
ERROR_CHARS = 500
REDACTED = "[redacted]"


# --- what a judge returns (the model here, or the classical judge) --------------------------------


class Call(BaseModel):
    """One call to the model: one attempt of one question."""

    question: QuestionKey
    attempt: int
    duration_seconds: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str | None = None
    #: the failure (``APIConnectionError: ...``), the key redacted; None when an answer arrived
    error: str | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.output_tokens or 0)


class Answer(BaseModel):
    """One question's answer as returned (``text``), or why none arrived."""

    question: QuestionKey
    #: the answer exactly as the model returned it; None when no answer arrived
    text: str | None = None
    attempts: int = 0
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: all attempts' time, in seconds
    duration_seconds: float = 0.0
    #: the last failure, when no answer arrived
    error: str | None = None
    #: the judge declined the question (the classical judge, for what it cannot answer)
    declined: bool = False


class TokenPeak(BaseModel):
    """The largest call: prompt plus answer, against the context window."""

    question: QuestionKey
    input_tokens: int
    output_tokens: int | None
    total_tokens: int
    context_window: int | None
    ratio: float | None
    near_limit: bool


class ModelAnswers(BaseModel):
    """A judge's answers to the requests of one evaluation, with every call it made."""

    model: str
    answers: dict[QuestionKey, Answer]
    calls: list[Call] = Field(default_factory=list)
    started_at: datetime
    #: wall time of the whole exchange, in seconds
    duration_seconds: float
    #: the calls' time added up, in seconds
    model_seconds: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    context_window: int | None = None
    peak: TokenPeak | None = None
    context_warning: bool = False
    #: each exchange these answers came from (a retry's answers beside those kept): when, how long
    exchanges: list[dict[str, Any]] = Field(default_factory=list)


def token_peak(calls: Sequence[Call], context_window: int | None) -> TokenPeak | None:
    """The call with the most tokens (prompt plus answer) among those that report them."""
    counted = [c for c in calls if c.total_tokens is not None]
    if not counted:
        return None
    top = max(counted, key=lambda c: c.total_tokens or 0)
    total = top.total_tokens or 0
    ratio = total / context_window if context_window else None
    return TokenPeak(
        question=top.question,
        input_tokens=top.input_tokens or 0,
        output_tokens=top.output_tokens,
        total_tokens=total,
        context_window=context_window,
        ratio=ratio,
        near_limit=ratio is not None and ratio >= CONTEXT_WARNING_RATIO,
    )


def _sum(values: Sequence[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def collect(
    model: str,
    answers: Mapping[QuestionKey, Answer],
    calls: Sequence[Call],
    *,
    started_at: datetime,
    duration_seconds: float,
    context_window: int | None,
) -> ModelAnswers:
    """The totals and the peak of a judge's calls, around its answers."""
    peak = token_peak(calls, context_window)
    return ModelAnswers(
        model=model,
        answers=dict(answers),
        calls=list(calls),
        started_at=started_at,
        duration_seconds=duration_seconds,
        model_seconds=sum(c.duration_seconds for c in calls),
        input_tokens=_sum([c.input_tokens for c in calls]),
        output_tokens=_sum([c.output_tokens for c in calls]),
        context_window=context_window,
        peak=peak,
        context_warning=bool(peak and peak.near_limit),
    )


# --- figures ----------------------------------------------------------------------------------------


def media_type(data: bytes) -> str:
    """PNG, JPEG or WebP by their magic bytes; PNG otherwise (what the calibration figures are)."""
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


def data_url(data: bytes, media: str | None = None) -> str:
    return f"data:{media or media_type(data)};base64,{base64.b64encode(data).decode('ascii')}"


def image_urls(requests: Sequence[Request], figures: Mapping[str, bytes]) -> dict[str, str]:
    """A ``data:`` URL for every image of the requests, by SHA-256: a result's figure from ``figures``,
    an example's from its file (whose bytes must still have the hash the selection saw)."""
    urls: dict[str, str] = {}
    for request in requests:
        for part in request.images:
            if part.sha256 not in urls:
                urls[part.sha256] = _url(part, figures)
    return urls


def _url(part: ImagePart, figures: Mapping[str, bytes]) -> str:
    if part.role == "example" and part.path:
        data = Path(part.path).read_bytes()
        if hashlib.sha256(data).hexdigest() != part.sha256:
            raise ValueError(f"example {part.example}: its figure {part.path} changed since it was selected")
        return data_url(data, part.media_type)
    if part.sha256 in figures:
        return data_url(figures[part.sha256])
    raise ValueError(f"no bytes for figure {part.sha256}")


# --- the model ----------------------------------------------------------------------------------------


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` replaced by ``[redacted]``, cut to :data:`ERROR_CHARS` characters."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, REDACTED)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


_clients: dict[tuple[str, str, float], Any] = {}
_clients_lock = threading.Lock()


def _client(openai_class: Any, base_url: str, key: str, timeout: float) -> Any:
    """One client (and its connection pool) per endpoint, key and time-out in this process: a run's
    records reuse its connections instead of opening new ones for each record."""
    with _clients_lock:
        cached = _clients.get((base_url, key, timeout))
        if cached is None:
            cached = openai_class(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)
            _clients[(base_url, key, timeout)] = cached
        return cached


class VisionModel:
    """A declared model behind an OpenAI-compatible endpoint."""

    def __init__(self, spec: ModelSpec, *, environ: Mapping[str, str] | None = None) -> None:
        if spec.is_classical:
            raise ValueError(f"{spec.id} is the classical judge, not a model behind an endpoint")
        if not spec.base_url:
            raise ValueError(f"{spec.id}: no base_url")
        self.spec = spec
        self._environ = os.environ if environ is None else environ

    def ask(
        self,
        requests: Sequence[Request],
        figures: Mapping[str, bytes],
        *,
        cancel: threading.Event | None = None,
    ) -> ModelAnswers:
        """The requests, all at once; each failure sent once more; ``cancel`` (when set) stops any
        attempt not yet begun. ``figures`` are the result's figure bytes by SHA-256."""
        from openai import OpenAI  # imported here: a second to import, and only a model call needs it

        key = api_key(self.spec, self._environ)
        urls = image_urls(requests, figures)
        started_at = datetime.now(UTC)
        start = time.perf_counter()
        client = _client(OpenAI, self.spec.base_url, key, self.spec.timeout_seconds)
        with ThreadPoolExecutor(max_workers=max(1, min(CONCURRENCY, len(requests)))) as pool:
            futures = [pool.submit(self._ask_one, client, r, urls, key, cancel) for r in requests]
            results = [f.result() for f in futures]
        answers = {answer.question: answer for answer, _ in results}
        calls = [call for _, question_calls in results for call in question_calls]
        return collect(
            self.spec.id,
            answers,
            calls,
            started_at=started_at,
            duration_seconds=time.perf_counter() - start,
            context_window=self.spec.num_ctx,
        )

    def _arguments(self, request: Request, urls: Mapping[str, str]) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.spec.endpoint_model,
            "messages": request.openai_messages(lambda part: urls[part.sha256]),
            "temperature": self.spec.temperature,
        }
        if self.spec.max_tokens is not None:
            arguments["max_tokens"] = self.spec.max_tokens
        return arguments

    def _ask_one(
        self,
        client: Any,
        request: Request,
        urls: Mapping[str, str],
        key: str,
        cancel: threading.Event | None,
    ) -> tuple[Answer, list[Call]]:
        arguments = self._arguments(request, urls)
        calls: list[Call] = []
        error: str | None = None
        for attempt in range(1, ATTEMPTS + 1):
            if cancel is not None and cancel.is_set():
                error = "cancelled before it was sent"
                break
            began = time.perf_counter()
            try:
                response = client.chat.completions.create(**arguments)
                text, stop, usage = _read(response)
                if text is not None and key and len(key) >= 4 and key in text:
                    text = text.replace(key, REDACTED)  # an endpoint that quotes its key back: never kept
            except Exception as e:  # noqa: BLE001 - any failure of the call is sent once more
                error = redact(f"{type(e).__name__}: {e}", key)
                calls.append(
                    Call(
                        question=request.question,
                        attempt=attempt,
                        duration_seconds=time.perf_counter() - began,
                        error=error,
                    )
                )
                continue
            call = Call(
                question=request.question,
                attempt=attempt,
                duration_seconds=time.perf_counter() - began,
                input_tokens=usage[0],
                output_tokens=usage[1],
                stop_reason=stop,
            )
            calls.append(call)
            answer = Answer(
                question=request.question,
                text=text,
                attempts=attempt,
                stop_reason=stop,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                duration_seconds=sum(c.duration_seconds for c in calls),
            )
            return answer, calls
        return (
            Answer(
                question=request.question,
                attempts=len(calls),
                duration_seconds=sum(c.duration_seconds for c in calls),
                error=error,
            ),
            calls,
        )


class MalformedResponse(Exception):  # noqa: N818 - what it is
    """A response that is no chat completion (no ``choices``): counted as a failed call."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read(response: Any) -> tuple[str | None, str | None, tuple[int | None, int | None]]:
    """(text, stop reason, (input tokens, output tokens)) of a completion."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("the response holds no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    text = content if isinstance(content, str) else None
    refusal = getattr(message, "refusal", None)
    if text is None and isinstance(refusal, str):  # OpenAI's refusal: what the model said instead
        text = refusal
    stop = getattr(choice, "finish_reason", None)
    usage = getattr(response, "usage", None)
    tokens = (
        (_int(getattr(usage, "prompt_tokens", None)), _int(getattr(usage, "completion_tokens", None)))
        if usage is not None
        else (None, None)
    )
    return text, stop if isinstance(stop, str) else None, tokens
