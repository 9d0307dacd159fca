"""Policy lint: a valid policy can still contradict itself. Each rule returns typed findings
(code, severity, path inside the document, message) that `check-policy` prints as warnings
and the app shows next to the editor.

Terms are compared as routing matches them (`matching.TermMatcher`): stemmed phrases for spaced
scripts, substrings for Han/Kana, prefixes for Hangul. Two terms are the *same* when they
match the same words ("race" and "races"); one *covers* the other when every question that
matches the longer also matches the shorter ("sore tendon" and "sore").

Severity `error`: the policy works against itself (a signal can be lost, a rule can never
apply). Severity `warning`: a gap or a smell worth a look.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from coachctx.engine.common_words import everyday_words
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.policy import DEFAULT_TIER, INTENTS, LANGUAGES, SCOPES, Policy
from coachctx.engine.routing import is_confident
from coachctx.engine.term_text import matched_as
from coachctx.tools.lint_keys import Nested, Stemmed, TermKey, pairs, term_keys

RuleCode = Literal["exclude-conflict", "shared-term", "unrequested-fragment", "promote-excluded",
                   "weak-vocabulary", "missing-language", "no-unmatched-set", "missing-clinical-language",
                   "no-default-tier", "zero-margin", "shared-scope-term", "everyday-term", "no-primary"]
Severity = Literal["error", "warning"]

RULES: Final[Mapping[RuleCode, tuple[Severity, str]]] = {
    "exclude-conflict": ("warning", "an intent excludes a fragment another intent holds as primary, and their "
                                    "vocabularies share terms: the exclude never applies where they meet"),
    "shared-term": ("warning", "a term is in two intents' vocabularies"),
    "unrequested-fragment": ("warning", "no intent requests the fragment and no scope promotes it"),
    "promote-excluded": ("error", "a promote modifier names a fragment an intent it applies to excludes"),
    "weak-vocabulary": ("error", "no single term of the intent reaches the confident threshold"),
    "missing-language": ("warning", "a language used in the vocabulary has no terms for the intent"),
    "no-unmatched-set": ("warning", "the policy has no unmatched section, so a question no term matched sees "
                                    "only general's context"),
    "missing-clinical-language": ("warning", "a language used in the vocabulary has no clinical terms, so a "
                                             "question in it that reports pain is never read as clinical"),
    "no-default-tier": ("warning", f"the policy has no tier {DEFAULT_TIER!r}, which a decision takes when no "
                                   "tier is given"),
    "zero-margin": ("warning", "a routing margin of 0 makes a tie between two intents a sure route"),
    "shared-scope-term": ("warning", "a scope term is in two scopes, so it votes for both horizons"),
    "everyday-term": ("warning", "a clinical or vocabulary term is one of its language's commonest words, so "
                                 "most questions in that language hold it"),
    "no-primary": ("warning", "an intent, or the unmatched set, holds no primary fragment, so its questions are "
                              "sure of no context"),
}
EVERYDAY_TERM_RANKS: Final = 100
"""A one-word term among its language's this many commonest words ("a", "the", "my", "is", "de")
is in nearly every question of that language: as a clinical term it reads each one as clinical."""


@dataclass(frozen=True)
class Finding:
    code: RuleCode
    severity: Severity
    path: str
    """Where in the policy document, e.g. `intents.training.exclude[1]`."""
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.code}]"

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "path": self.path, "message": self.message}


def lint_policy(policy: Policy) -> list[Finding]:
    """Every finding, rule by rule in the order of `RULES`."""
    keys = term_keys(policy)
    lint = _Lint(keys, {intent: Stemmed(ks) for intent, ks in keys.items()}, Nested(keys))
    return [*_exclude_conflicts(policy, lint), *_shared_terms(policy, lint), *_unrequested(policy),
            *_promote_excluded(policy), *_weak_vocabulary(policy), *_missing_languages(policy),
            *_no_unmatched_set(policy), *_missing_clinical_languages(policy), *_no_default_tier(policy),
            *_zero_margin(policy), *_shared_scope_terms(policy), *_everyday_terms(policy), *_no_primary(policy)]


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def _finding(code: RuleCode, path: str, message: str) -> Finding:
    return Finding(code, RULES[code][0], path, message)


# --- the rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lint:
    keys: Mapping[str, list[TermKey]]
    stemmed: Mapping[str, Stemmed]
    nested: Nested

    def pairs(self, a: str, b: str, *, covering: bool) -> Iterator[tuple[TermKey, TermKey]]:
        return pairs(self.keys.get(a, []), self.keys.get(b, []), self.stemmed.get(b) or Stemmed([]),
                      covering=covering, nested=self.nested)


MAX_SHARED_TERM_FINDINGS: Final = 200
"""Two intents can share thousands of terms (accent variants of one word); past this many, one
finding says the rest were not listed, instead of a listing that takes longer than the check."""


def _exclude_conflicts(policy: Policy, lint: _Lint) -> Iterable[Finding]:
    pairs: dict[tuple[str, str], list[tuple[TermKey, TermKey]]] = {}
    for intent in INTENTS:
        for i, fragment in enumerate(policy.intent(intent).exclude):
            for other in INTENTS:
                if other == intent or fragment not in policy.intent(other).primary:
                    continue
                if (intent, other) not in pairs:  # four are shown, a fifth says there are more
                    pairs[(intent, other)] = list(itertools.islice(lint.pairs(intent, other, covering=True), 5))
                shared = pairs[(intent, other)]
                if not shared:
                    continue
                words = ", ".join(f"{x.language} {x.term!r}" + (f"/{y.term!r}" if y.term != x.term else "")
                                  for x, y in shared[:4]) + (" ..." if len(shared) > 4 else "")
                yield _finding("exclude-conflict", f"intents.{intent}.exclude[{i}]",
                               f"{intent} excludes {fragment}, which {other} holds as primary, and their "
                               f"vocabularies share terms ({words}): a question using them gives {other} "
                               f"evidence, so {fragment} is kept there whatever the route (evidence beats "
                               f"exclusion) and the exclude only acts on questions without {other}'s terms")


def _shared_terms(policy: Policy, lint: _Lint) -> Iterable[Finding]:
    """A clinical term of `injury` that `recovery` has too is shared on purpose: an illness ("flu",
    "Fieber") is a recovery question and a clinical one, and the tie it makes sends the question to
    the model, or to both intents' primaries, rather than to one of them. A clinical term in
    training's vocabulary ("pain") is still reported."""
    seen: set[tuple[str, str, str, str]] = set()
    clinical = {(lang, t.casefold()) for lang, ts in policy.clinical_terms.items() for t in ts}
    for i, intent in enumerate(INTENTS):
        for other in INTENTS[i + 1:]:
            for x, y in lint.pairs(intent, other, covering=False):
                pair = (x.intent, x.term, y.intent, y.term)
                mine = x if x.intent == "injury" else y if y.intent == "injury" else None
                if pair in seen or ({intent, other} == {"injury", "recovery"} and mine is not None
                                    and (mine.language, mine.term.casefold()) in clinical):
                    continue
                if len(seen) == MAX_SHARED_TERM_FINDINGS:
                    yield _finding("shared-term", "vocabulary",
                                   f"more terms are shared between intents than the {MAX_SHARED_TERM_FINDINGS} "
                                   "listed; fix these and check again")
                    return
                seen.add(pair)
                same_word = "" if x.term == y.term else f" ({y.term!r} matches the same words)"
                yield _finding("shared-term", f"vocabulary.{other}.{y.language}.{y.term}",
                               f"{x.term!r} is in both {intent} ({x.language}, {x.weight:g}) and {other} "
                               f"({y.language}, {y.weight:g}){same_word}: a question using it scores both")


def _unrequested(policy: Policy) -> Iterable[Finding]:
    requested = {f for ip in policy.intents.values() for f in (*ip.primary, *ip.secondary)}
    if policy.unmatched is not None:
        requested |= {*policy.unmatched.primary, *policy.unmatched.secondary}
    promoted = {m.fragment for s in policy.scopes.values() for m in s.modifiers if m.action == "promote"}
    for fragment in FRAGMENT_NAMES:
        if fragment not in requested and fragment not in promoted:
            yield _finding("unrequested-fragment", "intents",
                           f"no intent requests {fragment} (as primary or secondary) and no scope promotes it: "
                           "it is fetched but can never reach a prompt")


def _no_unmatched_set(policy: Policy) -> Iterable[Finding]:
    if policy.unmatched is None:
        general = ", ".join(policy.intent("general").primary)
        yield _finding("no-unmatched-set", "unmatched",
                       f"no unmatched section: a question no term matched and no model answered sees only "
                       f"general's context ({general}); add one with the readiness lines, the training block "
                       f"and the profile")


def _missing_clinical_languages(policy: Policy) -> Iterable[Finding]:
    """The clinical-question rule keeps `readiness_injury` for a question that reports pain only if
    a clinical term of its language is in it (an adversarial pass checked a policy without
    `clinical_terms`: `ok`, and the rule silently off)."""
    for lang in _vocabulary_languages(policy):
        if not policy.clinical_terms.get(lang):  # type: ignore[call-overload]
            yield _finding("missing-clinical-language", "clinical_terms",
                           f"no clinical terms in {lang} (the vocabulary has {lang} terms): a question in {lang} "
                           f"that reports pain is never read as clinical, so readiness_injury stays only where "
                           f"its route asks for it; add {lang} clinical terms")


def _promote_excluded(policy: Policy) -> Iterable[Finding]:
    for scope in SCOPES:
        sp = policy.scopes.get(scope)  # type: ignore[call-overload]
        if sp is None:
            continue
        for i, m in enumerate(sp.modifiers):
            if m.action != "promote":
                continue
            applies = m.intents if m.intents is not None else list(INTENTS)
            against = [name for name in applies if m.fragment in policy.intent(name).exclude]
            if against:
                yield _finding("promote-excluded", f"scopes.{scope}.modifiers[{i}]",
                               f"scope {scope} promotes {m.fragment} for {', '.join(against)}, which "
                               f"exclude{'s' if len(against) == 1 else ''} it: the exclude wins, so the "
                               "promote never applies there")


def _weak_vocabulary(policy: Policy) -> Iterable[Finding]:
    threshold, margin = policy.routing.confident_threshold, policy.routing.margin
    for intent in INTENTS:
        terms = [(w, t, lang) for lang, ts in policy.vocabulary.get(intent, {}).items()  # type: ignore[call-overload]
                 for t, w in ts.items()]
        if any(is_confident(w, 0.0, threshold, margin) for w, _, _ in terms):
            continue
        if not terms:
            why = "it has no vocabulary"
        else:
            w, t, lang = max(terms)
            why = f"its strongest term is {lang} {t!r} ({w:g})"
        yield _finding("weak-vocabulary", f"vocabulary.{intent}",
                       f"no single {intent} term reaches the confident threshold {threshold:g} with margin "
                       f"{margin:g} ({why}): a question naming one {intent} term never routes by the rules")


def _vocabulary_languages(policy: Policy) -> list[str]:
    """The languages some intent has terms in, in the order the vocabulary first uses them."""
    return list(dict.fromkeys(lang for by_lang in policy.vocabulary.values() for lang, terms in by_lang.items() if terms))


def _missing_languages(policy: Policy) -> Iterable[Finding]:
    languages = _vocabulary_languages(policy)
    for intent in INTENTS:
        have = {lang for lang, terms in policy.vocabulary.get(intent, {}).items() if terms}  # type: ignore[call-overload]
        missing = [lang for lang in languages if lang not in have]
        if missing:
            yield _finding("missing-language", f"vocabulary.{intent}",
                           f"{intent} has no terms in {', '.join(missing)} (used by other intents): questions "
                           f"in {'that language' if len(missing) == 1 else 'those languages'} cannot reach "
                           f"{intent} by the rules")


def _no_default_tier(policy: Policy) -> Iterable[Finding]:
    """`explain` without `--tier`, an impact row without a tier and the playground's first screen
    all take `DEFAULT_TIER`: a policy without it refused every such decision, and `check-policy`
    said ok (an adversarial pass)."""
    if DEFAULT_TIER not in policy.tiers:
        yield _finding("no-default-tier", "tiers",
                       f"no tier {DEFAULT_TIER!r}: every decision that names no tier (explain without --tier, an "
                       f"impact row without one, the playground's first screen) is refused; the policy has "
                       f"{', '.join(sorted(policy.tiers))}")


def _zero_margin(policy: Policy) -> Iterable[Finding]:
    """A tie (training 1, injury 1) "leads by 0 >= margin 0": the rules call a coin flip sure, and
    it never reaches the model (an adversarial pass)."""
    if policy.routing.margin == 0:
        yield _finding("zero-margin", "routing.margin",
                       "margin 0: a question that scores two intents alike is routed by the rules as if sure (it "
                       "leads by 0 >= 0), so a tie never reaches the model and the route's excludes apply where "
                       "no evidence keeps a fragment; a margin above 0 sends ties to the model")


def _shared_scope_terms(policy: Policy) -> Iterable[Finding]:
    """A scope term filed under two scopes counts for both, and the tie goes to the shorter horizon
    whatever the coach meant (an adversarial pass)."""
    first: dict[tuple[str, tuple[str, ...]], str] = {}
    for scope in SCOPES:
        sp = policy.scopes.get(scope)  # type: ignore[call-overload]
        for lang, terms in (sp.terms.items() if sp is not None else ()):
            for term in terms:
                key = (lang, matched_as(term, LANGUAGES[lang]))
                other = first.setdefault(key, scope)
                if other != scope:
                    yield _finding("shared-scope-term", f"scopes.{scope}.terms.{lang}",
                                   f"{term!r} is a {other} term too: it votes for both horizons; keep it in one")


def _everyday_terms(policy: Policy) -> Iterable[Finding]:
    """A clinical term "a" made every English question clinical: a referral on every reply, the
    injury line kept everywhere, and `check-policy` said ok (an adversarial pass)."""
    ranks = {lang: {w: n for n, w in enumerate(words[:EVERYDAY_TERM_RANKS], 1)} for lang, words in everyday_words().items()}

    def rank(term: str, lang: str) -> int | None:
        return ranks.get(lang, {}).get(term.strip().casefold())

    for lang, terms in policy.clinical_terms.items():
        for term in terms:
            if (r := rank(term, lang)) is not None:
                yield _finding("everyday-term", f"clinical_terms.{lang}",
                               f"{term!r} is the {_ordinal(r)} commonest {lang} word: most {lang} questions hold it "
                               "whatever they ask, so each is read as clinical (a referral on every reply, "
                               "readiness_injury always kept); name the pain, injury or illness instead")
    for intent, by_lang in policy.vocabulary.items():
        for lang, weights in by_lang.items():
            for term, weight in weights.items():
                if (r := rank(term, lang)) is not None:
                    yield _finding("everyday-term", f"vocabulary.{intent}.{lang}.{term}",
                                   f"{term!r} is the {_ordinal(r)} commonest {lang} word: most {lang} questions hold "
                                   f"it whatever they ask, and score {intent} {weight:g} for it; use a phrase with "
                                   "it, or a word that names the topic")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _no_primary(policy: Policy) -> Iterable[Finding]:
    """`general: {primary: []}` and an empty `unmatched` set passed as ok, and every greeting, or
    every question no term matched, then reached the model with no athlete context (an adversarial
    pass); `no-unmatched-set` only saw the section missing."""
    sets = [(f"intents.{name}", ip.primary, ip.secondary) for name, ip in policy.intents.items()]
    if policy.unmatched is not None:
        sets.append(("unmatched", policy.unmatched.primary, policy.unmatched.secondary))
    for path, primary, secondary in sets:
        if not primary:
            sees = (f"only its secondaries ({', '.join(secondary)}) while the budget lasts"
                    if secondary else "no athlete context at all")
            yield _finding("no-primary", f"{path}.primary", f"{path} holds no primary fragment: a question that "
                                                            f"takes it sees {sees}")
