"""The model seam: a chat completion against any OpenAI-compatible endpoint, bounded in time and retried.

``ModelClient`` is the protocol a participant calls; ``OpenAIModel`` is the ``openai`` package pointed at
``CASEBOARD_MODEL_URL`` with ``CASEBOARD_MODEL`` and ``CASEBOARD_MODEL_API_KEY``. Retries are ours, not the
library's (its own are off), so every attempt and its error is known and recorded with the judgment: a
timeout, a connection error, a 429 or a 5xx is retried with exponential backoff (a 429's ``Retry-After`` is
honoured, up to a bound); any other answer is final. When every attempt failed, ``ModelUnavailable`` says
what each one met.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from caseboard.domain.errors import CaseboardError, ConfigurationError
from caseboard.settings import Settings

BACKOFF_S = 0.5
MAX_RETRY_AFTER_S = 30.0

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    model: str
    """The model's name as the endpoint reported it (the configured one when it reports none)."""
    usage: dict[str, int]
    latency_ms: int
    """The successful attempt's round trip."""
    attempts: int
    errors: tuple[str, ...] = ()
    """What each failed attempt before it met (``timeout``, ``rate_limited``, ``status 503``, ...)."""


class ModelUnavailable(CaseboardError):
    def __init__(self, model: str, errors: list[str], latency_ms: int) -> None:
        super().__init__(f"model {model} did not answer after {len(errors)} attempts: {'; '.join(errors)}")
        self.model = model
        self.errors = tuple(errors)
        self.latency_ms = latency_ms


class ModelClient(Protocol):
    name: str

    def complete(self, messages: Messages, *, max_tokens: int) -> ModelReply:
        """The model's answer to ``messages`` (at most ``max_tokens`` tokens), or ``ModelUnavailable``."""
        ...


@dataclass
class OpenAIModel:
    url: str
    name: str
    api_key: str | None = None
    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = BACKOFF_S
    sleep: Callable[[float], None] = time.sleep
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import openai  # here, not at the top: every process that serves the API imports this module (0.3 s)

        self._client = openai.OpenAI(
            base_url=self.url,
            api_key=self.api_key or "unset",  # a local server takes any key; the library insists on one
            timeout=self.timeout_s,
            max_retries=0,
        )

    def complete(self, messages: Messages, *, max_tokens: int) -> ModelReply:
        import openai  # imported by ``__post_init__``: only its errors are read here

        errors: list[str] = []
        started = time.monotonic()
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, errors[-1]))
            began = time.monotonic()
            try:
                answer = self._client.chat.completions.create(
                    model=self.name,
                    messages=messages,
                    max_tokens=max_tokens,
                    response_format={"type": "json_object"},
                )
            except openai.APITimeoutError:
                errors.append("timeout")
            except openai.RateLimitError as error:
                errors.append(f"rate_limited retry_after={_retry_after(error.response.headers.get('retry-after'))}")
            except openai.APIConnectionError as error:
                errors.append(f"connection: {type(error.__cause__ or error).__name__}")
            except openai.InternalServerError as error:
                errors.append(f"status {error.status_code}")
            except openai.APIStatusError as error:
                errors.append(f"status {error.status_code}")
                break  # the endpoint refused the request itself: the same request will not do better
            else:
                latency = round((time.monotonic() - began) * 1000)
                usage = answer.usage
                content = answer.choices[0].message.content if answer.choices else None
                return ModelReply(
                    content=content,
                    model=answer.model or self.name,
                    usage={
                        "prompt_tokens": usage.prompt_tokens if usage else 0,
                        "completion_tokens": usage.completion_tokens if usage else 0,
                        "total_tokens": usage.total_tokens if usage else 0,
                    },
                    latency_ms=latency,
                    attempts=attempt + 1,
                    errors=tuple(errors),
                )
        raise ModelUnavailable(self.name, errors, round((time.monotonic() - started) * 1000))

    def _delay(self, attempt: int, last_error: str) -> float:
        if last_error.startswith("rate_limited"):
            hinted = last_error.rpartition("=")[2]
            if hinted != "None":
                return min(float(hinted), MAX_RETRY_AFTER_S)
        return float(self.backoff_s * 2 ** (attempt - 1))


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def model_from_settings(settings: Settings, *, url: str | None = None) -> OpenAIModel:
    """The configured model; ``url`` overrides ``CASEBOARD_MODEL_URL`` (``demo --live --model-url``)."""
    endpoint = url or settings.model_url
    if not endpoint:
        raise ConfigurationError(
            "no model endpoint: set CASEBOARD_MODEL_URL to an OpenAI-compatible base URL (e.g. "
            "http://127.0.0.1:8000/v1) and CASEBOARD_MODEL to the model's name"
        )
    if not endpoint.startswith(("http://", "https://")):
        raise ConfigurationError(f"CASEBOARD_MODEL_URL must be an http:// or https:// URL, not {endpoint!r}")
    if not settings.model:
        raise ConfigurationError("CASEBOARD_MODEL names no model: set it to the model's name at the endpoint")
    return OpenAIModel(
        url=endpoint,
        name=settings.model,
        api_key=settings.model_api_key,
        timeout_s=float(settings.model_timeout_s),
        retries=settings.model_retries,
    )
