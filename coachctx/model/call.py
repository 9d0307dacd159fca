"""One bounded model call, for the classifier and the reply stream alike: a private event loop,
a total deadline, a cap on what is read from the endpoint, and what the SDK's errors are.

Why the SDK's async client: HTTP timeouts bound each socket operation, not the call, so an
endpoint that sends a byte a second, or streams forever, never trips them. A call runs on a
private event loop under `asyncio.timeout`, which cancels connect, headers, body and stream
alike at the deadline, whatever the server does.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any, Final, TypeVar

import httpx2
import openai

from coachctx.reading import valid_text

MAX_ERROR_CHARS: Final = 300
CLOSE_WAIT_S: Final = 5.0
"""How long closing a connection may take after a call ends or is cut."""

T = TypeVar("T")

def model_text(text: str) -> str:
    """`text` as an endpoint can receive it: a lone surrogate (which no UTF-8 request can carry)
    becomes U+FFFD (`reading.valid_text`)."""
    return valid_text(text)


class AnswerEncoded(Exception):
    """The endpoint compressed its answer in a way the call does not read (br, zstd, ...)."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"the endpoint's answer is compressed as {encoding[:40]!r}, which is not read; "
                         "it was asked for plain bytes")


class AnswerTooLarge(Exception):
    """The endpoint sent more than the call reads; raised while the bytes arrive, not after."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the endpoint's answer is larger than {limit} bytes")


class RedirectRefused(Exception):
    """The endpoint redirected the call to another origin, where the question would be sent again."""

    def __init__(self, target: str) -> None:
        super().__init__(f"the endpoint redirected the call to {target[:120]!r}, another host; the question is "
                         "not sent there (set OPENAI_BASE_URL to the address that answers)")


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class _CappedStream(httpx2.AsyncByteStream):
    """The answer's bytes, stopped past `limit`; with `decode`, a gzip or deflate answer decoded
    here and the cap on what it decodes to (250 kB of gzip can stand for 250 MB, and httpx would
    decode after a cap on the wire bytes)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, *, decode: bool = False) -> None:
        self.inner, self.limit = inner, limit
        self.decoder = zlib.decompressobj(wbits=47) if decode else None  # gzip or zlib, told apart by the header

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for part in self.inner:
            while part:
                if self.decoder is None:
                    out, part = part, b""
                else:
                    out = self.decoder.decompress(part, self.limit + 1 - seen)
                    part = self.decoder.unconsumed_tail
                seen += len(out)
                if seen > self.limit:
                    raise AnswerTooLarge(self.limit)
                yield out

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
        if not isinstance(response.stream, httpx2.AsyncByteStream):
            return
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        compressed = encoding in ("gzip", "x-gzip", "deflate")
        if not compressed and encoding not in ("", "identity"):
            raise AnswerEncoded(encoding)
        response.stream = _CappedStream(response.stream, max_bytes, decode=compressed)
        if compressed:
            del response.headers["content-encoding"]  # decoded under the cap, and no longer by httpx

    async def same_origin(response: httpx2.Response) -> None:
        """A redirect is followed only within the endpoint's own origin (an adversarial pass: a 307
        to another host re-sent the system prompt and the athlete's question there)."""
        location = response.headers.get("location") if response.is_redirect else None
        if location is not None:
            target = response.request.url.join(location)
            if _origin(target) != _origin(response.request.url):
                raise RedirectRefused(str(target.copy_with(query=None, fragment=None)))

    # asked for plain bytes; a compressed answer all the same is decoded under the cap (`cap`)
    http = httpx2.AsyncClient(timeout=timeout_s, follow_redirects=True, verify=_ssl_context(),
                              headers={"Accept-Encoding": "identity"}, event_hooks={"response": [same_origin, cap]})
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
