"""Cross-language collisions: policy terms that an everyday word of another language matches.

    python -m bench.collisions [--policy PATH] [--top N] [--language L ...]

Every language's terms are tried against every question, so a Dutch term "been" (leg) would
fire on the English word "been", and a Swedish "ont" on nothing worse than itself. This tool
takes the `--top` most frequent words of every other spaced-script language (wordfreq's lists,
which ship with the package: nothing is downloaded), runs each through the term's own matcher
(the term language's stemmer, or whole words) and reports every term one of them matches.

A collision is not always wrong: "marathon" is the same word in a dozen languages. Those the
policy accepts are listed in `ACCEPTED`, each for the languages it may meet; anything else is a
finding. `tests/engine/test_vocabulary.py` runs this over the default policy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

from coachctx.engine.matching import term_matching
from coachctx.engine.policy import LANGUAGES, Policy, load_policy
from coachctx.engine.text import UNSPACED, normalise, script_of, stem, stem_variants, tokenise

WORDFREQ_CODES: Final[Mapping[str, str]] = {"no": "nb"}
"""Policy language code -> wordfreq's, where they differ."""
SPACED: Final = tuple(code for code, mode in LANGUAGES.items() if mode not in ("substring", "prefix"))
DEFAULT_TOP: Final = 5000


@dataclass(frozen=True)
class Collision:
    where: str
    """The term list: `vocabulary.training`, `clinical_terms`, `scopes.today.terms`, `fragment_terms.chronotype`."""
    language: str
    term: str
    other: str
    """The language of the everyday word."""
    word: str
    rank: int
    """The word's frequency rank in `other` (0 = most frequent)."""

    def __str__(self) -> str:
        return (f"{self.where}.{self.language}: {self.term!r} matches {self.other} word "
                f"{self.word!r} (frequency rank {self.rank})")


@lru_cache(maxsize=64)
def common_words(language: str, top: int) -> tuple[str, ...]:
    from wordfreq import top_n_list

    words = top_n_list(WORDFREQ_CODES.get(language, language), top)
    return tuple(normalise(w) for w in words)


Keys = dict[str, dict[str, list[tuple[str, str]]]]
"""algorithm -> key of a single-word term -> [(where, term)]."""


def _keys_by_language(policy: Policy, languages: Iterable[str]) -> dict[str, Keys]:
    """Term language -> its single-word terms' keys, per matching algorithm (a `=` term matches whole words)."""
    out: dict[str, Keys] = {}
    wanted = set(languages)
    for where, by_language in policy.term_lists():
        for language, terms in by_language.items():
            if language not in wanted:
                continue
            for term in terms:
                text, algorithm = term_matching(term, language)
                words = tokenise(text).words
                if len(words) != 1:
                    continue
                for key in stem_variants(words[0], algorithm):
                    out.setdefault(language, {}).setdefault(algorithm, {}).setdefault(key, []).append((where, term))
    return out


def collisions(policy: Policy, *, top: int = DEFAULT_TOP, languages: Sequence[str] = SPACED,
               accepted: Mapping[str, frozenset[str]] | None = None) -> list[Collision]:
    accepted = ACCEPTED if accepted is None else accepted
    found: list[Collision] = []
    for language, by_algorithm in sorted(_keys_by_language(policy, languages).items()):
        for other in SPACED:
            if other == language:
                continue
            for rank, word in enumerate(common_words(other, top)):
                if not word or any(script_of(ch) in UNSPACED for ch in word):
                    continue
                for token in tokenise(word).words:
                    for algorithm, keys in by_algorithm.items():
                        for where, term in keys.get(stem(token, algorithm), ()):
                            if other not in accepted.get(normalise(term).removeprefix("="), frozenset()):
                                found.append(Collision(where, language, term, other, word, rank))
    unique = {(c.where, c.language, c.term, c.other, c.word): c for c in found}
    return sorted(unique.values(), key=lambda c: (c.language, c.where, c.term, c.rank))


ALL: Final = frozenset(SPACED)
ACCEPTED: Final[Mapping[str, frozenset[str]]] = {
    "km": ALL, "plan": ALL, "program": ALL, "marathon": ALL,
    "saison": frozenset({"fr"}), "later": frozenset({"nl"}), "week": frozenset({"nl", "fr"}),
    "weekend": frozenset({"nl", "pl", "fr", "de"}), "water": frozenset({"nl"}),
    "semana": frozenset({"pt"}), "agua": frozenset({"pt"}), "año": frozenset({"pt"}), "morgen": frozenset({"da", "no", "nl"}), "morgens": frozenset({"da", "no", "nl"}),
    "nu": frozenset({"da", "nl"}), "hej": frozenset({"da", "sv", "pl"}), "mat": frozenset({"no"}), "hei": frozenset({"fi"}),
}
"""Term (normalised) -> the languages whose everyday words may match it: the same word, meaning
the same thing there."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.collisions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, default=None)
    parser.add_argument("--top", type=int, default=DEFAULT_TOP)
    parser.add_argument("--language", action="append", help="only terms of this language (repeatable)")
    args = parser.parse_args(argv)
    policy = load_policy(args.policy) if args.policy else load_policy()
    found = collisions(policy, top=args.top, languages=args.language or SPACED)
    for c in found:
        print(c)
    print(f"{len(found)} collisions", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
