"""Readings of a question word a table does not know: a misspelt term (fuzzy, at reduced weight),
a compound made of terms (German "Knieschmerzen", Norwegian "kneskader"), or an Arabic word with
a conjunction, preposition or article written onto it."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Final

from rapidfuzz import process
from rapidfuzz.distance import OSA

from coachctx.engine.common_words import GLUED_LANGUAGE, common_words, everyday_languages
from coachctx.engine.matching.glued import split_glued
from coachctx.engine.matching.language import LANGUAGE_FAMILIES, language_of, read_as_false_friend
from coachctx.engine.matching.stems import COMPOUNDING, MIN_HEAD, MIN_MODIFIER, part_stems
from coachctx.engine.matching.terms import CLINICAL_LABEL, Term
from coachctx.engine.policy import LANGUAGES
from coachctx.engine.text import WHOLE_WORD, Tokens, script_of, stem

WORD_CACHE_LIMIT: Final = 50_000
"""Per-matcher memos keyed by a question word are cleared when they reach this size."""
FUZZY_FACTOR: Final = 0.75
"""A misspelt word matches a term at this share of the term's weight."""
FUZZY_SCRIPTS: Final = frozenset({"Latin", "Cyrillic", "Greek"})
"""Alphabets with written vowels. In Arabic or Devanagari one letter apart is often another
everyday word (الأول "the first" / الأكل "food"), so those words match only as written."""
PART_FACTOR: Final = 0.75
"""A term found as part of a compound, or of words run together, matches at this share of its weight."""
_PART_OF: Final = " (part of: "
GLUED_ALGORITHM: Final = LANGUAGES[GLUED_LANGUAGE]
_GLUED_QUESTIONS: Final = frozenset({GLUED_LANGUAGE, None})
"""The languages of a question in which English words run together are read apart (None: no
language detected)."""
ARABIC_PROCLITICS: Final = ("وبال", "فبال", "وال", "فال", "بال", "كال", "لل", "ول", "وب", "فب", "فل", "ال", "و", "ف",
                             "ب", "ل", "ك", "س")
"""Conjunctions, prepositions and the article Arabic writes onto a word, longest first."""


def fuzzy_distance(word: str) -> int:
    """The edit distance a misspelling of a word this long may have: 1 from 5 letters, 2 from 9;
    0 for a word not written in one of `FUZZY_SCRIPTS`."""
    if not word or script_of(word[0]) not in FUZZY_SCRIPTS:
        return 0
    return 2 if len(word) >= 9 else 1 if len(word) >= 5 else 0


@lru_cache(maxsize=100_000)
def may_have_readings(word: str) -> bool:
    """False when no table can read the word: too short to be misspelt or a compound, not all
    letters, or an everyday word, and not Arabic. Decided once per word for every table; about four
    words in five of never-seen questions stop here."""
    if not word:
        return False
    if script_of(word[0]) == "Arabic":
        return True
    if len(word) == SWAPPED_LENGTH:
        return may_be_swapped(word)
    return (fuzzy_distance(word) > 0 or len(word) >= MIN_HEAD + MIN_MODIFIER) and word.isalpha() \
        and word not in common_words()


SWAPPED_LENGTH: Final = 4
"""A word this long is too short for `fuzzy_distance`'s edits, but not for two letters typed the
wrong way round ("pian", "hrut", "kene"): the commonest typo there is, and one that keeps every
letter, so few everyday words are a swap from a term."""


def may_be_swapped(word: str) -> bool:
    """Whether a word of `SWAPPED_LENGTH` letters may be a term with two letters swapped: written
    in an alphabet with written vowels, and no everyday word of any language ("form", "sore")."""
    return word.isalpha() and script_of(word[0]) in FUZZY_SCRIPTS and word not in everyday_languages()


def may_be_compound(word: str, singles: Mapping[str, frozenset[str]]) -> bool:
    """False when no table whose one-word stems per compounding algorithm are among `singles` (a
    union over tables) can read the word as a compound (`Readings.parts`): no part of it stems to
    one of them, and it is not Arabic."""
    if word and script_of(word[0]) == "Arabic":
        return True
    if len(word) < MIN_HEAD + MIN_MODIFIER or not word.isalpha() or word in common_words():
        return False
    for algorithm, stems in singles.items():
        heads, modifiers = part_stems(word, algorithm)
        if not (stems.isdisjoint(heads) and stems.isdisjoint(modifiers)):
            return True
    return False


Reading = tuple[str, Term]
"""(the term as the table has it, the reading: the term at reduced weight, named after the word)"""


def as_readings(terms: tuple[Term, ...]) -> tuple[Reading, ...]:
    return tuple((e.term.split(" (", 1)[0], e) for e in terms)


class Readings:
    """One table's readings of unknown words, memoised per word. `stemmed` is the table's
    algorithm -> stemmed phrase -> terms; `fuzzy` its single-word terms of spaced scripts (4+
    letters; those of 4 only for `SWAPPED_LENGTH`'s swaps) as written, in the table's order."""

    def __init__(self, stemmed: Mapping[str, Mapping[tuple[str, ...], tuple[Term, ...]]],
                 fuzzy: Mapping[str, tuple[Term, ...]]) -> None:
        self.stemmed, self.fuzzy = stemmed, fuzzy
        self.seen: dict[str, tuple[Reading, ...]] = {}
        """word -> its readings: what `TermMatcher.find` looks up first."""
        self._fuzzy_seen: dict[str, tuple[Term, ...]] = {}
        self._parts_seen: dict[str, tuple[Term, ...]] = {}
        self._singles_seen: dict[str, frozenset[str]] = {}
        self._windows: dict[tuple[int, int, str], list[str]] = {}
        self._position: dict[str, int] = {}
        self._tails: dict[str, list[str]] = {}
        self._by_first: dict[str, list[str]] = {}
        self._glued_seen: dict[str, tuple[Term, ...]] = {}

    def forget(self) -> None:
        """Empty the per-word memos: the state of a table that has never seen a question."""
        for memo in (self.seen, self._fuzzy_seen, self._parts_seen, self._glued_seen):
            memo.clear()

    def of(self, word: str) -> tuple[Reading, ...]:
        """(the term as the table has it, the reading) for a word the table does not know: its
        fuzzy matches, then its compound parts. Usually none, found with one lookup."""
        readings = self.seen.get(word)
        if readings is None:
            readings = self.read(word)
            if len(self.seen) >= WORD_CACHE_LIMIT:
                self.seen.clear()
            self.seen[word] = readings
        return readings

    def read(self, word: str, compound: bool = True) -> tuple[Reading, ...]:
        """`of`, not memoised here: for a caller that keeps its own memo of the word, and may know
        that it is no compound of this table's terms (`may_be_compound`)."""
        if not may_have_readings(word):
            return ()
        return as_readings((*self.near(word), *(self.parts(word) if compound else ())))

    def glued(self, word: str) -> tuple[Term, ...]:
        """The terms of English words run together ("kneepain", "ithurts", "#legday"), read apart
        (`split_glued`) into common English words, at reduced weight: the phrases the table has
        among them, longest first, then single words, and its whole-word English terms ("=acl").
        Only for a word no table knows or reads otherwise (`SharedWords`), and counted only in a
        question in English or of no detected language (`add_readings`)."""
        cached = self._glued_seen.get(word)
        if cached is not None:
            return cached
        found: dict[tuple[str, str], Term] = {}
        split = split_glued(word)
        tables = [(GLUED_ALGORITHM, [stem(p, GLUED_ALGORITHM) for p in split]), (WHOLE_WORD, list(split))]
        for algorithm, keys in tables if split else ():
            table = self.stemmed.get(algorithm, {})
            for n in range(len(keys), 0, -1):
                for i in range(len(keys) - n + 1):
                    for e in table.get(tuple(keys[i:i + n]), ()):
                        if e.language == GLUED_LANGUAGE:
                            found.setdefault((e.label, e.term), Term(
                                e.label, f"{e.term}{_PART_OF}{word})", round(e.weight * PART_FACTOR, 6), e.language))
        glued = tuple(found.values())
        if len(self._glued_seen) < WORD_CACHE_LIMIT:
            self._glued_seen[word] = glued
        return glued

    def parts(self, word: str) -> tuple[Term, ...]:
        """The terms a compound the table does not know is made of, at reduced weight: its longest
        known last part ("kne|skader" -> skade) and its longest known first part ("Knie|schmerzen"
        -> Knie), under each compounding language's stemmer. None for an everyday word."""
        cached = self._parts_seen.get(word)
        if cached is not None:
            return cached
        parts: dict[tuple[str, str], Term] = {}
        if len(word) >= MIN_HEAD + MIN_MODIFIER and word.isalpha() and word not in common_words():
            # in the table's own order: a set's order changes with each process's hash seed, and the
            # first language to find a part decides its weight
            for algorithm in (a for a in self.stemmed if a in COMPOUNDING):
                table, singles = self.stemmed[algorithm], self.singles(algorithm)
                heads, modifiers = part_stems(word, algorithm)
                if singles.isdisjoint(heads) and singles.isdisjoint(modifiers):
                    continue  # the usual answer, found without a lookup per part
                for entries in (next((table[(k,)] for k in heads if k in singles), ()),
                                next((table[(k,)] for k in modifiers if k in singles), ())):
                    for e in entries:
                        parts.setdefault((e.label, e.term), Term(
                            e.label, f"{e.term}{_PART_OF}{word})", round(e.weight * PART_FACTOR, 6), e.language))
        if "arabic" in self.stemmed and script_of(word[0]) == "Arabic":
            for e in self._unclitic(word):
                parts.setdefault((e.label, e.term), e)
        found = tuple(parts.values())
        if len(self._parts_seen) < WORD_CACHE_LIMIT:
            self._parts_seen[word] = found
        return found

    def singles(self, algorithm: str) -> frozenset[str]:
        """The stems the table has a one-word term for, under one algorithm."""
        found = self._singles_seen.get(algorithm)
        if found is None:
            found = self._singles_seen[algorithm] = frozenset(p[0] for p in self.stemmed[algorithm] if len(p) == 1)
        return found

    def _unclitic(self, word: str) -> tuple[Term, ...]:
        """Arabic writes "and", "for", "with", "like" and "the" onto the word (لسباق = for + a race):
        the word less its longest such prefix, at full weight, when the table knows that."""
        table = self.stemmed["arabic"]
        for clitic in ARABIC_PROCLITICS:
            rest = word[len(clitic):]
            if word.startswith(clitic) and len(rest) >= 3:
                entries = table.get((stem(rest, "arabic"),))
                if entries:
                    return tuple(Term(e.label, f"{e.term}{_PART_OF}{word})", e.weight, e.language) for e in entries)
        return ()

    def near(self, word: str) -> tuple[Term, ...]:
        """The terms a misspelt word stands for, at reduced weight: the closest vocabulary word
        within `fuzzy_distance`, starting with the same letter; none for a word the table has, nor
        for an everyday word of some language ("faster" is not a misspelt "fasted")."""
        cached = self._fuzzy_seen.get(word)
        if cached is not None:
            return cached
        near: tuple[Term, ...] = ()
        limit = fuzzy_distance(word)
        if len(word) == SWAPPED_LENGTH and word not in self.fuzzy and may_be_swapped(word):
            near = self._swapped(word)
        elif limit and word.isalpha() and word not in self.fuzzy and word not in common_words():
            best = self.closest(word, limit)
            if best is not None and fuzzy_distance(best[0]) >= best[1]:
                near = self._misspelt(word, best[0])
        if len(self._fuzzy_seen) < WORD_CACHE_LIMIT:
            self._fuzzy_seen[word] = near
        return near

    def _misspelt(self, word: str, meant: str) -> tuple[Term, ...]:
        return tuple(Term(e.label, f"{e.term} (fuzzy: {word})", round(e.weight * FUZZY_FACTOR, 6), e.language)
                     for e in self.fuzzy[meant])

    def _swapped(self, word: str) -> tuple[Term, ...]:
        """The terms a word of `SWAPPED_LENGTH` letters stands for with two neighbouring letters
        swapped back, the earliest in the table's order when two swaps make terms."""
        swaps = (word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1))
        meant = [w for w in swaps if w in self.fuzzy and w != word]
        return self._misspelt(word, min(meant, key=self._index()[0].__getitem__)) if meant else ()

    def closest(self, word: str, limit: int) -> tuple[str, int] | None:
        """The fuzzy word a misspelling stands for: the nearest within `limit` edits (optimal string
        alignment), the earliest in the table's order on a tie, with its distance, when it starts
        with the word's letter; else None. Searched among the words of that letter first, which is
        all it takes unless a word of another letter is as near and earlier: at one edit those are
        found by looking up the word's edits at its front, at two by the whole window."""
        same = process.extractOne(word, self._window(len(word), limit, word[0]), scorer=OSA.distance,
                                  score_cutoff=limit, processor=None)
        if same is None:
            return None
        if same[1] == 1:
            position = self._index()[0][same[0]]
            return None if any(i < position for i in self._one_edit_elsewhere(word)) else (same[0], 1)
        best = process.extractOne(word, self._window(len(word), limit), scorer=OSA.distance,
                                  score_cutoff=limit, processor=None)
        return (best[0], best[1]) if best is not None and best[0][0] == word[0] else None

    def _window(self, length: int, limit: int, first: str = "") -> list[str]:
        """The fuzzy words within `limit` letters of `length` (starting with `first`, when given),
        in the table's order: a word further off in length is further off in edit distance, so
        leaving it out changes no answer."""
        key = (length, limit, first)
        window = self._windows.get(key)
        if window is None:
            words = self._index()[2].get(first, ()) if first else self.fuzzy
            window = self._windows[key] = [w for w in words if abs(len(w) - length) <= limit and fuzzy_distance(w)]
        return window

    def _index(self) -> tuple[dict[str, int], dict[str, list[str]], dict[str, list[str]]]:
        """(fuzzy word -> its position, its tail -> the words ending so, its first letter -> the
        words starting so), in the table's order; made on the first misspelling."""
        positions, tails, by_first = self._position, self._tails, self._by_first
        if not positions and self.fuzzy:
            positions.update({w: i for i, w in enumerate(self.fuzzy)})
            for w in positions:
                if not fuzzy_distance(w):
                    continue  # a word only a swap reads (`SWAPPED_LENGTH`) is no other edit's answer
                tails.setdefault(w[1:], []).append(w)
                by_first.setdefault(w[0], []).append(w)
        return positions, tails, by_first

    def _one_edit_elsewhere(self, word: str) -> list[int]:
        """Positions of the fuzzy words one edit from `word` that start with another letter: the
        edit is at the front, so they are its first letter replaced, dropped or preceded by another,
        or its first two letters swapped."""
        positions, tails, _ = self._index()
        nearby = (*tails.get(word[1:], ()), *tails.get(word, ()), word[1:], word[1:2] + word[:1] + word[2:])
        # a word only a swap reads ("ache" for "lache") is no answer to a dropped letter
        return [positions[w] for w in nearby if w in positions and w[0] != word[0] and fuzzy_distance(w)]


def add_readings(unknown: list[tuple[int, tuple[Reading, ...]]], tokens: Tokens,
                  found: dict[tuple[str, str], Term]) -> None:
    """A word the table does not know counts once per label, as its heaviest reading: a
    misspelling, or a compound's part, through whichever language's terms; English words run
    together only in a question in English or of no detected language ("fluyen" in a Spanish
    question is no "flu yen")."""
    words = tokens.words
    terms_found = {e.term for e in found.values()}
    for i, readings in unknown:
        best: dict[str, tuple[str, Term]] = {}
        for base, entry in readings:
            if entry.language == GLUED_LANGUAGE and _PART_OF in entry.term and language_of(tokens) not in _GLUED_QUESTIONS:
                continue  # English writes no compounds: its part is a reading of words run together
            if _PART_OF in entry.term and _foreign_part(entry, tokens):
                continue
            if base not in terms_found and (entry.label not in best or entry.weight > best[entry.label][1].weight):
                best[entry.label] = (base, entry)
        for base, entry in best.values():
            if not read_as_false_friend(entry, tokens, words[i:i + 1]):
                found.setdefault((entry.label, base), entry)


def _foreign_part(entry: Term, tokens: Tokens) -> bool:
    """A compound's part is read in its own language: in a Finnish question "tavoitesyke" (target
    heart rate) is Finnish "syke", not Norwegian "syk" (sick). True for a part of a language neither
    the question's detected language nor of its family (`LANGUAGE_FAMILIES`). A clinical term's part
    is read whatever the language ("hei, mulla on knieverletzung, voinko juosta?"): recall first."""
    if entry.label == CLINICAL_LABEL or entry.language == GLUED_LANGUAGE:
        return False
    own = language_of(tokens)
    return own is not None and own != entry.language and not any(
        own in family and entry.language in family for family in LANGUAGE_FAMILIES)
