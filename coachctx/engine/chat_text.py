"""What chat apps, copy-paste and shouting do to a question before its words are read: markup and
escapes around the words, a word broken at a line end, a word spelt out letter by letter, words
run together in CamelCase, a letter held down, "fancy text" letters, digits typed for letters or
between words. Undone before tokenising, on terms and questions alike, so a term meets the question
as a person reads it."""

from __future__ import annotations

import html
import itertools
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from coachctx.engine.common_words import (
    common_words,
    everyday_languages,
    glued_parts,
    is_everyday,
    question_language,
)

_TAG: Final = re.compile(r"<!--.*?-->|</?([a-zA-Z][a-zA-Z0-9]{0,15})(?:\s[^<>]{0,200})?/?>", re.DOTALL)
"""An HTML tag (`<b>`, `</span>`, `<a href="...">`, `<br/>`) or comment: chat apps and pasted mail wrap words in them."""
_INLINE_TAGS: Final = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "del", "dfn", "em", "font", "i", "ins",
                                 "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
                                 "time", "tt", "u", "var", "wbr"})
"""Tags that mark text within a line, and so may sit inside a word ("p<b>ai</b>n"): read as nothing. Any
other tag (a paragraph, a line break, a list item) reads as a space."""
_ENTITY: Final = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});")
_BROKEN: Final = re.compile(r"(?<=[^\W\d_])[-\u2010\u00ad][ \t]*(?:\r?\n|[\u2028\u2029\x85])\s*(?=[^\W\d_])")
"""A hyphen at a line end between letters ("inju-\\nry"), as text pasted from a PDF or a mail has.
Found from the hyphen: a pattern starting at the word before it would try every letter of a long
word as a start (0.2 s for one word of 2,000 letters)."""
_LETTERS: Final = re.compile(r"[^\W\d_]+")
_SPACED_LETTERS: Final = re.compile(r"\b[^\W\d_]([ \t]+|[ \t]*[.\-_*·•][ \t]*)[^\W\d_](?:\1[^\W\d_])+\b")
"""Three or more single letters, each after the same space, dot, dash, underscore or star, with or
without spaces ("p a i n", "P-A-I-N", "p. a. i. n", "p_a_i_n"): one word spelt out, as shouting or
an evasion writes it. Han and Kana characters are letters too: Japanese and Chinese are written
without spaces, so "足 首 を 怪 我" is one text spaced out."""
_SCORE_ON_WORD: Final = re.compile(r"(?<=[^\W\d_]{3})(?=[0-9]{1,2} ?/ ?[0-9]{1,2}\b)")
"""A score out of ten written onto the word before it ("pain8/10", "dolor7/10"): the word is read
alone. Only a score: a number on a word is part of it elsewhere ("vo2max", Arabic chat's "waja3")."""


_CAMEL_CASE: Final = re.compile(r"\b(?:[A-Z]{2,}(?=[A-Z][a-z]{2})|[A-Z]?[a-z]+)(?:[A-Z][a-z]+|[A-Z](?=[A-Z][a-z]))+\b")
"""Words run together with a capital on each ("MyKneeHurts", "#KneePain", "ItHurts"), as a hashtag
or a quick message writes them, maybe after an abbreviation ("ACLTear"; not "MRIs"), with a word of
one capital among them ("myKneeHurtsCanIRunToday")."""
_CAMEL_SEAM: Final = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
"""Looked for first: a third of the time `_CAMEL_CASE` takes on a question without one."""
_HUMP: Final = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z])|[A-Z](?=[A-Z][a-z])|[A-Z]?[a-z]+")
MIN_CAMEL_WORD: Final = 4
"""A hump this long is read as a word of its own even when it is no everyday word ("SoreCalf")."""


SYMPTOM_EMOJI: Final = {
    "\U0001f915": "injured", "\U0001fa79": "injured", "\U0001fa7c": "crutches", "\U0001f912": "fever",
    "\U0001f691": "ambulance", "\U0001f3e5": "hospital",
}
"""Emoji that stand for an injury, an illness or care, as the word they stand for: 🤕 (face with a
head bandage), 🩹 (adhesive bandage), 🩼 (crutch), 🤒 (face with a thermometer), 🚑 and 🏥. "🤕 after
my run" is a clinical question. Not the faces chat uses for a state of mind as often as for a
symptom: 🥴, 😵 and 😵‍💫 are jet lag, a hangover or a hard week ("MI RELOJ DICE RECOVERY 30% 😵😵"),
🤢 and 🤮 a gel's taste. Every other emoji reads as nothing."""
_SYMPTOM: Final = re.compile("|".join(map(re.escape, sorted(SYMPTOM_EMOJI, key=len, reverse=True))))


def unwrap(question: str) -> str:
    """The question as a person reads it: HTML tags read as a space (within a line, as nothing),
    comments dropped, character references (`&nbsp;`, `&#243;`) as their characters, a word
    hyphenated at a line end joined, a word spelt out letter by letter ("p a i n") or Han/Kana
    spaced out joined, a score written onto a word ("pain8/10") apart, an emoji for a symptom as
    its word (`SYMPTOM_EMOJI`), words run together in CamelCase apart, `@`, `$` and `!` typed for
    letters read as them ("p@in", "$ore"). A question with none of them is returned as is, after a
    few substring checks."""
    if "<" in question and ">" in question:
        question = _TAG.sub(_untagged, question)
    if "&" in question and ";" in question:
        question = _ENTITY.sub(lambda m: html.unescape(m.group()), question)
    if "\n" in question or "\u2028" in question or "\u2029" in question or "\x85" in question:
        question = _rejoined(question)
    if "/" in question:
        question = _SCORE_ON_WORD.sub(" ", question)
    if _SPACED_LETTERS.search(question):
        question = _SPACED_LETTERS.sub(_joined, question)
    if not question.isascii() and _SYMPTOM.search(question):
        question = _SYMPTOM.sub(lambda m: f" {SYMPTOM_EMOJI[m.group()]} ", question)
    if _CAMEL_SEAM.search(question):
        question = _CAMEL_CASE.sub(_camel_apart, question)
    if ("@" in question or "$" in question or "!" in question) and _SYMBOL_SEAM.search(question):
        question = _SYMBOL_WORD.sub(_symbols_read, question)
    return question


_SYMBOL_WORD: Final = re.compile(r"(?<![\w@$!])[$@]?[a-zA-Z]+(?:[@$!][a-zA-Z]+)*[$@]?(?![\w@$])")
"""A word with `@`, `$` or `!` typed for a letter: inside it, or `@`/`$` at an edge ("p@in", "sh!n",
"$ore", "hurt$")."""
_SYMBOL_SEAM: Final = re.compile(r"[a-zA-Z][@$!][a-zA-Z]|(?<![\w@$!])[$@][a-zA-Z]|[a-zA-Z][$@](?![\w@$])")
"""Looked for first: "run today!" has no such word."""
_SYMBOL_LETTERS: Final = {"@": "a", "$": "s", "!": "i"}


def _symbols_read(match: re.Match[str]) -> str:
    """The word with its symbols read as the letters they look like, when that makes an everyday word
    of some language ("$ore" is Indonesian's too; no chat writes letters with these symbols, as
    Arabic chat does with digits, so English alone is not asked for); else as written ("me@gmail")."""
    word = match.group()
    if not any(ch in _SYMBOL_LETTERS for ch in word):
        return word
    read = "".join(_SYMBOL_LETTERS.get(ch, ch) for ch in word)
    return read if read.lower() in everyday_languages() else word


def _camel_apart(match: re.Match[str]) -> str:
    """Words run together in CamelCase apart, when each is an abbreviation, an everyday word of some
    language or `MIN_CAMEL_WORD` letters long ("MyKneeHurts" -> "My Knee Hurts", "SoreCalf",
    "ACLTear"); one with a short part no language uses alone ("XcRace") is kept. Most names are read
    apart ("McDonalds", "YouTube": "mc", "you" are everyday words somewhere), which costs no match: a
    term is filed under both readings (`filed_under`), so "CrossFit" in a policy still meets "crossfit"."""
    humps = _HUMP.findall(match.group())
    everyday = everyday_languages()
    apart = all(h.isupper() or len(h) >= MIN_CAMEL_WORD or h.lower() in everyday for h in humps)
    return " ".join(humps) if apart else match.group()


def _untagged(match: re.Match[str]) -> str:
    return "" if match.group(1) is None or match.group(1).lower() in _INLINE_TAGS else " "


def _rejoined(question: str) -> str:
    """Each word broken at a line end joined when that makes an everyday word of some language
    ("inju-ry", "le-sión"); else a hyphenated word that wrapped ("x-ray", "post-op", "MRI-scan"),
    which keeps its hyphen."""
    pieces: list[str] = []
    kept = 0
    for hyphen in _BROKEN.finditer(question):
        begin = hyphen.start()
        while begin > kept and question[begin - 1].isalpha():
            begin -= 1
        if begin == hyphen.start():
            continue  # the letters before it ended the word joined last
        rest = _LETTERS.match(question, hyphen.end())
        assert rest is not None  # the pattern looks ahead for a letter
        first, after = question[begin:hyphen.start()], rest.group()
        joined = (first + after).casefold()
        pieces += (question[kept:begin], first + after if is_everyday(joined) else f"{first}-{after}")
        kept = rest.end()
    return "".join(pieces) + question[kept:]


def _joined(match: re.Match[str]) -> str:
    return match.group().replace(match.group(1), "")


def held_down(words: Sequence[str]) -> tuple[str, ...]:
    """The words with their held-down letters read (`unstretch`) in the language the question's
    other words are in: "dooooor" is Portuguese "dor" among Portuguese words, "door" among English."""
    language = question_language([w for w in words if not STRETCHED.search(w)])
    return tuple(unstretch(w, language) for w in words)


STRETCHED: Final = re.compile(r"([^\W\d_])\1{2,}")


@lru_cache(maxsize=100_000)
def unstretch(word: str, language: str | None = None) -> str:
    """A word typed with a letter held down, as written: "hurtsss" -> "hurts", "sleeeep" -> "sleep",
    "soooo" -> "so", "kneeeee" -> "knee", "paaaain" -> "pain". Each run of three or more of one letter
    stands for one or two. The first reading that is an everyday word of `language` (the question's),
    else of any language, is taken, `collapse_runs`' first, then two letters before one ("kneeeee"
    is not "kne"); with none, each run as one letter ("hamstriiing" -> "hamstring", Finnish
    "kiiiipu" -> "kipu": a letter held down is more often single than double)."""
    written = collapse_runs(word)
    if written == word:
        return written
    runs = list(STRETCHED.finditer(word))[:MAX_STRETCHED_RUNS]
    readings = [written]
    for counts in itertools.product((2, 1), repeat=len(runs)):
        pieces: list[str] = []
        end = 0
        for run, count in zip(runs, counts, strict=True):
            pieces += (word[end:run.start()], run.group(1) * count)
            end = run.end()
        readings.append(collapse_runs("".join(pieces) + word[end:]))
    everyday = everyday_languages()
    if language is not None:
        found = next((r for r in readings if language in everyday.get(r, ())), None)
        if found is not None:
            return found
    return next((r for r in readings if is_everyday(r)), readings[-1])


MAX_STRETCHED_RUNS: Final = 4
"""Held-down runs of a word whose readings are tried (16 at most); a later run keeps `collapse_runs`' reading."""


def collapse_runs(word: str) -> str:
    """The fixed reading of held-down letters: a run of three or more of one letter ends the word as
    one letter and stands for two inside it ("feeeel" -> "feel"); no language writes a letter three
    times at the end of a word, and inside one only a compound's seam does ("Schifffahrt" reads as
    the older "Schiffahrt", on the term's side too). Digits are never touched ("1000")."""
    last = word[-1:]
    if last.isalpha() and word.endswith(last * 3):
        # found from the end: a pattern anchored there would try every letter of a long run as a start
        word = word.rstrip(last) + last
    return STRETCHED.sub(r"\1\1", word)


_FANCY_NAME: Final = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z]{1,2})"
                                r"|(?:NEGATIVE SQUARED|NEGATIVE CIRCLED|SQUARED|CIRCLED|PARENTHESIZED) LATIN"
                                r" (?:CAPITAL|SMALL) LETTER ([A-Z])")
_FANCY_BLOCKS: Final = ((0x0250, 0x02B0), (0x1D00, 0x1D80), (0x2460, 0x2500), (0xA720, 0xA800), (0x1F100, 0x1F200))
"""IPA, phonetic extensions, the enclosed alphanumerics and their supplement, Latin extended-D:
where the small capitals, boxed and parenthesised letters of "fancy text" generators live."""


def _fancy_letters() -> dict[int, str]:
    table: dict[int, str] = {}
    for begin, end in _FANCY_BLOCKS:
        for code in range(begin, end):
            named = _FANCY_NAME.fullmatch(unicodedata.name(chr(code), ""))
            if named:
                table[code] = (named.group(1) or named.group(2)).lower()
    return table


FANCY_LETTERS: Final = _fancy_letters()
"""Letters "fancy text" writes that NFKC leaves alone or reads apart, as the plain letters they show:
small capitals ("ᴋɴᴇᴇ ʜᴜʀᴛꜱ"), letters in a black square or circle ("🅺🅽🅴🅴", "🅐"), letters in
parentheses ("⒫⒜⒤⒩", which NFKC makes "(p)(a)(i)(n)"). Read before NFKC, which reads the others
(bold, italic, script and double-struck letters, full-width ones)."""
_FANCY: Final = re.compile("[" + "".join(f"{chr(begin)}-{chr(end - 1)}" for begin, end in _FANCY_BLOCKS) + "]")
"""A character of the blocks `FANCY_LETTERS` is drawn from: five ranges are checked far faster than
its two hundred characters."""


def plain_letters(text: str) -> str:
    """The text with `FANCY_LETTERS` as plain letters."""
    return text.translate(FANCY_LETTERS) if _FANCY.search(text) else text


LETTER_THEN_DIGIT: Final = re.compile(r"[^\W\d_][0-9]")
"""A word with a digit after a letter: maybe words run together around a number, or digits typed
for letters. (A number with its unit, "10km", "5am", "2day", starts with the digit.)"""
_RUNS: Final = re.compile(r"[0-9]+|[^0-9]+")
_LEET: Final = {"0": "o", "1": "il", "3": "e", "4": "a", "5": "s", "7": "t"}
"""Digits typed for the letters they look like ("p41n", "kn33"), each with its letters."""
MIN_RUN_TOGETHER: Final = 3
"""The shortest word read apart from a number it is written onto."""
MAX_LEET_READINGS: Final = 16
"""Readings of a word's ones (i or l) tried, at most."""


def digits_read(words: Sequence[str]) -> list[str]:
    """The words, each with a digit after a letter read as `digit_reading` does."""
    out: list[str] = []
    for word in words:
        out += digit_reading(word) if LETTER_THEN_DIGIT.search(word) else (word,)
    return out


@lru_cache(maxsize=100_000)
def digit_reading(word: str) -> tuple[str, ...]:
    """A word of letters with digits in it, as chat means it. Words run together around a number of
    one or two digits are read apart when each run of letters is an everyday word of some language
    ("hurts4days" -> hurts, 4, days; "week2" -> week, 2; not "day112", where 112 is a count, not an
    emergency number). Else digits typed for the letters they look like are read as those letters
    when that makes an everyday English word, leetspeak being English ("p41n" -> pain, "kn33" ->
    knee, "h3lp" -> help); never one digit at the end, which is Arabic chat's letter ("wag3", pain,
    is not "wage"). Else the word is kept: a model name, a unit, Arabic or Greek chat's digits for
    letters ("vo2max", "waja3", "ex8es")."""
    runs = _RUNS.findall(word)
    if runs[0][0].isdigit():
        return (word,)
    letters, digits, everyday = runs[0::2], runs[1::2], everyday_languages()
    if all(len(r) >= MIN_RUN_TOGETHER and r in everyday for r in letters) and all(len(r) <= 2 for r in digits):
        return tuple(runs)
    arabic_chat = len(runs) == 2 and len(digits[0]) == 1  # "wag3", "waja3": one digit at the end
    if not arabic_chat and all(d in _LEET for r in digits for d in r) and sum(map(len, letters)) >= 2:
        options = [_LEET.get(ch, ch) for ch in word]
        for reading in itertools.islice(itertools.product(*options), MAX_LEET_READINGS):
            read = "".join(reading)
            # beyond the everyday words, English's commonest ("shin", "sprained", "concussion"), from
            # four letters: Arabic chat's "s7a" (health) is no "sta"
            if "en" in everyday.get(read, ()) or (len(read) >= 4 and read in glued_parts()):
                return (read,)
    return (word,)


def marks_read(words: Sequence[str]) -> list[str]:
    """In an English question, a word with accents or other marks added to an English word, as chat
    writes for emphasis or a look-alike text generator ("pàin", "ḟever", "sprăined", "şhin päin"),
    read without them (`mark_reading`). Only in a question whose everyday words are English: in
    Czech or Lithuanian, which the policy has no terms for, "mám" and "visą" are words of their own,
    and reading them as English would hide that the question is unread (one English word among them,
    "save", is no English question)."""
    read = [mark_reading(w) if not w.isascii() else w for w in words]
    if read == list(words):
        return read
    counts: dict[str, int] = {}
    for votes in map(everyday_languages().get, words):
        for language in votes or ():
            counts[language] = counts.get(language, 0) + 1
    english = counts.pop("en", 0)
    english_question = english >= MIN_ENGLISH_SHARE * len(words) and english >= max(counts.values(), default=0)
    return read if english_question else list(words)


MIN_ENGLISH_SHARE: Final = 0.4
"""The share of a question's words that must be everyday English words, and no fewer than any
other language's ("de" and "el" are on English's list too, far down), for `marks_read` to read it."""


@lru_cache(maxsize=100_000)
def mark_reading(word: str) -> str:
    """The word without its marks when it is no everyday word of any language (French "après",
    German "Bär" are kept) and, without them, one of English's commonest words of three letters or
    more (`glued_parts`). Else the word as written."""
    if len(word) < 3 or word in everyday_languages() or word in common_words():
        return word
    bare = "".join(ch for ch in unicodedata.normalize("NFD", word) if not unicodedata.combining(ch))
    return bare if bare != word and bare.isascii() and bare in glued_parts() else word
