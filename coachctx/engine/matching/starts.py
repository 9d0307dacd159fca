"""Which phrases of one compiled table a question word can start: every stem of the word looked up
once in an index of the table's phrase starts, memoised per word (`find.find_terms` reads it)."""

from __future__ import annotations

from collections.abc import Mapping

from coachctx.engine.matching.readings import WORD_CACHE_LIMIT
from coachctx.engine.matching.stems import word_stems
from coachctx.engine.matching.terms import Term, hangul_beginnings

Start = tuple[int, str, tuple[Term, ...], frozenset[str]]
"""(algorithm index, the stem, the one-word terms, the stems that follow it in the table's longer
phrases: none when no longer phrase starts here)"""


class PhraseStarts:
    """Which phrases of a table a question word can start, memoised per word. `stemmed` is the
    table's algorithm -> stemmed phrase -> terms, `firsts` its algorithm -> every stem that starts
    a phrase."""

    def __init__(self, stemmed: Mapping[str, Mapping[tuple[str, ...], tuple[Term, ...]]],
                 firsts: Mapping[str, frozenset[str]]) -> None:
        self.stemmed, self.firsts = stemmed, firsts
        self.algorithms = tuple(stemmed)
        self.heads = {a: frozenset(p[:n] for p in phrases for n in range(1, len(p))) for a, phrases in stemmed.items()}
        """algorithm -> every proper beginning of a phrase: a longer phrase is tried only after one."""
        self.hangul_firsts = firsts.get("prefix", frozenset())
        """The first words of the table's Hangul phrases (`hangul_beginnings`)."""
        self.seen: dict[str, tuple[Start, ...]] = {}
        self._by_stem: dict[str, tuple[Start, ...]] = {}
        """stem -> a `Start` for every algorithm under which that stem starts a phrase; built on first use."""

    def forget(self) -> None:
        """Empty the per-word memo: the state of a table that has never seen a question."""
        self.seen.clear()

    def of(self, word: str) -> tuple[Start, ...]:
        """A `Start` for every algorithm under which this word's stem starts some phrase: one lookup
        per distinct stem of the word (`word_stems`, shared by every matcher), instead of one per
        algorithm."""
        starts = self.seen.get(word)
        if starts is None:
            by_stem = self.by_stem()
            stems = word_stems(word)
            # a Korean word starts every phrase one of its beginnings starts (the whole word is a stem already)
            stems = (*stems, *((key, ("prefix",)) for key in hangul_beginnings(word, self.hangul_firsts) if key != word))
            found = [(ai, first, singles, longer)
                     for first, algorithms in stems
                     for ai, algorithm, singles, longer in by_stem.get(first, ()) if algorithm in algorithms]
            starts = tuple(sorted(found, key=lambda start: start[0]))
            if len(self.seen) >= WORD_CACHE_LIMIT:
                self.seen.clear()
            self.seen[word] = starts
        return starts

    def by_stem(self) -> Mapping[str, tuple[tuple[int, str, tuple[Term, ...], frozenset[str]], ...]]:
        """Stem -> (algorithm index, algorithm, the one-word terms, the stems that can follow) for
        every algorithm under which that stem starts a phrase."""
        return self._by_stem or self._index_stems()

    def _index_stems(self) -> dict[str, tuple[Start, ...]]:
        by_stem: dict[str, list[tuple[int, str, tuple[Term, ...], frozenset[str]]]] = {}
        for ai, algorithm in enumerate(self.algorithms):
            phrases = self.stemmed[algorithm]
            seconds: dict[str, set[str]] = {}
            for phrase in phrases:
                if len(phrase) > 1:
                    seconds.setdefault(phrase[0], set()).add(phrase[1])
            for first in self.firsts[algorithm]:
                by_stem.setdefault(first, []).append(
                    (ai, algorithm, phrases.get((first,), ()), frozenset(seconds.get(first, ()))))
        self._by_stem.update({first: tuple(entries) for first, entries in by_stem.items()})
        return self._by_stem
