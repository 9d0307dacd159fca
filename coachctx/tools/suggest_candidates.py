"""The terms a labelled question offers (its words, its two- and three-word phrases, pieces of its
Han/Kana runs), the language each is filed under, and an index of which rows a term meets."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Final

from coachctx.engine.common_words import everyday_words, function_words
from coachctx.engine.matching import term_matching
from coachctx.engine.policy import LANGUAGES, term_chars_limit
from coachctx.engine.text import Tokens, script_of, stem_variants, tokenise
from coachctx.tools.suggest_log import LabelledRow

MAX_PHRASE: Final = 3

SCRIPT_LANGUAGE: Final[Mapping[str, str]] = {
    "Latin": "en", "Cyrillic": "ru", "Greek": "el", "Arabic": "ar", "Devanagari": "hi", "Hangul": "ko",
    "Han": "zh", "Hiragana": "ja", "Katakana": "ja",
}
"""The language a term is filed under when the row does not say: the script's most common one here."""


def _language_of(row: LabelledRow, words: Sequence[str]) -> str:
    """The row's language when the words are in its script, or when they are that language written
    in Latin letters (Hindi, Arabic, Greek, Russian: "thakan", "ta3ban", the policy keeps such terms
    under their language); else the script's usual language. A romanised row's English words
    ("run", "strength") are English."""
    script = script_of(words[0][0])
    if row.lang is not None:
        own = script_of(_SAMPLE[row.lang])
        if own == script or (script == "Han" and row.lang in ("ja", "zh")):
            return row.lang
        if script == "Latin" and LANGUAGES[row.lang] not in ("substring", "prefix") \
                and not all(w in _english() for w in words):
            return row.lang
    return SCRIPT_LANGUAGE.get(script, "en")


@cache
def _english() -> frozenset[str]:
    """English's everyday words: a Latin word of a romanised row that is one is English."""
    return frozenset(everyday_words().get("en", ()))


_SAMPLE: Final[Mapping[str, str]] = {
    "en": "a", "es": "a", "de": "a", "fr": "a", "pt": "a", "it": "a", "nl": "a", "sv": "a", "da": "a", "no": "a",
    "fi": "a", "pl": "a", "tr": "a", "id": "a", "vi": "a", "ru": "я", "el": "α", "ar": "ع", "hi": "क",
    "ja": "あ", "zh": "中", "ko": "한",
}
"""A letter of each policy language's script."""


def everyday_terms(row: LabelledRow, tokens: Tokens) -> set[tuple[str, str]]:
    """The words of a question that `phrases` refuses as function words ("today", "dzisiaj"):
    terms only at the lightest weight, for a question nothing else matched."""
    out: set[tuple[str, str]] = set()
    for w in tokens.words:
        if w.isdigit() or (len(w) < 3 and script_of(w[0]) != "Hangul") or _JAMO.fullmatch(w):
            continue
        lang = _language_of(row, [w])
        if LANGUAGES[lang] != "substring" and is_function_word(w, lang) and fits(lang, w):
            out.add((lang, w))
    return out


def phrases(row: LabelledRow, tokens: Tokens) -> set[tuple[str, str]]:
    """(language, term) candidates a question offers: its words and runs of two or three words
    that begin and end with a content word, and the two- to four-character pieces of its Han/Kana
    runs. A function word ("when", "still", "wie"), or a word the matcher reads as one ("whats"),
    is never a term on its own or at a phrase's edge."""
    out: set[tuple[str, str]] = set()
    words = tokens.words[:MAX_OFFERING_WORDS]
    for n in range(1, MAX_PHRASE + 1):
        for i in range(len(words) - n + 1):
            part = words[i:i + n]
            if any(w.isdigit() for w in part):
                continue
            if n == 1 and len(part[0]) < 3 and script_of(part[0][0]) != "Hangul":
                continue
            if any(_JAMO.fullmatch(w) for w in part):  # ㅠㅠ, ㅋㅋ: crying and laughing, not words
                continue
            lang = _language_of(row, part)
            if LANGUAGES[lang] == "substring" or (LANGUAGES[lang] == "prefix" and n > 1):
                continue
            if is_function_word(part[0], lang) or is_function_word(part[-1], lang) or not fits(lang, " ".join(part)):
                continue
            out.add((lang, " ".join(part)))
    for run in tokens.unspaced[:MAX_OFFERING_CHARS].split():
        lang = "ja" if any(script_of(c) in ("Hiragana", "Katakana") for c in run) or row.lang == "ja" else "zh"
        for n in (2, 3, 4):
            out.update((lang, run[i:i + n]) for i in range(len(run) - n + 1) if _a_piece(run, i, i + n))
    return out


_JAMO: Final = re.compile(r"[\u1100-\u11ff\u3130-\u318f]+")
MAX_OFFERING_WORDS, MAX_OFFERING_CHARS = 120, 200
"""A row offers candidates from its first 120 words and 200 Han/Kana characters: the longest
corpus question has 90 and 52, and a logged row of 2,000 characters of chat would otherwise offer
about 900 phrases (or 6,000 Han pieces) to hold and measure, about 1.4 MB a row."""


def fits(language: str, term: str) -> bool:
    """Whether the policy would take the term's length (`term_chars_limit`: a Korean chat message
    without spaces is one long word, which the policy refuses as a term)."""
    return len(term) <= term_chars_limit(language)


FUNCTION_STEM_TOP: Final = 100
"""How many of a language's commonest words a term of it must not stem like. Chosen on the tune
splits (`python -m bench.suggest --choose`) over 400, all of `function_words`, which would also
refuse "running" (as "run") and "foods"."""


def is_function_word(word: str, language: str) -> bool:
    """A function word of some language ("when", "still", "wie"), or a word that a term of this
    language would match as one of its commonest words: the matcher stems "whats" to "what" and
    "needed" to "need", so a term "whats" would be a term "what"."""
    if word in function_words():
        return True
    mode = LANGUAGES[language]
    if mode in ("substring", "prefix"):
        return False
    return not stem_variants(word, mode).isdisjoint(_function_stems(language))


@cache
def _function_stems(language: str) -> frozenset[str]:
    mode = LANGUAGES[language]
    return frozenset(key for w in everyday_words().get(language, ())[:FUNCTION_STEM_TOP]
                     for key in stem_variants(w, mode))


def _a_piece(run: str, start: int, end: int) -> bool:
    """A piece of a Han/Kana run worth offering as a term: not one that starts with Hiragana, which
    is grammar ("って", "でも") or the end of the word before ("ど朝" of "けど朝"), and not part of
    a Katakana word ("イン" of "オフライン")."""
    piece = run[start:end]
    if script_of(piece[0]) == "Hiragana":
        return False
    cut = (start > 0 and script_of(run[start - 1]) == script_of(piece[0]) == "Katakana") or \
          (end < len(run) and script_of(run[end]) == script_of(piece[-1]) == "Katakana")
    return not cut


class TermIndex:
    """Which rows a term meets, without running a matcher over every row: stemmed runs of words
    per algorithm, looked up by the term's stem keys; Han/Kana and Hangul by scanning. It depends
    on the rows alone, so one index serves every round of `learn`."""

    def __init__(self, tokens: Sequence[Tokens]) -> None:
        self.tokens = tokens
        self.phrases: dict[str, dict[tuple[str, ...], list[int]]] = {}
        self.seen: dict[tuple[str, str], list[int]] = {}

    def touched(self, language: str, term: str) -> list[int]:
        key = (language, term)
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = self._touched(language, term)
        return found

    def _touched(self, language: str, term: str) -> list[int]:
        text, mode = term_matching(term, language)
        if mode == "substring":
            key = tokenise(text).unspaced
            return [i for i, t in enumerate(self.tokens) if key and key in t.unspaced]
        words = tokenise(text).words
        if mode == "prefix":
            return [i for i, t in enumerate(self.tokens) if words and any(w.startswith(words[0]) for w in t.words)]
        table = self.phrases.get(mode)
        if table is None:
            table = self.phrases[mode] = {}
            for i, t in enumerate(self.tokens):
                stems = t.stems(mode)
                for n in range(1, MAX_PHRASE + 1):
                    for j in range(len(stems) - n + 1):
                        table.setdefault(tuple(stems[j:j + n]), []).append(i)
        found: set[int] = set()
        for phrase in itertools.product(*(sorted(stem_variants(w, mode)) for w in words)):
            found.update(table.get(tuple(phrase), ()))
        return sorted(found)


def learning_words(rows: Sequence[LabelledRow]) -> int:
    """The words learning reads: each distinct question's, up to `MAX_OFFERING_WORDS` (what its time
    and memory grow with; a repeated question costs nothing more)."""
    return sum(min(len(q.split()), MAX_OFFERING_WORDS) for q in dict.fromkeys(r.question for r in rows))
