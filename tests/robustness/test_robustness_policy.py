"""Bad policy input: every file of the corpus in tests/data/bad_policies/ is refused by
`load_policy` with a PolicyError that names the file and where in it (a path such as
`intents.injury.primary[1]`, or a line), and none of them takes long to refuse.

Each corpus file is the minimal valid policy below with exactly one thing broken, so a
refusal can only come from that break. The file over the size limit is generated here rather
than committed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coachctx.engine.policy import load_policy, parse_policy
from coachctx.engine.policy_loading import MAX_POLICY_BYTES
from coachctx.errors import PolicyError

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_policies"

MINIMAL_POLICY = """\
routing:
  confident_threshold: 1.0
  margin: 1.0
tiers:
  free: 50
  paid: 1400
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
  recovery:
    primary: [readiness_recovery, chronotype]
    secondary: [training_block]
    exclude: [conditions_today]
    max_words: 200
  nutrition:
    primary: [readiness_nutrition, training_block]
    secondary: [athlete_profile]
    exclude: [baseline_mobility]
    max_words: 220
  conditions:
    primary: [conditions_today]
    secondary: [readiness_training]
    exclude: [baseline_strength]
    max_words: 160
  general:
    primary: [athlete_profile]
    secondary: [training_block]
    exclude: []
    max_words: 150
scopes:
  today:
    terms:
      en: [today, tonight]
    modifiers:
      - {action: promote, fragment: readiness_training, reason: "a question about today needs this morning's readiness"}
clinical_terms:
  en: [pain, injury]
vocabulary:
  training:
    en: {train: 1.0, race: 1.0}
  injury:
    en: {pain: 1.0, injury: 1.5}
  recovery:
    en: {sleep: 1.5, rest: 1.0}
  nutrition:
    en: {eat: 1.5, protein: 1.5}
  conditions:
    en: {weather: 1.5, heat: 1.5}
  general:
    en: {thanks: 1.5}
"""

# file -> (where the error must point, what it must say). "where" is a path inside the
# document or a line; for a document that is empty or not a mapping at all, the file itself.
EXPECTED: dict[str, tuple[str, str]] = {
    # YAML syntax
    "syntax_unclosed_flow_list.yaml": ("line 16", r"expected ',' or '\]'"),
    "syntax_unclosed_quote.yaml": ("line 60", "unexpected end of stream"),
    "syntax_bad_indentation.yaml": ("line 19", "expected <block end>"),
    "syntax_tab_indentation.yaml": ("line 25", r"'\\t' that cannot start any token"),
    "syntax_mapping_in_plain_scalar.yaml": ("line 33", "mapping values are not allowed here"),
    "syntax_two_documents.yaml": ("line 45", "another document"),
    "syntax_undefined_alias.yaml": ("line 21", "undefined alias 'recovery_secondary'"),
    "syntax_duplicate_anchor.yaml": ("line 7", "second occurrence"),
    # the document as a whole
    "empty.yaml": ("empty.yaml", "the document is empty"),
    "only_comments.yaml": ("only_comments.yaml", "the document is empty"),
    "top_level_null.yaml": ("top_level_null.yaml", "the document is empty"),
    "top_level_list.yaml": ("top_level_list.yaml", "expected a mapping at the top level, got list"),
    "top_level_scalar.yaml": ("top_level_scalar.yaml", "expected a mapping at the top level, got str"),
    # unknown keys
    "unknown_top_level_key.yaml": ("tier", r"unknown key 'tier' \(did you mean 'tiers'\?\)"),
    "unknown_intent_key.yaml": ("intents.recovery.primay", r"unknown key 'primay' \(did you mean 'primary'\?\)"),
    "unknown_routing_key.yaml": ("routing.confidence_threshold", "did you mean 'confident_threshold'"),
    "unknown_modifier_key.yaml": ("scopes.today.modifiers[0].fragmnt", "did you mean 'fragment'"),
    "unknown_scope_key.yaml": ("scopes.today.words", "unknown key 'words'; allowed: terms, modifiers"),
    # unknown names
    "unknown_intent_name.yaml": ("intents.weather", "unknown intent 'weather'"),
    "unknown_fragment_in_primary.yaml": ("intents.injury.primary[1]",
                                         r"unknown fragment 'baseline_mobilty' \(did you mean 'baseline_mobility'\?\)"),
    "unknown_fragment_in_exclude.yaml": ("intents.conditions.exclude[0]", "unknown fragment 'strength_baseline'"),
    "unknown_fragment_in_modifier.yaml": ("scopes.today.modifiers[0].fragment", "unknown fragment 'readiness_today'"),
    "unknown_language.yaml": ("vocabulary.recovery.english", "unknown language 'english'"),
    "unknown_scope_name.yaml": ("scopes.tomorrow", "unknown scope 'tomorrow'"),
    "unknown_modifier_action.yaml": ("scopes.today.modifiers[0].action", "unknown value 'boost'"),
    "unknown_intent_in_vocabulary.yaml": ("vocabulary.smalltalk", "unknown intent 'smalltalk'"),
    # missing pieces
    "missing_intent.yaml": ("intents", r"missing intent\(s\) general"),
    "missing_tiers.yaml": ("tiers", "required key is missing"),
    "missing_max_words.yaml": ("intents.nutrition.max_words", "required key is missing"),
    "missing_vocabulary.yaml": ("vocabulary", "required key is missing"),
    "no_tiers.yaml": ("tiers", "at least one tier is needed"),
    # wrong types
    "wrong_type_primary_is_string.yaml": ("intents.nutrition.primary", "valid list, got str 'readiness_nutrition'"),
    "wrong_type_max_words_text.yaml": ("intents.recovery.max_words", "valid integer"),
    "wrong_type_tier_fraction.yaml": ("tiers.free", "valid integer, got float 50.5"),
    "wrong_type_weight_text.yaml": ("vocabulary.nutrition.en.protein", "valid number"),
    "wrong_type_intents_list.yaml": ("intents", "valid dictionary, got list"),
    "wrong_type_routing_scalar.yaml": ("routing", "valid dictionary"),
    "wrong_type_scope_terms_string.yaml": ("scopes.today.terms.en", "valid list, got str 'today'"),
    "wrong_type_intent_null.yaml": ("intents.general", "valid dictionary"),
    "yaml11_boolean_term.yaml": ("vocabulary.recovery.en.False", "read as true/false|reads an unquoted yes/no/on/off"),
    "norwegian_key_read_as_boolean.yaml": ("vocabulary.recovery.False", "unknown language False .*quote the key"),
    "yaml11_octal_tier.yaml": ("tiers.free", r"got str '050' \(write 50, not 050: YAML 1.1 reads a leading zero as octal\)"),
    "yaml11_base_60_tier.yaml": ("tiers.paid", r"got str '1:30' \(YAML 1.1 reads 1:30 as a base-60 number \(90\)"),
    "recursive_alias.yaml": ("intents.nutrition.secondary[1]", "unknown fragment"),
    # duplicates and contradictions
    "duplicate_fragment_in_list.yaml": ("intents.recovery.primary", "lists 'readiness_recovery' twice"),
    "duplicate_intent_key.yaml": ("line 34", r"duplicate key 'training' \(first on line 9\)"),
    "duplicate_term_key.yaml": ("line 49", "duplicate key 'train'"),
    "duplicate_tier_key.yaml": ("line 8", r"duplicate key 'free' \(first on line 6\)"),
    "duplicate_merge_key.yaml": ("line 36", r"a second merge key '<<' \(first on line 35\)"),
    "duplicate_term_case_folded.yaml": ("vocabulary.training.en",
                                        "the terms 'train' and 'TRAIN' are one term to the matcher"),
    "duplicate_term_unicode_form.yaml": ("vocabulary.general.fr",
                                         r"the terms 'caf\\xe9' and 'cafe\\u0301' are one term"),
    "duplicate_clinical_term_case_folded.yaml": ("clinical_terms.en", "the terms 'pain' and 'Pain' are one term"),
    "han_term_under_a_spaced_language.yaml": ("clinical_terms.en", "the term '膝痛' is written only in Han or Kana, "
                                                                     "and en terms are found as words"),
    "latin_term_under_zh.yaml": ("vocabulary.general.zh", "the term 'thx' holds no Han or Kana"),
    "zero_width_space_in_term.yaml": ("vocabulary.recovery.en",
                                      r"the term 'sle\\u200bep' holds the control character U\+200B"),
    "fragment_in_primary_and_exclude.yaml": ("intents.injury", "'baseline_strength' is in both primary and exclude"),
    "fragment_in_primary_and_secondary.yaml": ("intents.conditions", "'conditions_today' is in both primary and secondary"),
    "two_scope_actions_one_fragment.yaml": ("scopes.today", r"'readiness_training' has two actions \(promote and drop\)"),
    "modifier_intent_twice.yaml": ("scopes.today.modifiers[1].intents", "lists 'training' twice"),
    # numbers out of range, bad names
    "negative_weight.yaml": ("vocabulary.injury.en.pain", "greater than 0, got -1.0"),
    "zero_weight.yaml": ("vocabulary.conditions.en.weather", "greater than 0, got 0"),
    "weight_below_what_a_score_shows.yaml": ("vocabulary.conditions.en.weather",
                                             "1e-07 is lighter than the smallest weight a score shows"),
    "weight_too_large.yaml": ("vocabulary.recovery.en.sleep", "less than or equal to 100, got 1000"),
    "weight_nan.yaml": ("vocabulary.nutrition.en.eat", "got nan"),
    "weight_infinite.yaml": ("vocabulary.training.en.train", "got inf"),
    "negative_tier_budget.yaml": ("tiers.paid", "greater than or equal to 0, got -1400"),
    "tier_budget_too_large.yaml": ("tiers.paid", "less than or equal to 1000000"),
    "negative_margin.yaml": ("routing.margin", "greater than or equal to 0, got -0.5"),
    "max_words_zero.yaml": ("intents.general.max_words", "greater than 0, got 0"),
    "bad_tier_name.yaml": ("tiers.Paid Tier", "should match pattern"),
    "empty_term.yaml": ("vocabulary.general.en", "at least 1 character"),
    "modifier_reason_too_short.yaml": ("scopes.today.modifiers[0].reason", "at least 3 characters"),
    # hostile YAML: nesting, aliases, tags that would build objects
    "deeply_nested_flow.yaml": ("line 60", "nested deeper than 24 levels"),
    "deeply_nested_block.yaml": ("line 83", "nested deeper than 24 levels"),
    "alias_bomb.yaml": ("line 65", "expands to more than 100000 nodes"),
    "merge_key_bomb.yaml": ("line 105", "more than 64 aliases"),
    "tag_python_object_apply.yaml": ("line 33", "could not determine a constructor for the tag .*python/object/apply"),
    "tag_python_name.yaml": ("line 4", "could not determine a constructor for the tag .*python/name"),
    "tag_python_object_new.yaml": ("line 5", "could not determine a constructor for the tag .*python/object/new"),
    "tag_custom_include.yaml": ("line 45", "could not determine a constructor for the tag '!include'"),
    "tag_set_primary.yaml": ("line 20", "tag 'tag:yaml.org,2002:set' is not allowed"),
    "tag_omap_tiers.yaml": ("line 5", "tag 'tag:yaml.org,2002:omap' is not allowed"),
    "tag_binary_term.yaml": ("line 59", "tag 'tag:yaml.org,2002:binary' is not allowed"),
    # bytes that are not YAML text
    "not_utf8_latin1.yaml": ("line 60", r"not UTF-8 text \(byte 1627\)"),
    "not_utf8_utf16.yaml": ("line 1", r"not UTF-8 text \(byte 0\)"),
    "nul_byte.yaml": ("line 7", "unacceptable character #x0000"),
    "control_character.yaml": ("line 42", "unacceptable character #x0007"),
}


def _refusal(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    return caught.value


class TestCorpus:
    def test_the_unbroken_policy_is_accepted(self) -> None:
        """Every corpus file breaks this policy once; it must itself be fine."""
        assert set(parse_policy(MINIMAL_POLICY).intents) == {
            "training", "injury", "recovery", "nutrition", "conditions", "general"}

    def test_corpus_and_expectations_match(self) -> None:
        files = {p.name for p in CORPUS.glob("*.yaml")}
        assert len(files) >= 40
        assert files == set(EXPECTED), (files ^ set(EXPECTED))

    @pytest.mark.timeout(5)
    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_refused_naming_file_and_where(self, name: str) -> None:
        where, what = EXPECTED[name]
        error = _refusal(CORPUS / name)
        message = str(error)
        assert message.startswith("invalid policy")
        assert error.source == str(CORPUS / name)
        assert str(CORPUS / name) in message
        assert error.problems, "a refusal lists at least one problem"
        assert any(where in f"{path}: {problem}" for path, problem in error.problems) or where == name, \
            (where, error.problems)
        assert re.search(what, message), (what, message)

    @pytest.mark.timeout(5)
    @pytest.mark.parametrize("name", [n for n in sorted(EXPECTED) if not n.startswith("not_utf8")])
    def test_refused_as_a_draft_too(self, name: str) -> None:
        """The app validates editor text with parse_policy: the same text is refused there."""
        where, what = EXPECTED[name]
        with pytest.raises(PolicyError, match=r"^invalid policy\s<draft>: ") as caught:
            parse_policy((CORPUS / name).read_text(encoding="utf-8"))
        assert re.search(what, str(caught.value))


class TestLimits:
    @pytest.mark.timeout(5)
    def test_file_over_the_size_limit_is_refused_before_parsing(self, tmp_path: Path) -> None:
        huge = tmp_path / "huge.yaml"
        filler = "".join(f"# {'x' * 70} {i}\n" for i in range(MAX_POLICY_BYTES // 70 + 10))
        huge.write_text(MINIMAL_POLICY + filler, encoding="utf-8")
        assert huge.stat().st_size > MAX_POLICY_BYTES
        with pytest.raises(PolicyError, match=rf"huge\.yaml: file is \d+ bytes; the limit is {MAX_POLICY_BYTES}"):
            load_policy(huge)

    @pytest.mark.timeout(5)
    def test_draft_over_the_size_limit_is_refused(self) -> None:
        text = MINIMAL_POLICY + "# " + "y" * MAX_POLICY_BYTES + "\n"
        with pytest.raises(PolicyError, match=rf"larger than {MAX_POLICY_BYTES} bytes"):
            parse_policy(text)

    @pytest.mark.timeout(5)
    def test_huge_single_line_inside_the_limit_is_still_validated(self) -> None:
        """Just under the limit, a 400 kB reason is parsed and refused for its length, quickly."""
        text = MINIMAL_POLICY.replace("reason: \"a question", "reason: \"" + "z" * 400_000 + " a question")
        with pytest.raises(PolicyError, match=r"scopes\.today\.modifiers\[0\]\.reason: String should have at most 300"):
            parse_policy(text)

    @pytest.mark.timeout(5)
    def test_missing_file_and_directory(self, tmp_path: Path) -> None:
        with pytest.raises(PolicyError, match=r"nope\.yaml: no such file"):
            load_policy(tmp_path / "nope.yaml")
        with pytest.raises(PolicyError, match=r"is a directory, expected a YAML file"):
            load_policy(tmp_path)
