"""Words run together in chat ("kneepain", "ithurts", "#legday", "icantrun"): a word that is no
English word and no everyday word of any language, read apart into common English words."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import glued_parts, glued_words, is_everyday

GLUED_LENGTHS: Final = range(5, 25)
"""The lengths of a word that may be two or three words run together."""
FIRST_ONLY: Final = frozenset({"i"})
"""A part of one letter, and only at the front: "ihurt", "icantrun"; never "a" ("alot")."""
LATER_PART: Final = 3
"""The shortest second or third part of three: "rolledmyankle" is not read (a known limit)."""


@lru_cache(maxsize=1)
def _first_parts() -> frozenset[str]:
    return glued_parts() | FIRST_ONLY


@lru_cache(maxsize=100_000)
def split_glued(word: str) -> tuple[str, ...]:
    """The words a word run together is made of ("kneepain" -> knee, pain; "icantrun" -> i, cant,
    run): two parts, else three, each a common English word (`glued_parts`), the split whose words
    are commonest. () for an English word ("downhill", "repeats", "backstroke"), an everyday word
    of any language, a word of other letters or lengths, or one no split reads."""
    if len(word) not in GLUED_LENGTHS or not (word.isascii() and word.isalpha()) or word in glued_words() \
            or is_everyday(word):
        return ()
    parts, starts, n = glued_parts(), _first_parts(), len(word)
    splits: list[tuple[str, ...]] = [(word[:i], word[i:]) for i in range(1, n - 1)
                                     if word[:i] in starts and word[i:] in parts]
    if not splits:
        splits = [(word[:i], word[i:j], word[j:]) for i in range(1, n - 2 * LATER_PART + 1) if word[:i] in starts
                  for j in range(i + LATER_PART, n - LATER_PART + 1) if word[i:j] in parts and word[j:] in parts]
    ranks = glued_words()
    return max(splits, key=lambda split: (sum(-math.log(ranks.get(p, 0) + 1) for p in split), split), default=())
