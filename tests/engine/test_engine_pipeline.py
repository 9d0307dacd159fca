"""`select()`: the whole chain. Every reason code is reachable, bad arguments are InputErrors, and the
Decision's bookkeeping (order, coverage, confidence, costs) holds."""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping
from dataclasses import FrozenInstanceError, dataclass, fields, is_dataclass
from typing import Any

import pytest
from engine_support import PAIN, StubClassifier

from coachctx.engine.decision import (
    NO_MATCH_CONFIDENCE,
    ROUTE_CONFIDENCE,
    ClinicalFlag,
    Decision,
    FrozenMap,
    ScopeChoice,
    frozen_map,
)
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, select
from coachctx.engine.plan import REASON_CODES, WITHHOLDING
from coachctx.engine.policy import Policy
from coachctx.engine.prompt import CONTEXT_HEADER
from coachctx.engine.services import Bundle
from coachctx.errors import InputError

# A question that routes to training by the rules whatever the coaches do to the weights.
TRAINING = "Plan my interval training: tempo workout, race pace, long run"

KNEE_MARATHON = "My knee hurts, can I run the marathon on Sunday?"
REASON_CASES: list[tuple[str, str, str, dict[str, Any], str]] = [
    # (code, question, athlete, select kwargs, fragment that carries it)
    ("not_requested", TRAINING, "maya", {}, "chronotype"),
    ("excluded", TRAINING, "maya", {}, "readiness_injury"),
    ("dropped_by_scope", TRAINING, "maya", {"scope": "week"}, "conditions_today"),
    ("unreachable", TRAINING, "omar", {}, "readiness_training"),
    ("never_computed", TRAINING, "ines", {}, "baseline_aerobic"),
    ("empty_field", PAIN, "tom", {}, "readiness_injury"),
    ("over_budget", TRAINING, "maya", {"tier": "free"}, "athlete_profile"),  # 40 of 50 spent first
    ("promoted_by_scope", TRAINING, "maya", {"scope": "today"}, "conditions_today"),
    ("demoted_by_scope", TRAINING, "maya", {"scope": "week"}, "readiness_training"),
    ("kept_despite_exclude", PAIN, "maya", {}, "readiness_injury"),
    # training wins outright, injury has evidence: its primaries come along ahead of the secondaries
    ("evidence_in_question", KNEE_MARATHON, "lucia", {}, "baseline_mobility"),
    ("clinical_question", KNEE_MARATHON, "lucia", {}, "readiness_injury"),
    # Hungarian, a language the policy has no terms in: "my knee hurts after running, can I run tomorrow?"
    ("unread_question", "Fáj a térdem futás után, futhatok holnap?", "maya", {"tier": "free"}, "readiness_injury"),
    # no term matches, and a model's label is a guess: the unmatched set's injury readiness stays
    ("unmatched_question", "a wasp got me on the ear", "maya", {"classifier": StubClassifier("general")},
     "readiness_injury"),
]


def _codes(d: Decision) -> set[str]:
    return {r.code for f in d.fragments for r in f.reasons}


def parts(value: Any, path: str = "decision") -> Iterator[tuple[str, Any]]:
    """`value` and everything inside it, each with its path: record fields, mapping values, items."""
    yield path, value
    if is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from parts(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from parts(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple | list | set):
        for i, item in enumerate(value):
            yield from parts(item, f"{path}[{i}]")


def changeable(value: Any) -> list[str]:
    """Where inside `value` something could be changed in place: a record that is not frozen, a
    mapping that is not a FrozenMap, or a container other than a tuple."""
    found = []
    for path, part in parts(value):
        if is_dataclass(part):
            if not type(part).__dataclass_params__.frozen:  # type: ignore[attr-defined]
                found.append(f"{path}: {type(part).__name__} is not frozen")
        elif isinstance(part, Mapping):
            if not isinstance(part, FrozenMap):
                found.append(f"{path}: a {type(part).__name__}")
        elif not isinstance(part, tuple | str | int | float | bool | None):
            found.append(f"{path}: a {type(part).__name__}")
    return found


class TestReasonCodes:
    @pytest.mark.parametrize(("code", "question", "athlete", "kwargs", "fragment"), REASON_CASES,
                             ids=[c[0] for c in REASON_CASES])
    def test_reachable(self, policy: Policy, bundles: dict[str, Bundle], code: str, question: str, athlete: str,
                       kwargs: dict[str, Any], fragment: str) -> None:
        d = select(question, bundles[athlete], policy, **kwargs)
        f = d.fragment(fragment)
        assert code in [r.code for r in f.reasons], f.reasons
        assert (f.status == "withheld") is (code in WITHHOLDING)
        assert all(r.detail for r in f.reasons)

    def test_the_cases_cover_every_code(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        seen: set[str] = set()
        for _, question, athlete, kwargs, _ in REASON_CASES:
            seen |= _codes(select(question, bundles[athlete], policy, **kwargs))
        assert seen == set(REASON_CODES)
        assert len(REASON_CODES) == 14

    def test_a_withheld_row_names_the_first_withholding_reason(self, policy: Policy, maya: Bundle) -> None:
        d = select(TRAINING, maya, policy, scope="week", tier="free")
        rows = {w.fragment: w for w in d.withheld}
        # demoted first (a note), then cut by the budget: the row names the cut
        assert [r.code for r in d.fragment("readiness_training").reasons] == ["demoted_by_scope", "over_budget"]
        assert rows["readiness_training"].reason == "over_budget"
        assert set(rows) == {f.name for f in d.fragments if f.status == "withheld"}


class TestSelectInput:
    @pytest.mark.parametrize(("question", "message"), [
        ("", r"^question is empty: type what the athlete asked$"),
        ("  \n\t ", r"^question is empty"),
        ("x" * (MAX_QUESTION_CHARS + 1), rf"^question is {MAX_QUESTION_CHARS + 1} characters; the limit is "
                                         rf"{MAX_QUESTION_CHARS}$"),
    ])
    def test_unusable_questions(self, policy: Policy, maya: Bundle, question: str, message: str) -> None:
        with pytest.raises(InputError, match=message):
            select(question, maya, policy)

    def test_the_limit_is_on_the_stripped_question(self, policy: Policy, maya: Bundle) -> None:
        d = select("  " + "x" * MAX_QUESTION_CHARS + "  ", maya, policy)
        assert len(d.question) == MAX_QUESTION_CHARS

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"scope": "year"}, r"^unknown scope 'year'; use one of: auto, today, week, months$"),
        ({"tier": "gold"}, r"^unknown tier 'gold'; the policy defines: free, paid"),
        ({"cost_mode": "guess"}, r"^unknown cost mode 'guess'; use hand or measured$"),
        ({"budget": -1}, r"^budget must be a whole number from 0 to 1000000, got -1$"),
        ({"budget": True}, r"^budget must be a whole number from 0 to 1000000, got True$"),
        ({"budget": 1.5}, r"^budget must be a whole number from 0 to 1000000, got 1\.5$"),
    ])
    def test_unusable_arguments(self, policy: Policy, maya: Bundle, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(InputError, match=message):
            select(PAIN, maya, policy, **kwargs)

    def test_a_custom_budget_overrides_the_tier(self, policy: Policy, maya: Bundle) -> None:
        d = select(PAIN, maya, policy, tier="free", budget=0)
        assert (d.tier, d.budget) == ("custom", 0)
        assert all(f.role == "primary" for f in d.fragments if f.status == "selected")

    def test_tiers_come_from_the_policy(self, policy: Policy, maya: Bundle) -> None:
        assert select(PAIN, maya, policy, tier="free").budget == policy.tiers["free"] == 50
        assert select(PAIN, maya, policy, tier="paid").budget == policy.tiers["paid"] == 1400


class TestDecision:
    def test_every_fragment_once_and_selected_in_prompt_order(self, policy: Policy, maya: Bundle) -> None:
        d = select(PAIN, maya, policy)
        assert sorted(f.name for f in d.fragments) == sorted(FRAGMENT_NAMES)
        assert list(d.selected) == [f.name for f in d.fragments if f.status == "selected"]
        context = d.prompt.messages[0].content.split(CONTEXT_HEADER + "\n", 1)[1]
        assert context.split("\n") == [d.fragment(name).line for name in d.selected]

    def test_costs_follow_the_cost_mode(self, policy: Policy, maya: Bundle) -> None:
        hand = select(PAIN, maya, policy, cost_mode="hand")
        measured = select(PAIN, maya, policy, cost_mode="measured")
        assert [f.cost for f in hand.fragments] == [f.cost_hand for f in hand.fragments]
        assert [f.cost for f in measured.fragments] == [f.cost_measured for f in measured.fragments]
        assert measured.tokens.cost_mode == "measured"
        assert any(f.cost_hand != f.cost_measured for f in hand.fragments)

    def test_coverage_counts_requested_fragments_that_arrived(self, policy: Policy,
                                                             bundles: dict[str, Bundle]) -> None:
        d = select(TRAINING, bundles["omar"], policy)
        requested = [f for f in d.fragments if f.role != "none"]
        missing = [f for f in requested if any(r.code == "unreachable" for r in f.reasons)]
        assert missing and d.coverage == round(1 - len(missing) / len(requested), 4)

    def test_a_budget_cut_does_not_lower_coverage(self, policy: Policy, maya: Bundle) -> None:
        d = select(TRAINING, maya, policy, budget=0)
        cut = [f.name for f in d.fragments if any(r.code == "over_budget" for r in f.reasons)]
        assert cut, "the zero budget must cut a secondary for this test to mean anything"
        assert d.coverage == 1.0

    def test_confidence_accounts_for_the_route(self, policy: Policy, maya: Bundle) -> None:
        rules = select(TRAINING, maya, policy)
        fallback = select(PAIN, maya, policy)
        model = select(PAIN, maya, policy, classifier=StubClassifier("injury"))
        nothing = select("hmm?", maya, policy)
        assert (rules.intent.source, fallback.intent.source, model.intent.source) == \
            ("rules", "fallback", "model")
        assert rules.confidence == 1.0 * rules.coverage == ROUTE_CONFIDENCE["rules"]
        assert model.confidence == ROUTE_CONFIDENCE["model"] < rules.confidence
        assert fallback.confidence == ROUTE_CONFIDENCE["fallback"] < model.confidence
        assert nothing.intent.matched_nothing is True
        assert nothing.confidence == NO_MATCH_CONFIDENCE

    def test_a_given_scope_wins_over_the_inferred_one(self, policy: Policy, maya: Bundle) -> None:
        d = select("Can I add more mileage next week?", maya, policy, scope="months")
        assert d.scope == ScopeChoice(requested="months", effective="months", inferred_from=None)
        auto = select("Can I add more mileage next week?", maya, policy)
        assert auto.scope.requested == "auto" and auto.scope.effective == "week"
        assert "next week" in auto.scope.inferred_from

    def test_the_clinical_flag(self, policy: Policy, maya: Bundle) -> None:
        assert select(PAIN, maya, policy).clinical == ClinicalFlag(is_clinical=True, terms=("pain",))
        assert select(TRAINING, maya, policy).clinical.is_clinical is False

    def test_a_recorded_route_is_replayed_instead_of_routing_again(self, policy: Policy, maya: Bundle) -> None:
        from coachctx.engine.routing import route

        recorded = route(PAIN, policy, StubClassifier("injury"))
        model = StubClassifier("training")
        d = select(PAIN, maya, policy, classifier=model, recorded_route=recorded)
        assert (d.intent.name, d.intent.source) == ("injury", "model")
        assert model.asked == []

    def test_a_plan_shared_by_two_routes_keeps_each_routes_warnings(self, policy: Policy, maya: Bundle) -> None:
        # a failed model falls back alike, to the same (memoised) plan; the audit's notes follow the route
        timeout = StubClassifier(None, error="timeout", timed_out=True)
        slow, failed = (select(PAIN, maya, policy, classifier=c) for c in (timeout, StubClassifier(None, error="500")))
        assert slow.selected == failed.selected and slow.fragments == failed.fragments
        assert "the model could not route this question (model_timeout); fell back to training" in slow.warnings
        assert "the model could not route this question (model_error); fell back to training" in failed.warnings
        assert not {w for w in slow.warnings if "model_error" in w} | {w for w in failed.warnings if "timeout" in w}

    def test_a_fresh_bundle_object_decides_alike(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        for bundle in bundles.values():
            again = Bundle(bundle.athlete, dict(bundle.results), bundle.city, bundle.language)
            for question in (PAIN, TRAINING, KNEE_MARATHON):
                assert select(question, again, policy).to_json() == select(question, bundle, policy).to_json()

    def test_small_records_are_shared_only_when_equal(self, policy: Policy, maya: Bundle) -> None:
        pain, training = (select(q, maya, policy) for q in (PAIN, TRAINING))
        assert select(PAIN, maya, policy).clinical is pain.clinical
        assert training.clinical != pain.clinical and training.scope is pain.scope
        elsewhere = select(PAIN, maya, policy, policy_source="elsewhere.yaml").policy
        assert elsewhere.source == "elsewhere.yaml" and pain.policy.source == "policy/default.yaml"

    def test_the_decision_is_deeply_frozen(self, policy: Policy, maya: Bundle) -> None:
        # a model route, so the model's record is there to try too
        d = select(PAIN, maya, policy, classifier=StubClassifier("injury"))
        assert d.intent.model is not None and d.withheld
        walked = [*parts(d), *parts(d.withheld, "decision.withheld")]
        assert {type(v).__name__ for _, v in walked} >= {"Decision", "IntentChoice", "ModelCall", "FragmentDecision",
                                                          "Reason", "Message", "ServiceStatus", "Withheld", "FrozenMap"}
        assert changeable(d) == [] and changeable(d.withheld) == []
        for _, part in walked:  # every field of every record, every mapping, down to the last
            if is_dataclass(part):
                for f in fields(part):
                    with pytest.raises(FrozenInstanceError, match=rf"^cannot assign to field '{f.name}'$"):
                        setattr(part, f.name, None)
            elif isinstance(part, Mapping):
                with pytest.raises(TypeError, match="does not support item assignment"):
                    part["training"] = None  # type: ignore[index]

    def test_the_frozen_check_sees_what_could_be_changed_in_place(self) -> None:
        @dataclass
        class Loose:
            items: list[int]
            table: dict[str, int]

        @dataclass(frozen=True)
        class Outer:
            inner: Loose
            names: tuple[str, ...]
            scores: Mapping[str, float]

        value = Outer(Loose([1], {"a": 1}), ("a",), frozen_map({"x": 1.0}))
        assert changeable(value) == ["decision.inner: Loose is not frozen", "decision.inner.items: a list",
                                     "decision.inner.table: a dict"]

    def test_the_decision_pickles_whole(self, policy: Policy, maya: Bundle) -> None:
        # the playground's cache pickles what it keeps; a read-only mapping must survive that
        d = select(PAIN, maya, policy, classifier=StubClassifier("injury"))
        again = pickle.loads(pickle.dumps(d))
        assert again == d and again.to_json() == d.to_json()
        with pytest.raises(TypeError, match="does not support item assignment"):
            again.intent.scores["injury"] = 0.0  # type: ignore[index]
