"""Words run together in chat ("kneepain", "ithurts", "#legday", "icantrun"): a word that is no
English word and no everyday word of any language, read apart into common English words."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import glued_words, is_everyday, is_glued_part

GLUED_LENGTHS: Final = range(5, 25)
"""The lengths of a word that may be two or three words run together."""
FIRST_ONLY: Final = frozenset({"i"})
"""A part of one letter, and only at the front: "ihurt", "icantrun"; never "a" ("alot")."""
LATER_PART: Final = 3
"""The shortest second or third part of three."""


@lru_cache(maxsize=100_000)
def split_glued(word: str) -> tuple[str, ...]:
    """The words a word run together is made of ("kneepain" -> knee, pain; "icantrun" -> i, cant,
    run): two parts, else three, each a common English word (`is_glued_part`), the split whose
    words are commonest. () for an English word ("downhill", "repeats", "backstroke"), an everyday
    word of any language, a word of other letters or lengths, or one no split reads."""
    if len(word) not in GLUED_LENGTHS or not (word.isascii() and word.isalpha()) or word in glued_words() \
            or is_everyday(word):
        return ()
    splits: list[tuple[str, ...]] = [(word[:i], word[i:]) for i in range(1, len(word) - 1)
                                     if (word[:i] in FIRST_ONLY or is_glued_part(word[:i])) and is_glued_part(word[i:])]
    if not splits:
        splits = [(word[:i], word[i:j], word[j:]) for i in range(1, len(word) - 2 * LATER_PART + 1)
                  if word[:i] in FIRST_ONLY or is_glued_part(word[:i])
                  for j in range(i + LATER_PART, len(word) - LATER_PART + 1)
                  if is_glued_part(word[i:j]) and is_glued_part(word[j:])]
    return max(splits, key=lambda split: (sum(_commonness(p) for p in split), split), default=())


def _commonness(part: str) -> float:
    return -math.log(glued_words().get(part, 0) + 1)
