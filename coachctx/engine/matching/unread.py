"""A question the policy cannot read: most of its words are in no language the policy knows.

Such a question may be about pain in a language no term is written in ("Fáj a térdem, futhatok
holnap?", Hungarian, "my knee hurts, can I run tomorrow?"), and whatever the few words it did match
say, nothing in it shows it is not. So it carries `readiness_injury` like a clinical question does
(`lookup`, reason `unread_question`): the safe failure is a line too many, not a missing injury.

A word is read when it is an everyday word of some policy language (`is_everyday`, the function
words), or some term table files it as written or by its stem (a term, a phrase's first or later
word, a Hangul prefix). A misspelling or a compound part it was only read as does not count: a word
of an unknown language one letter from a term ("doare", Romanian "hurts", read as Portuguese
"diare") is exactly what an unread question looks like. Words of Han, Kana and Hangul are read by
substring and prefix and have no everyday lists here, so they are not counted; nor are words with a
digit ("10k", "60kg", "500m"), which are measures, not words of a language.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import function_words, is_everyday
from coachctx.engine.matching.find import SharedWords
from coachctx.engine.text import letter_scripts

UNREAD_SHARE: Final = 0.5
"""The share of a question's words that must be unread for the question to be unread ..."""
MIN_UNREAD: Final = 2
"""... and how many at least: "hrv tanked??" or "thanks bro" in Russian is not a language the policy
cannot read."""
_DIGIT: Final = re.compile(r"\d")
READ_BY_SUBSTRING: Final = frozenset({"Han", "Hiragana", "Katakana", "Hangul"})
"""Scripts whose terms match inside words: no everyday list says what their words are."""


@lru_cache(maxsize=8192)
def unread_words(words: tuple[str, ...], shared: SharedWords) -> tuple[str, ...]:
    """The question's unread words, in order, when there are `MIN_UNREAD` and they are at least
    `UNREAD_SHARE` of its counted words; else (). `shared` holds the policy's term tables. Memoised
    per sequence of words, like `language_of_words`: a question asked again is not read again."""
    if not words:
        return ()
    counted = read = 0
    # more read words than this, and fewer than half the counted ones can be unread (UNREAD_SHARE >= 0.5)
    enough = UNREAD_SHARE * len(words)
    found: list[str] = []
    for word, seen in zip(words, shared.look_up(words), strict=True):
        kind = word_kind(word)
        if kind == _NOT_COUNTED:
            continue
        counted += 1
        if kind == _UNKNOWN and not seen.follows and not any(what[0] or what[4] for _, what in seen.tables):
            found.append(word)
        else:
            read += 1
            if read > enough:
                return ()
    return tuple(found) if len(found) >= max(MIN_UNREAD, UNREAD_SHARE * counted) else ()


_NOT_COUNTED, _EVERYDAY, _UNKNOWN = "not counted", "everyday", "unknown"


@lru_cache(maxsize=100_000)
def word_kind(word: str) -> str:
    """What the word is before any term table is asked: not counted (Han, Kana or Hangul, a digit,
    no letter), an everyday word of some policy language, or unknown. Memoised per process."""
    scripts = letter_scripts(word)
    if not scripts or not READ_BY_SUBSTRING.isdisjoint(scripts) or _DIGIT.search(word):
        return _NOT_COUNTED
    return _EVERYDAY if is_everyday(word) or word in function_words() else _UNKNOWN
