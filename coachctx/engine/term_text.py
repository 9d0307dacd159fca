"""What a policy term's text may hold, and what the matcher reads it as: the checks every term list
and table of a policy shares (`policy.Policy`), kept apart from the policy's shape."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from coachctx.engine.text import UNSPACED, fold_accents, normalise, script_of, tokenise
from coachctx.reading import MARKS_ESCAPED, control_character, direction_mark, shown

EXACT_MARK: Final = "="
"""A term written `=allenamento` matches those words as written (accents folded), not their stem:
for a word whose stem is an everyday word elsewhere (Italian "allenamento" stems to German "allen")."""
UNSPACED_MODES: Final = frozenset({"substring", "prefix"})
"""How Han/Kana and Hangul terms are matched: as written, not as stemmed words."""
PHRASE_WORDS: Final = 6
"""`matching.MAX_PHRASE_WORDS`: the words of a term that routing files (and matches)."""
_WORDS: Final = re.compile(r"[^\W_]+")


def term_problem(term: str) -> str | None:
    """Why a term is not one line of plain text with words, or None: a control character (clinical
    terms are quoted in the system prompt, where a newline starts a new line), an invisible direction
    mark, or nothing but spaces and punctuation."""
    bad = control_character(term)
    if bad is not None:
        return f"the term {shown(term)} holds the control character {bad}; a term is plain text on one line"
    mark = direction_mark(term)
    if mark is not None:
        return (f"the term {shown(term.translate(MARKS_ESCAPED))} holds the invisible direction mark {mark}; "
                "delete it (a term is read as plain text, whatever its direction)")
    if not any(ch.isalnum() for ch in term.removeprefix(EXACT_MARK)):
        return f"the term {shown(term)} has no words"
    return None


def never_matches(term: str, language: str, mode: str, matched: tuple[str, ...]) -> str | None:
    """Why a term could never match a question under its language's matching mode, or None, from
    what the matcher reads it as (`matched_as`): Han or Kana alone under a spaced script (its words
    are what such a term is found by, and it has none), or no Han or Kana under ja/zh (found as
    Han/Kana text; only a phrase with a space is looked for in the rest of the question)."""
    if mode == "substring":
        text = matched[-1].strip()
        if " " not in text and not any(script_of(ch) in UNSPACED for ch in text):
            return (f"the term {shown(term)} holds no Han or Kana, and {language} terms are found as Han/Kana "
                    "text, so it would never match; file it under the language of its script")
    elif not (tokenise(matched[-1]).words if mode == "prefix" else matched[1:]):  # no words to find it by
        return (f"the term {shown(term)} is written only in Han or Kana, and {language} terms are found as words, "
                "so it would never match; file it under ja or zh")
    return None


def matched_as(term: str, mode: str) -> tuple[str, ...]:
    """What the matcher reads a term as, under its language's matching mode: for a spaced script
    its words, so "warm-up" and "warm up" (or "STRENGTH" and "strength") are one term; otherwise
    its normalised text."""
    if mode in UNSPACED_MODES:
        return ("", normalise(term))
    exact = term.startswith(EXACT_MARK)
    return (EXACT_MARK if exact else "", *tokenise(term.removeprefix(EXACT_MARK)).words)


def same_term(first: str, second: str) -> str:
    """Why two spellings in one list or table are refused: the matcher folds case, Unicode forms
    and the punctuation between words, so "STRENGTH" and "strength" would be one term with two weights."""
    if first == second:
        return f"lists the term {first!r} twice"
    spell = ascii if unicodedata.normalize("NFC", first) == unicodedata.normalize("NFC", second) else repr
    # "café" twice looks the same twice: then the code points say which is which
    return (f"the terms {spell(first)} and {spell(second)} are one term to the matcher (it ignores case, Unicode "
            "forms and punctuation between words); keep one, with the weight it should have")


def term_work(term: str, mode: str) -> int:
    """The phrase keys `matching.TermMatcher` files a term under (each word of a spaced script
    under its stem and, when it has accents, under its accent-folded stem too), times the parts
    of the phrase `lint` compares. Counted on words as a regex splits them: close to the
    tokeniser, and cheap enough to run on every term of every policy loaded."""
    if mode in UNSPACED_MODES:
        return 1
    words = _WORDS.findall(term.casefold())[:PHRASE_WORDS]
    keys = 1
    if mode != "russian" and not term.isascii():
        for word in words:
            if not word.isascii() and fold_accents(word) != word:
                keys *= 2
    return keys * max(1, len(words) * (len(words) + 1) // 2)
