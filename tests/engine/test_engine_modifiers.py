"""Stage: scope modifiers, called directly. A time horizon promotes, demotes or drops a fragment with
the policy's reason, and never overrides an exclude."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import codes, derive_policy

from coachctx.engine.lookup import lookup
from coachctx.engine.modifiers import ApplyScope
from coachctx.engine.plan import Reason
from coachctx.engine.policy import INTENTS, Policy


@pytest.fixture(scope="module")
def scoped(policy: Policy) -> Policy:
    """The default intents with scope modifiers written here, reason strings and all."""

    def change(data: dict[str, Any]) -> None:
        data["scopes"] = {
            "today": {"terms": {"en": ["tonight"]}, "modifiers": [
                {"action": "promote", "fragment": "conditions_today", "reason": "weather shapes today",
                 "intents": ["training"]},
                {"action": "promote", "fragment": "chronotype", "reason": "time of day matters"},
                {"action": "promote", "fragment": "readiness_injury", "reason": "injury today"},
            ]},
            "week": {"terms": {"en": ["week"]}, "modifiers": [
                {"action": "demote", "fragment": "readiness_training", "reason": "a morning says little about a week"},
                {"action": "drop", "fragment": "conditions_today", "reason": "today's weather is not next week's"},
                {"action": "drop", "fragment": "chronotype", "reason": "never asked anyway"},
            ]},
            "months": {"terms": {"en": ["season"]}, "modifiers": []},
        }

    return derive_policy(policy, change)


class TestApplyScope:
    def test_promote_makes_a_fragment_primary_with_the_policy_reason(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "today", ["training"])(lookup(scoped, "training", ["training"]))
        state = plan["conditions_today"]
        assert (state.role, state.status) == ("primary", "selected")
        assert state.reasons == (Reason("promoted_by_scope", "scope today: weather shapes today"),)
        assert [s.role for s in plan.fragments].index("secondary") == 5  # four primaries first, then the rest

    def test_promote_of_an_unrequested_fragment_replaces_not_requested(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "today", ["training"])(lookup(scoped, "training", ["training"]))
        assert plan["chronotype"].reasons == (Reason("promoted_by_scope", "scope today: time of day matters"),)
        assert plan["chronotype"].status == "selected"

    def test_promote_never_overrides_an_exclude(self, scoped: Policy) -> None:
        stage = ApplyScope(scoped, "today", ["training"])
        plan = stage(lookup(scoped, "training", ["training"]))
        assert plan["readiness_injury"].status == "withheld"
        assert codes(plan, "readiness_injury") == ["excluded"]
        assert plan.warnings == ("scope today promotes readiness_injury, but the routed intent excludes it; "
                                 "the exclude wins",)

    def test_modifiers_limited_to_intents_skip_other_routes(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "today", ["injury"])(lookup(scoped, "injury", ["injury"]))
        assert plan["conditions_today"].role == "secondary"
        assert "promoted_by_scope" not in codes(plan, "conditions_today")

    def test_a_contender_is_enough_for_an_intent_limited_modifier(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "today", ["injury", "training"])(lookup(scoped, "injury", ["injury", "training"]))
        assert plan["conditions_today"].role == "primary"

    def test_a_drop_named_for_some_intents_spares_what_another_contender_holds_as_primary(
            self, policy: Policy) -> None:
        def change(data: dict[str, Any]) -> None:
            data["scopes"]["week"]["modifiers"] = [
                {"action": "drop", "fragment": "conditions_today", "reason": "not next week's weather",
                 "intents": ["training"]}]

        p = derive_policy(policy, change)
        contested = ["conditions", "training"]
        plan = ApplyScope(p, "week", contested)(lookup(p, "conditions", contested))
        assert (plan["conditions_today"].status, plan["conditions_today"].role) == ("selected", "primary")
        alone = ApplyScope(p, "week", ["training"])(lookup(p, "training", ["training"]))
        assert codes(alone, "conditions_today") == ["dropped_by_scope"]

    def test_demote_moves_a_primary_to_the_end_of_the_secondaries(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "week", ["training"])(lookup(scoped, "training", ["training"]))
        state = plan["readiness_training"]
        assert (state.role, state.status) == ("secondary", "selected")
        assert state.reasons == (Reason("demoted_by_scope", "scope week: a morning says little about a week"),)
        requested = [s.name for s in plan.fragments if s.role != "none"]
        assert requested[-1] == "readiness_training"

    def test_drop_withholds_a_requested_fragment(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "week", ["training"])(lookup(scoped, "training", ["training"]))
        assert plan["conditions_today"].status == "withheld"
        assert plan["conditions_today"].reasons == (
            Reason("dropped_by_scope", "scope week: today's weather is not next week's"),)

    def test_drop_leaves_an_unrequested_fragment_alone(self, scoped: Policy) -> None:
        plan = ApplyScope(scoped, "week", ["training"])(lookup(scoped, "training", ["training"]))
        assert codes(plan, "chronotype") == ["not_requested"]

    def test_no_scope_changes_nothing(self, scoped: Policy) -> None:
        before = lookup(scoped, "training", ["training"])
        assert ApplyScope(scoped, None, ["training"])(before) == before

    def test_the_checked_in_reasons_travel_verbatim(self, policy: Policy) -> None:
        applied = 0
        for scope, scope_policy in policy.scopes.items():
            for m in scope_policy.modifiers:
                for intent in m.intents or INTENTS:
                    plan = ApplyScope(policy, scope, [intent])(lookup(policy, intent, [intent]))
                    details = [r.detail for r in plan[m.fragment].reasons]
                    if f"scope {scope}: {m.reason}" in details:
                        applied += 1
                    else:
                        # nothing to act on for this intent: already primary, not requested, or excluded
                        assert not any(d.startswith(f"scope {scope}:") for d in details), (scope, m, intent)
        assert applied >= len(policy.scopes)
