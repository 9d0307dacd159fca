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
from typing import Final

from coachctx.engine.common_words import function_words, is_everyday
from coachctx.engine.matching.find import Looked, SharedWords
from coachctx.engine.matching.policy_terms import shared_words
from coachctx.engine.policy import Policy
from coachctx.engine.text import Tokens, letter_scripts, tokenise

UNREAD_SHARE: Final = 0.5
"""The share of a question's words that must be unread for the question to be unread ..."""
MIN_UNREAD: Final = 2
"""... and how many at least: "hrv tanked??" or "thanks bro" in Russian is not a language the policy
cannot read."""
_DIGIT: Final = re.compile(r"\d")
READ_BY_SUBSTRING: Final = frozenset({"Han", "Hiragana", "Katakana", "Hangul"})
"""Scripts whose terms match inside words: no everyday list says what their words are."""


def unread_words_in(question: str | Tokens, policy: Policy) -> tuple[str, ...]:
    """The question's unread words, in order, when there are `MIN_UNREAD` and they are at least
    `UNREAD_SHARE` of its counted words; else ()."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    shared = shared_words(policy)
    key = ("unread", shared)  # once per question for every policy with these tables
    found = tokens.memo.get(key)
    if found is None:
        found = tokens.memo[key] = _unread(tokens, shared)
    return found  # type: ignore[return-value]


def _unread(tokens: Tokens, shared: SharedWords) -> tuple[str, ...]:
    words = tokens.words
    if not words:
        return ()
    looked = shared.look_up(words)
    counted = unread = 0
    found: list[str] = []
    for word, seen in zip(words, looked, strict=True):
        scripts = letter_scripts(word)
        if not scripts or not READ_BY_SUBSTRING.isdisjoint(scripts) or _DIGIT.search(word):
            continue
        counted += 1
        if not _is_read(word, seen):
            unread += 1
            found.append(word)
    return tuple(found) if unread >= max(MIN_UNREAD, UNREAD_SHARE * counted) else ()


def _is_read(word: str, seen: Looked) -> bool:
    if seen.follows or is_everyday(word) or word in function_words():
        return True
    return any(what[0] or what[4] for _, what in seen.tables)
