"""Stage: policy lookup, called directly. What the routed intent and its contenders ask for, what
they exclude, and what the question names or gives evidence of."""

from __future__ import annotations

from typing import Any

from engine_support import INJURY_PRIMARY, MINI_VOCABULARY, TRAINING_PRIMARY, codes, derive_policy

from coachctx.engine.budget import SpendBudget
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.lookup import lookup
from coachctx.engine.pipeline import select
from coachctx.engine.plan import Reason
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.services import Bundle


class TestLookup:
    def test_certain_routing_applies_the_intent_as_written(self, policy: Policy) -> None:
        plan = lookup(policy, "training", ["training"])
        assert plan.selected == [*TRAINING_PRIMARY, "conditions_today", "athlete_profile"]
        assert [s.role for s in plan.fragments[:5]] == ["primary"] * 3 + ["secondary"] * 2
        assert plan["readiness_injury"].status == "withheld"
        assert plan["readiness_injury"].reasons == (Reason("excluded", "the training intent excludes it"),)
        assert plan["readiness_recovery"].reasons == (Reason("excluded", "the training intent excludes it"),)
        assert plan["chronotype"].reasons == (
            Reason("not_requested", "training neither asks for nor excludes it"),)

    def test_every_fragment_appears_exactly_once(self, policy: Policy) -> None:
        for intent in INTENTS:
            plan = lookup(policy, intent, [intent, "injury"])
            assert sorted(s.name for s in plan.fragments) == sorted(FRAGMENT_NAMES)

    def test_uncertain_routing_takes_the_union_of_primaries_and_softens_excludes(self, policy: Policy) -> None:
        plan = lookup(policy, "training", ["training", "injury"])
        assert [s.name for s in plan.fragments if s.role == "primary"] == TRAINING_PRIMARY + INJURY_PRIMARY
        assert [s.name for s in plan.fragments if s.role == "secondary"] == ["conditions_today", "athlete_profile"]
        assert plan["readiness_injury"].status == "selected"
        assert plan["readiness_injury"].reasons == (Reason(
            "kept_despite_exclude",
            "training excludes it, but routing is uncertain and injury needs it as primary"),)
        assert codes(plan, "readiness_training") == ["kept_despite_exclude"]
        assert "and training needs it as primary" in plan["readiness_training"].reasons[0].detail

    def test_an_exclude_still_applies_when_no_contender_asks_for_the_fragment(self, policy: Policy) -> None:
        plan = lookup(policy, "training", ["training", "injury"])
        assert plan["readiness_nutrition"].reasons == (Reason(
            "excluded", "injury excludes it and no contender (training and injury) asks for it"),)
        assert plan["chronotype"].reasons == (
            Reason("not_requested", "training and injury neither asks for nor excludes it"),)

    def test_the_routed_intent_leads_the_prompt_order(self, policy: Policy) -> None:
        plan = lookup(policy, "injury", ["training", "injury"])
        assert plan.selected[:6] == INJURY_PRIMARY + TRAINING_PRIMARY

    def test_soften_excludes_false_reproduces_the_original(self, policy: Policy) -> None:
        original = lookup(policy, "training", ["training", "injury"], soften_excludes=False)
        assert original == lookup(policy, "training", ["training"])
        assert "readiness_injury" not in original.selected
        assert codes(original, "readiness_injury") == ["excluded"]
        assert codes(original, "baseline_mobility") == ["not_requested"]

    def test_evidence_primaries_are_spent_first_but_budgeted_without_pain(self, policy: Policy) -> None:
        evidence = {"injury": [("sore", 1.0)], "recovery": [("tired", 1.0)], "training": [("race", 0.5)]}
        plan = lookup(policy, "injury", ["injury"], evidence=evidence)
        for name in ("readiness_recovery", "readiness_training"):
            assert (plan[name].role, plan[name].codes[0]) == ("secondary", "evidence_in_question"), name
        # on the free tier's 50 tokens the first evidence line (recovery scored more) takes them all
        spent = SpendBudget(50, {s.name: 45 for s in plan.fragments})(plan)
        assert "readiness_recovery" in spent.selected and "readiness_training" not in spent.selected

    def test_with_pain_evidence_primaries_are_primaries_the_budget_cannot_cut(self, policy: Policy) -> None:
        # the shape of 疲労骨折 に向け ("stress fracture", "toward"): fatigue inside the clinical term
        # gave recovery more evidence than training, and the training readiness lost the free budget
        evidence = {"injury": [("sore", 1.0)], "recovery": [("tired", 1.0)], "training": [("race", 0.5)]}
        plan = lookup(policy, "injury", ["injury"], evidence=evidence, clinical=["sore"])
        for name in ("readiness_recovery", "readiness_training", "training_block"):
            assert plan[name].role == "primary", name
            assert "the question sounds clinical, so the budget does not cut it" in plan[name].reasons[0].detail
        spent = SpendBudget(0, {s.name: 45 for s in plan.fragments})(plan)
        assert {"readiness_injury", "readiness_recovery", "readiness_training"} <= set(spent.selected)

    def test_a_secondary_wanted_by_one_contender_is_kept_despite_another_s_exclude(self, policy: Policy) -> None:
        plan = lookup(policy, "recovery", ["recovery", "conditions"])
        state = plan["conditions_today"]
        assert (state.role, state.status) == ("primary", "selected")
        assert state.reasons[0].code == "kept_despite_exclude"
        assert state.reasons[0].detail.startswith("recovery excludes it, but routing is uncertain and conditions")


def _naming(policy: Policy) -> Policy:
    """The default intents with a vocabulary and fragment terms written by the test."""

    def change(data: dict[str, Any]) -> None:
        data["vocabulary"] = MINI_VOCABULARY
        data["fragment_terms"] = {"baseline_strength": {"en": ["deadlift", "squat"]},
                                  "chronotype": {"en": ["night owl"], "de": ["Nachteule"]}}

    return derive_policy(policy, change)


class TestFragmentTerms:
    def test_a_named_fragment_is_the_first_secondary_with_the_terms_as_its_reason(self, policy: Policy) -> None:
        p = _naming(policy)
        plan = lookup(p, "training", ("training",), named={"baseline_strength": ["deadlift"]})
        assert [s.name for s in plan.fragments if s.role == "secondary"][0] == "baseline_strength"
        [reason] = plan["baseline_strength"].reasons
        assert (reason.code, reason.detail) == (
            "evidence_in_question", "the question names it (deadlift), so it is spent before generic secondaries")

    def test_no_exclude_withholds_a_named_fragment(self, policy: Policy) -> None:
        p = _naming(policy)
        assert "baseline_strength" in p.intent("conditions").exclude
        plan = lookup(p, "conditions", ("conditions",), named={"baseline_strength": ["deadlift", "squat"]})
        assert plan["baseline_strength"].status == "selected"
        assert codes(plan, "baseline_strength") == ["evidence_in_question", "kept_despite_exclude"]
        assert plan["baseline_strength"].reasons[1].detail == (
            "conditions excludes it, but the question names it (deadlift, squat)")

    def test_a_named_primary_stays_primary_and_gains_no_reason(self, policy: Policy) -> None:
        plan = lookup(_naming(policy), "injury", ("injury",), named={"baseline_strength": ["squat"]})
        assert plan["baseline_strength"].role == "primary"
        assert plan["baseline_strength"].reasons == ()

    def test_the_original_design_ignores_fragment_terms(self, policy: Policy) -> None:
        p = _naming(policy)
        assert lookup(p, "conditions", ("conditions",), soften_excludes=False,
                      named={"baseline_strength": ["squat"]}) == lookup(p, "conditions", ("conditions",),
                                                                          soften_excludes=False)

    def test_select_finds_the_terms_in_any_language_and_spends_them_first(self, policy: Policy,
                                                                          maya: Bundle) -> None:
        p = _naming(policy)
        d = select("Is the heat too much for my deadlifts outside? I am a Nachteule anyway", maya, p, budget=40)
        by_name = {f.name: f for f in d.fragments}
        assert d.intent.name == "conditions"
        assert by_name["baseline_strength"].status == "selected"
        assert by_name["chronotype"].role == "secondary"
        later = [f for f in d.fragments if f.role == "secondary" and f.name not in ("baseline_strength", "chronotype")]
        assert later and all(f.status == "withheld" for f in later)
        assert by_name["baseline_strength"].reasons[0].detail.startswith("the question names it (deadlift)")

    def test_a_question_no_vocabulary_term_matched_still_gets_what_it_names(self, policy: Policy,
                                                                          maya: Bundle) -> None:
        d = select("ugh, a night owl like me", maya, _naming(policy))
        assert d.intent.matched_nothing
        chrono = next(f for f in d.fragments if f.name == "chronotype")
        assert (chrono.status, chrono.role) == ("selected", "secondary")
        assert chrono.reasons[0].code == "evidence_in_question"
