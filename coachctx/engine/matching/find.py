"""Finding a compiled table's terms in one question: stemmed phrases for spaced scripts, substrings
for Han/Kana, prefixes for Hangul, then readings of the words the table does not know — each term
once, never a word of the question's own language read as an unrelated language's term."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from coachctx.engine.matching.language import read_as_false_friend
from coachctx.engine.matching.readings import (
    WORD_CACHE_LIMIT,
    Reading,
    add_readings,
    as_readings,
    may_be_compound,
    may_have_readings,
)
from coachctx.engine.matching.starts import Start
from coachctx.engine.matching.stems import COMPOUNDING, stem_columns
from coachctx.engine.matching.terms import Term, hangul_beginnings, hangul_next, prefix_terms
from coachctx.engine.text import Tokens, stem

if TYPE_CHECKING:
    from coachctx.engine.matching.table import TermMatcher

Follow = Callable[[int, str], "str | None"]
"""(a position in the question, an algorithm) -> that word's stem there, or None when no phrase of
the table goes on with it: what `_add_phrases` reads a phrase's next word as."""
Seen = tuple[tuple[Start, ...], tuple[Start, ...], frozenset[tuple[str, str]], tuple[Reading, ...], tuple[Term, ...]]
"""A word as one table sees it: the phrases it starts there; those of them with a one-word term,
as starts of no longer phrase (all a start is worth when the next word goes on with none); the
(algorithm, stem) pairs a next word must stem to for a longer phrase to go on; where it starts
none, its readings there; the Hangul prefix terms it begins with."""


class Looked(NamedTuple):
    """A question word as each of several tables sees it (`SharedWords`), found once per word."""

    tables: tuple[tuple[int, Seen], ...]
    """(table, what the word is to it) for each table it is something to: () for most words."""
    follows: Mapping[str, str]
    """Algorithm -> the word's stem there, for each algorithm under which that stem is a later word
    of some table's phrase: all a phrase started before the word needs of it."""
    goes_on: frozenset[tuple[str, str]]
    """`follows` as (algorithm, stem) pairs: met against the word before's pairs in one set operation."""


_ALGORITHM_INDEX = itemgetter(0)
_NO_FOLLOWS: Mapping[str, str] = MappingProxyType({})
_NO_SECONDS: frozenset[str] = frozenset()
_NO_PAIRS: frozenset[tuple[str, str]] = frozenset()
NOTHING = Looked((), _NO_FOLLOWS, _NO_PAIRS)
"""A word no table knows, starts no phrase with nor goes on with: most words."""


class SharedWords:
    """Question words looked up in several tables at once (a policy's vocabulary, clinical,
    fragment and scope terms): a question's new words stemmed together for all the tables
    (`stem_columns`), each stem looked up once in one index of every table's phrase starts, and
    what each word is to each table memoised per word."""

    def __init__(self, matchers: Sequence[TermMatcher]) -> None:
        self.matchers = tuple(matchers)
        self.seen: dict[str, Looked] = {}
        index: dict[str, dict[str, list[tuple[int, Start]]]] = {}
        for t, matcher in enumerate(self.matchers):
            for first, entries in matcher.starts.by_stem().items():
                for ai, algorithm, singles, longer in entries:
                    index.setdefault(algorithm, {}).setdefault(first, []).append((t, (ai, first, singles, longer)))
        self.index = {a: {first: tuple(found) for first, found in by_first.items()} for a, by_first in index.items()}
        """algorithm -> stem -> (table, its `Start`) for each table with a phrase starting so"""
        self.firsts = {a: frozenset(by_first) for a, by_first in self.index.items()}
        self.compound_singles = {a: frozenset().union(*(m.readings.singles(a) for m in self.matchers if a in m.stemmed))
                                 for a in sorted(COMPOUNDING) if any(a in m.stemmed for m in self.matchers)}
        """compounding algorithm -> the stems any of the tables has a one-word term for"""
        self.later = {a: frozenset(p for m in self.matchers for phrase in m.stemmed.get(a, {}) for p in phrase[1:])
                      for a in self.index}
        """algorithm -> every stem that is a later word of some table's phrase: a phrase goes on only with those"""
        self.prefix_firsts = frozenset().union(*(m.prefix_firsts for m in self.matchers))
        """the first letters of every table's Hangul prefix terms"""
        self.hangul_firsts = frozenset().union(*(m.hangul_firsts for m in self.matchers))
        """those of them that are Hangul: a term may begin inside a word only there (`prefix_terms`)"""

    def forget(self) -> None:
        """Empty the per-word memo: the state of tables that have never seen a question."""
        self.seen.clear()

    def find(self, tokens: Tokens) -> tuple[tuple[Term, ...], ...]:
        """`TermMatcher.find` of each table, once per question for all of them."""
        found = tokens.memo.get(self)
        if found is None:
            found = tokens.memo[self] = find_in_tables(self, tokens)
        return found  # type: ignore[return-value]

    def look_up(self, words: tuple[str, ...]) -> list[Looked]:
        """What each word is to each table, in order."""
        seen = self.seen
        try:
            return [seen[w] for w in words]
        except KeyError:  # some word is new
            pass
        new = [w for w in dict.fromkeys(words) if w not in seen]
        if len(seen) + len(new) > WORD_CACHE_LIMIT:
            seen.clear()
            new = list(dict.fromkeys(words))
        seen.update(self._look_up_new(new))
        return [seen[w] for w in words]

    def _look_up_new(self, words: list[str]) -> dict[str, Looked]:
        starts, follows = self._starts(words)
        looked: dict[str, Looked] = {}
        for word in words:
            here, readable = starts.get(word), may_have_readings(word)
            prefixed = word[:1] in self.prefix_firsts or not self.hangul_firsts.isdisjoint(word)
            follow = follows.get(word)
            follow_map, goes_on = (_NO_FOLLOWS, _NO_PAIRS) if follow is None else \
                (MappingProxyType(follow), frozenset(follow.items()))
            if "prefix" in follow_map:  # a Korean word goes on a phrase with any beginning a phrase holds
                goes_on |= {("prefix", key) for key in hangul_beginnings(word, self.later["prefix"])}
            if here is None and not readable and not prefixed:
                looked[word] = NOTHING if follow is None else Looked((), follow_map, goes_on)
                continue
            compound = readable and may_be_compound(word, self.compound_singles)
            per_table: list[tuple[int, Seen]] = []
            for t, matcher in enumerate(self.matchers):
                prefix = prefix_terms(matcher, word) if prefixed else ()
                mine = here[t] if here is not None else None
                if mine:
                    mine.sort(key=_ALGORITHM_INDEX)
                    algorithms = matcher.starts.algorithms
                    per_table.append((t, (tuple(mine), tuple((ai, first, singles, _NO_SECONDS)
                                                             for ai, first, singles, _ in mine if singles),
                                          frozenset((algorithms[ai], second) for ai, _, _, seconds in mine
                                                    for second in seconds), (), prefix)))
                    continue
                read = matcher.readings.read(word, compound) if readable else ()
                if read or prefix:
                    per_table.append((t, ((), (), _NO_PAIRS, read, prefix)))
            if not per_table and here is None and readable:
                per_table = self._glued(word)
            looked[word] = Looked(tuple(per_table), follow_map, goes_on) if per_table or follow is not None else NOTHING
        return looked

    def _glued(self, word: str) -> list[tuple[int, Seen]]:
        """A word no table knows or reads, as words run together (`Readings.glued`), in each table:
        never one that some table has ("Joghurt" is no "jog hurt" to the clinical terms)."""
        per_table: list[tuple[int, Seen]] = []
        for t, matcher in enumerate(self.matchers):
            glued = matcher.readings.glued(word)
            if glued:
                per_table.append((t, ((), (), _NO_PAIRS, as_readings(glued), ())))
        return per_table

    def _starts(self, words: list[str]) -> tuple[dict[str, list[list[Start]]], dict[str, dict[str, str]]]:
        """Word -> for each table, the phrases it starts there: for words that start any; and word ->
        its `Looked.follows`: for words some phrase goes on with."""
        found: dict[str, list[list[Start]]] = {}
        follows: dict[str, dict[str, str]] = {}
        tables = range(len(self.matchers))
        for group, by_algorithm in stem_columns(words, self.index):
            for algorithm, stems in by_algorithm.items():
                later, index = self.later[algorithm], self.index[algorithm]
                if algorithm == "prefix":  # Korean words meet a phrase's words as beginnings
                    pairs = [(w, key) for w in group for key in hangul_beginnings(w, index)]
                # no word of the group starts a phrase under this algorithm, nor goes on with one: the usual case
                elif not self.firsts[algorithm].isdisjoint(stems):
                    pairs = list(zip(group, stems, strict=True))
                else:
                    pairs = []
                for word, first in pairs:
                    entries = index.get(first)
                    if entries:
                        per_table = found.get(word)
                        if per_table is None:
                            per_table = found[word] = [[] for _ in tables]
                        for t, start in entries:
                            per_table[t].append(start)
                if algorithm == "prefix":
                    stems = [next(iter(hangul_beginnings(w, later)), w) for w in group]  # the longest
                if not later.isdisjoint(stems):
                    for word, stemmed in zip(group, stems, strict=True):
                        if stemmed in later:
                            goes_on = follows.get(word)
                            if goes_on is None:
                                goes_on = follows[word] = {}
                            goes_on[algorithm] = stemmed
        return found, follows


def find_in_tables(shared: SharedWords, tokens: Tokens) -> tuple[tuple[Term, ...], ...]:
    """`find_terms` of each of the shared tables, with each word looked up once for all of them; a
    table the question's words are nothing to finds nothing, unless it may find a substring."""
    starts: list[list[tuple[int, int, Start]]] = [[] for _ in shared.matchers]
    unknown: list[list[tuple[int, tuple[Reading, ...]]]] = [[] for _ in shared.matchers]
    prefixed: list[list[tuple[Term, ...]]] = [[] for _ in shared.matchers]
    looks = shared.look_up(tokens.words)
    last = len(looks) - 1
    for i, look in enumerate(looks):
        for t, (here, alone, leads, read, prefix) in look.tables:
            if here:
                # a longer phrase is followed only when the next word may go on with one: mostly
                # it cannot, and the word is worth its one-word terms alone
                if leads and i < last and not leads.isdisjoint(looks[i + 1].goes_on):
                    starts[t] += [(start[0], i, start) for start in here]
                elif alone:
                    starts[t] += [(start[0], i, start) for start in alone]
            elif read:
                unknown[t].append((i, read))
            if prefix:
                prefixed[t].append(prefix)

    def follow(j: int, algorithm: str) -> str | None:
        return looks[j].follows.get(algorithm)

    return tuple(_terms_found(matcher, tokens, sorted(starts[t]), unknown[t], prefixed[t], follow)
                 if starts[t] or unknown[t] or prefixed[t] or tokens.unspaced or matcher.spaced_indexes else ()
                 for t, matcher in enumerate(shared.matchers))


class _Evidence:
    """The terms found so far, each once, and which term each span of words is evidence for."""

    def __init__(self, tokens: Tokens, found: dict[tuple[str, str], Term]) -> None:
        self.tokens, self.words = tokens, tokens.words
        self.found = found
        self._at_span: dict[tuple[str, int, int], tuple[str, str]] = {}

    def add(self, entries: tuple[Term, ...], i: int, n: int) -> None:
        """The terms the `n` words from position `i` match."""
        found, at_span = self.found, self._at_span
        for entry in entries:
            if read_as_false_friend(entry, self.tokens, self.words[i:i + n]):
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


def find_terms(matcher: TermMatcher, tokens: Tokens) -> list[Term]:
    """Every distinct term of the table found in the question, in the table's order per kind of match."""
    words = tokens.words
    starts, unknown = _look_up_words(matcher, words)
    prefixed = [found for w in words if (found := prefix_terms(matcher, w))]

    def follow(j: int, algorithm: str) -> str:  # a Korean phrase's next word: `_hangul_next`
        return words[j] if algorithm == "prefix" else stem(words[j], algorithm)

    return list(_terms_found(matcher, tokens, starts, unknown, prefixed, follow))


def _terms_found(matcher: TermMatcher, tokens: Tokens, starts: list[tuple[int, int, Start]],
                 unknown: list[tuple[int, tuple[Reading, ...]]], prefixed: list[tuple[Term, ...]],
                 follow: Follow) -> tuple[Term, ...]:
    """The terms of a table from what its words were looked up as: phrase starts, the Hangul prefix
    terms they begin with, unknown words; and the substrings of the question's Han/Kana."""
    found: dict[tuple[str, str], Term] = {}
    if starts:
        _add_phrases(matcher, tokens.words, starts, _Evidence(tokens, found), follow)
    if tokens.unspaced or matcher.spaced_indexes:
        _add_substrings(matcher, tokens, found)
    for terms in prefixed:
        for entry in terms:
            found.setdefault((entry.label, entry.term), entry)
    if unknown:
        add_readings(unknown, tokens, found)
    return tuple(found.values())


def _look_up_words(matcher: TermMatcher, words: tuple[str, ...]) -> tuple[
        list[tuple[int, int, Start]], list[tuple[int, tuple[Reading, ...]]]]:
    """One memo lookup per word: the phrases it starts, (algorithm index, position, start) in the
    order the table lists its algorithms, then by position; or, for a word the table does not know,
    (position, its fuzzy and compound readings)."""
    starts: list[tuple[int, int, Start]] = []
    unknown: list[tuple[int, tuple[Reading, ...]]] = []
    phrase_starts, readings = matcher.starts, matcher.readings
    seen, readings_seen = phrase_starts.seen, readings.seen
    for i, w in enumerate(words):
        here = seen.get(w)
        if here is None:
            here = phrase_starts.of(w)
        if here:
            starts += [(start[0], i, start) for start in here]
            continue
        read = readings_seen.get(w)
        if read is None:
            read = readings.of(w)
        if read:
            unknown.append((i, read))
    starts.sort()
    return starts, unknown


def _add_phrases(matcher: TermMatcher, words: tuple[str, ...], starts: list[tuple[int, int, Start]],
                 evidence: _Evidence, follow: Follow) -> None:
    algorithms, heads_of = matcher.starts.algorithms, matcher.starts.heads
    last = len(words) - 1
    for ai, i, (_, first, singles, seconds) in starts:
        if singles:
            evidence.add(singles, i, 1)
        if not seconds or i == last:
            continue
        algorithm = algorithms[ai]
        after = follow(i + 1, algorithm) if algorithm != "prefix" else \
            hangul_next(words[i + 1], lambda key: key in seconds)  # noqa: B023 (called at once)
        if after not in seconds:
            continue  # no longer phrase of the table goes on with the next word: the usual case
        phrases, heads = matcher.stemmed[algorithm], heads_of[algorithm]
        phrase: tuple[str, ...] = (first,)
        for j in range(i + 1, min(i + matcher.longest_phrase, len(words))):
            phrase = (*phrase, after)
            entries = phrases.get(phrase)
            if entries:
                evidence.add(entries, i, len(phrase))
            if phrase not in heads or j == last:
                break  # no longer phrase starts with these words
            after = follow(j + 1, algorithm) if algorithm != "prefix" else \
                hangul_next(words[j + 1], lambda key: (*phrase, key) in phrases or (*phrase, key) in heads)  # noqa: B023
            if after is None:
                break  # no phrase goes on with the next word


def _add_substrings(matcher: TermMatcher, tokens: Tokens, found: dict[tuple[str, str], Term]) -> None:
    haystack = tokens.unspaced
    if haystack:
        by_first = matcher.substrings_by_first
        candidates = {ix for ch in set(haystack) for ix in by_first.get(ch, ())}
        candidates.update(matcher.spaced_indexes)
        indexes: Iterable[int] = sorted(candidates)
    else:
        indexes = matcher.spaced_indexes
    for ix in indexes:
        key, entry = matcher.substrings[ix]
        if key in haystack or (" " in key and key in tokens.text):
            found.setdefault((entry.label, entry.term), entry)
