"""The model calls: the routing classification here, and what it shares with the playground's
reply stream — the settings (validated once), a total deadline on every call, and caps on what
is read from the endpoint and what is kept of its answer.

Configured from the environment: OPENAI_API_KEY, OPENAI_BASE_URL (any OpenAI-compatible
endpoint), COACHCTX_MODEL, COACHCTX_MODEL_TIMEOUT (seconds). Without a key or a base URL
there is no classifier and routing records `fallback` / `no_model_configured`.

Why the SDK's async client: HTTP timeouts bound each socket operation, not the call, so an
endpoint that sends a byte a second, or streams forever, never trips them. A call runs on a
private event loop under `asyncio.timeout`, which cancels connect, headers, body and stream
alike at the deadline, whatever the server does.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Coroutine, Mapping, Sequence
from typing import Any, Final, TypeVar

import httpx2
import openai

from coachctx.engine.routing import ModelAnswer
from coachctx.errors import InputError
from coachctx.reading import control_character

DEFAULT_MODEL: Final = "gpt-4o-mini"
DEFAULT_TIMEOUT_S: Final = 3.0
MIN_TIMEOUT_S: Final = 0.1
MAX_TIMEOUT_S: Final = 600.0
"""A timeout setting outside [MIN_TIMEOUT_S, MAX_TIMEOUT_S] is refused: below it nothing could
answer, above it a stuck endpoint holds a request for good."""
MAX_ANSWER_BYTES: Final = 256 * 1024
"""The most the classifier reads of one answer (a label is a few bytes); more is refused as it arrives."""
MAX_RAW_CHARS: Final = 200
"""The most of a model's raw answer kept in the Decision and its trace."""
MAX_ERROR_CHARS: Final = 300
CLOSE_WAIT_S: Final = 5.0
"""How long closing a connection may take after a call ends or is cut."""
SYSTEM_PROMPT: Final = (
    "You route an athlete's question to exactly one intent of a coaching assistant. "
    "Answer with the intent name only, one word, lower case, from this list: {intents}. "
    "training = sessions, pace, plans, racing; injury = pain, injuries, rehab; recovery = rest, sleep, "
    "fatigue, soreness; nutrition = food, fuelling, hydration; conditions = weather, heat, air quality, pollen; "
    "general = anything else."
)

T = TypeVar("T")


# --- settings ----------------------------------------------------------------------------------


def parse_seconds(name: str, value: str | float | None, *, default: float, where: str = "the environment",
                  maximum: float = MAX_TIMEOUT_S) -> float:
    """A timeout setting in seconds: `default` when unset, else a finite number in
    [MIN_TIMEOUT_S, maximum]. Anything else raises InputError naming the setting and where it was set."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        # text must be plain ASCII decimals: float() would also take `1_0` and Arabic-Indic digits
        seconds = (math.nan if isinstance(value, bool) or (isinstance(value, str) and not _SECONDS.fullmatch(value))
                   else float(value))
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or not MIN_TIMEOUT_S <= seconds <= maximum:
        raise InputError(f"{name}={_setting(value)} (from {where}) is not a usable timeout: expected a number of "
                         f"seconds from {MIN_TIMEOUT_S:g} to {maximum:g}")
    return seconds


_SECONDS = re.compile(r"\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?\s*")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
"""What an API key may hold: it travels in an HTTP header, where a newline or a non-ASCII
character would fail every call deep inside the client, reported as a connection error."""


def _setting_text(env: Mapping[str, str], name: str) -> str | None:
    """A text setting; empty or only whitespace means unset."""
    value = env.get(name)
    return value.strip() if value is not None and value.strip() else None


def check_base_url(value: str | None, where: str = "the environment") -> str | None:
    """OPENAI_BASE_URL as the SDK can use it: http(s), a host, a valid port. InputError otherwise,
    as a setting: the endpoint was never asked, so its failure would be the wrong story."""
    if value is None:
        return None
    problem = None
    if control_character(value) is not None or any(ch.isspace() for ch in value):
        bad = control_character(value)
        problem = f"it holds the character {bad}" if bad is not None else "it holds a space"
    else:
        try:
            parts = urllib.parse.urlsplit(value)
            parts.port  # noqa: B018  # raises ValueError for a port out of range or not a number
        except ValueError as e:
            problem = str(e)
        else:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                problem = "expected http:// or https:// and a host"
    if problem is not None:
        raise InputError(f"OPENAI_BASE_URL={_setting(value)} (from {where}) is not a usable URL: {problem}")
    return value


def check_api_key(value: str | None, where: str = "the environment") -> str | None:
    """OPENAI_API_KEY as an HTTP header can carry it; the key itself is never shown."""
    if value is not None and not _HEADER_SAFE.fullmatch(value):
        bad = next(ch for ch in value if not _HEADER_SAFE.fullmatch(ch))
        raise InputError(f"OPENAI_API_KEY (from {where}) holds the character U+{ord(bad):04X}, which an HTTP "
                         "header cannot carry (the key is not shown)")
    return value


def _setting(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(clip(text, 40))


def model_settings(env: Mapping[str, str] | None = None) -> dict[str, str | float | None]:
    """The model settings from the environment, read once. A bad COACHCTX_MODEL_TIMEOUT, OPENAI_BASE_URL
    or OPENAI_API_KEY raises InputError; a setting of only whitespace is unset."""
    env = os.environ if env is None else env
    return {"api_key": check_api_key(_setting_text(env, "OPENAI_API_KEY")),
            "base_url": check_base_url(_setting_text(env, "OPENAI_BASE_URL")),
            "model": _setting_text(env, "COACHCTX_MODEL") or DEFAULT_MODEL,
            "timeout_s": parse_seconds("COACHCTX_MODEL_TIMEOUT", env.get("COACHCTX_MODEL_TIMEOUT"),
                                       default=DEFAULT_TIMEOUT_S)}


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def model_text(text: str) -> str:
    """`text` as an endpoint can receive it: a lone surrogate (which no UTF-8 request can carry)
    becomes U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters not kept]"


# --- one bounded call ---------------------------------------------------------------------------


class AnswerTooLarge(Exception):
    """The endpoint sent more than the call reads; raised while the bytes arrive, not after."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the endpoint's answer is larger than {limit} bytes")


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner, self.limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for part in self.inner:
            seen += len(part)
            if seen > self.limit:
                raise AnswerTooLarge(self.limit)
            yield part

    async def aclose(self) -> None:
        await self.inner.aclose()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Built once: building one reads the system's certificates, tens of milliseconds a call."""
    return httpx2.create_ssl_context()


def async_client(*, api_key: str | None, base_url: str | None, timeout_s: float,
                 max_bytes: int) -> openai.AsyncOpenAI:
    """An SDK client for one call (its connections belong to the call's event loop): no retries,
    no socket operation longer than the deadline, no answer longer than `max_bytes` (on any
    transport, a proxy's included)."""

    async def cap(response: httpx2.Response) -> None:
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _CappedStream(response.stream, max_bytes)

    http = httpx2.AsyncClient(timeout=timeout_s, follow_redirects=True, verify=_ssl_context(),
                              event_hooks={"response": [cap]})
    return openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s,
                              max_retries=0, http_client=http)


class ModelLoop:
    """A private event loop on its own thread, where the SDK's async client runs.

    Its own thread, because a caller may be anything: the CLI, a Streamlit script, or code
    already inside an event loop of its own (where `asyncio.run` would refuse)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="coachctx-model", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. Ctrl-C in the caller: do not leave the call running
            raise

    def within(self, awaitable: Awaitable[T], seconds: float) -> T:
        """Run `awaitable` on the loop, cancelled after `seconds` (TimeoutError)."""
        return self.run(_within(awaitable, max(seconds, 0.0)))

    def next_within(self, iterator: AsyncIterator[T], seconds: float) -> T | None:
        """The iterator's next item within `seconds` (else TimeoutError), or None at its end."""
        return self.run(_next_within(iterator, max(seconds, 0.0)))

    def close_quietly(self, closable: Any) -> None:
        """`await closable.close()`, given at most CLOSE_WAIT_S; a connection that will not close is dropped."""
        try:
            self.run(_within(closable.close(), CLOSE_WAIT_S))
        except Exception:
            return

    def close(self) -> None:
        if self.loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self.loop.shutdown_asyncgens(), self.loop).result(timeout=CLOSE_WAIT_S)
        except TimeoutError:
            pass
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=CLOSE_WAIT_S)
            if not self._thread.is_alive():
                self.loop.close()  # also lets the name-lookup threads go, without waiting for a hung one

    def __enter__(self) -> ModelLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _within(awaitable: Awaitable[T], seconds: float) -> T:
    async with asyncio.timeout(seconds):
        return await awaitable


async def _next_within(iterator: AsyncIterator[T], seconds: float) -> T | None:
    async with asyncio.timeout(seconds):
        try:
            return await anext(iterator)
        except StopAsyncIteration:  # it does not cross the thread boundary as itself
            return None


def cause(e: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in `e`'s chain (the SDK wraps transport errors)."""
    chain: list[BaseException] = []
    link: BaseException | None = e
    while link is not None and not any(link is c for c in chain):  # a chain can loop back on itself
        if isinstance(link, kind):
            return link
        chain.append(link)
        link = link.__cause__ or link.__context__
    return None


# --- the classification call ---------------------------------------------------------------------


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
            return response.choices[0].message.content if response.choices else None


def _describe(e: Exception) -> str:
    too_large = cause(e, AnswerTooLarge)
    if too_large is not None:
        return str(too_large)
    if isinstance(e, openai.APIStatusError):
        return f"HTTP {e.status_code}"
    if isinstance(e, openai.APIError):
        return clip(f"{type(e).__name__}: {e}", MAX_ERROR_CHARS)
    # an answer the SDK cannot read as a chat completion (HTML, plain text)
    return f"the endpoint's answer is not a chat completion ({type(e).__name__})"


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def classifier_from_env(env: Mapping[str, str] | None = None) -> OpenAIClassifier | None:
    """A classifier when a key or a base URL is configured, else None (routing falls back).
    A bad COACHCTX_MODEL_TIMEOUT raises InputError, configured model or not."""
    s = model_settings(env)
    if s["api_key"] is None and s["base_url"] is None:
        return None
    return OpenAIClassifier(api_key=s["api_key"], base_url=s["base_url"],  # type: ignore[arg-type]
                            model=str(s["model"]), timeout_s=float(s["timeout_s"]))  # type: ignore[arg-type]
