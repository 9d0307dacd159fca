"""Words run together in chat ("kneepain", "ithurts", "#legday", "icantrun", Spanish "meduele"): a
word that is no English word and no everyday word of any language, read apart into common words
of English, or of the question's own language among `GLUED_OWN`."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import GLUED_LANGUAGE, glued_parts, glued_ranks, glued_words, is_everyday

GLUED_LENGTHS: Final = range(5, 25)
"""The lengths of a word that may be two or three words run together."""
FIRST_ONLY: Final = frozenset({"i"})
"""A part of one letter, and only at the front, in English: "ihurt", "icantrun"; never "a" ("alot")."""
LATER_PART: Final = 3
"""The shortest second or third part of three."""


@lru_cache(maxsize=8)
def _first_parts(language: str) -> frozenset[str]:
    """`glued_parts`, and `FIRST_ONLY` in English: what a word run together may start with."""
    return glued_parts(language) | FIRST_ONLY if language == GLUED_LANGUAGE else glued_parts(language)


@lru_cache(maxsize=100_000)
def may_be_glued(word: str) -> bool:
    """Whether a word may be words run together: of `GLUED_LENGTHS`, letters only, and no English
    word ("downhill", "repeats", "backstroke") nor an everyday word of any language."""
    return len(word) in GLUED_LENGTHS and word.isalpha() and word not in glued_words() and not is_everyday(word)


@lru_cache(maxsize=100_000)
def split_glued(word: str, language: str = GLUED_LANGUAGE) -> tuple[str, ...]:
    """The words a word run together in `language` is made of ("kneepain" -> knee, pain; "icantrun"
    -> i, cant, run; Spanish "meduele" -> me, duele): two parts, else three in English, each a
    common word of the language (`glued_parts`), the split whose words are commonest. () unless `may_be_glued`, for
    a word of other letters than English's in English, or one no split reads."""
    english = language == GLUED_LANGUAGE
    if not may_be_glued(word) or (english and not word.isascii()):
        return ()
    parts, starts = glued_parts(language), _first_parts(language)
    n = len(word)
    splits: list[tuple[str, ...]] = [(word[:i], word[i:]) for i in range(1, n - 1)
                                     if word[:i] in starts and word[i:] in parts]
    if not splits and english:
        splits = [(word[:i], word[i:j], word[j:]) for i in range(1, n - 2 * LATER_PART + 1) if word[:i] in starts
                  for j in range(i + LATER_PART, n - LATER_PART + 1) if word[i:j] in parts and word[j:] in parts]
    ranks = glued_ranks(language)
    return max(splits, key=lambda split: (sum(-math.log(ranks.get(p, 0) + 1) for p in split), split), default=())
