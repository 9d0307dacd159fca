"""Unicode normalisation and per-script tokenisation.

Scripts written with spaces are split into word tokens and stemmed per language; Han, Hiragana
and Katakana are kept as runs and matched by substring; Hangul tokens match by prefix, since
Korean particles attach to the end of a word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import snowballstemmer

from coachctx.engine.chat_text import (
    LETTER_THEN_DIGIT,
    STRETCHED,
    digit_reading,
    digits_read,
    held_down,
    mark_reading,
    marks_read,
    plain_letters,
    unstretch,
    unwrap,
)

MAX_TOKEN_CHARS: Final = 64


_ALNUM_RUN: Final = re.compile(r"[^\W_]+")
"""Letters and digits: `\\w` less the underscore is exactly `str.isalnum`."""


def _word_chunks(text: str) -> list[str]:
    """Runs of letters and digits. A combining mark (Thai vowels, Devanagari viramas, Arabic
    harakat) continues the word it follows: `[^\\W_]+` alone would cut "दर्द" in two. The runs are
    found by the regex; only the characters right after a run are looked at one by one."""
    chunks: list[str] = []
    current: list[str] = []
    end = 0
    for match in _ALNUM_RUN.finditer(text):
        if current:
            marks = _leading_marks(text, end, match.start())
            if end + marks == match.start():  # only marks between: the word goes on
                current += (text[end:match.start()], match.group())
                end = match.end()
                continue
            current.append(text[end:end + marks])
            chunks.append("".join(current))
        current = [match.group()]
        end = match.end()
    if current:
        current.append(text[end:end + _leading_marks(text, end, len(text))])
        chunks.append("".join(current))
    return chunks


def _leading_marks(text: str, start: int, stop: int) -> int:
    """How many combining marks (category M) `text[start:stop]` starts with."""
    n = start
    while n < stop and unicodedata.category(text[n]).startswith("M"):
        n += 1
    return n - start


_OTHER_DIGIT: Final = re.compile(r"(?![0-9])\d")
"""A decimal digit of another script than ASCII: `\\d` is Unicode category Nd, as `str.isdecimal`."""


_IGNORABLE: Final = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u0332\u0333\u0334-\u0338\u034f\u115f\u1160\u17b4\u17b5"
                               "\u180b-\u180f\u2065\u3164\ufdd0-\ufdef\ufe00-\ufe0f\uffa0\ufff0-\ufff8\ufffe\uffff"
                               "\U000e0000-\U000e0fff" + "".join(f"{chr(p + 0xfffe)}{chr(p + 0xffff)}"
                                                                 for p in range(0x10000, 0x110000, 0x10000)) + "]")
"""Characters shown as nothing that are not format characters (Cf): Unicode's other
default-ignorables (variation selectors, "pain\ufe0f"; the combining grapheme joiner; Hangul
fillers; Mongolian and Khmer invisible signs; the unassigned ones kept for more), noncharacters,
and control characters other than line breaks and tabs; and the combining lines "fancy text" draws
through or under each letter ("p̶a̶i̶n̶", "p̲a̲i̲n̲"). A word written with one is the word."""


def normalise(text: str) -> str:
    """NFKC, "fancy text" letters as plain ones, casefold, invisible characters (ZWJ, RTL marks,
    BOM, variation selectors) removed, digits of every script as 0-9."""
    text = unicodedata.normalize("NFKC", plain_letters(text))
    if not text.isprintable():  # every Cf, Cs and Co character is unprintable: most text skips the walk
        text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cs", "Co"))
    text = _IGNORABLE.sub("", text)
    if _OTHER_DIGIT.search(text):
        # digits of every script read as 0-9: "٥ كم" and "५ किमी" are 5 km, like "5k" in the vocabulary
        text = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch for ch in text)
    # Turkish capital İ casefolds to i + a combining dot; the dot would hide "İdman" from "idman"
    return text.casefold().replace("i\u0307", "i")


def script_of(ch: str) -> str:
    cp = ord(ch)
    if cp < 0x250 or 0x1E00 <= cp <= 0x1EFF:
        return "Latin" if ch.isalpha() else "Common"
    if 0x0400 <= cp <= 0x052F:
        return "Cyrillic"
    if 0x3040 <= cp <= 0x309F:
        return "Hiragana"
    if 0x30A0 <= cp <= 0x30FF or 0x31F0 <= cp <= 0x31FF:
        return "Katakana"
    if 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2FA1F or 0xF900 <= cp <= 0xFAFF:
        return "Han"
    if 0xAC00 <= cp <= 0xD7AF or 0x1100 <= cp <= 0x11FF or 0x3130 <= cp <= 0x318F:
        return "Hangul"
    if not ch.isalpha():
        return "Common"
    try:
        return unicodedata.name(ch).split(" ", 1)[0].title()
    except ValueError:
        return "Unknown"


@lru_cache(maxsize=100_000)
def letter_scripts(word: str) -> frozenset[str] | None:
    """The scripts of the word's letters and marks ("Latin", "Cyrillic", "Devanagari", ...; ASCII
    digits belong to none), or None when it holds a character of no script (a symbol, a combining
    accent on a digit): such a word must be stemmed under every algorithm."""
    if word.isascii():
        return _LATIN if not word.isdigit() else _NONE
    scripts: set[str] = set()
    for ch in word:
        if ch.isascii():
            if ch.isalpha():
                scripts.add("Latin")
        elif ch.isalpha():
            scripts.add(script_of(ch))
        elif unicodedata.category(ch).startswith("M"):
            # a vowel sign or virama is named after its script ("DEVANAGARI VOWEL SIGN AA"); a
            # combining accent ("COMBINING ACUTE ACCENT") after none
            name = unicodedata.name(ch, "").split(" ", 1)[0].title()
            if name in ("", "Combining"):
                return None
            scripts.add(name)
        else:
            return None
    return frozenset(scripts)


_LATIN: Final = frozenset({"Latin"})
_NONE: Final = frozenset[str]()


UNSPACED: Final = frozenset({"Han", "Hiragana", "Katakana"})


@dataclass(frozen=True)
class Tokens:
    """A normalised question split by script."""

    text: str
    words: tuple[str, ...]
    """Tokens of spaced scripts (Latin, Cyrillic, Greek, Hangul, ...), in order."""
    unspaced: str
    """Han/Hiragana/Katakana runs joined by a space, for substring matching."""
    scripts: tuple[str, ...]
    """Scripts seen, in order of first appearance (Common excluded)."""
    raw: str = ""
    """The question as written, for the model (which reads case and punctuation)."""
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    """Per-question results (stems per algorithm, terms per matcher), so two policies or three
    matchers reading one question do the work once."""

    def stems(self, algorithm: str) -> list[str]:
        key = ("stems", algorithm)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = [stem(w, algorithm) for w in self.words]
        return found  # type: ignore[return-value]


_ASCII_WORD: Final = re.compile(r"[a-z0-9]+")
_ASCII_LETTER: Final = re.compile(r"[a-z]")
_LONG_ASCII_WORD: Final = re.compile(f"[a-z0-9]{{{MAX_TOKEN_CHARS + 1}}}")
_LATIN_SCRIPT: Final = ("Latin",)
_ASCII_CONTROL: Final = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
_ASCII_RARE: Final = re.compile(f"([a-z])\\1\\1|[a-z][0-9]|{_LONG_ASCII_WORD.pattern}")
"""A held-down letter, a digit after a letter or an overlong word, looked for in one pass."""


def tokenise(question: str) -> Tokens:
    """The question's words, as chat writes them (`unwrap`): normalised, split by script."""
    read = unwrap(question)
    if read.isascii():
        # the common case, without the per-character Unicode work: NFKC leaves ASCII alone, it
        # holds no format characters, and its only letters are Latin
        text = read.lower()
        if not text.isprintable():  # a line break or tab, rarely a control character inside a word
            text = _ASCII_CONTROL.sub("", text)
        found = _ASCII_WORD.findall(text)
        if _ASCII_RARE.search(text):
            found = _rare_ascii(text, found)
        return Tokens(text=text, words=tuple(found), unspaced="",
                      scripts=_LATIN_SCRIPT if _ASCII_LETTER.search(text) else (), raw=question)
    text = normalise(read)
    words: list[str] = []
    runs: list[str] = []
    scripts: dict[str, None] = {}
    for chunk in _word_chunks(text):
        chunk_words, chunk_runs, chunk_scripts = _split_chunk(chunk)
        words += chunk_words
        runs += chunk_runs
        for script in chunk_scripts:
            scripts.setdefault(script, None)
    held = [w[:MAX_TOKEN_CHARS] for w in held_down(words)] if STRETCHED.search(text) else words
    if "Latin" in scripts and ("Cyrillic" in scripts or "Greek" in scripts):
        held = _latin_look_alikes(held)
    if "Latin" in scripts:
        held = marks_read(held)
    if LETTER_THEN_DIGIT.search(text):
        held = digits_read(held)
    return Tokens(text=text, words=tuple(held), unspaced=" ".join(runs), scripts=tuple(scripts), raw=question)


def _rare_ascii(text: str, words: list[str]) -> list[str]:
    """The words of a lower-case ASCII question that `_ASCII_RARE` found something in."""
    if STRETCHED.search(text):
        words = [w[:MAX_TOKEN_CHARS] for w in held_down(words)]
    elif _LONG_ASCII_WORD.search(text):
        words = [w[:MAX_TOKEN_CHARS] for w in words]
    return digits_read(words) if LETTER_THEN_DIGIT.search(text) else words


def _latin_look_alikes(words: Sequence[str]) -> list[str]:
    """In a question of Latin words, a word of three letters or more written wholly in Cyrillic or
    Greek look-alikes of Latin letters ("ѕоrе knее" with Cyrillic ѕ, о, е) as Latin writes it. A
    word with a letter that has no Latin look-alike ("колено") is another language's word and is
    kept, as is a shorter one (Russian "у", "по" in a code-switched question)."""
    latin = sum(letter_scripts(w) == _LATIN for w in words)
    if latin * 2 <= len(words):
        return list(words)
    out = []
    for word in words:
        scripts = letter_scripts(word)
        if len(word) >= 3 and scripts and scripts != _LATIN and scripts <= _LOOK_ALIKE_SCRIPTS:
            replaced = [_look_alike(ch, "Latin") if script_of(ch) != "Latin" else ch for ch in word]
            word = "".join(replaced) if all(replaced) else word
        out.append(word)
    return out


@lru_cache(maxsize=100_000)
def _split_chunk(chunk: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A run of letters and digits as (its words of spaced scripts, its Han/Kana runs, its scripts
    in order of first appearance): memoised, since questions repeat their words."""
    if chunk.isascii():  # ASCII letters and digits: one Latin word, as most chunks of most languages are
        return (chunk[:MAX_TOKEN_CHARS],), (), _LATIN_SCRIPT if not chunk.isdigit() else ()
    words: list[str] = []
    runs: list[str] = []
    scripts: dict[str, None] = {}
    current: list[str] = []
    current_unspaced: bool | None = None
    for ch in chunk:
        script = script_of(ch)
        if script != "Common":
            scripts.setdefault(script, None)
        # a combining mark belongs to the run it follows, whatever that run's script
        unspaced = current_unspaced if current and script == "Common" and not ch.isalnum() \
            else script in UNSPACED
        if current and unspaced != current_unspaced:
            (runs if current_unspaced else words).append("".join(current))
            current = []
        current.append(ch)
        current_unspaced = unspaced
    if current:
        (runs if current_unspaced else words).append("".join(current))
    return tuple(unmixed(w)[:MAX_TOKEN_CHARS] for w in words), tuple(runs), tuple(scripts)


_LOOK_ALIKE_SCRIPTS: Final = frozenset({"Latin", "Cyrillic", "Greek"})


def unmixed(word: str) -> str:
    """A word of Latin, Cyrillic or Greek letters with look-alikes of another of them written into it
    ("раin" with a Cyrillic р and а, "бoлит" with a Latin o): as one script writes it, when each
    other letter has a look-alike there (Unicode's confusables, through `confusable_homoglyphs`).
    The script of most of its letters is tried first, Latin first on a tie. A word of one script,
    or one no script can write alone, is kept as written."""
    scripts = letter_scripts(word)
    if scripts is None or len(scripts) < 2 or not scripts <= _LOOK_ALIKE_SCRIPTS:
        return word
    counts = {s: sum(script_of(ch) == s for ch in word) for s in scripts}
    for script in sorted(scripts, key=lambda s: (-counts[s], s != "Latin", s)):
        replaced = {ch: _look_alike(ch, script) for ch in word if script_of(ch) != script}
        if all(replaced.values()):
            return "".join(replaced.get(ch, ch) for ch in word)
    return word


@lru_cache(maxsize=1024)
def _look_alike(letter: str, script: str) -> str:
    """A plain small letter of `script` that Unicode lists as confusable with `letter`, or ""."""
    from confusable_homoglyphs import confusables  # its tables load on the first mixed word

    plain = re.compile(f"{script.upper()} SMALL LETTER [A-Z]+")
    for found in confusables.is_confusable(letter, greedy=True, preferred_aliases=[script.lower()]) or ():
        for glyph in found["homoglyphs"]:
            if len(glyph["c"]) == 1 and plain.fullmatch(glyph["n"]):
                return str(glyph["c"])
    return ""


# letters with a stroke, not a combining accent, that chat typed without diacritics writes plain
_STROKES: Final = str.maketrans({"đ": "d", "ł": "l", "ø": "o", "ħ": "h", "ı": "i"})
_FOLDED_SCRIPTS: Final = frozenset({"Latin", "Greek"})
"""Scripts whose accents are optional in chat. Never Devanagari or Thai, whose combining marks are
vowels: stripping them makes another word."""


def fold_accents(word: str) -> str:
    """The word as typed without accents: "récupération" -> "recuperation", "đau" -> "dau",
    "πόνος" -> "πονος"; marks on other scripts are kept."""
    kept: list[str] = []
    base = ""
    for ch in unicodedata.normalize("NFD", word.translate(_STROKES)):
        if not unicodedata.combining(ch):
            base = script_of(ch)
        elif base in _FOLDED_SCRIPTS:
            continue
        kept.append(ch)
    return unicodedata.normalize("NFC", "".join(kept))


@lru_cache(maxsize=32)
def stemmer(algorithm: str) -> snowballstemmer.Stemmer:  # type: ignore[name-defined]
    """The Snowball stemmer of an algorithm (PyStemmer's C one where installed), made once.
    PyStemmer's own cache is turned off: the callers memoise what they stem, and its entries (a
    list per word stemmed) are objects every full garbage collection would walk."""
    found = snowballstemmer.stemmer(algorithm)
    if hasattr(found, "maxCacheSize"):
        found.maxCacheSize = 0
    return found


WHOLE_WORD: Final = "word"
"""The matching mode of a language without a stemmer whose words do not inflect (Vietnamese)."""


@lru_cache(maxsize=200_000)
def stem(word: str, algorithm: str) -> str:
    """The word's stem under a Snowball algorithm, or the word itself under `WHOLE_WORD`."""
    return word if algorithm == WHOLE_WORD else str(stemmer(algorithm).stemWord(word))


def stem_variants(word: str, algorithm: str) -> frozenset[str]:
    """Every key a vocabulary term is filed under: its stem, and the stem of its accent-folded
    form, so a question typed without accents ("recuperacion", "dau goi") still meets a term
    written with them. A question word is looked up by its own stem, accents and all: a word
    written with *other* accents is another word ("đối" is not Portuguese "dói")."""
    if algorithm in _KEEP_ACCENTS:
        return frozenset({stem(word, algorithm)})
    return frozenset({stem(w, algorithm) for w in (word, fold_accents(word), *_typed_as(word, algorithm))})


_KEEP_ACCENTS: Final = frozenset({"russian"})


def _typed_as(word: str, algorithm: str) -> tuple[str, ...]:
    """The spellings of a term's word a question may type instead, on a keyboard without the
    language's letters (`_TRANSCRIBED`), or in Arabic as Egyptian chat ends it (ي written ى, "ركبتى")
    and with a Persian keyboard's kaf (ک for ك). Not the Persian keyboard's yeh (ی): it stands for
    both ي and ى, and a term's two readings then meet another's ("حمى", fever, and "حمية", diet,
    both become "حمی")."""
    if algorithm == "arabic":
        return (word[:-1] + "\u0649" if word.endswith("\u064a") else word), word.translate(_PERSIAN_KAF)
    table = _TRANSCRIBED.get(algorithm)
    return (word.translate(table),) if table else ()


_PERSIAN_KAF: Final = str.maketrans({"\u0643": "\u06a9"})
_TRANSCRIBED: Final = {
    "danish": str.maketrans({"æ": "ae", "å": "aa"}),
    "norwegian": str.maketrans({"æ": "ae", "å": "aa"}),
    "german": str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}),
    "turkish": str.maketrans({"ı": "i"}),
}
"""How a keyboard without the language's letters spells them: Danish "knæ" as "knae", German
"müde" as "muede" (`fold_accents` gives the other way, "knae" without the æ's e: "kna" is not
written, but "mude" is). Not ø as "oe": the stemmer then reads "ømme" (sore) and "ømhed"
(soreness) as one stem, "oem" (`fold_accents` gives "omme"). Turkish typed in capitals: "AĞRISI"
lower-cases to "ağrisi", the dotless ı lost and the other letters kept."""


def clear_word_memos() -> None:
    """Empty this module's per-word memos (word splits, unstretched words, stems, scripts)."""
    for memo in (_split_chunk, unstretch, digit_reading, mark_reading, stem, letter_scripts):
        memo.cache_clear()
