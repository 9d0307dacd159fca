"""A term table (label -> language -> term -> weight) compiled once into a `TermMatcher`: its terms
filed under the keys a question's words are looked up by, grown or shrunk by one term without
compiling the rest again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coachctx.engine.matching.find import find_terms
from coachctx.engine.matching.readings import FUZZY_SCRIPTS, SWAPPED_LENGTH, Readings, fuzzy_distance
from coachctx.engine.matching.starts import PhraseStarts
from coachctx.engine.matching.terms import Term, filed_under, term_matching
from coachctx.engine.text import Tokens, script_of, tokenise


@dataclass(frozen=True)
class TermMatcher:
    """Matches terms per language: stemmed token sequences for spaced scripts, substrings for
    Han/Kana, token prefixes for Hangul. Each term counts once per question."""

    stemmed: Mapping[str, Mapping[tuple[str, ...], tuple[Term, ...]]]
    """algorithm -> stemmed phrase -> terms"""
    substrings: tuple[tuple[str, Term], ...]
    prefixes: tuple[tuple[str, Term], ...]
    """(Hangul term, term): a question word matches when it starts with the term."""
    prefix_index: Mapping[str, tuple[Term, ...]]
    longest_phrase: int
    firsts: Mapping[str, frozenset[str]]
    """algorithm -> every stem that starts a phrase: other positions are skipped at once."""
    spaced_substrings: tuple[tuple[str, Term], ...]
    """Substring keys holding a space: the only ones worth trying on a question without Han/Kana."""
    longest_prefix: int
    fingerprint: str
    """Content hash of the compiled table: equal tables share their results on one question."""
    fuzzy: Mapping[str, tuple[Term, ...]] = field(default_factory=dict)
    """Single-word terms of spaced scripts (5+ letters, and 4 for a swap of two letters) as written,
    for typo-tolerant matching; never Han/Kana substrings or Hangul prefixes."""
    # Indexes and per-word memos over the fields above, built in __post_init__ so that every way of
    # making a matcher (compile, with_term, without_term) gets them.
    starts: PhraseStarts = field(init=False, compare=False, repr=False)
    """The phrases each question word starts."""
    readings: Readings = field(init=False, compare=False, repr=False)
    """The fuzzy and compound readings of the words the table does not know."""
    substrings_by_first: Mapping[str, tuple[int, ...]] = field(init=False, compare=False, repr=False)
    """First character -> the positions of the substring keys starting with it."""
    spaced_indexes: tuple[int, ...] = field(init=False, compare=False, repr=False)
    prefix_firsts: frozenset[str] = field(init=False, compare=False, repr=False)
    hangul_firsts: frozenset[str] = field(init=False, compare=False, repr=False)
    """The Hangul syllables among `prefix_firsts`: where a term of two syllables may begin inside a word."""

    def __post_init__(self) -> None:
        by_first: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(self.substrings):
            by_first.setdefault(key[0], []).append(i)
        object.__setattr__(self, "starts", PhraseStarts(self.stemmed, self.firsts))
        object.__setattr__(self, "readings", Readings(self.stemmed, self.fuzzy))
        object.__setattr__(self, "substrings_by_first", {c: tuple(ix) for c, ix in by_first.items()})
        object.__setattr__(self, "spaced_indexes", tuple(i for i, (k, _) in enumerate(self.substrings) if " " in k))
        object.__setattr__(self, "prefix_firsts", frozenset(k[0] for k in self.prefix_index if k))
        object.__setattr__(self, "hangul_firsts", frozenset(c for c in self.prefix_firsts if "\uac00" <= c <= "\ud7a3"))

    @classmethod
    def compile(cls, table: Mapping[Any, Mapping[Any, Mapping[str, float]]]) -> TermMatcher:
        stemmed: dict[str, dict[tuple[str, ...], list[Term]]] = {}
        fuzzy: dict[str, list[Term]] = {}
        substrings: list[tuple[str, Term]] = []
        prefixes: list[tuple[str, Term]] = []
        longest = 1
        for label, by_language in table.items():
            for language, terms in by_language.items():
                for term, weight in terms.items():
                    entry = Term(label, term, float(weight), language)
                    filed = filed_under(term, language)
                    if filed and filed[0][0] == "stemmed" and len(filed[0][2]) == 1:
                        word = tokenise(term_matching(term, language)[0]).words[0]
                        if (fuzzy_distance(word) or len(word) == SWAPPED_LENGTH and script_of(word[0]) in FUZZY_SCRIPTS) \
                                and word.isalpha():
                            fuzzy.setdefault(word, []).append(entry)
                    for kind, algorithm, phrase in filed:
                        if kind == "substring":
                            substrings.append((phrase[0], entry))
                        elif kind == "prefix":
                            prefixes.append((phrase[0], entry))
                        else:
                            _file(stemmed.setdefault(algorithm, {}).setdefault(phrase, []), entry)
                            longest = max(longest, len(phrase))
        compiled = {a: {p: tuple(ts) for p, ts in d.items()} for a, d in stemmed.items()}
        return cls(
            stemmed=compiled,
            substrings=tuple(substrings),
            prefixes=tuple(prefixes),
            prefix_index=_prefix_index(prefixes, (p for p, _ in prefixes)),
            longest_phrase=longest,
            firsts={a: frozenset(p[0] for p in phrases) for a, phrases in compiled.items()},
            spaced_substrings=tuple((k, e) for k, e in substrings if " " in k),
            longest_prefix=max((len(p) for p, _ in prefixes), default=0),
            fuzzy={w: tuple(ts) for w, ts in fuzzy.items()},
            fingerprint=table_fingerprint(table),
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
                _file(bucket, entry)
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
            prefix_index={**self.prefix_index, **_prefix_index(prefixes, (p for p, _ in one.prefixes))},
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
        def keep(e: Term) -> bool:
            return not (e.label == label and e.term == term)

        stemmed = {a: {p: kept for p, ts in phrases.items() if (kept := tuple(filter(keep, ts)))}
                   for a, phrases in self.stemmed.items()}
        prefixes = tuple((k, e) for k, e in self.prefixes if keep(e))
        return TermMatcher(
            stemmed=stemmed,
            substrings=tuple((k, e) for k, e in self.substrings if keep(e)),
            prefixes=prefixes,
            prefix_index=_prefix_index(prefixes, (p for p, _ in prefixes)),
            longest_phrase=self.longest_phrase,
            firsts={a: frozenset(p[0] for p in phrases) for a, phrases in stemmed.items()},
            spaced_substrings=tuple((k, e) for k, e in self.spaced_substrings if keep(e)),
            longest_prefix=self.longest_prefix,
            fuzzy={w: kept for w, ts in self.fuzzy.items() if (kept := tuple(filter(keep, ts)))},
            fingerprint=hashlib.sha256(f"{self.fingerprint}-{label}:{term}".encode()).hexdigest(),
        )

    def find(self, tokens: Tokens) -> list[Term]:
        """Every distinct term found in the question, in vocabulary order per kind of match."""
        key = ("found", self.fingerprint)
        cached = tokens.memo.get(key)
        if cached is None:
            cached = tokens.memo[key] = find_terms(self, tokens)
        return list(cached)  # type: ignore[call-overload]


def _file(bucket: list[Term], entry: Term) -> None:
    """Put a term among the terms of its stemmed phrase: "train" and "training" stem alike, and one
    label scores one stem once, with its heaviest term."""
    same = [i for i, e in enumerate(bucket) if e.label == entry.label]
    if not same:
        bucket.append(entry)
    elif bucket[same[0]].weight < entry.weight:
        bucket[same[0]] = entry


def _prefix_index(prefixes: Iterable[tuple[str, Term]], keys: Iterable[str]) -> dict[str, tuple[Term, ...]]:
    """Hangul prefix -> its terms, for each of `keys` in order."""
    prefixes = tuple(prefixes)
    return {k: tuple(e for p, e in prefixes if p == k) for k in dict.fromkeys(keys)}


def table_fingerprint(table: Mapping[Any, Any]) -> str:
    """Content hash of a term table."""
    return hashlib.sha256(json.dumps(table, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
