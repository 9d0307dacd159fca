"""The workbench: labelled rows as a policy routes them, and the edits they offer (new terms,
heavier or lighter or no terms), each estimated from the rows' scores and the most promising
measured with the edit compiled into the matcher."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from coachctx.engine.matching import filed_under, vocabulary_matcher
from coachctx.engine.policy import INTENTS, LANGUAGES, Policy
from coachctx.engine.routing import score
from coachctx.engine.term_text import matched_as
from coachctx.engine.text import Tokens, tokenise
from coachctx.tools.suggest_candidates import TermIndex, everyday_terms, phrases
from coachctx.tools.suggest_evidence import (
    Edit,
    RoutedRow,
    Suggestion,
    decide,
    evidence,
    outcome,
    rank,
    worth,
)
from coachctx.tools.suggest_log import LabelledRow

NEW_WEIGHTS: Final = (1.0, 1.5)
MAX_RAISE: Final = 1.5
"""A weight change never makes a term heavier than this, the heaviest a new term gets."""


@dataclass(frozen=True)
class Candidate:
    edit: Edit
    touched: tuple[int, ...]
    """Positions of the rows the edited term meets (found by stem, without fuzzy or compound readings)."""
    support: float
    """Weighted rows the term meets labelled with its intent, less those labelled without it: the
    evidence that the word means the intent, beyond the rows it changes."""


class Workbench:
    """Labelled rows as the policy routes them today, and the edits they offer, each estimated
    quickly (the edited term's weight added to, or taken from, its intent's score on the rows it
    meets), then the most promising measured exactly with the edit compiled in."""

    def __init__(self, rows: Sequence[LabelledRow], policy: Policy, tokens: Sequence[Tokens] | None = None,
                 index: TermIndex | None = None) -> None:
        self.policy = policy
        self.matcher = vocabulary_matcher(policy)
        tokens = [tokenise(r.question) for r in rows] if tokens is None else tokens
        self.rows = [RoutedRow(label, t, *outcome(t, policy, self.matcher)) for label, t in zip(rows, tokens, strict=True)]
        self.index = TermIndex(tokens) if index is None else index
        self.labelled = {i: sum(r.label.weight for r in self.rows if i in r.label.intents) for i in INTENTS}
        """Intent -> the (weighted) rows labelled with it."""

    def estimate(self, c: Candidate) -> Suggestion:
        delta = (c.edit.weight or 0.0) - (c.edit.old_weight or 0.0)  # an addition has no old weight, a removal no new
        outcomes = []
        for i in c.touched:
            r = self.rows[i]
            scores = dict(r.scores)
            scores[c.edit.intent] = round(scores[c.edit.intent] + delta, 6)
            outcomes.append((r, *decide(scores, self.policy)))
        return evidence(c.edit, outcomes)

    def measure(self, c: Candidate) -> Suggestion:
        """The edit's evidence with the edit compiled into the matcher: what routing would do."""
        e = c.edit
        # a heavier copy of a stemmed term takes its place when compiled in, so only a lighter one,
        # or a Han/Kana or Hangul one, needs the term taken out first (a pass over the whole table)
        replaces = e.kind == "add" or (LANGUAGES[e.language] not in ("substring", "prefix")
                                       and (e.weight or 0.0) > (e.old_weight or 0.0))
        matcher = self.matcher if replaces else self.matcher.without_term(e.intent, e.term)
        if e.weight is not None:
            matcher = matcher.with_term(e.intent, e.language, e.term, e.weight)
        outcomes = [(self.rows[i], *outcome(self.rows[i].tokens, self.policy, matcher)[1:]) for i in c.touched]
        return evidence(e, outcomes)

    def candidates(self, min_support: float, weights: Sequence[float] = NEW_WEIGHTS,
                   removals: bool = True) -> list[tuple[Candidate, Suggestion]]:
        """Every edit worth measuring with its estimate, best first."""
        found = []
        offered = [*self._additions(min_support, self.rows, weights=weights),
                   *(self._removals(min_support) if removals else ())]
        for c in offered:
            s = self.estimate(c)
            if worth(s):
                found.append((c, s))
        found.sort(key=lambda cs: rank(cs[1], cs[0].support))
        return found

    def reinforcements(self, min_support: float, precision: float, weight: float,
                       per_row: float | None = None, keep_rules: bool = False) -> list[Edit]:
        """Terms for words the rows of an intent share, though no row needs them today: each
        breaks nothing here, and a question that uses the word without the terms that route
        these rows is routed too. One intent per word: the one with most evidence. Unless
        `keep_rules`, a word may leave a row the rules decided unsure (a model call with a model,
        the same route without): refusing those refuses the words an intent's rows share most
        ("sleep" in nine recovery rows, some routed by the training terms of rows labelled both)."""
        best: dict[tuple[str, tuple[Any, ...]], tuple[float, Edit]] = {}
        for c in self._additions(min_support, self.rows, every_row=True, weights=(weight,)):
            pos = sum(self.rows[i].label.weight for i in c.touched if c.edit.intent in self.rows[i].label.intents)
            total = sum(self.rows[i].label.weight for i in c.touched)
            if total == 0 or pos / total < precision:
                continue
            if per_row is not None:  # more evidence, a heavier word
                c = dataclasses.replace(c, edit=dataclasses.replace(c.edit, weight=min(weight, per_row * c.support)))
            s = self.estimate(c)
            if s.breaks or (keep_rules and s.from_rules):
                continue
            key = (c.edit.language, filed_under(c.edit.term, c.edit.language))
            if key not in best or c.support > best[key][0]:
                best[key] = (c.support, c.edit)
        return [e for _, e in sorted(best.values(), key=lambda se: (-se[0], se[1].intent, se[1].language, se[1].term))]

    def _support(self, intent: str, touched: Iterable[int]) -> float:
        return round(sum(r.label.weight * (1 if intent in r.label.intents else -1)
                         for r in (self.rows[i] for i in touched)), 6)

    def everyday(self, min_support: float, precision: float, weight: float) -> list[Edit]:
        """Terms for function words the rows of an intent share ("today" in what-should-I-do
        questions), at a weight below every other term: each breaks no row, and routes a question
        nothing else matched, which would otherwise take the fallback."""
        found = []
        for c in self._additions(min_support, self.rows, every_row=True, weights=(weight,), offer=everyday_terms):
            pos = sum(self.rows[i].label.weight for i in c.touched if c.edit.intent in self.rows[i].label.intents)
            total = sum(self.rows[i].label.weight for i in c.touched)
            if total and pos / total >= precision and not self.estimate(c).breaks:
                found.append((c.support, c.edit))
        return [e for _, e in sorted(found, key=lambda se: (-se[0], se[1].intent, se[1].language, se[1].term))]

    def _additions(self, min_support: float, rows: Sequence[RoutedRow], every_row: bool = False,
                   weights: Sequence[float] = NEW_WEIGHTS,
                   offer: Callable[[LabelledRow, Tokens], set[tuple[str, str]]] = phrases) -> Iterable[Candidate]:
        """A word or phrase of a row the rules missed (wrong, or right but unsure) for the one of its
        labels the word means (`_meant`), once per stem: "taper", "tapers" and "tapering" are one
        candidate, shown as the form the rows use most."""
        offers: dict[tuple[str, str, tuple[Any, ...]], dict[str, int]] = {}
        for r in rows:
            if r.correct and r.ruled and not every_row:
                continue
            for lang, term in sorted(offer(r.label, r.tokens)):
                key = filed_under(term, lang)
                for intent in r.label.intents:
                    forms = offers.setdefault((intent, lang, key), {})
                    forms[term] = forms.get(term, 0) + 1
        known = {(i, lang, matched_as(t, LANGUAGES[lang])) for i, by_lang in self.policy.vocabulary.items()
                 for lang, terms in by_lang.items() for t in terms}
        for (intent, lang, _), forms in offers.items():
            term = min(forms, key=lambda t: (-forms[t], len(t), t))
            # a word the vocabulary already reads (any intent, any language) is the vocabulary's
            # business to weigh: its weight or removal is suggested, not a copy of it
            if (intent, lang, matched_as(term, LANGUAGES[lang])) in known or (" " not in term and self._reads(term)):
                continue
            touched = tuple(self.index.touched(lang, term))
            support = self._support(intent, touched)
            if support < min_support or intent != self._meant(touched):
                continue
            for weight in weights:
                yield Candidate(Edit("add", intent, lang, term, weight), touched, support)

    def _meant(self, touched: Sequence[int]) -> str:
        """The intent a word means: the one with most support on the rows it meets; of several, the
        one fewest rows are labelled with. "sore" meets as many rows labelled training as injury (a
        sore shin and "can I still run?"): it is evidence of injury, and training is in the rows'
        labels because most questions ask about training too."""
        return min(INTENTS, key=lambda i: (-self._support(i, touched), self.labelled[i], INTENTS.index(i)))

    def _reads(self, word: str) -> bool:
        """Whether the vocabulary reads this word as a term of its own. A word it reads only as a
        guess (a misspelling of a term, a compound holding one) may get its own term, which ends
        the guess: once "corked" is a term, it is no longer read as a misspelt "cooked"."""
        return any(" (" not in e.term for e in self.matcher.find(tokenise(word)))

    def _removals(self, min_support: float) -> Iterable[Candidate]:
        """A term that pushed a row to a wrong intent: removed, or at half its weight, when it meets
        `min_support` more rows labelled without its intent than with it; a term too light to route
        the rows that need it, twice as heavy, when it meets `min_support` more with than without.
        One row is no evidence against "run"."""
        where: dict[tuple[str, str], tuple[str, float]] = {}
        twice: set[tuple[str, str]] = set()
        for i, by_lang in self.policy.vocabulary.items():
            for language, terms in by_lang.items():
                for t, w in terms.items():
                    if (i, t) in where:
                        twice.add((i, t))  # the same text in two languages of one intent: edit it by hand
                    where[(i, t)] = (str(language), w)
        culprits: dict[tuple[str, str, str], float] = {}
        helpers: dict[tuple[str, str, str], float] = {}
        for r in self.rows:
            if r.correct and r.ruled:
                continue
            matched = score(r.tokens, self.policy, self.matcher).matched
            for intent in (r.label.intents if r.correct else (r.intent, *r.label.intents)):
                for term, _ in matched[intent]:
                    base = term.split(" (", 1)[0]
                    if (intent, base) in where and (intent, base) not in twice:
                        lang, weight = where[(intent, base)]
                        (helpers if intent in r.label.intents else culprits)[(intent, lang, base)] = weight
        for (intent, lang, term), weight in sorted(culprits.items()):
            touched = tuple(self.index.touched(lang, term))
            support = -self._support(intent, touched)
            if support < min_support:
                continue
            yield Candidate(Edit("remove", intent, lang, term, None, weight), touched, support)
            if weight > 0.5:
                yield Candidate(Edit("reweight", intent, lang, term, weight / 2, weight), touched, support)
        for (intent, lang, term), weight in sorted(helpers.items()):
            if weight < MAX_RAISE:  # a term too light to route the rows that use it: twice as heavy
                touched = tuple(self.index.touched(lang, term))
                support = self._support(intent, touched)
                if support >= min_support:
                    yield Candidate(Edit("reweight", intent, lang, term, min(2 * weight, MAX_RAISE), weight),
                                    touched, support)

