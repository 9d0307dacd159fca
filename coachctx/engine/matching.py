"""Matching terms in a question: the policy's term tables (vocabulary, clinical, fragment and scope
terms) compiled once into `TermMatcher`s, which find every term a question uses — stemmed per
language, substrings for Han/Kana, prefixes for Hangul, misspellings and compound parts at reduced
weight, and never a word of the question's own language read as an unrelated language's term.

Routing (`routing.py`) scores intents from what the vocabulary matcher finds.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Literal

from rapidfuzz import process
from rapidfuzz.distance import OSA

from coachctx.engine.common_words import common_words, everyday_languages, question_language
from coachctx.engine.policy import EXACT_MARK, LANGUAGES, Policy
from coachctx.engine.text import (
    WHOLE_WORD,
    Tokens,
    letter_scripts,
    script_of,
    stem,
    stem_variants,
    stemmer,
    tokenise,
)

MAX_PHRASE_WORDS: Final = 6
_WORD_CACHE_LIMIT: Final = 50_000
"""Per-matcher memos keyed by a question word are cleared when they reach this size."""
FUZZY_FACTOR: Final = 0.75
"""A misspelt word matches a term at this share of the term's weight."""


FUZZY_SCRIPTS: Final = frozenset({"Latin", "Cyrillic", "Greek"})
"""Alphabets with written vowels. In Arabic or Devanagari one letter apart is often another
everyday word (الأول "the first" / الأكل "food"), so those words match only as written."""


def fuzzy_distance(word: str) -> int:
    """The edit distance a misspelling of a word this long may have: 1 from 5 letters, 2 from 9;
    0 for a word not written in one of `FUZZY_SCRIPTS`."""
    if not word or script_of(word[0]) not in FUZZY_SCRIPTS:
        return 0
    return 2 if len(word) >= 9 else 1 if len(word) >= 5 else 0

STEMMER_SCRIPTS: Final = {"russian": "Cyrillic", "greek": "Greek", "arabic": "Arabic", "hindi": "Devanagari"}
"""The alphabet of each Snowball algorithm not written in Latin letters; every other one is Latin.
A stemmer changes only a word that holds letters of its alphabet (tests/test_engine_word_memos.py checks
each one over the common word lists of every language), so a word of other letters is its own stem
there and need not be stemmed: "knee" is not run through the Russian, Greek, Arabic and Hindi
stemmers, nor "колено" through the fourteen Latin ones."""
_UNSTEMMED: Final = frozenset({WHOLE_WORD, "prefix"})
ALGORITHMS: Final = tuple(dict.fromkeys(a for a in LANGUAGES.values() if a != "substring"))
"""Every algorithm a matcher may file a spaced-script term under."""


@lru_cache(maxsize=100_000)
def word_stems(word: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The word's distinct stems under `ALGORITHMS`, each with the algorithms that give it: usually
    a handful, since most algorithms leave a word alone. Shared by every matcher, so a question word
    is stemmed once per process, not once per matcher and language."""
    run, own = _stemmers_for(letter_scripts(word))
    groups: dict[str, list[str]] = {word: list(own)}
    for algorithm, stem_word in run:
        groups.setdefault(stem_word(word), []).append(algorithm)
    return tuple((key, tuple(algorithms)) for key, algorithms in groups.items() if algorithms)


@lru_cache(maxsize=64)
def _stemmers_for(scripts: frozenset[str] | None) -> tuple[tuple[tuple[str, Callable[[str], str]], ...],
                                                         tuple[str, ...]]:
    """(algorithm, its stemming function) for each algorithm that may change a word of these
    scripts, and the algorithms under which such a word is its own stem."""
    run = tuple((a, stemmer(a).stemWord) for a in ALGORITHMS if a not in _UNSTEMMED
                and (scripts is None or STEMMER_SCRIPTS.get(a, "Latin") in scripts))
    return run, tuple(a for a in ALGORITHMS if a not in dict(run))


@lru_cache(maxsize=100_000)
def part_stems(word: str, algorithm: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stems of a compound's possible last parts, longest first, and of its possible first
    parts, longest first (see `TermMatcher._parts`), under a compounding language's algorithm."""
    scripts = letter_scripts(word)
    own = scripts is not None and STEMMER_SCRIPTS.get(algorithm, "Latin") not in scripts
    key: Callable[[str], str] = str if own else stemmer(algorithm).stemWord
    return (tuple(key(word[j:]) for j in range(MIN_MODIFIER, len(word) - MIN_HEAD + 1)),
            tuple(key(word[:j]) for j in range(len(word) - MIN_MODIFIER, MIN_HEAD - 1, -1)))


def stem_of(word: str, algorithm: str) -> str:
    """`stem(word, algorithm)`, read from `word_stems`."""
    return next(key for key, algorithms in word_stems(word) if algorithm in algorithms)


COMPOUNDING: Final = frozenset({"german", "dutch", "swedish", "danish", "norwegian", "finnish"})
"""Languages that write a compound as one word ("Knieschmerzen", "kneskader", "polvikipu"): a
question word the vocabulary does not know is read as its parts."""
PART_FACTOR: Final = 0.75
"""A term found as part of a compound matches at this share of its weight."""
MIN_HEAD, MIN_MODIFIER = 4, 3
"""The shortest last part of a compound read as a term, and the shortest rest beside it."""

ARABIC_PROCLITICS: Final = ("وبال", "فبال", "وال", "فال", "بال", "كال", "لل", "ول", "وب", "فب", "فل", "ال", "و", "ف",
                             "ب", "ل", "ك", "س")
"""Conjunctions, prepositions and the article Arabic writes onto a word, longest first."""



@dataclass(frozen=True)
class _Term:
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
    if mode == "substring":
        key = words.unspaced or words.text.strip()
        return (("substring", mode, (key,)),) if key else ()
    if mode == "prefix" and len(words.words) == 1:
        return (("prefix", mode, (words.words[0],)),)
    return tuple(("stemmed", mode, phrase) for phrase in itertools.product(*(sorted(_keys(w, mode))
                                                                             for w in words.words[:MAX_PHRASE_WORDS])))


@dataclass(frozen=True)
class TermMatcher:
    """Matches terms per language: stemmed token sequences for spaced scripts, substrings for
    Han/Kana, token prefixes for Hangul. Each term counts once per question."""

    stemmed: Mapping[str, Mapping[tuple[str, ...], tuple[_Term, ...]]]
    """algorithm -> stemmed phrase -> terms"""
    substrings: tuple[tuple[str, _Term], ...]
    prefixes: tuple[tuple[str, _Term], ...]
    """(Hangul term, term): a question word matches when it starts with the term."""
    prefix_index: Mapping[str, tuple[_Term, ...]]
    longest_phrase: int
    firsts: Mapping[str, frozenset[str]]
    """algorithm -> every stem that starts a phrase: other positions are skipped at once."""
    spaced_substrings: tuple[tuple[str, _Term], ...]
    """Substring keys holding a space: the only ones worth trying on a question without Han/Kana."""
    longest_prefix: int
    fingerprint: str
    """Content hash of the compiled table: equal tables share their results on one question."""
    fuzzy: Mapping[str, tuple[_Term, ...]] = field(default_factory=dict)
    """Single-word terms of spaced scripts (5+ letters) as written, for typo-tolerant matching; never
    Han/Kana substrings or Hangul prefixes."""
    _fuzzy_seen: dict[str, tuple[_Term, ...]] = field(default_factory=dict, compare=False, repr=False)
    _parts_seen: dict[str, tuple[_Term, ...]] = field(default_factory=dict, compare=False, repr=False)
    # Indexes over the fields above, built in __post_init__ so that every way of making a matcher
    # (compile, with_term) gets them: which algorithms a word starts a phrase under, substring keys
    # by their first character, the first characters of Hangul prefixes.
    _algorithms: tuple[str, ...] = field(init=False, compare=False, repr=False)
    _by_stem: dict[str, tuple[tuple[int, str, tuple[_Term, ...], bool], ...]] = field(
        init=False, compare=False, repr=False)
    """stem -> (algorithm index, algorithm, one-word terms, whether longer phrases start here) for
    every algorithm under which that stem starts a phrase; built on first use."""
    _starts_seen: dict[str, tuple[tuple[int, str, tuple[_Term, ...], bool], ...]] = field(
        init=False, compare=False, repr=False)
    _readings_seen: dict[str, tuple[tuple[str, _Term], ...]] = field(init=False, compare=False, repr=False)
    _fuzzy_windows: dict[tuple[int, int, str], list[str]] = field(init=False, compare=False, repr=False)
    _fuzzy_position: dict[str, int] = field(init=False, compare=False, repr=False)
    _fuzzy_tails: dict[str, list[str]] = field(init=False, compare=False, repr=False)
    _fuzzy_by_first: dict[str, list[str]] = field(init=False, compare=False, repr=False)
    _singles_seen: dict[str, frozenset[str]] = field(init=False, compare=False, repr=False)
    _substrings_by_first: Mapping[str, tuple[int, ...]] = field(init=False, compare=False, repr=False)
    _spaced_indexes: tuple[int, ...] = field(init=False, compare=False, repr=False)
    _prefix_firsts: frozenset[str] = field(init=False, compare=False, repr=False)
    _heads: Mapping[str, frozenset[tuple[str, ...]]] = field(init=False, compare=False, repr=False)
    """algorithm -> every proper beginning of a phrase: a longer phrase is tried only after one."""

    def __post_init__(self) -> None:
        by_first: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(self.substrings):
            by_first.setdefault(key[0], []).append(i)
        object.__setattr__(self, "_algorithms", tuple(self.stemmed))
        object.__setattr__(self, "_by_stem", {})
        object.__setattr__(self, "_starts_seen", {})
        object.__setattr__(self, "_readings_seen", {})
        object.__setattr__(self, "_fuzzy_windows", {})
        object.__setattr__(self, "_fuzzy_position", {})
        object.__setattr__(self, "_fuzzy_tails", {})
        object.__setattr__(self, "_fuzzy_by_first", {})
        object.__setattr__(self, "_singles_seen", {})
        object.__setattr__(self, "_substrings_by_first", {c: tuple(ix) for c, ix in by_first.items()})
        object.__setattr__(self, "_spaced_indexes", tuple(i for i, (k, _) in enumerate(self.substrings) if " " in k))
        object.__setattr__(self, "_prefix_firsts", frozenset(k[0] for k in self.prefix_index if k))
        object.__setattr__(self, "_heads", {a: frozenset(p[:n] for p in phrases for n in range(1, len(p)))
                                            for a, phrases in self.stemmed.items()})

    @classmethod
    def compile(cls, table: Mapping[Any, Mapping[Any, Mapping[str, float]]]) -> TermMatcher:
        stemmed: dict[str, dict[tuple[str, ...], list[_Term]]] = {}
        fuzzy: dict[str, list[_Term]] = {}
        substrings: list[tuple[str, _Term]] = []
        prefixes: list[tuple[str, _Term]] = []
        longest = 1
        for label, by_language in table.items():
            for language, terms in by_language.items():
                for term, weight in terms.items():
                    entry = _Term(label, term, float(weight), language)
                    filed = filed_under(term, language)
                    if filed and filed[0][0] == "stemmed" and len(filed[0][2]) == 1:
                        word = tokenise(term_matching(term, language)[0]).words[0]
                        if fuzzy_distance(word) and word.isalpha():
                            fuzzy.setdefault(word, []).append(entry)
                    for kind, algorithm, phrase in filed:
                        if kind == "substring":
                            substrings.append((phrase[0], entry))
                        elif kind == "prefix":
                            prefixes.append((phrase[0], entry))
                        else:
                            bucket = stemmed.setdefault(algorithm, {}).setdefault(phrase, [])
                            # "train" and "training" stem alike: one intent scores one stem once
                            same = [i for i, e in enumerate(bucket) if e.label == label]
                            if not same:
                                bucket.append(entry)
                            elif bucket[same[0]].weight < entry.weight:
                                bucket[same[0]] = entry
                            longest = max(longest, len(phrase))
        compiled = {a: {p: tuple(ts) for p, ts in d.items()} for a, d in stemmed.items()}
        return cls(
            stemmed=compiled,
            substrings=tuple(substrings),
            prefixes=tuple(prefixes),
            prefix_index={k: tuple(e for p, e in prefixes if p == k) for k in dict.fromkeys(p for p, _ in prefixes)},
            longest_phrase=longest,
            firsts={a: frozenset(p[0] for p in phrases) for a, phrases in compiled.items()},
            spaced_substrings=tuple((k, e) for k, e in substrings if " " in k),
            longest_prefix=max((len(p) for p, _ in prefixes), default=0),
            fuzzy={w: tuple(ts) for w, ts in fuzzy.items()},
            fingerprint=_fingerprint(table),
        )

    def with_term(self, label: str, language: str, term: str, weight: float) -> TermMatcher:
        """This table with one more term, without compiling the rest again: what a suggested
        edit is measured with. Matches exactly what compiling the grown table would."""
        one = TermMatcher.compile({label: {language: {term: weight}}})
        stemmed = dict(self.stemmed)
        for algorithm, phrases in one.stemmed.items():
            merged = dict(stemmed.get(algorithm, {}))
            for phrase, (entry,) in phrases.items():
                bucket = list(merged.get(phrase, ()))
                same = [i for i, e in enumerate(bucket) if e.label == label]
                if not same:
                    bucket.append(entry)
                elif bucket[same[0]].weight < entry.weight:
                    bucket[same[0]] = entry
                merged[phrase] = tuple(bucket)
            stemmed[algorithm] = merged
        prefixes = (*self.prefixes, *one.prefixes)
        fuzzy = dict(self.fuzzy)
        for word, entries in one.fuzzy.items():
            fuzzy[word] = (*fuzzy.get(word, ()), *entries)
        return TermMatcher(
            stemmed=stemmed,
            substrings=(*self.substrings, *one.substrings),
            prefixes=prefixes,
            prefix_index={**self.prefix_index, **{k: tuple(e for p, e in prefixes if p == k)
                                                  for k in dict.fromkeys(p for p, _ in one.prefixes)}},
            longest_phrase=max(self.longest_phrase, one.longest_phrase),
            firsts={**self.firsts, **{a: self.firsts.get(a, frozenset()) | f for a, f in one.firsts.items()}},
            spaced_substrings=(*self.spaced_substrings, *one.spaced_substrings),
            longest_prefix=max(self.longest_prefix, one.longest_prefix),
            fuzzy=fuzzy,
            fingerprint=hashlib.sha256(f"{self.fingerprint}+{one.fingerprint}".encode()).hexdigest(),
        )

    def without_term(self, label: str, term: str) -> TermMatcher:
        """This table less one intent's term (every language's entry of it). Where the term had
        taken a stem's place from a lighter term of the same intent, the lighter one is not
        restored: compile the smaller table when that matters."""
        def keep(e: _Term) -> bool:
            return not (e.label == label and e.term == term)

        stemmed = {a: {p: kept for p, ts in phrases.items() if (kept := tuple(filter(keep, ts)))}
                   for a, phrases in self.stemmed.items()}
        prefixes = tuple((k, e) for k, e in self.prefixes if keep(e))
        return TermMatcher(
            stemmed=stemmed,
            substrings=tuple((k, e) for k, e in self.substrings if keep(e)),
            prefixes=prefixes,
            prefix_index={k: tuple(e for p, e in prefixes if p == k) for k in dict.fromkeys(p for p, _ in prefixes)},
            longest_phrase=self.longest_phrase,
            firsts={a: frozenset(p[0] for p in phrases) for a, phrases in stemmed.items()},
            spaced_substrings=tuple((k, e) for k, e in self.spaced_substrings if keep(e)),
            longest_prefix=self.longest_prefix,
            fuzzy={w: kept for w, ts in self.fuzzy.items() if (kept := tuple(filter(keep, ts)))},
            fingerprint=hashlib.sha256(f"{self.fingerprint}-{label}:{term}".encode()).hexdigest(),
        )

    def find(self, tokens: Tokens) -> list[_Term]:
        """Every distinct term found in the question, in vocabulary order per kind of match."""
        key = ("found", self.fingerprint)
        cached = tokens.memo.get(key)
        if cached is None:
            cached = tokens.memo[key] = self._find(tokens)
        return list(cached)  # type: ignore[call-overload]

    def _starts(self, word: str) -> tuple[tuple[int, str, tuple[_Term, ...], bool], ...]:
        """(algorithm index, stem, the one-word terms, whether longer phrases start here) for every
        algorithm under which this word's stem starts some phrase: one lookup per distinct stem of
        the word (`word_stems`, shared by every matcher), instead of one per algorithm."""
        starts = self._starts_seen.get(word)
        if starts is None:
            by_stem = self._by_stem or self._index_stems()
            found = [(ai, first, singles, longer)
                     for first, algorithms in word_stems(word)
                     for ai, algorithm, singles, longer in by_stem.get(first, ()) if algorithm in algorithms]
            starts = tuple(sorted(found, key=lambda start: start[0]))
            if len(self._starts_seen) >= _WORD_CACHE_LIMIT:
                self._starts_seen.clear()
            self._starts_seen[word] = starts
        return starts

    def _index_stems(self) -> dict[str, tuple[tuple[int, str, tuple[_Term, ...], bool], ...]]:
        by_stem: dict[str, list[tuple[int, str, tuple[_Term, ...], bool]]] = {}
        for ai, algorithm in enumerate(self._algorithms):
            phrases, heads = self.stemmed[algorithm], self._heads[algorithm]
            for first in self.firsts[algorithm]:
                by_stem.setdefault(first, []).append((ai, algorithm, phrases.get((first,), ()), (first,) in heads))
        self._by_stem.update({first: tuple(entries) for first, entries in by_stem.items()})
        return self._by_stem

    def _find(self, tokens: Tokens) -> list[_Term]:
        found: dict[tuple[str, str], _Term] = {}
        at_span: dict[tuple[str, int, int], tuple[str, str]] = {}
        words = tokens.words
        own = _language_of(tokens)

        def add(entries: tuple[_Term, ...], i: int, n: int) -> None:
            for entry in entries:
                if own is not None and _false_friend(entry, own, words[i:i + n]):
                    continue
                # the same words met through two languages' terms ("train" and Dutch
                # "trainen") are one piece of evidence: the heavier term counts
                key = (entry.label, entry.term)
                other = at_span.get((entry.label, i, n))
                if other is not None and other != key:
                    if found[other].weight >= entry.weight:
                        continue
                    del found[other]
                    # the span's evidence is now this term, even when another span found it first
                    at_span[(entry.label, i, n)] = key
                if key not in found:
                    found[key] = entry
                    at_span[(entry.label, i, n)] = key

        # one memo lookup per word: the phrases it starts, or, for a word the table does not know,
        # its fuzzy and compound readings (looked at below)
        starts: list[tuple[int, int, tuple[int, str, tuple[_Term, ...], bool]]] = []
        unknown: list[tuple[int, tuple[tuple[str, _Term], ...]]] = []
        seen, readings_seen = self._starts_seen, self._readings_seen
        for i, w in enumerate(words):
            here = seen.get(w)
            if here is None:
                here = self._starts(w)
            if here:
                starts += [(start[0], i, start) for start in here]
                continue
            readings = readings_seen.get(w)
            if readings is None:
                readings = self._readings(w)
            if readings:
                unknown.append((i, readings))
        starts.sort()  # in the order the table lists its algorithms, then by position
        for ai, i, (_, first, singles, longer) in starts:
            if singles:
                add(singles, i, 1)
            if not longer:
                continue
            algorithm = self._algorithms[ai]
            phrases, heads = self.stemmed[algorithm], self._heads[algorithm]
            phrase: tuple[str, ...] = (first,)
            for j in range(i + 1, min(i + self.longest_phrase, len(words))):
                phrase = (*phrase, words[j] if algorithm == "prefix" else stem(words[j], algorithm))
                entries = phrases.get(phrase)
                if entries:
                    add(entries, i, len(phrase))
                if phrase not in heads:
                    break  # no longer phrase starts with these words
        haystack = tokens.unspaced
        if haystack:
            candidates = {ix for ch in set(haystack) for ix in self._substrings_by_first.get(ch, ())}
            candidates.update(self._spaced_indexes)
            indexes: Iterable[int] = sorted(candidates)
        else:
            indexes = self._spaced_indexes
        for ix in indexes:
            key, entry = self.substrings[ix]
            if key in haystack or (" " in key and key in tokens.text):
                found.setdefault((entry.label, entry.term), entry)
        if self.prefix_index:
            for w in words:
                if w[:1] not in self._prefix_firsts:
                    continue
                for k in range(1, min(len(w), self.longest_prefix) + 1):
                    for entry in self.prefix_index.get(w[:k], ()):
                        found.setdefault((entry.label, entry.term), entry)
        terms_found: set[str] | None = None
        for i, readings in unknown:
            if terms_found is None:
                terms_found = {e.term for e in found.values()}
            # a word the table does not know counts once per intent, as its heaviest reading:
            # a misspelling, or a compound's part, through whichever language's terms
            best: dict[str, tuple[str, _Term]] = {}
            for base, entry in readings:
                if base not in terms_found and (entry.label not in best or entry.weight > best[entry.label][1].weight):
                    best[entry.label] = (base, entry)
            for base, entry in best.values():
                if own is None or not _false_friend(entry, own, words[i:i + 1]):
                    found.setdefault((entry.label, base), entry)
        return list(found.values())

    def _readings(self, word: str) -> tuple[tuple[str, _Term], ...]:
        """(the term as the table has it, the reading) for a word the table does not know: its
        fuzzy matches, then its compound parts. Usually none, found with one lookup."""
        readings = self._readings_seen.get(word)
        if readings is None:
            readings = tuple((e.term.split(" (", 1)[0], e) for e in (*self._near(word), *self._parts(word)))
            if len(self._readings_seen) >= _WORD_CACHE_LIMIT:
                self._readings_seen.clear()
            self._readings_seen[word] = readings
        return readings

    def _parts(self, word: str) -> tuple[_Term, ...]:
        """The terms a compound the table does not know is made of, at reduced weight: its longest
        known last part ("kne|skader" -> skade) and its longest known first part ("Knie|schmerzen"
        -> Knie), under each compounding language's stemmer. None for an everyday word."""
        cached = self._parts_seen.get(word)
        if cached is not None:
            return cached
        parts: dict[tuple[str, str], _Term] = {}
        if len(word) >= MIN_HEAD + MIN_MODIFIER and word.isalpha() and word not in common_words():
            # in the table's own order: a set's order changes with each process's hash seed, and the
            # first language to find a part decides its weight
            for algorithm in (a for a in self.stemmed if a in COMPOUNDING):
                table, singles = self.stemmed[algorithm], self._singles(algorithm)
                heads, modifiers = part_stems(word, algorithm)
                if singles.isdisjoint(heads) and singles.isdisjoint(modifiers):
                    continue  # the usual answer, found without a lookup per part
                for entries in (next((table[(k,)] for k in heads if k in singles), ()),
                                next((table[(k,)] for k in modifiers if k in singles), ())):
                    for e in entries:
                        parts.setdefault((e.label, e.term), _Term(
                            e.label, f"{e.term} (part of: {word})", round(e.weight * PART_FACTOR, 6), e.language))
        if "arabic" in self.stemmed and script_of(word[0]) == "Arabic":
            for e in self._unclitic(word):
                parts.setdefault((e.label, e.term), e)
        found = tuple(parts.values())
        if len(self._parts_seen) < 50_000:
            self._parts_seen[word] = found
        return found

    def _singles(self, algorithm: str) -> frozenset[str]:
        """The stems the table has a one-word term for, under one algorithm."""
        found = self._singles_seen.get(algorithm)
        if found is None:
            found = self._singles_seen[algorithm] = frozenset(p[0] for p in self.stemmed[algorithm] if len(p) == 1)
        return found

    def _unclitic(self, word: str) -> tuple[_Term, ...]:
        """Arabic writes "and", "for", "with", "like" and "the" onto the word (لسباق = for + a race):
        the word less its longest such prefix, at full weight, when the table knows that."""
        table = self.stemmed["arabic"]
        for clitic in ARABIC_PROCLITICS:
            rest = word[len(clitic):]
            if word.startswith(clitic) and len(rest) >= 3:
                entries = table.get((stem(rest, "arabic"),))
                if entries:
                    return tuple(_Term(e.label, f"{e.term} (part of: {word})", e.weight, e.language) for e in entries)
        return ()

    def _closest(self, word: str, limit: int) -> tuple[str, int] | None:
        """The fuzzy word a misspelling stands for: the nearest within `limit` edits (optimal string
        alignment), the earliest in the table's order on a tie, with its distance, when it starts
        with the word's letter; else None. Searched among the words of that letter first, which is
        all it takes unless a word of another letter is as near and earlier: at one edit those are
        found by looking up the word's edits at its front, at two by the whole window."""
        same = process.extractOne(word, self._fuzzy_window(len(word), limit, word[0]), scorer=OSA.distance,
                                  score_cutoff=limit, processor=None)
        if same is None:
            return None
        if same[1] == 1:
            position = self._fuzzy_position[same[0]]
            return None if any(i < position for i in self._one_edit_elsewhere(word)) else (same[0], 1)
        best = process.extractOne(word, self._fuzzy_window(len(word), limit), scorer=OSA.distance,
                                  score_cutoff=limit, processor=None)
        return (best[0], best[1]) if best is not None and best[0][0] == word[0] else None

    def _fuzzy_window(self, length: int, limit: int, first: str = "") -> list[str]:
        """The fuzzy words within `limit` letters of `length` (starting with `first`, when given),
        in the table's order: a word further off in length is further off in edit distance, so
        leaving it out changes no answer."""
        key = (length, limit, first)
        window = self._fuzzy_windows.get(key)
        if window is None:
            words = self._fuzzy_index()[2].get(first, ()) if first else self.fuzzy
            window = self._fuzzy_windows[key] = [w for w in words if abs(len(w) - length) <= limit]
        return window

    def _fuzzy_index(self) -> tuple[dict[str, int], dict[str, list[str]], dict[str, list[str]]]:
        """(fuzzy word -> its position, its tail -> the words ending so, its first letter -> the
        words starting so), in the table's order; made on the first misspelling."""
        positions, tails, by_first = self._fuzzy_position, self._fuzzy_tails, self._fuzzy_by_first
        if not positions and self.fuzzy:
            positions.update({w: i for i, w in enumerate(self.fuzzy)})
            for w in positions:
                tails.setdefault(w[1:], []).append(w)
                by_first.setdefault(w[0], []).append(w)
        return positions, tails, by_first

    def _one_edit_elsewhere(self, word: str) -> list[int]:
        """Positions of the fuzzy words one edit from `word` that start with another letter: the
        edit is at the front, so they are its first letter replaced, dropped or preceded by another,
        or its first two letters swapped."""
        positions, tails, _ = self._fuzzy_index()
        nearby = (*tails.get(word[1:], ()), *tails.get(word, ()), word[1:], word[1:2] + word[:1] + word[2:])
        return [positions[w] for w in nearby if w in positions and w[0] != word[0]]

    def _near(self, word: str) -> tuple[_Term, ...]:
        """The terms a misspelt word stands for, at reduced weight: the closest vocabulary word
        within `fuzzy_distance`, starting with the same letter; none for a word the table has, nor
        for an everyday word of some language ("faster" is not a misspelt "fasted")."""
        cached = self._fuzzy_seen.get(word)
        if cached is not None:
            return cached
        near: tuple[_Term, ...] = ()
        limit = fuzzy_distance(word)
        if limit and word.isalpha() and word not in self.fuzzy and word not in common_words():
            best = self._closest(word, limit)
            if best is not None and fuzzy_distance(best[0]) >= best[1]:
                near = tuple(_Term(e.label, f"{e.term} (fuzzy: {word})", round(e.weight * FUZZY_FACTOR, 6), e.language)
                             for e in self.fuzzy[best[0]])
        if len(self._fuzzy_seen) < 50_000:
            self._fuzzy_seen[word] = near
        return near


LANGUAGE_FAMILIES: Final = ({"es", "pt", "it", "fr"}, {"sv", "da", "no"}, {"de", "nl"})
"""Languages close enough that a shared word usually means the same thing (Italian "recupero",
Spanish "recuperar"): their terms stay readable in each other's questions."""


def _false_friend(entry: _Term, own: str, matched: Sequence[str]) -> bool:
    """A word of the question's own language is not another, unrelated language's term: in a
    question written in English, "tired" is not Spanish "tirada". True when the term is of
    another language family, the question's words are not the term as written (a loanword spelt
    the same, "marathon" in Dutch or "pasta" in Spanish, is the same word), and every word it
    matched is an everyday word of the question's language and not of the term's; a word both
    languages use keeps the term."""
    if not entry.language or entry.language == own or any(
            own in family and entry.language in family for family in LANGUAGE_FAMILIES):
        return False
    if tuple(matched) == _written(entry.term, entry.language):
        return False
    table = everyday_languages()
    return all(own in (langs := table.get(w, {})) and entry.language not in langs for w in matched)


def _language_of(tokens: Tokens) -> str | None:
    """`question_language` of the question's words, once per question for every matcher."""
    key = "question_language"
    if key not in tokens.memo:
        tokens.memo[key] = question_language(tokens.words)
    return tokens.memo[key]  # type: ignore[return-value]


@lru_cache(maxsize=100_000)
def _written(term: str, language: str) -> tuple[str, ...]:
    """The words of a term as a question writes them (normalised, no `=`)."""
    return tokenise(term_matching(term, language)[0]).words


_COMPILED: dict[str, TermMatcher] = {}
_COMPILED_LIMIT: Final = 16


def compile_shared(table: Mapping[Any, Mapping[Any, Mapping[str, float]]]) -> TermMatcher:
    """`TermMatcher.compile`, once per distinct table in this process: two policies with the same
    vocabulary (a candidate that changes only a budget) share one matcher and its word memos."""
    key = _fingerprint(table)
    found = _COMPILED.get(key)
    if found is None:
        if len(_COMPILED) >= _COMPILED_LIMIT:
            _COMPILED.pop(next(iter(_COMPILED)))
        found = _COMPILED[key] = TermMatcher.compile(table)
    return found


def _fingerprint(table: Mapping[Any, Any]) -> str:
    return hashlib.sha256(json.dumps(table, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def vocabulary_matcher(policy: Policy) -> TermMatcher:
    """Compiled once per policy object."""
    return policy.derived("vocabulary", lambda p: compile_shared(p.vocabulary))


CLINICAL_LABEL: Final = "clinical"


def clinical_matcher(policy: Policy) -> TermMatcher:
    """The policy's clinical terms, compiled once."""
    return policy.derived("clinical", lambda p: compile_shared(
        {CLINICAL_LABEL: {lang: dict.fromkeys(terms, 1.0) for lang, terms in p.clinical_terms.items()}}))


def clinical_terms_in(question: str | Tokens, policy: Policy) -> list[str]:
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    return [t.term for t in clinical_matcher(policy).find(tokens)]


def fragment_matcher(policy: Policy) -> TermMatcher:
    """The policy's fragment terms, compiled once: each fragment is a label."""
    return policy.derived("fragment_terms", lambda p: compile_shared(
        {name: {lang: dict.fromkeys(terms, 1.0) for lang, terms in by_language.items()}
         for name, by_language in p.fragment_terms.items()}))


def named_fragments_in(question: str | Tokens, policy: Policy) -> dict[str, list[str]]:
    """Fragment -> the fragment terms of the question that name it, in policy order."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    named: dict[str, list[str]] = {}
    for entry in fragment_matcher(policy).find(tokens):
        named.setdefault(entry.label, []).append(entry.term)
    return {name: named[name] for name in policy.fragment_terms if name in named}


def scope_matcher(policy: Policy) -> TermMatcher:
    """The policy's scope vocabulary, compiled once."""
    return policy.derived("scopes", lambda p: compile_shared(
        {name: {lang: dict.fromkeys(terms, 1.0) for lang, terms in scope.terms.items()}
         for name, scope in p.scopes.items()}))


def infer_scope(question: str | Tokens, policy: Policy) -> tuple[str | None, list[str]]:
    """The horizon the question implies and the words that imply it. With several, the one
    with most matched terms wins; a tie goes to the shorter horizon (today < week < months)."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    found = scope_matcher(policy).find(tokens)
    if not found:
        return None, []
    by_scope: dict[str, list[str]] = {}
    for entry in found:
        by_scope.setdefault(entry.label, []).append(entry.term)
    order = ("today", "week", "months")
    best = max(by_scope, key=lambda s: (len(by_scope[s]), -order.index(s)))
    return best, by_scope[best]


def compile_matchers(policy: Policy) -> None:
    """Build every matcher a decision reads, now rather than on the first question."""
    for matcher in (vocabulary_matcher, clinical_matcher, fragment_matcher, scope_matcher):
        matcher(policy)


def forget_words(*policies: Policy) -> None:
    """Empty every per-word memo (stems, phrase starts, fuzzy and compound readings), and the
    given policies' memoised routes: the state of a process that has never seen a question. For
    measuring never-seen questions."""
    from coachctx.engine import text

    text.stem.cache_clear()
    text.unstretch.cache_clear()
    word_stems.cache_clear()
    part_stems.cache_clear()
    for matcher in _COMPILED.values():
        for memo in (matcher._starts_seen, matcher._readings_seen, matcher._fuzzy_seen, matcher._parts_seen):
            memo.clear()
    for policy in policies:
        policy.derived("routes", lambda _: {}).clear()
