"""The question's own language, and the rule that a word of it is never read as an unrelated
language's term (a "false friend": in an English question, "tired" is not Spanish "tirada")."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import everyday_languages, question_language
from coachctx.engine.matching.terms import Term, written
from coachctx.engine.text import Tokens

ENGLISH: Final = "en"
LANGUAGE_FAMILIES: Final = ({"es", "pt", "it", "fr"}, {"sv", "da", "no"}, {"de", "nl"})
"""Languages close enough that a shared word usually means the same thing (Italian "recupero",
Spanish "recuperar"): their terms stay readable in each other's questions."""


def false_friend(entry: Term, own: str, matched: Sequence[str]) -> bool:
    """A word of the question's own language is not another, unrelated language's term: in a
    question written in English, "tired" is not Spanish "tirada". True when the term is of
    another language family, the question's words are not the term as written (a loanword spelt
    the same, "marathon" in Dutch or "pasta" in Spanish, is the same word), and every word it
    matched is an everyday word of the question's language and not of the term's; a word both
    languages use keeps the term."""
    if not entry.language or entry.language == own or any(
            own in family and entry.language in family for family in LANGUAGE_FAMILIES):
        return False
    if tuple(matched) == written(entry.term, entry.language):
        return False
    table = everyday_languages()
    return all(own in (langs := table.get(w, {})) and entry.language not in langs for w in matched)


def read_as_false_friend(entry: Term, tokens: Tokens, matched: Sequence[str]) -> bool:
    """`false_friend` against the question's own language, which is worked out only when it can
    matter: most terms are settled by their words alone (a word on no everyday list, or one of the
    term's own language, keeps the term whatever the question's language)."""
    if not entry.language:
        return False
    table = everyday_languages()
    for w in matched:
        langs = table.get(w)
        if not langs or entry.language in langs:
            return False
    own = language_of(tokens)
    if own is not None and false_friend(entry, own, matched):
        return True
    # English words run through chat in every language ("tired af bhai, run karu?"): an everyday
    # English word is not another language's term in a question of any language
    return own != ENGLISH and false_friend(entry, ENGLISH, matched)


def language_of(tokens: Tokens) -> str | None:
    """`question_language` of the question's words, once per question for every matcher."""
    key = "question_language"
    if key not in tokens.memo:
        tokens.memo[key] = language_of_words(tokens.words)
    return tokens.memo[key]  # type: ignore[return-value]


@lru_cache(maxsize=8192)
def language_of_words(words: tuple[str, ...]) -> str | None:
    """`question_language`, memoised per sequence of words: a question asked again (or another with
    the same words) does not add up every everyday word's votes again."""
    return question_language(words)
