"""The routing classifier: asks a chat model for one intent's name when the rules are unsure.

Without a key or a base URL there is no classifier and routing records `fallback` /
`no_model_configured`.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Final

import openai

from coachctx.engine.routing import ModelAnswer
from coachctx.model.call import (
    MAX_ERROR_CHARS,
    AnswerEncoded,
    AnswerTooLarge,
    ModelLoop,
    RedirectRefused,
    async_client,
    cause,
    model_text,
)
from coachctx.model.settings import (
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    ModelSettings,
    model_settings,
    parse_seconds,
)
from coachctx.reading import clip

MAX_ANSWER_BYTES: Final = 256 * 1024
"""The most the classifier reads of one answer (a label is a few bytes); more is refused as it arrives."""
MAX_RAW_CHARS: Final = 200
"""The most of a model's raw answer kept in the Decision and its trace."""
SYSTEM_PROMPT: Final = (
    "You route an athlete's question to exactly one intent of a coaching assistant. "
    "Answer with the intent name only, one word, lower case, from this list: {intents}. "
    "training = sessions, pace, plans, racing; injury = pain, injuries, rehab; recovery = rest, sleep, "
    "fatigue, soreness; nutrition = food, fuelling, hydration; conditions = weather, heat, air quality, pollen; "
    "general = anything else."
)


class OpenAIClassifier:
    """Classifier over the chat-completions API. Never raises once built: failures become a
    ModelAnswer with `error` set (and `timed_out` when the deadline passed).

    `timeout_s` is the whole call's deadline — connect, request, headers and body."""

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str = DEFAULT_MODEL,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.timeout_s = parse_seconds("the model timeout", timeout_s, default=DEFAULT_TIMEOUT_S,
                                       where="the classifier's settings")

    def __call__(self, question: str, intents: Sequence[str]) -> ModelAnswer:
        started = time.perf_counter()
        try:
            with ModelLoop() as loop:
                raw = loop.run(self._ask(question, intents))
            return ModelAnswer(raw=clip(raw, MAX_RAW_CHARS) if raw is not None else "", latency_ms=_ms(started))
        except (TimeoutError, openai.APITimeoutError):
            return ModelAnswer(raw=None, latency_ms=_ms(started), timed_out=True,
                               error=f"no complete answer within the {self.timeout_s:g} s deadline")
        except Exception as e:
            return ModelAnswer(raw=None, latency_ms=_ms(started), error=_describe(e))

    async def _ask(self, question: str, intents: Sequence[str]) -> str | None:
        async with async_client(api_key=self.api_key, base_url=self.base_url, timeout_s=self.timeout_s,
                                max_bytes=MAX_ANSWER_BYTES) as client, asyncio.timeout(self.timeout_s):
            response = await client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": SYSTEM_PROMPT.format(intents=", ".join(intents))},
                          {"role": "user", "content": model_text(question)}],
                temperature=0,
                max_tokens=5,
            )
            if not response.choices:
                _refuse_error_object(response)
                return None
            message = response.choices[0].message
            if message.content is None and getattr(message, "tool_calls", None):
                raise NotAnAnswer("the model answered with a tool call, not text")
            return message_text(message.content)


class NotAnAnswer(ValueError):
    """The completion's content is neither text nor a list of text parts."""


def message_text(content: object, *, read: str = "answer is not a chat completion") -> str | None:
    """A chat message's text: the string, or the text parts of the list form some servers send
    (`[{"type": "text", "text": "injury"}]`) joined; `NotAnAnswer` for anything else, saying the
    endpoint's `read` (its answer, or its reply stream) is not what was asked for."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type") == "text"]
        if texts and all(isinstance(t, str) for t in texts):
            return "".join(texts)  # type: ignore[arg-type]
    raise NotAnAnswer(f"the endpoint's {read} (its content is a {type(content).__name__} of no text parts)")


def _refuse_error_object(response: object) -> None:
    """An answer with no choices but an error object (`{"error": {"message": ...}}`, which some proxies
    send with HTTP 200) is the endpoint's error, not an empty label."""
    error = (getattr(response, "model_extra", None) or {}).get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        raise NotAnAnswer(f"the endpoint answered HTTP 200 with an error: {clip(str(message), 200)}")


def _describe(e: Exception) -> str:
    for kind in (AnswerTooLarge, AnswerEncoded, NotAnAnswer, RedirectRefused):
        found = cause(e, kind)
        if found is not None:
            return clip(str(found), MAX_ERROR_CHARS)
    if isinstance(e, openai.APIStatusError):
        return f"HTTP {e.status_code}"
    huge = cause(e, ValueError)
    if huge is not None and "integer string conversion" in str(huge):  # Python's limit, while reading the JSON
        return "the endpoint's answer is not a chat completion (it holds a number of more than 4,300 digits)"
    if isinstance(e, openai.APIError):
        # the SDK's "Connection error." alone says nothing of what happened: name the HTTP client's error
        under = e.__cause__
        why = f" ({type(under).__name__}: {under})" if under is not None and str(under) else ""
        return clip(f"{type(e).__name__}: {e}{why}", MAX_ERROR_CHARS)
    local = _local_setup_problem(e)
    if local is not None:
        return clip(local, MAX_ERROR_CHARS)
    # an answer the SDK cannot read as a chat completion (HTML, plain text)
    return f"the endpoint's answer is not a chat completion ({type(e).__name__})"


_LOCAL_SETTINGS: Final = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")
"""Variables the HTTP client reads on its own: a problem with one is this machine's, not the endpoint's."""


def _local_setup_problem(e: Exception) -> str | None:
    """What went wrong on this machine before any answer came back (an adversarial pass: a SOCKS
    proxy without its package, a proxy that is no URL, a missing CA file were all reported as "the
    endpoint's answer is not a chat completion"), naming the settings in play; None for anything else."""
    found = cause(e, ImportError) or cause(e, FileNotFoundError) or cause(e, ssl.SSLError) or cause(e, ValueError)
    if found is None or isinstance(found, json.JSONDecodeError | UnicodeError):  # an answer that is not JSON
        return None
    # names only: a proxy URL may hold a password, and this text goes into the Decision and its trace
    shown_settings = ", ".join(k for k in _LOCAL_SETTINGS if os.environ.get(k)) or "none set"
    what = str(found) or type(found).__name__
    return (f"the HTTP client failed on this machine before the endpoint answered ({type(found).__name__}: "
            f"{what}); check the proxy and certificate settings (set: {shown_settings})")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def classifier_for(settings: ModelSettings) -> OpenAIClassifier | None:
    """A classifier when the settings configure a model, else None (routing falls back).
    Refused settings raise InputError, configured model or not."""
    settings.check()
    if not settings.configured:
        return None
    return OpenAIClassifier(api_key=settings.api_key, base_url=settings.base_url, model=settings.model,
                            timeout_s=settings.timeout_s)


def classifier_from_env(env: Mapping[str, str] | None = None) -> OpenAIClassifier | None:
    """`classifier_for` the settings in the environment (`env`, or the process's own)."""
    return classifier_for(model_settings(env))
