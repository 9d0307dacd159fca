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
from functools import lru_cache
from typing import Final, Literal

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.matching import filed_under
from coachctx.engine.policy import DEFAULT_TIER, INTENTS, LANGUAGES, SCOPES, Policy
from coachctx.engine.routing import is_confident
from coachctx.engine.term_text import matched_as

RuleCode = Literal["exclude-conflict", "shared-term", "unrequested-fragment", "promote-excluded",
                   "weak-vocabulary", "missing-language", "no-unmatched-set", "missing-clinical-language",
                   "no-default-tier", "zero-margin", "shared-scope-term"]
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
}


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
    keys = _term_keys(policy)
    lint = _Lint(keys, {intent: _Stemmed(ks) for intent, ks in keys.items()}, _Nested(keys))
    return [*_exclude_conflicts(policy, lint), *_shared_terms(lint), *_unrequested(policy),
            *_promote_excluded(policy), *_weak_vocabulary(policy), *_missing_languages(policy),
            *_no_unmatched_set(policy), *_missing_clinical_languages(policy), *_no_default_tier(policy),
            *_zero_margin(policy), *_shared_scope_terms(policy)]


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def _finding(code: RuleCode, path: str, message: str) -> Finding:
    return Finding(code, RULES[code][0], path, message)


# --- how routing sees each term ----------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    intent: str
    language: str
    term: str
    weight: float
    mode: str
    """`stemmed:<algorithm>`, `substring` or `prefix`: only keys of one mode can meet."""
    match: tuple[str, ...]

    def relation(self, other: _Key) -> Literal["same", "covers", None]:
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


def _term_keys(policy: Policy) -> dict[str, list[_Key]]:
    """Each intent's terms as routing matches them (`matching.filed_under`)."""
    out: dict[str, list[_Key]] = {}
    for intent, by_language in policy.vocabulary.items():
        keys = out.setdefault(intent, [])
        for language, terms in by_language.items():
            for term, weight in terms.items():
                keys += [_Key(intent, language, term, weight, f"stemmed:{algorithm}" if kind == "stemmed" else kind,
                              key) for kind, algorithm, key in dict.fromkeys(filed_under(term, language))]
    return out


class _Nested:
    """For every substring (Han/Kana) and prefix (Hangul) key, the keys of the same mode that it
    contains or is contained in, found by looking up each key's own substrings (prefixes) in one
    index of every key: comparing every key with every other is quadratic, and 20,000 Han terms
    took 50 s to lint that way."""

    def __init__(self, keys: Mapping[str, list[_Key]]) -> None:
        by_match: dict[tuple[str, str], list[int]] = {}
        self.keys: list[_Key] = [k for ks in keys.values() for k in ks if not k.mode.startswith("stemmed:")]
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


class _Stemmed:
    """One intent's stemmed keys indexed by phrase and by every part of a phrase, built once."""

    def __init__(self, keys: list[_Key]) -> None:
        self.by_match: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self.by_part: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self.number: dict[int, int] = {}
        for j, y in enumerate(keys):
            if y.mode.startswith("stemmed:"):
                self.by_match.setdefault((y.mode, y.match), []).append(j)
                for part in _sub_phrases(y.match):
                    self.by_part.setdefault((y.mode, part), []).append(j)
            else:
                self.number[id(y)] = j


def _pairs(a: list[_Key], b: list[_Key], index: _Stemmed, *, covering: bool,
           nested: _Nested) -> Iterator[tuple[_Key, _Key]]:
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
                for part in _sub_phrases(x.match):  # x contains y
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
def _sub_phrases(phrase: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    """Every contiguous part of `phrase`, itself included."""
    n = len(phrase)
    return frozenset(phrase[i:k] for i in range(n) for k in range(i + 1, n + 1))


# --- the rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lint:
    keys: Mapping[str, list[_Key]]
    stemmed: Mapping[str, _Stemmed]
    nested: _Nested

    def pairs(self, a: str, b: str, *, covering: bool) -> Iterator[tuple[_Key, _Key]]:
        return _pairs(self.keys.get(a, []), self.keys.get(b, []), self.stemmed.get(b) or _Stemmed([]),
                      covering=covering, nested=self.nested)


MAX_SHARED_TERM_FINDINGS: Final = 200
"""Two intents can share thousands of terms (accent variants of one word); past this many, one
finding says the rest were not listed, instead of a listing that takes longer than the check."""


def _exclude_conflicts(policy: Policy, lint: _Lint) -> Iterable[Finding]:
    pairs: dict[tuple[str, str], list[tuple[_Key, _Key]]] = {}
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


def _shared_terms(lint: _Lint) -> Iterable[Finding]:
    seen: set[tuple[str, str, str, str]] = set()
    for i, intent in enumerate(INTENTS):
        for other in INTENTS[i + 1:]:
            for x, y in lint.pairs(intent, other, covering=False):
                pair = (x.intent, x.term, y.intent, y.term)
                if pair in seen:
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
