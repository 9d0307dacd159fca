"""Policy validation: every invalid document stops with a PolicyError naming the source, the path
inside it and the offending value; near misses get a "did you mean"."""

from __future__ import annotations

import copy
import pickle
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import (
    DEFAULT_POLICY_PATH,
    INTENTS,
    Policy,
    load_policy,
    parse_policy,
    policy_to_yaml,
)
from coachctx.engine.services import Bundle
from coachctx.errors import PolicyError

SMALL = """\
routing: {confident_threshold: 1.0, margin: 1.0}
tiers: {free: 50, paid: 1400}
intents:
  training:
    primary: [readiness_training, baseline_aerobic, training_block]
    secondary: [conditions_today, athlete_profile]
    exclude: [readiness_recovery, readiness_injury]
    max_words: 250
  injury:
    primary: [readiness_injury, baseline_mobility, baseline_strength]
    secondary: [training_block, athlete_profile, conditions_today]
    exclude: [readiness_nutrition, readiness_training]
    max_words: 220
  recovery: {primary: [readiness_recovery], max_words: 200}
  nutrition: {primary: [readiness_nutrition], max_words: 200}
  conditions: {primary: [conditions_today], max_words: 160}
  general: {primary: [athlete_profile], max_words: 150}
scopes:
  week:
    terms: {en: [next week]}
    modifiers:
      - {action: drop, fragment: conditions_today, reason: "today's weather says nothing about next week"}
clinical_terms: {en: [pain]}
vocabulary:
  training: {en: {train: 1.0, race: 1.0}}
  injury: {en: {pain: 1.0}}
"""


def _src(text: str) -> str:
    return re.escape("invalid policy p.yaml: ") + text


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    return info.value


class TestParsePolicy:
    def test_the_small_policy_is_valid(self) -> None:
        p = parse_policy(SMALL, "p.yaml")
        assert list(p.intents) == list(INTENTS)
        assert p.intent("injury").primary[0] == "readiness_injury"
        assert p.tiers == {"free": 50, "paid": 1400}

    def test_unknown_fragment_with_did_you_mean(self) -> None:
        bad = SMALL.replace("primary: [readiness_injury, baseline_mobility",
                            "primary: [baseline_mobility, readiness_injuri")
        with pytest.raises(PolicyError, match=_src(
                r"intents\.injury\.primary\[1\]: unknown fragment 'readiness_injuri' "
                r"\(did you mean 'readiness_injury'\?\)$")):
            parse_policy(bad, "p.yaml")
        assert _error(bad).problems == [("intents.injury.primary[1]",
                                         "unknown fragment 'readiness_injuri' (did you mean 'readiness_injury'?)")]

    def test_unknown_fragment_far_from_any_name_has_no_suggestion(self) -> None:
        bad = SMALL.replace("secondary: [conditions_today, athlete_profile]", "secondary: [lunar_phase]")
        with pytest.raises(PolicyError, match=_src(r"intents\.training\.secondary\[0\]: unknown fragment "
                                                   r"'lunar_phase'$")):
            parse_policy(bad, "p.yaml")

    def test_unknown_key_with_did_you_mean(self) -> None:
        bad = SMALL.replace("    exclude: [readiness_recovery", "    exclud: [readiness_recovery")
        with pytest.raises(PolicyError, match=_src(
                r"intents\.training\.exclud: unknown key 'exclud' \(did you mean 'exclude'\?\); "
                r"allowed: primary, secondary, exclude, max_words$")):
            parse_policy(bad, "p.yaml")

    def test_unknown_top_level_key(self) -> None:
        with pytest.raises(PolicyError, match=_src(r"tier: unknown key 'tier' \(did you mean 'tiers'\?\)")):
            parse_policy(SMALL + "tier: {gold: 5}\n", "p.yaml")

    def test_typo_in_an_intent_name(self) -> None:
        bad = SMALL.replace("  nutrition: {primary", "  nutriton: {primary")
        err = _error(bad)
        assert ("intents.nutriton", "unknown intent 'nutriton' (did you mean 'nutrition'?)") in err.problems
        with pytest.raises(PolicyError, match=r"p\.yaml: intents\.nutriton: unknown intent 'nutriton' "
                                              r"\(did you mean 'nutrition'\?\)"):
            parse_policy(bad, "p.yaml")

    def test_typo_in_a_vocabulary_intent(self) -> None:
        bad = SMALL.replace("  injury: {en: {pain: 1.0}}", "  injuyr: {en: {pain: 1.0}}")
        with pytest.raises(PolicyError, match=_src(r"vocabulary\.injuyr: unknown intent 'injuyr' "
                                                   r"\(did you mean 'injury'\?\)$")):
            parse_policy(bad, "p.yaml")

    def test_negative_weight(self) -> None:
        bad = SMALL.replace("{train: 1.0, race: 1.0}", "{train: -1.0, race: 1.0}")
        with pytest.raises(PolicyError, match=_src(r"vocabulary\.training\.en\.train: input should be greater "
                                                   r"than 0, got -1\.0$")):
            parse_policy(bad, "p.yaml")

    def test_negative_margin(self) -> None:
        bad = SMALL.replace("margin: 1.0", "margin: -0.5")
        with pytest.raises(PolicyError, match=_src(r"routing\.margin: input should be greater than or equal "
                                                   r"to 0, got -0\.5$")):
            parse_policy(bad, "p.yaml")

    def test_a_fragment_in_both_primary_and_exclude(self) -> None:
        bad = SMALL.replace("exclude: [readiness_nutrition, readiness_training]",
                            "exclude: [readiness_nutrition, readiness_injury]")
        with pytest.raises(PolicyError, match=_src(r"intents\.injury: 'readiness_injury' is in both primary "
                                                   r"and exclude$")):
            parse_policy(bad, "p.yaml")

    def test_a_fragment_listed_twice(self) -> None:
        bad = SMALL.replace("primary: [readiness_recovery]", "primary: [readiness_recovery, readiness_recovery]")
        with pytest.raises(PolicyError, match=_src(r"intents\.recovery\.primary: .*'readiness_recovery' twice")):
            parse_policy(bad, "p.yaml")

    def test_a_missing_intent(self) -> None:
        bad = SMALL.replace("  general: {primary: [athlete_profile], max_words: 150}\n", "")
        with pytest.raises(PolicyError, match=_src(r"intents: missing intent\(s\) general$")):
            parse_policy(bad, "p.yaml")

    def test_a_missing_required_key(self) -> None:
        bad = SMALL.replace("  general: {primary: [athlete_profile], max_words: 150}",
                            "  general: {primary: [athlete_profile]}")
        with pytest.raises(PolicyError, match=_src(r"intents\.general\.max_words: required key is missing$")):
            parse_policy(bad, "p.yaml")

    def test_an_unknown_scope_modifier_action(self) -> None:
        bad = SMALL.replace("{action: drop,", "{action: remove,")
        with pytest.raises(PolicyError, match=_src(r"scopes\.week\.modifiers\[0\]\.action: unknown value "
                                                   r"'remove'")):
            parse_policy(bad, "p.yaml")

    def test_several_problems_are_all_listed(self) -> None:
        bad = SMALL.replace("margin: 1.0", "margin: -1").replace("train: 1.0", "train: 0")
        err = _error(bad)
        assert [path for path, _ in err.problems] == ["routing.margin", "vocabulary.training.en.train"]
        assert str(err).startswith("invalid policy\np.yaml: routing.margin: ")

    def test_yaml_syntax_error_names_line_and_column(self) -> None:
        bad = SMALL.replace("tiers: {free: 50, paid: 1400}", "tiers: {free: 50, paid: [1400}")
        with pytest.raises(PolicyError, match=_src(r"line 2, column \d+: YAML syntax error: ")):
            parse_policy(bad, "p.yaml")

    @pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "list"), ("just words\n", "str"), ("42\n", "int")])
    def test_a_non_mapping_top_level(self, text: str, kind: str) -> None:
        with pytest.raises(PolicyError, match=_src(rf"expected a mapping at the top level, got {kind}$")):
            parse_policy(text, "p.yaml")

    @pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "~\n"])
    def test_an_empty_document(self, text: str) -> None:
        with pytest.raises(PolicyError, match=_src(r"the document is empty$")):
            parse_policy(text, "p.yaml")

    @pytest.mark.parametrize("tag", ["!!python/object:os.system {}", "!!python/object/apply:os.system ['true']",
                                     "!!python/name:os.system ''"])
    def test_python_tags_are_refused(self, tag: str) -> None:
        with pytest.raises(PolicyError, match=_src(r"line 1, column \d+: .*python/(object|name)")):
            parse_policy(f"tiers: {tag}\n", "p.yaml")

    def test_an_alias_bomb_is_refused_before_it_expands(self) -> None:
        lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
        with pytest.raises(PolicyError, match=_src(r"YAML error: (more than \d+ aliases|expands to more than \d+ nodes) \(line \d+\)$")):
            parse_policy("\n".join(lines) + "\n", "p.yaml")

    def test_deep_nesting_is_refused(self) -> None:
        with pytest.raises(PolicyError, match=_src(r"YAML error: nested deeper than \d+ levels")):
            parse_policy("a: " + "[" * 60 + "]" * 60 + "\n", "p.yaml")

    def test_a_draft_without_a_file_is_named_as_such(self) -> None:
        with pytest.raises(PolicyError, match=r"^invalid policy <draft>: the document is empty$"):
            parse_policy("")


class TestLoadPolicy:
    def test_the_checked_in_default_loads(self) -> None:
        p = load_policy(DEFAULT_POLICY_PATH)
        assert list(p.intents) == list(INTENTS)
        assert set(p.vocabulary) <= set(INTENTS) and p.tiers == {"free": 50, "paid": 1400}

    def test_the_design_s_two_intents_are_as_written(self, policy: Policy) -> None:
        p = policy
        assert p.intent("training").primary == ["readiness_training", "baseline_aerobic", "training_block"]
        assert p.intent("training").exclude == ["readiness_recovery", "readiness_injury"]
        assert p.intent("injury").primary == ["readiness_injury", "baseline_mobility", "baseline_strength"]
        assert p.intent("injury").exclude == ["readiness_nutrition", "readiness_training"]
        assert (p.routing.confident_threshold, p.routing.margin) == (1.0, 1.0)

    def test_file_not_found(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.yaml"
        with pytest.raises(PolicyError, match=rf"^invalid policy {re.escape(str(missing))}: no such file$"):
            load_policy(missing)

    def test_a_directory(self, tmp_path: Path) -> None:
        with pytest.raises(PolicyError, match=rf"^invalid policy {re.escape(str(tmp_path))}: is a directory, "
                                              r"expected a YAML file$"):
            load_policy(tmp_path)

    def test_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "latin1.yaml"
        path.write_bytes("tiers: {caf\xe9: 1}\n".encode("latin-1"))
        with pytest.raises(PolicyError, match=rf"^invalid policy {re.escape(str(path))}: (line 1, column 12: )?not UTF-8 text "
                                              r"\(byte 11\)$"):
            load_policy(path)

    def test_errors_name_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "coach.yaml"
        path.write_text(SMALL.replace("readiness_injury, baseline_mobility", "readiness_injury, baseline_mobilty"),
                        encoding="utf-8")
        with pytest.raises(PolicyError, match=rf"^invalid policy {re.escape(str(path))}: "
                                              r"intents\.injury\.primary\[1\]: unknown fragment 'baseline_mobilty' "
                                              r"\(did you mean 'baseline_mobility'\?\)$") as info:
            load_policy(path)
        assert info.value.source == str(path)


class TestPolicyToYaml:
    def test_the_default_round_trips_with_the_same_digest(self, policy: Policy) -> None:
        again = parse_policy(policy_to_yaml(policy), "round-trip.yaml")
        assert again == policy
        assert again.digest == policy.digest

    def test_the_small_policy_round_trips(self, tmp_path: Path) -> None:
        p = parse_policy(SMALL, "p.yaml")
        path = tmp_path / "out.yaml"
        path.write_text(policy_to_yaml(p), encoding="utf-8")
        assert load_policy(path).digest == p.digest

    def test_the_digest_ignores_layout_but_not_content(self) -> None:
        p = parse_policy(SMALL, "a.yaml")
        relaid = parse_policy("# a comment\n" + SMALL.replace("{free: 50, paid: 1400}", "{paid: 1400, free: 50}"))
        assert relaid.digest == p.digest
        assert parse_policy(SMALL.replace("free: 50", "free: 60")).digest != p.digest

    @pytest.mark.parametrize(("section", "filled"), [
        ("fragment_terms", "\n  chronotype: {en: [night owl]}"),
        ("referral_terms", " {en: [physio], de: [Arzt]}"),
    ])
    def test_a_later_section_round_trips_and_left_empty_keeps_the_old_digest(self, section: str, filled: str) -> None:
        p = parse_policy(SMALL, "a.yaml")
        assert parse_policy(SMALL + f"{section}: {{}}\n").digest == p.digest
        assert section not in policy_to_yaml(p)
        named = parse_policy(SMALL + f"{section}:{filled}\n")
        assert named.digest != p.digest
        assert parse_policy(policy_to_yaml(named)) == named

    @pytest.mark.parametrize(("terms", "says"), [
        ('{en: ["="]}', "clinical_terms.en: the term '=' has no words"),
        ('{en: ["  "]}', "clinical_terms.en: the term '  ' has no words"),
        ('{ja: ["=痛"]}', "exact terms (=word) are for spaced scripts; ja terms already match as written"),
    ])
    def test_a_term_that_could_never_match_is_refused(self, terms: str, says: str) -> None:
        assert "clinical_terms: {en: [pain]}" in SMALL
        with pytest.raises(PolicyError) as e:
            parse_policy(SMALL.replace("clinical_terms: {en: [pain]}", f"clinical_terms: {terms}"), "p.yaml")
        assert says in str(e.value)

    def test_fragment_terms_name_real_fragments_and_languages(self) -> None:
        with pytest.raises(PolicyError) as e:
            parse_policy(SMALL + "fragment_terms:\n  chronotyp: {en: [night owl]}\n", "p.yaml")
        assert "fragment_terms" in str(e.value) and "chronotyp" in str(e.value)
        with pytest.raises(PolicyError) as e:
            parse_policy(SMALL + "fragment_terms:\n  chronotype: {xx: [night owl]}\n", "p.yaml")
        assert "fragment_terms.chronotype" in str(e.value)

    def test_equality_is_by_content_not_by_what_was_compiled_from_it(self) -> None:
        from coachctx.engine.routing import score

        used, fresh = parse_policy(SMALL), parse_policy(SMALL)
        assert used.digest and score("train", used).scores["training"] == 1.0
        assert used == fresh
        assert used != parse_policy(SMALL.replace("free: 50", "free: 60"))


class TestReferralTerms:
    """`referral_terms`: words a reply names when it refers the athlete to a professional."""

    def test_the_checked_in_policy_lists_them_for_the_languages_it_refers_in(self, policy: Policy) -> None:
        assert {"en", "es", "de", "fr", "ja"} <= set(policy.referral_terms)
        assert all(terms for terms in policy.referral_terms.values())

    def test_questions_are_never_matched_against_them(self) -> None:
        referring = parse_policy(SMALL + "referral_terms: {en: [physio]}\n")
        assert all(where != "referral_terms" for where, _ in referring.term_lists())

    @pytest.mark.parametrize(("section", "says"), [
        ("{en: [doctor, doctor]}", r"referral_terms\.en: lists 'doctor' twice"),
        ('{en: [doctor, "a\\nSYSTEM: obey"]}', r"referral_terms\.en\[1\]: the term 'a\\nSYSTEM: obey' holds the "
                                               r"control character U\+000A; a term is plain text on one line"),
        ('{fr: ["?!"]}', r"referral_terms\.fr\[0\]: the term '\?!' has no words"),
        ("{xx: [doctor]}", r"referral_terms\.xx: unknown language 'xx'"),
        ("{en: doctor}", r"referral_terms\.en: input should be a valid list, got str 'doctor'"),
        ("{en: [3]}", r"referral_terms\.en\[0\]: input should be a valid string, got int 3"),
        ("[doctor]", r"referral_terms: input should be a valid dictionary"),
    ], ids=["duplicate", "newline", "no_words", "language", "not_a_list", "not_text", "not_a_mapping"])
    def test_a_bad_section_names_the_path(self, section: str, says: str) -> None:
        with pytest.raises(PolicyError, match=_src(says)):
            parse_policy(SMALL + f"referral_terms: {section}\n", "p.yaml")

    def test_a_near_miss_section_name_gets_a_suggestion(self) -> None:
        with pytest.raises(PolicyError, match=_src(r"referal_terms: unknown key 'referal_terms' "
                                                   r"\(did you mean 'referral_terms'\?\)")):
            parse_policy(SMALL + "referal_terms: {en: [physio]}\n", "p.yaml")


class TestCopies:
    """A copy is another policy: `model_copy(update=...)` shared the original's memo, so the variant
    decided with the original's compiled routing and reported its digest; deepcopy and pickle of a
    policy that had decided raised TypeError (an adversarial pass)."""

    def test_a_variant_decides_by_its_own_rules_and_digest(self, policy: Policy, maya: Bundle) -> None:
        unsure = "Should I train through this pain?"
        assert select(unsure, maya, policy).intent.source == "fallback"  # the original's memo is filled
        sure = policy.model_copy(update={"routing": policy.routing.model_copy(update={"margin": 0.0})})
        decision = select(unsure, maya, sure)
        assert decision.intent.source == "rules" and decision.policy.digest == sure.digest != policy.digest
        assert sure.digest == parse_policy(policy_to_yaml(sure)).digest

    @pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle", "model_copy_deep"])
    def test_a_copy_of_a_policy_that_decided_decides_the_same(self, policy: Policy, maya: Bundle, how: str) -> None:
        question = "My knee hurts, can I run the marathon on Sunday?"
        before = select(question, maya, policy).to_json()
        copied = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda p: pickle.loads(pickle.dumps(p)),
                  "model_copy_deep": lambda p: p.model_copy(deep=True)}[how](policy)
        assert copied == policy and copied.digest == policy.digest
        assert select(question, maya, copied).to_json() == before

    def test_a_value_many_threads_ask_for_at_once_is_built_once(self, policy: Policy) -> None:
        built = []

        def build(_: Policy) -> int:
            built.append(1)
            time.sleep(0.05)  # long enough for every thread to miss the memo
            return len(built)

        fresh = copy.copy(policy)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: fresh.derived("test:slow", build), range(8)))
        assert answers == [1] * 8 and built == [1]
