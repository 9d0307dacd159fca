"""Policy lint: every rule fires on a crafted policy, each alone on a one-edit policy, and the
checked-in default is quiet for the rules that indicate errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coachctx.cli import main
from coachctx.engine.pipeline import select
from coachctx.engine.policy import MAX_TERMS, Policy, load_policy, validate_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.tools.lint import RULES, Finding, errors, lint_policy

DATA = Path(__file__).resolve().parents[1] / "data"
SMALL = DATA / "small.yaml"
EVERY_RULE = DATA / "lint_every_rule.yaml"


@pytest.fixture(scope="module")
def small() -> Policy:
    return load_policy(SMALL)


def lint_edit(policy: Policy, change: Callable[[dict[str, Any]], None]) -> list[Finding]:
    data = policy.model_dump(mode="json")
    change(data)
    return lint_policy(validate_policy(data))


class TestEachRule:
    def test_the_small_policy_is_quiet(self, small: Policy) -> None:
        assert lint_policy(small) == []

    def test_exclude_conflict_when_vocabularies_share_a_term(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["training"]["en"]["sore"] = 0.5
            d["vocabulary"]["injury"]["en"]["sore tendon"] = 1.0  # every "sore tendon" question also says "sore"
            d["intents"]["injury"]["exclude"] = ["readiness_nutrition"]

        assert [(f.code, f.severity, f.path) for f in lint_edit(small, change)] == [
            ("exclude-conflict", "warning", "intents.training.exclude[1]")]
        assert lint_edit(small, change)[0].message == (
            "training excludes readiness_injury, which injury holds as primary, and their vocabularies share terms "
            "(en 'sore'/'sore tendon'): a question using them gives injury evidence, so readiness_injury is kept "
            "there whatever the route (evidence beats exclusion) and the exclude only acts on questions without "
            "injury's terms")

    def test_what_an_exclude_conflict_warns_of_holds_in_the_pipeline(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["training"]["en"]["sore"] = 2.0
            d["vocabulary"]["injury"]["en"]["sore tendon"] = 0.5
            d["intents"]["injury"]["exclude"] = ["readiness_nutrition"]

        data = small.model_dump(mode="json")
        change(data)
        edited = validate_policy(data)
        d = select("sore tendon, can I still do intervals", fetch_bundle(FixtureUpstream(), "maya"), edited)
        assert d.intent.name == "training" and d.intent.source == "rules"
        assert "readiness_injury" in d.selected  # training's exclude does not withhold it

    def test_exclude_conflict_in_scripts_without_spaces(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["training"]["ja"] = {"トレーニング": 1.0}
            d["vocabulary"]["recovery"]["ja"] = {"オーバートレーニング": 1.5}  # contains the training term
            for intent, word in (("injury", "怪我"), ("nutrition", "食事"), ("conditions", "天気"),
                                 ("general", "ありがとう")):
                d["vocabulary"][intent]["ja"] = {word: 1.0}
            d["clinical_terms"]["ja"] = ["痛い"]

        found = lint_edit(small, change)
        assert [(f.code, f.path) for f in found] == [("exclude-conflict", "intents.training.exclude[0]")]
        assert "(ja 'トレーニング'/'オーバートレーニング')" in found[0].message

    def test_shared_term_compares_stems(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["nutrition"]["en"]["races"] = 0.5  # stems like training's "race"

        found = lint_edit(small, change)
        assert [(f.code, f.severity, f.path) for f in found] == [
            ("shared-term", "warning", "vocabulary.nutrition.en.races")]
        assert found[0].message == ("'race' is in both training (en, 1) and nutrition (en, 0.5) ('races' matches "
                                    "the same words): a question using it scores both")

    def test_unrequested_fragment(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["intents"]["recovery"].update(primary=["readiness_recovery"]))
        assert [(f.code, f.path) for f in found] == [("unrequested-fragment", "intents")]
        assert found[0].message.startswith("no intent requests chronotype")

    def test_a_promote_counts_as_a_request(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["intents"]["recovery"]["primary"] = ["readiness_recovery"]
            d["scopes"]["today"]["modifiers"].append(
                {"action": "promote", "fragment": "chronotype", "reason": "when to train today"})

        assert lint_edit(small, change) == []

    def test_promote_excluded(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["scopes"]["today"]["modifiers"][0].update(intents=["training", "injury"]))
        assert [(f.code, f.severity, f.path) for f in found] == [
            ("promote-excluded", "error", "scopes.today.modifiers[0]")]
        assert found[0].message == ("scope today promotes readiness_training for injury, which excludes it: the "
                                    "exclude wins, so the promote never applies there")

    def test_a_promote_for_all_intents_meets_every_exclude(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["scopes"]["today"]["modifiers"][0].pop("intents"))
        assert [f.code for f in found] == ["promote-excluded"]
        assert "for injury, conditions, which exclude it" not in found[0].message
        assert "promotes readiness_training for injury, which excludes it" in found[0].message

    def test_weak_vocabulary(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["conditions"] = {"en": {"weather": 0.5, "heat": 0.75}, "es": {"calor": 0.5}}

        found = lint_edit(small, change)
        assert [(f.code, f.severity, f.path) for f in found] == [("weak-vocabulary", "error", "vocabulary.conditions")]
        assert "its strongest term is en 'heat' (0.75)" in found[0].message

    def test_weak_vocabulary_counts_the_margin(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["routing"].update(margin=1.2))
        # training and injury's strongest terms weigh 1.0 and 1.5 ... only those under 1.2 cannot win alone
        assert [f.path for f in found] == ["vocabulary.training"]

    def test_a_vocabulary_language_without_clinical_terms(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["clinical_terms"].pop("es"))
        assert [(f.code, f.severity, f.path) for f in found] == [
            ("missing-clinical-language", "warning", "clinical_terms")]
        assert found[0].message.startswith("no clinical terms in es (the vocabulary has es terms): a question in es "
                                           "that reports pain is never read as clinical")

    def test_no_default_tier(self, small: Policy) -> None:
        # the policy was checked ok, and every explain without --tier was then refused (adversarial pass)
        found = lint_edit(small, lambda d: d["tiers"].pop("paid"))
        assert [(f.code, f.severity, f.path) for f in found] == [("no-default-tier", "warning", "tiers")]
        assert found[0].message.startswith("no tier 'paid': every decision that names no tier")
        assert found[0].message.endswith("the policy has free")

    def test_zero_margin(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["routing"].update(margin=0))
        assert [(f.code, f.severity, f.path) for f in found] == [("zero-margin", "warning", "routing.margin")]

    def test_a_scope_term_in_two_scopes(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["scopes"]["week"]["terms"]["en"].append("Tonight"))
        assert [(f.code, f.severity, f.path) for f in found] == [("shared-scope-term", "warning", "scopes.week.terms.en")]
        assert found[0].message == "'Tonight' is a today term too: it votes for both horizons; keep it in one"

    def test_missing_language(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["vocabulary"]["general"].pop("es"))
        assert [(f.code, f.severity, f.path) for f in found] == [("missing-language", "warning", "vocabulary.general")]
        assert found[0].message.startswith("general has no terms in es (used by other intents)")

    def test_a_clinical_term_of_injury_shared_with_recovery_is_on_purpose(self, small: Policy) -> None:
        def change(d: dict[str, Any]) -> None:
            d["vocabulary"]["recovery"]["en"]["fever"] = 1.0
            d["vocabulary"]["injury"]["en"]["fever"] = 1.0
        assert [f.code for f in lint_edit(small, change)] == ["shared-term"]  # not yet a clinical term
        found = lint_edit(small, lambda d: (change(d), d["clinical_terms"]["en"].append("fever")))
        assert found == []
        found = lint_edit(small, lambda d: d["vocabulary"]["training"]["en"].update(pain=1.0))
        assert "shared-term" in {f.code for f in found}  # a clinical term in training is no illness

    def test_an_intent_or_the_unmatched_set_without_a_primary(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["intents"]["general"].update(primary=[], secondary=[]))
        assert [(f.code, f.path) for f in found if f.code == "no-primary"] == [("no-primary", "intents.general.primary")]
        assert found[-1].message == ("intents.general holds no primary fragment: a question that takes it sees no "
                                     "athlete context at all")
        found = lint_edit(small, lambda d: d["unmatched"].update(primary=[], secondary=["training_block"]))
        assert [(f.code, f.path) for f in found] == [("no-primary", "unmatched.primary")]
        assert "sees only its secondaries (" in found[0].message

    def test_a_clinical_term_that_is_an_everyday_word(self, small: Policy) -> None:
        # "a" as a clinical term read every English question as clinical (adversarial pass); lint said nothing
        found = lint_edit(small, lambda d: d["clinical_terms"]["en"].append("A "))
        assert [(f.code, f.severity, f.path) for f in found] == [("everyday-term", "warning", "clinical_terms.en")]
        assert found[0].message.startswith("'A ' is the 5th commonest en word: most en questions hold it whatever "
                                           "they ask, so each is read as clinical")

    def test_a_vocabulary_term_that_is_an_everyday_word(self, small: Policy) -> None:
        found = lint_edit(small, lambda d: d["vocabulary"]["nutrition"]["es"].update({"de": 1.0, "de agua": 1.0}))
        assert [(f.code, f.path) for f in found] == [("everyday-term", "vocabulary.nutrition.es.de")]
        assert "most es questions hold it whatever they ask, and score nutrition 1 for it" in found[0].message

    def test_a_rarer_word_is_no_everyday_term(self, small: Policy) -> None:
        assert lint_edit(small, lambda d: d["clinical_terms"]["en"].append("headache")) == []


class TestCraftedPolicy:
    def test_every_rule_fires(self) -> None:
        found = lint_policy(load_policy(EVERY_RULE))
        assert {f.code for f in found} == set(RULES)
        assert [f.code for f in errors(found)] == ["promote-excluded", "weak-vocabulary"]

    def test_check_policy_prints_each_finding_by_severity_and_exits_1_on_an_error(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Errors were printed as warnings after "ok", exit 0 (an adversarial pass)."""
        assert main(["check-policy", str(EVERY_RULE)]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith(f"{EVERY_RULE}: valid, but 2 lint error(s) (digest ")
        found = lint_policy(load_policy(EVERY_RULE))
        assert lines[1:] == [f"{f.severity}: {f}" for f in found]
        assert sum(line.startswith("error: ") for line in lines) == 2
        assert "error: scopes.today.modifiers[0]: scope today promotes readiness_training for injury, which " \
               "excludes it: the exclude wins, so the promote never applies there [promote-excluded]" in lines

    def test_a_quiet_policy_prints_only_ok(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["check-policy", str(SMALL)]) == 0
        assert capsys.readouterr().out == f"{SMALL}: ok (digest adf297fda308; 6 intents, 28 vocabulary terms, 37 of at most {MAX_TERMS:,} terms in all)\n"


class TestDefaultPolicy:
    def test_quiet_for_the_rules_that_indicate_errors(self, policy: Policy) -> None:
        assert [str(f) for f in errors(lint_policy(policy))] == []
