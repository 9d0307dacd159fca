"""The assistant's reply to a Decision's prompt, streamed through the OpenAI SDK under the same
bounds as the classification: a total deadline, a cap on what is read and on what is kept, and
one typed error (`ReplyError`) whatever went wrong."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import openai

from coachctx.errors import CoachctxError
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
from coachctx.model.classifier import NotAnAnswer, message_text
from coachctx.model.settings import REPLY_DEADLINE_S, ModelSettings
from coachctx.reading import clip

MAX_REPLY_CHARS: Final = 20_000
"""The most of a reply kept: far beyond any intent's `max_words`, far below what fills a page."""
MAX_REPLY_BYTES: Final = 8 * 1024 * 1024
"""The most read of one reply stream (chunk framing included)."""


class ReplyError(CoachctxError):
    """The reply could not be generated (or stopped part-way); the message says why, for the page."""


def stream_reply(settings: ModelSettings, messages: Sequence[Mapping[str, str]], *,
                 deadline_s: float = REPLY_DEADLINE_S) -> Iterator[str]:
    """Stream a reply to the Decision's prompt, piece by piece, and stop it — raising ReplyError
    after the pieces that did arrive, so a caller can keep those — when the endpoint sends nothing
    for the reply timeout, when the whole reply outlasts `deadline_s` (however steadily it
    trickles in), when it passes MAX_REPLY_CHARS, or when the call fails. Refused settings raise
    InputError before anything is sent."""
    silence = settings.check().reply_timeout_s
    started = time.monotonic()

    by_deadline = False  # which bound the step that timed out was given: the deadline or the silence

    def wait() -> float:
        nonlocal by_deadline
        left = deadline_s - (time.monotonic() - started)
        by_deadline = left <= silence
        return min(silence, left)

    kept = 0
    with ModelLoop() as loop:
        client = async_client(api_key=settings.api_key, base_url=settings.base_url,
                              timeout_s=min(silence, deadline_s), max_bytes=MAX_REPLY_BYTES)
        stream: Any = None
        try:
            payload: Any = [{k: model_text(v) for k, v in m.items()} for m in messages]
            stream = loop.within(client.chat.completions.create(
                model=settings.model, messages=payload, stream=True, temperature=0.3), wait())
            pieces = aiter(stream)
            while True:
                chunk = loop.next_within(pieces, wait())
                if chunk is None:
                    return
                text = _chunk_text(chunk)
                if not text:
                    continue
                if kept + len(text) > MAX_REPLY_CHARS:
                    yield text[:MAX_REPLY_CHARS - kept]
                    raise ReplyError(f"the reply passed {MAX_REPLY_CHARS} characters, so it was stopped")
                kept += len(text)
                yield text
        except (TimeoutError, openai.APITimeoutError) as e:
            if by_deadline:
                raise ReplyError(f"the reply was still streaming after {deadline_s:g} s, so it was stopped") from e
            raise ReplyError(f"the model endpoint sent nothing for {silence:g} s (the reply timeout, "
                             "COACHCTX_REPLY_TIMEOUT)") from e
        except openai.APIStatusError as e:
            raise ReplyError(f"the model endpoint answered HTTP {e.status_code}: {clip(e.message, 200)}") from e
        except CoachctxError:
            raise
        except NotAnAnswer as e:
            raise ReplyError(str(e)) from e
        except Exception as e:  # the SDK wraps transport errors mid-stream too (connection, a reply too large)
            raise _failure(e) from e
        finally:
            # stopped early or not: give the connection back, within a bounded wait
            if stream is not None:
                loop.close_quietly(stream)
            loop.close_quietly(client)


def _chunk_text(chunk: Any) -> str | None:
    """A streamed chunk's text: the list-of-parts form some servers send, and lone surrogates, read as
    the classifier reads an answer; `NotAnAnswer` for content of no text parts."""
    if not chunk.choices:
        return None
    return model_text(message_text(chunk.choices[0].delta.content,
                                   read="reply stream is not a chat completion stream") or "")


def _failure(e: Exception) -> ReplyError:
    """What a reply that failed mid-stream says: the cap it passed, the encoding it came in, or the error."""
    if cause(e, AnswerTooLarge) is not None:
        return ReplyError(f"the reply stream passed {MAX_REPLY_BYTES} bytes, so it was stopped")
    for kind in (AnswerEncoded, RedirectRefused):
        found = cause(e, kind)
        if found is not None:
            return ReplyError(str(found))
    return ReplyError(clip(f"the model call failed: {type(e).__name__}: {e}", MAX_ERROR_CHARS))
