"""A question word's stems under every Snowball algorithm a term may be filed under, and the stems
of a compound's possible parts: memoised per process, shared by every matcher."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from typing import Final

from coachctx.engine.policy import LANGUAGES
from coachctx.engine.text import WHOLE_WORD, letter_scripts, stemmer

STEMMER_SCRIPTS: Final = {"russian": "Cyrillic", "greek": "Greek", "arabic": "Arabic", "hindi": "Devanagari"}
"""The alphabet of each Snowball algorithm not written in Latin letters; every other one is Latin.
A stemmer changes only a word that holds letters of its alphabet (tests/engine/test_engine_word_memos.py checks
each one over the common word lists of every language), so a word of other letters is its own stem
there and need not be stemmed: "knee" is not run through the Russian, Greek, Arabic and Hindi
stemmers, nor "колено" through the fourteen Latin ones."""
_UNSTEMMED: Final = frozenset({WHOLE_WORD, "prefix"})
ALGORITHMS: Final = tuple(dict.fromkeys(a for a in LANGUAGES.values() if a != "substring"))
"""Every algorithm a matcher may file a spaced-script term under."""

COMPOUNDING: Final = frozenset({"german", "dutch", "swedish", "danish", "norwegian", "finnish"})
"""Languages that write a compound as one word ("Knieschmerzen", "kneskader", "polvikipu"): a
question word the vocabulary does not know is read as its parts."""
MIN_HEAD, MIN_MODIFIER = 4, 3
"""The shortest last part of a compound read as a term, and the shortest rest beside it."""


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


def stem_columns(words: Sequence[str], algorithms: Collection[str]) -> list[tuple[list[str], dict[str, list[str]]]]:
    """`word_stems` of several words at once under some of `ALGORITHMS`, as (the words of one set of
    scripts, algorithm -> their stems in order) for each set of scripts among the words (most
    questions have one): one stemmer call per algorithm and set, not one per word and algorithm."""
    groups: dict[frozenset[str] | None, list[str]] = {}
    for word in words:
        groups.setdefault(letter_scripts(word), []).append(word)
    columns = []
    for scripts, group in groups.items():
        run, own = _stemmers_for(scripts)
        by_algorithm = dict.fromkeys((a for a in own if a in algorithms), group)
        for algorithm, _ in run:
            if algorithm in algorithms:
                by_algorithm[algorithm] = stemmer(algorithm).stemWords(group)
        columns.append((group, by_algorithm))
    return columns


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
    parts, longest first (see `Readings.parts`), under a compounding language's algorithm."""
    heads = [word[j:] for j in range(MIN_MODIFIER, len(word) - MIN_HEAD + 1)]
    modifiers = [word[:j] for j in range(len(word) - MIN_MODIFIER, MIN_HEAD - 1, -1)]
    scripts = letter_scripts(word)
    if scripts is None or STEMMER_SCRIPTS.get(algorithm, "Latin") in scripts:
        # one call for every part: the stemmer's loop runs in C
        stems = stemmer(algorithm).stemWords([*heads, *modifiers])
        heads, modifiers = stems[:len(heads)], stems[len(heads):]
    return tuple(heads), tuple(modifiers)

