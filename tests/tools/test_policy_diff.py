"""policy_diff: known edits to a small policy give known changes and known text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coachctx.engine.policy import Policy, load_policy, validate_policy
from coachctx.tools.policy_diff import Change, diff_policies, render_diff

SMALL = Path(__file__).resolve().parents[1] / "data" / "small.yaml"


@pytest.fixture(scope="module")
def before() -> Policy:
    return load_policy(SMALL)


def edit(policy: Policy, change: Callable[[dict[str, Any]], None]) -> Policy:
    data = policy.model_dump(mode="json")
    change(data)
    return validate_policy(data)


def rows(changes: tuple[Change, ...]) -> list[tuple[str, str, str, str, Any, Any]]:
    return [(c.section, c.subject, c.kind, c.item, c.before, c.after) for c in changes]


class TestDiffPolicies:
    def test_equal_policies_have_no_changes(self, before: Policy) -> None:
        diff = diff_policies(before, edit(before, lambda d: None))
        assert diff.same and diff.changes == ()
        assert render_diff(diff, "v1", "v2") == "v1 (adf297fda308) -> v2 (adf297fda308): no differences"

    def test_a_fragment_moving_between_lists(self, before: Policy) -> None:
        def demote(d: dict[str, Any]) -> None:
            d["intents"]["injury"]["primary"].remove("readiness_injury")
            d["intents"]["injury"]["secondary"].insert(0, "readiness_injury")
            d["intents"]["general"]["exclude"] = ["chronotype"]
            d["intents"]["nutrition"]["secondary"].remove("conditions_today")

        diff = diff_policies(before, edit(before, demote))
        assert rows(diff.changes) == [
            ("intents", "injury", "moved", "readiness_injury", "primary", "secondary"),
            ("intents", "nutrition", "removed", "conditions_today", "secondary", None),
            ("intents", "general", "added", "chronotype", None, "exclude"),
        ]
        assert [c.path for c in diff.changes] == ["intents.injury.secondary", "intents.nutrition.secondary",
                                                  "intents.general.exclude"]

    def test_order_and_max_words(self, before: Policy) -> None:
        def reorder(d: dict[str, Any]) -> None:
            d["intents"]["training"]["secondary"] = ["athlete_profile", "conditions_today"]
            d["intents"]["training"]["max_words"] = 300

        diff = diff_policies(before, edit(before, reorder))
        assert rows(diff.changes) == [
            ("intents", "training", "reordered", "secondary", ["conditions_today", "athlete_profile"],
             ["athlete_profile", "conditions_today"]),
            ("intents", "training", "changed", "max_words", 250, 300),
        ]

    def test_terms_added_removed_and_reweighted_per_language(self, before: Policy) -> None:
        def vocab(d: dict[str, Any]) -> None:
            d["vocabulary"]["injury"]["en"]["shin splints"] = 1.5
            del d["vocabulary"]["injury"]["en"]["knee"]
            d["vocabulary"]["injury"]["es"]["dolor"] = 2.0
            d["vocabulary"]["recovery"]["de"] = {"schlaf": 1.5}

        diff = diff_policies(before, edit(before, vocab))
        assert rows(diff.changes) == [
            ("vocabulary", "injury (en)", "removed", "knee", 1.0, None),
            ("vocabulary", "injury (en)", "added", "shin splints", None, 1.5),
            ("vocabulary", "injury (es)", "changed", "dolor", 1.5, 2.0),
            ("vocabulary", "recovery (de)", "added", "schlaf", None, 1.5),
        ]

    def test_the_intents_that_imply_a_scope(self, before: Policy) -> None:
        def weather_today(d: dict[str, Any]) -> None:
            d["scopes"]["today"]["implied_by"] = ["conditions"]

        def move(d: dict[str, Any]) -> None:
            d["scopes"]["today"]["implied_by"] = []
            d["scopes"]["week"]["implied_by"] = ["training"]

        diff = diff_policies(edit(before, weather_today), edit(before, move))
        assert [(c.subject, c.path, c.kind, c.item) for c in diff.changes] == [
            ("today", "scopes.today.implied_by", "removed", "conditions"),
            ("week", "scopes.week.implied_by", "added", "training")]
        text = render_diff(diff)
        assert "- implied by conditions questions with no scope term" in text
        assert "+ implied by training questions with no scope term" in text

    def test_fragment_terms_added_and_removed(self, before: Policy) -> None:
        def named(d: dict[str, Any]) -> None:
            d["fragment_terms"] = {"chronotype": {"en": ["night owl", "early bird"]},
                                   "baseline_aerobic": {"en": ["vo2max"], "de": ["Ruhepuls"]}}

        def name(d: dict[str, Any]) -> None:
            named(d)
            d["fragment_terms"]["chronotype"]["en"].remove("night owl")
            d["fragment_terms"]["chronotype"]["en"].append("lark")
            d["fragment_terms"].pop("baseline_aerobic")

        diff = diff_policies(edit(before, named), edit(before, name))
        shown = [(c.section, c.subject, c.kind, c.item) for c in diff.changes]
        assert shown[:2] == [("fragment_terms", "chronotype", "removed", "night owl"),
                             ("fragment_terms", "chronotype", "added", "lark")]
        assert {c.subject for c in diff.changes[2:]} == {"baseline_aerobic"}
        assert all(c.kind == "removed" for c in diff.changes[2:])
        assert diff.changes[1].describe() == "+ term (en) 'lark'"

    def test_referral_terms_added_and_removed(self, before: Policy) -> None:
        referring = edit(before, lambda d: d.update(referral_terms={"en": ["physio", "gp"]}))
        diff = diff_policies(referring, edit(before, lambda d: d.update(referral_terms={"en": ["physio"],
                                                                                        "de": ["Arzt"]})))
        assert [(c.section, c.path, c.kind, c.item) for c in diff.changes] == [
            ("referral_terms", "referral_terms.en", "removed", "gp"),
            ("referral_terms", "referral_terms.de", "added", "Arzt")]
        assert [c.describe() for c in diff.changes] == ["- term (en) 'gp'", "+ term (de) 'Arzt'"]
        assert render_diff(diff).splitlines()[1:] == ["referral terms", "  en", "    - term (en) 'gp'", "  de",
                                                      "    + term (de) 'Arzt'"]

    def test_modifiers_scope_terms_routing_tiers_and_clinical_terms(self, before: Policy) -> None:
        def rest(d: dict[str, Any]) -> None:
            d["routing"]["margin"] = 0.5
            d["tiers"]["free"] = 80
            d["tiers"]["team"] = 3000
            d["scopes"]["today"]["terms"]["en"].append("this morning")
            d["scopes"]["today"]["modifiers"][0]["reason"] = "today's session needs today's readiness"
            d["scopes"]["week"]["modifiers"][0]["action"] = "demote"
            d["scopes"]["week"]["modifiers"].append(
                {"action": "promote", "fragment": "training_block", "reason": "the week is the block"})
            d["clinical_terms"]["en"].remove("injury")

        diff = diff_policies(before, edit(before, rest))
        assert [(c.section, c.subject, c.kind, c.item) for c in diff.changes] == [
            ("routing", "routing", "changed", "margin"),
            ("tiers", "tiers", "changed", "free"),
            ("tiers", "tiers", "added", "team"),
            ("scopes", "today", "added", "this morning"),
            ("scopes", "today", "changed", "promote readiness_training for training"),
            ("scopes", "week", "changed", "conditions_today"),
            ("scopes", "week", "added", "promote training_block"),
            ("clinical_terms", "en", "removed", "injury"),
        ]
        assert render_diff(diff, "v1", "v2").splitlines()[1:] == [
            "routing",
            "  margin: 1 -> 0.5",
            "tiers",
            "  free: 50 -> 80",
            "  + team: 3000",
            "scopes",
            "  today",
            "    + term (en) 'this morning'",
            "    ~ modifier promote readiness_training for training: reason \"a question about today needs this "
            "morning's readiness\" -> \"today's session needs today's readiness\"",
            "  week",
            "    ~ modifier conditions_today: action 'drop' -> 'demote'",
            "    + modifier promote training_block: 'the week is the block'",
            "clinical terms",
            "  en",
            "    - term (en) 'injury'",
        ]

    def test_rendering_groups_by_section_and_subject(self, before: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["intents"]["injury"]["primary"].remove("readiness_injury")
            d["vocabulary"]["injury"]["en"]["knee"] = 1.5

        text = render_diff(diff_policies(before, edit(before, change)), "live", "draft.yaml")
        assert text.splitlines() == [
            f"live (adf297fda308) -> draft.yaml ({edit(before, change).digest}): 2 changes",
            "intents",
            "  injury",
            "    - readiness_injury from primary",
            "vocabulary",
            "  injury (en)",
            "    ~ 'knee' 1 -> 1.5",
        ]

    def test_json_carries_every_change_with_its_text(self, before: Policy) -> None:
        after = edit(before, lambda d: d["intents"]["general"].update(max_words=100))
        assert diff_policies(before, after).to_json() == {
            "before": "adf297fda308", "after": after.digest, "same": False,
            "changes": [{"section": "intents", "subject": "general", "path": "intents.general.max_words",
                         "kind": "changed", "item": "max_words", "before": 150, "after": 100,
                         "text": "max_words: 150 -> 100"}],
        }
