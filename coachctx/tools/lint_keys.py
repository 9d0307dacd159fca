"""How routing sees each term of a policy, for lint (`coachctx.tools.lint`): every term as the keys
a question's words are matched by (`matching.filed_under`), and indexes that find the terms two
intents share, or that cover one another, without comparing every term with every other."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from coachctx.engine.matching import filed_under
from coachctx.engine.policy import Policy


@dataclass(frozen=True)
class TermKey:
    intent: str
    language: str
    term: str
    weight: float
    mode: str
    """`stemmed:<algorithm>`, `substring` or `prefix`: only keys of one mode can meet."""
    match: tuple[str, ...]

    def relation(self, other: TermKey) -> Literal["same", "covers", None]:
        if self.mode != other.mode:
            return None
        if self.match == other.match:
            return "same"
        a, b = self.match, other.match
        if self.mode == "substring":
            return "covers" if a[0] in b[0] or b[0] in a[0] else None
        if self.mode == "prefix":
            return "covers" if a[0].startswith(b[0]) or b[0].startswith(a[0]) else None
        short, long = (a, b) if len(a) <= len(b) else (b, a)
        n = len(short)
        return "covers" if any(long[i:i + n] == short for i in range(len(long) - n + 1)) else None

    def show(self) -> str:
        return f"{self.intent} {self.language} {self.term!r}"


def term_keys(policy: Policy) -> dict[str, list[TermKey]]:
    """Each intent's terms as routing matches them (`matching.filed_under`)."""
    out: dict[str, list[TermKey]] = {}
    for intent, by_language in policy.vocabulary.items():
        keys = out.setdefault(intent, [])
        for language, terms in by_language.items():
            for term, weight in terms.items():
                keys += [TermKey(intent, language, term, weight, f"stemmed:{algorithm}" if kind == "stemmed" else kind,
                              key) for kind, algorithm, key in dict.fromkeys(filed_under(term, language))]
    return out


class Nested:
    """For every substring (Han/Kana) and prefix (Hangul) key, the keys of the same mode that it
    contains or is contained in, found by looking up each key's own substrings (prefixes) in one
    index of every key: comparing every key with every other is quadratic, and 20,000 Han terms
    took 50 s to lint that way."""

    def __init__(self, keys: Mapping[str, list[TermKey]]) -> None:
        by_match: dict[tuple[str, str], list[int]] = {}
        self.keys: list[TermKey] = [k for ks in keys.values() for k in ks if not k.mode.startswith("stemmed:")]
        for n, k in enumerate(self.keys):
            by_match.setdefault((k.mode, k.match[0]), []).append(n)
        self.related: dict[int, set[int]] = {n: set() for n in range(len(self.keys))}
        """key number -> every other key number it is the same as, contains or is contained in"""
        for n, k in enumerate(self.keys):
            text = k.match[0]
            parts = ({text[i:j] for i in range(len(text)) for j in range(i + 1, len(text) + 1)}
                     if k.mode == "substring" else {text[:j] for j in range(1, len(text) + 1)})
            for part in parts:
                for m in by_match.get((k.mode, part), ()):
                    if m != n:
                        self.related[n].add(m)
                        self.related[m].add(n)
        self.number = {id(k): n for n, k in enumerate(self.keys)}


class Stemmed:
    """One intent's stemmed keys indexed by phrase and by every part of a phrase, built once."""

    def __init__(self, keys: list[TermKey]) -> None:
        self.by_match: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self.by_part: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self.number: dict[int, int] = {}
        for j, y in enumerate(keys):
            if y.mode.startswith("stemmed:"):
                self.by_match.setdefault((y.mode, y.match), []).append(j)
                for part in sub_phrases(y.match):
                    self.by_part.setdefault((y.mode, part), []).append(j)
            else:
                self.number[id(y)] = j


def pairs(a: list[TermKey], b: list[TermKey], index: Stemmed, *, covering: bool,
           nested: Nested) -> Iterator[tuple[TermKey, TermKey]]:
    """Every (x, y) with x in `a`, y in `b` (indexed by `index`) that are the same (or, `covering`,
    one covers the other), in `a`'s then `b`'s order, lazily: a reader that needs a few stops
    early. Stemmed phrases are looked up by their sub-phrases, substrings and prefixes in `nested`,
    rather than compared pair by pair, so a policy at the term limit lints in about a second."""
    wanted = ("same", "covers") if covering else ("same",)
    for x in a:
        if x.mode.startswith("stemmed:"):
            found = set(index.by_match.get((x.mode, x.match), ()))
            if covering:
                found.update(index.by_part.get((x.mode, x.match), ()))  # y contains x
                for part in sub_phrases(x.match):  # x contains y
                    found.update(index.by_match.get((x.mode, part), ()))
        else:
            found = set()
            for m in nested.related.get(nested.number.get(id(x), -1), ()):
                j = index.number.get(id(nested.keys[m]))
                if j is not None and x.relation(b[j]) in wanted:
                    found.add(j)
        for j in sorted(found):
            yield x, b[j]


@lru_cache(maxsize=100_000)
def sub_phrases(phrase: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    """Every contiguous part of `phrase`, itself included."""
    n = len(phrase)
    return frozenset(phrase[i:k] for i in range(n) for k in range(i + 1, n + 1))
