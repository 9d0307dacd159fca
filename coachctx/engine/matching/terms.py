"""A term of a policy table, and the keys it is filed under: its text for a Han/Kana substring, its
word for a Hangul prefix (and the prefix terms a question word holds), every accent variant of
its stemmed phrase for a spaced script."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final, Literal

from coachctx.engine.policy import EXACT_MARK, LANGUAGES
from coachctx.engine.text import WHOLE_WORD, stem_variants, tokenise

if TYPE_CHECKING:
    from coachctx.engine.matching.table import TermMatcher

MAX_PHRASE_WORDS: Final = 6
CLINICAL_LABEL: Final = "clinical"
"""The label every term of the policy's clinical table scores for."""


@dataclass(frozen=True)
class Term:
    """A term as a table holds it, and as `TermMatcher.find` reports it: the label it scores for
    (an intent, a fragment, a scope), the term as written (with "(fuzzy: ...)" or "(part of: ...)"
    for a reading of an unknown word), its weight and its language."""

    label: str
    term: str
    weight: float
    language: str = ""


def _keys(word: str, algorithm: str) -> frozenset[str]:
    return frozenset({word}) if algorithm == "prefix" else stem_variants(word, algorithm)


def term_matching(term: str, language: str) -> tuple[str, str]:
    """(the text to match, how): the language's mode, or whole words for an `=` term of a spaced script."""
    mode = LANGUAGES[language]
    if term.startswith(EXACT_MARK) and mode not in ("substring", "prefix"):
        return term[len(EXACT_MARK):], WHOLE_WORD
    return term, mode


Filed = tuple[Literal["substring", "prefix", "stemmed"], str, tuple[str, ...]]
"""How a term is matched, under which algorithm (a stemmer, `word` or `prefix`), and the key."""


@lru_cache(maxsize=100_000)
def filed_under(term: str, language: str) -> tuple[Filed, ...]:
    """The keys `TermMatcher` files a term under: its text for a substring, its word for a
    prefix, and every accent variant of its stemmed phrase otherwise."""
    text, mode = term_matching(term, language)
    words = tokenise(text)
    joined = tokenise(text.lower()).words if mode not in ("substring", "prefix") and text != text.lower() else ()
    if joined and joined != words.words:
        # a term with capitals inside ("CrossFit") is read apart, as a question writing it so is; a
        # question writing it in lower case ("crossfit") meets it as one word
        return tuple(("stemmed", mode, phrase) for ws in (words.words, joined) for phrase in _phrases(ws, mode))
    if mode == "substring":
        key = words.unspaced or words.text.strip()
        return (("substring", mode, (key,)),) if key else ()
    if mode == "prefix" and len(words.words) == 1:
        return (("prefix", mode, (words.words[0],)),)
    if not words.words:
        return ()  # Han or Kana alone under a spaced script: nothing to file (a policy refuses it)
    return tuple(("stemmed", mode, phrase) for phrase in _phrases(words.words, mode))


def _phrases(words: tuple[str, ...], mode: str) -> list[tuple[str, ...]]:
    return list(itertools.product(*(sorted(_keys(w, mode)) for w in words[:MAX_PHRASE_WORDS])))


@lru_cache(maxsize=100_000)
def written(term: str, language: str) -> tuple[str, ...]:
    """The words of a term as a question writes them (normalised, no `=`)."""
    return tokenise(term_matching(term, language)[0]).words


KOREAN_WORD_ENDS: Final = frozenset("이가을를은는에도서고요의로와과랑만데면며")  # particles and endings
KOREAN_ADVERBS: Final = ("너무", "정말", "진짜", "계속", "많이", "엄청", "완전", "되게", "조금", "약간", "자꾸", "아직",
                         "갑자기", "살짝", "심하게", "넘")
"""Adverbs chat writes onto the next word ("너무아파요", "계속아파요"): a term may begin right after one."""


def prefix_terms(matcher: TermMatcher, word: str) -> tuple[Term, ...]:
    """The Hangul prefix terms of the table a word begins with, shortest first; then those of two
    syllables or more that begin inside it after a particle, an ending or a common adverb: chat runs
    Korean words together ("허리가아파요": 아파 after 가; "무릎이너무아파요": after 너무), but 커피를
    (coffee) holds 피를 (blood) elsewhere."""
    inside = matcher.hangul_firsts
    if word[:1] not in matcher.prefix_firsts and inside.isdisjoint(word):
        return ()  # no prefix term starts with any of the word's letters: most words
    index, longest = matcher.prefix_index, matcher.longest_prefix
    found = [entry for k in range(1, min(len(word), longest) + 1) for entry in index.get(word[:k], ())]
    for i in range(1, len(word) - 1):
        if word[i] in inside and (word[i - 1] in KOREAN_WORD_ENDS or word[:i].endswith(KOREAN_ADVERBS)):
            found += [entry for k in range(2, min(len(word) - i, longest) + 1) for entry in index.get(word[i:i + k], ())]
    return tuple(found)


def hangul_beginnings(word: str, keys: Container[str]) -> list[str]:
    """The beginnings of a Korean word that are among `keys` (the words a table's Hangul phrases
    hold), longest first; none for a word that does not start with a Hangul syllable. Korean
    writes endings and particles onto a word ("걸렸어" is 걸 + 렸어), so a phrase ("감기 걸", "몸이
    안 좋") meets each of its words as a beginning, as a one-word Hangul term does; matched whole,
    such a phrase met no sentence (an adversarial pass)."""
    if not keys or not "\uac00" <= word[:1] <= "\ud7a3":
        return []
    return [word[:k] for k in range(len(word), 0, -1) if word[:k] in keys]


def hangul_next(word: str, fits: Callable[[str], bool]) -> str | None:
    """The longest beginning of a Korean word that `fits` the phrase so far ("걸렸어" goes on
    "감기 걸" as 걸 and "담 걸렸" as 걸렸), or None."""
    return next((word[:k] for k in range(len(word), 0, -1) if fits(word[:k])), None)
