"""Policy lint: a valid policy can still contradict itself. Each rule returns typed findings
(code, severity, path inside the document, message) that `check-policy` prints as warnings
and the app shows next to the editor.

Terms are compared as routing matches them (`routing.TermMatcher`): stemmed phrases for spaced
scripts, substrings for Han/Kana, prefixes for Hangul. Two terms are the *same* when they
match the same words ("race" and "races"); one *covers* the other when every question that
matches the longer also matches the shorter ("sore tendon" and "sore").

Severity `error`: the policy works against itself (a signal can be lost, a rule can never
apply). Severity `warning`: a gap or a smell worth a look.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from coachctx.fragments import FRAGMENT_NAMES
from coachctx.policy import INTENTS, SCOPES, Policy
from coachctx.routing import TermMatcher, is_confident

RuleCode = Literal["exclude-conflict", "shared-term", "unrequested-fragment", "promote-excluded",
                   "weak-vocabulary", "missing-language", "no-unmatched-set"]
Severity = Literal["error", "warning"]

RULES: Final[Mapping[RuleCode, tuple[Severity, str]]] = {
    "exclude-conflict": ("error", "an intent excludes a fragment another intent holds as primary, and their "
                                  "vocabularies share terms"),
    "shared-term": ("warning", "a term is in two intents' vocabularies"),
    "unrequested-fragment": ("warning", "no intent requests the fragment and no scope promotes it"),
    "promote-excluded": ("error", "a promote modifier names a fragment an intent it applies to excludes"),
    "weak-vocabulary": ("error", "no single term of the intent reaches the confident threshold"),
    "missing-language": ("warning", "a language used in the vocabulary has no terms for the intent"),
    "no-unmatched-set": ("warning", "the policy has no unmatched section, so a question no term matched sees "
                                    "only general's context"),
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
    return [*_exclude_conflicts(policy, keys), *_shared_terms(keys), *_unrequested(policy),
            *_promote_excluded(policy), *_weak_vocabulary(policy), *_missing_languages(policy),
            *_no_unmatched_set(policy)]


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
    """Each intent's terms as routing matches them, compiled per language by `TermMatcher`."""
    out: dict[str, list[_Key]] = {}
    for intent, by_language in policy.vocabulary.items():
        keys = out.setdefault(intent, [])
        for language, terms in by_language.items():
            for term, weight in terms.items():
                m = TermMatcher.compile({intent: {language: {term: weight}}})
                keys += [_Key(intent, language, term, weight, f"stemmed:{algorithm}", phrase)
                         for algorithm, phrases in m.stemmed.items() for phrase in phrases]
                keys += [_Key(intent, language, term, weight, "substring", (key,)) for key, _ in m.substrings]
                keys += [_Key(intent, language, term, weight, "prefix", (key,)) for key, _ in m.prefixes]
    return out


def _pairs(a: list[_Key], b: list[_Key], *, covering: bool) -> list[tuple[_Key, _Key]]:
    """Every (x, y) with x in `a`, y in `b` that are the same (or, `covering`, one covers the other),
    in `a`'s then `b`'s order. Stemmed phrases are looked up by their sub-phrases rather than
    compared pair by pair, so a policy of thousands of terms lints in well under a second."""
    wanted = ("same", "covers") if covering else ("same",)
    by_match: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    by_part: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    unstemmed: dict[str, list[int]] = {}
    for j, y in enumerate(b):
        if y.mode.startswith("stemmed:"):
            by_match.setdefault((y.mode, y.match), []).append(j)
            for part in _sub_phrases(y.match):
                by_part.setdefault((y.mode, part), []).append(j)
        else:
            unstemmed.setdefault(y.mode, []).append(j)
    out: list[tuple[_Key, _Key]] = []
    for x in a:
        if x.mode.startswith("stemmed:"):
            found = set(by_match.get((x.mode, x.match), ()))
            if covering:
                found.update(by_part.get((x.mode, x.match), ()))  # y contains x
                for part in _sub_phrases(x.match):  # x contains y
                    found.update(by_match.get((x.mode, part), ()))
        else:
            found = {j for j in unstemmed.get(x.mode, ()) if x.relation(b[j]) in wanted}
        out += [(x, b[j]) for j in sorted(found)]
    return out


def _sub_phrases(phrase: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Every contiguous part of `phrase`, itself included."""
    n = len(phrase)
    return {phrase[i:k] for i in range(n) for k in range(i + 1, n + 1)}


# --- the rules ---------------------------------------------------------------------------------


def _exclude_conflicts(policy: Policy, keys: Mapping[str, list[_Key]]) -> Iterable[Finding]:
    for intent in INTENTS:
        for i, fragment in enumerate(policy.intent(intent).exclude):
            for other in INTENTS:
                if other == intent or fragment not in policy.intent(other).primary:
                    continue
                shared = _pairs(keys.get(intent, []), keys.get(other, []), covering=True)
                if not shared:
                    continue
                words = ", ".join(f"{x.language} {x.term!r}" + (f"/{y.term!r}" if y.term != x.term else "")
                                  for x, y in shared[:4]) + (" ..." if len(shared) > 4 else "")
                yield _finding("exclude-conflict", f"intents.{intent}.exclude[{i}]",
                               f"{intent} excludes {fragment}, which {other} holds as primary, and their "
                               f"vocabularies share terms ({words}): a question using them can route to "
                               f"{intent} and lose the {other} signal")


def _shared_terms(keys: Mapping[str, list[_Key]]) -> Iterable[Finding]:
    seen: set[tuple[str, str, str, str]] = set()
    for i, intent in enumerate(INTENTS):
        for other in INTENTS[i + 1:]:
            for x, y in _pairs(keys.get(intent, []), keys.get(other, []), covering=False):
                pair = (x.intent, x.term, y.intent, y.term)
                if pair in seen:
                    continue
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


def _missing_languages(policy: Policy) -> Iterable[Finding]:
    used = [lang for by_lang in policy.vocabulary.values() for lang, terms in by_lang.items() if terms]
    languages = list(dict.fromkeys(used))
    for intent in INTENTS:
        have = {lang for lang, terms in policy.vocabulary.get(intent, {}).items() if terms}  # type: ignore[call-overload]
        missing = [lang for lang in languages if lang not in have]
        if missing:
            yield _finding("missing-language", f"vocabulary.{intent}",
                           f"{intent} has no terms in {', '.join(missing)} (used by other intents): questions "
                           f"in {'that language' if len(missing) == 1 else 'those languages'} cannot reach "
                           f"{intent} by the rules")
