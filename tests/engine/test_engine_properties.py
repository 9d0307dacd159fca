"""Properties of `select()` over generated input (hypothesis): nothing crashes it, the budget never
cuts primary, a confident rules route never lets an excluded fragment through, and with the fix the
audit never finds a contender's primary excluded."""

from __future__ import annotations

import json

from engine_support import StubClassifier
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from coachctx.engine.decision import Decision
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.matching import named_fragments_in
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, select
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.services import Bundle
from coachctx.errors import InputError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ATHLETES = ("ines", "kenji", "lucia", "maya", "omar", "priya", "tom")
SCOPES = ("auto", "today", "week", "months")
MISSING = {"unreachable", "never_computed", "empty_field"}

any_text = st.one_of(
    st.text(max_size=200),
    st.text(st.characters(exclude_categories=()), max_size=80),  # lone surrogates, controls, private use
    st.text(alphabet=" \t\n\u200b\u3000", max_size=20),  # nothing but blanks
    st.integers(MAX_QUESTION_CHARS - 2, MAX_QUESTION_CHARS + 2).map(lambda n: "é" * n),
)


def _terms(policy: Policy, intents: tuple[str, ...] = INTENTS) -> list[str]:
    return sorted({t for i in intents for terms in policy.vocabulary.get(i, {}).values() for t in terms})  # type: ignore[call-overload]


def _vocabulary_question(data: st.DataObject, policy: Policy) -> str:
    """Words the rules know, from one or several intents, with noise between them."""
    intents = data.draw(st.lists(st.sampled_from(INTENTS), min_size=1, max_size=3, unique=True))
    words = data.draw(st.lists(st.one_of(st.sampled_from(_terms(policy, tuple(intents))),
                                         st.sampled_from(["the", "?", "and", "today", "next week", "season", "!"])),
                               min_size=1, max_size=12))
    return " ".join(words)


def _check_invariants(d: Decision) -> None:
    assert sorted(f.name for f in d.fragments) == sorted(FRAGMENT_NAMES)
    assert set(d.selected) <= set(FRAGMENT_NAMES)
    assert list(d.selected) == [f.name for f in d.fragments if f.status == "selected"]
    for f in d.fragments:
        if f.status == "withheld":
            assert f.reasons, f
    assert 0.0 <= d.confidence <= d.coverage <= 1.0
    assert d.intent.name in INTENTS
    assert d.tokens.prompt > 0 and d.tokens.naive > 0
    json.dumps(d.to_json(), ensure_ascii=False)


class TestSelectProperties:
    @SETTINGS
    @given(question=any_text, athlete=st.sampled_from(ATHLETES), scope=st.sampled_from(SCOPES),
           label=st.one_of(st.none(), st.sampled_from([*INTENTS, "banana", ""])))
    def test_no_question_crashes_select(self, policy: Policy, bundles: dict[str, Bundle], question: str,
                                        athlete: str, scope: str, label: str | None) -> None:
        classifier = None if label is None else StubClassifier(label)
        stripped = question.strip()
        try:
            d = select(question, bundles[athlete], policy, scope=scope, classifier=classifier)
        except InputError as e:
            assert not stripped or len(stripped) > MAX_QUESTION_CHARS, e
            return
        assert stripped and len(stripped) <= MAX_QUESTION_CHARS
        _check_invariants(d)

    @SETTINGS
    @given(data=st.data(), athlete=st.sampled_from(ATHLETES), scope=st.sampled_from(SCOPES),
           budget=st.one_of(st.integers(0, 2000), st.sampled_from(["free", "paid"])),
           cost_mode=st.sampled_from(["hand", "measured"]))
    def test_primary_is_never_cut_by_the_budget(self, policy: Policy, bundles: dict[str, Bundle],
                                                data: st.DataObject, athlete: str, scope: str, budget: int | str,
                                                cost_mode: str) -> None:
        question = _vocabulary_question(data, policy)
        kwargs = {"tier": budget} if isinstance(budget, str) else {"budget": budget}
        d = select(question, bundles[athlete], policy, scope=scope, cost_mode=cost_mode, **kwargs)  # type: ignore[arg-type]
        for f in d.fragments:
            codes = {r.code for r in f.reasons}
            if f.role == "primary":
                assert "over_budget" not in codes, f
                if f.status == "withheld":
                    assert codes & (MISSING | {"dropped_by_scope"}), f
        spent = sum(f.cost for f in d.fragments if f.role == "secondary" and f.status == "selected")
        assert spent == d.tokens.budget_spent <= d.budget
        _check_invariants(d)

    @SETTINGS
    @given(data=st.data(), athlete=st.sampled_from(ATHLETES), scope=st.sampled_from(SCOPES),
           tier=st.sampled_from(["free", "paid"]))
    def test_a_confident_rules_route_never_selects_an_excluded_fragment(
            self, policy: Policy, bundles: dict[str, Bundle], data: st.DataObject, athlete: str, scope: str,
            tier: str) -> None:
        intent = data.draw(st.sampled_from(INTENTS))
        terms = _terms(policy, (intent,))
        assume(terms)
        # several of one intent's terms make a clean win likely; noise from other intents keeps it honest
        words = data.draw(st.lists(st.sampled_from(terms), min_size=1, max_size=8))
        words += data.draw(st.lists(st.sampled_from(_terms(policy)), max_size=2))
        d = select(" ".join(words), bundles[athlete], policy, scope=scope, tier=tier,
                   classifier=StubClassifier("general"))
        event(f"route {d.intent.source}")
        assume(d.intent.source == "rules")
        assert d.intent.confident is True
        named = named_fragments_in(d.question, policy)
        scoring = [i for i, v in d.intent.scores.items() if v > 0]
        for name in policy.intent(d.intent.name).exclude:
            f = d.fragment(name)
            protected = any(name in policy.intent(i).primary for i in scoring) or name in named or (
                name == "readiness_injury" and d.clinical.is_clinical)
            codes = [r.code for r in f.reasons]
            if protected:  # evidence in the question beats the exclude
                assert "kept_despite_exclude" in codes and "excluded" not in codes
            else:
                assert name not in d.selected
                assert f.status == "withheld"
                assert "excluded" in codes

    @SETTINGS
    @given(data=st.data(), label=st.sampled_from([*INTENTS, "banana"]), scope=st.sampled_from(SCOPES))
    def test_with_the_fix_the_audit_never_finds_a_contender_s_primary_excluded(
            self, policy: Policy, maya: Bundle, data: st.DataObject, label: str, scope: str) -> None:
        question = _vocabulary_question(data, policy)
        d = select(question, maya, policy, scope=scope, classifier=StubClassifier(label))
        event(f"route {d.intent.source}")
        assert [w for w in d.warnings if "exclude removed" in w] == []
        # on every route, not only uncertain ones: a contender, or any intent with evidence in the
        # question, never loses a primary to an exclude (a rules route's contender is its winner)
        with_evidence = [i for i, v in d.intent.scores.items() if v > 0]
        for intent in dict.fromkeys([*d.intent.contenders, *with_evidence]):
            for name in policy.intent(intent).primary:
                assert "excluded" not in [r.code for r in d.fragment(name).reasons], (intent, name)


class TestPainInvariant:
    """Evidence beats exclusion: a question mixing pain and training words keeps both readiness
    signals, in every language the policy speaks, whatever the scores and whoever routed it."""

    @SETTINGS
    @given(data=st.data(), label=st.sampled_from([None, *INTENTS, "banana"]),
           scope=st.sampled_from(["auto", "today", "week"]), tier=st.sampled_from(["free", "paid"]))
    def test_pain_plus_training_keeps_both_readiness_signals(
            self, policy: Policy, maya: Bundle, data: st.DataObject, label: str | None, scope: str,
            tier: str) -> None:
        language = data.draw(st.sampled_from(sorted(set(policy.clinical_terms) & set(policy.vocabulary["training"]))))
        pain = sorted(policy.clinical_terms[language])  # type: ignore[index]
        training = sorted(policy.vocabulary["training"][language])  # type: ignore[index]
        words = data.draw(st.lists(st.sampled_from(pain), min_size=1, max_size=3))
        words += data.draw(st.lists(st.sampled_from(training), min_size=1, max_size=6))
        words = data.draw(st.permutations(words))
        question = " ".join(words)
        d = select(question, maya, policy, scope=scope, tier=tier,
                   classifier=None if label is None else StubClassifier(label))
        event(f"route {d.intent.source}; scope {d.scope.effective}")
        assert d.clinical.is_clinical, question
        assert "readiness_injury" in d.selected, (question, d.intent.scores)
        training = d.fragment("readiness_training")
        by_scope = {"demoted_by_scope", "dropped_by_scope"} & {r.code for r in training.reasons}
        # a horizon of a week or months moves this morning's readiness on purpose, with its own reason;
        # nothing else may take it away
        assert "readiness_training" in d.selected or by_scope, (question, d.intent.scores, training.reasons)
        assert not [w for w in d.warnings if "exclude removed" in w or "sounds clinical" in w]
