"""The policy's four term tables — vocabulary, clinical, fragment and scope terms — compiled once
per distinct table in a process, and what each finds in a question."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from coachctx.engine.matching.find import SharedWords
from coachctx.engine.matching.glued import split_glued
from coachctx.engine.matching.language import language_of_words
from coachctx.engine.matching.readings import may_have_readings
from coachctx.engine.matching.stems import part_stems, word_stems
from coachctx.engine.matching.table import TermMatcher, table_fingerprint
from coachctx.engine.matching.terms import CLINICAL_LABEL as CLINICAL_LABEL  # re-exported
from coachctx.engine.matching.terms import Term
from coachctx.engine.matching.unread import unread_words, word_kind
from coachctx.engine.policy import Policy
from coachctx.engine.text import Tokens, clear_word_memos, tokenise

if TYPE_CHECKING:
    from coachctx.engine.routing import Route

_COMPILED: dict[str, TermMatcher] = {}
_COMPILED_LIMIT: Final = 16
SCOPE_ORDER: Final = ("today", "week", "months")
"""Shortest horizon first: a tie between scopes goes to the earlier."""


def compile_shared(table: Mapping[Any, Mapping[Any, Mapping[str, float]]]) -> TermMatcher:
    """`TermMatcher.compile`, once per distinct table in this process: two policies with the same
    vocabulary (a candidate that changes only a budget) share one matcher and its word memos."""
    key = table_fingerprint(table)
    found = _COMPILED.get(key)
    if found is None:
        if len(_COMPILED) >= _COMPILED_LIMIT:
            _COMPILED.pop(next(iter(_COMPILED)))
        found = _COMPILED[key] = TermMatcher.compile(table)
    return found


_SHARED: dict[tuple[str, ...], SharedWords] = {}
_EVERY_SHARED: weakref.WeakSet[SharedWords] = weakref.WeakSet()
"""Every `SharedWords` still in use, also one a policy keeps after `_SHARED` let it go: `forget_words` reaches them all."""


def shared_words(policy: Policy) -> SharedWords:
    """The policy's four tables (vocabulary, clinical, fragment, scope) read together, once per
    distinct set of tables in this process, like `compile_shared`."""
    def build(p: Policy) -> SharedWords:
        matchers = tuple(m(p) for m in (vocabulary_matcher, clinical_matcher, fragment_matcher, scope_matcher))
        key = tuple(m.fingerprint for m in matchers)
        found = _SHARED.get(key)
        if found is None:
            if len(_SHARED) >= _COMPILED_LIMIT:
                _SHARED.pop(next(iter(_SHARED)))
            found = _SHARED[key] = SharedWords(matchers)
            _EVERY_SHARED.add(found)
        return found
    return policy.derived("shared_words", build)


def _found(tokens: Tokens, policy: Policy) -> tuple[tuple[Term, ...], ...]:
    """The terms of each of the policy's four tables in the question, found together once per question."""
    return shared_words(policy).find(tokens)


def vocabulary_in(question: str | Tokens, policy: Policy) -> tuple[Term, ...]:
    """`vocabulary_matcher(policy).find(question)`, found with the policy's other tables."""
    return _found(question if isinstance(question, Tokens) else tokenise(question), policy)[0]


def vocabulary_matcher(policy: Policy) -> TermMatcher:
    """Compiled once per policy object."""
    return policy.derived("vocabulary", lambda p: compile_shared(p.vocabulary))


def clinical_matcher(policy: Policy) -> TermMatcher:
    """The policy's clinical terms, compiled once."""
    return policy.derived("clinical", lambda p: compile_shared(
        {CLINICAL_LABEL: {lang: dict.fromkeys(terms, 1.0) for lang, terms in p.clinical_terms.items()}}))


def clinical_terms_in(question: str | Tokens, policy: Policy) -> list[str]:
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    return [t.term for t in _found(tokens, policy)[1]]


def unread_words_in(question: str | Tokens, policy: Policy) -> tuple[str, ...]:
    """The words of a question the policy cannot read (`unread_words`)."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    return unread_words(tokens.words, shared_words(policy))


def fragment_matcher(policy: Policy) -> TermMatcher:
    """The policy's fragment terms, compiled once: each fragment is a label."""
    return policy.derived("fragment_terms", lambda p: compile_shared(
        {name: {lang: dict.fromkeys(terms, 1.0) for lang, terms in by_language.items()}
         for name, by_language in p.fragment_terms.items()}))


def named_fragments_in(question: str | Tokens, policy: Policy) -> dict[str, list[str]]:
    """Fragment -> the fragment terms of the question that name it, in policy order."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    named: dict[str, list[str]] = {}
    for entry in _found(tokens, policy)[2]:
        named.setdefault(entry.label, []).append(entry.term)
    return {name: named[name] for name in policy.fragment_terms if name in named}


def scope_matcher(policy: Policy) -> TermMatcher:
    """The policy's scope vocabulary, compiled once."""
    return policy.derived("scopes", lambda p: compile_shared(
        {name: {lang: dict.fromkeys(terms, 1.0) for lang, terms in scope.terms.items()}
         for name, scope in p.scopes.items()}))


def infer_scope(question: str | Tokens, policy: Policy, decided: Route | None = None) -> tuple[str | None, list[str]]:
    """The horizon the question implies and the words that imply it. With several, the one
    with most matched terms wins; a tie goes to the shorter horizon (today < week < months). With
    none, the horizon its route's intent implies (`ScopePolicy.implied_by`: a question about the
    weather with no time word is about today's), named by the intent's matched terms."""
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    found = _found(tokens, policy)[3]
    if not found:
        return _implied_scope(policy, decided) if decided is not None else (None, [])
    by_scope: dict[str, list[str]] = {}
    for entry in found:
        by_scope.setdefault(entry.label, []).append(entry.term)
    best = max(by_scope, key=lambda s: (len(by_scope[s]), -SCOPE_ORDER.index(s)))
    return best, by_scope[best]


def _implied_scope(policy: Policy, decided: Route) -> tuple[str | None, list[str]]:
    for name, scope in policy.scopes.items():
        if decided.intent in scope.implied_by:
            terms = [term for term, _ in decided.scores.matched.get(decided.intent, ())]
            return name, [f"{t} (a {decided.intent} question)" for t in terms] or [f"(a {decided.intent} question)"]
    return None, []


def compile_matchers(policy: Policy) -> None:
    """Build every matcher a decision reads, now rather than on the first question."""
    shared_words(policy)


def forget_words(*policies: Policy) -> None:
    """Empty every per-word memo (word splits, scripts, stems, phrase starts, fuzzy, compound and
    run-together readings, which words may have readings, the languages of word sequences, which are
    everyday words), and the given
    policies' memoised routes and plans (lookup's, which a question's matched terms decide before the
    bundle is read, and the whole stages'): the state of a process that has never seen a question.
    For measuring never-seen questions."""
    clear_word_memos()
    word_stems.cache_clear()
    part_stems.cache_clear()
    split_glued.cache_clear()
    may_have_readings.cache_clear()
    language_of_words.cache_clear()
    word_kind.cache_clear()
    unread_words.cache_clear()
    for matcher in _COMPILED.values():
        matcher.starts.forget()
        matcher.readings.forget()
    for shared in _EVERY_SHARED:
        shared.forget()
    for policy in policies:
        for memo in ("routes", "lookups", "plans"):
            policy.derived(memo, lambda _: {}).clear()
