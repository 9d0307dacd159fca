"""Routing's scores when a question's word meets a term in another form: misspelt, as a part of a
compound, or behind an Arabic clitic. Each case writes its own vocabulary, at reduced weight where
the match is less sure, and says how it matched."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import with_vocabulary

from coachctx.engine.matching import clinical_terms_in, infer_scope
from coachctx.engine.policy import Policy
from coachctx.engine.routing import score
from coachctx.engine.text import tokenise


class TestTypoTolerance:
    """A misspelt word matches a vocabulary word at reduced weight and says so."""

    @pytest.fixture
    def typo(self, policy: Policy) -> Policy:
        return with_vocabulary(policy, {"training": {"en": {"marathon": 1.5, "interval": 1.0, "run": 1.0}},
                                        "injury": {"en": {"hamstring": 1.0, "hurt": 1.0}, "ja": {"怪我": 1.5}},
                                        "recovery": {"ko": {"회복": 1.5}}})

    @pytest.mark.parametrize(("question", "intent", "term", "weight"), [
        ("can i do the marthon sunday", "training", "marathon (fuzzy: marthon)", 1.125),   # a dropped letter
        ("intreval session tonight", "training", "interval (fuzzy: intreval)", 0.75),      # two letters swapped
        ("my hamstrnig is sore", "injury", "hamstring (fuzzy: hamstrnig)", 0.75),          # 9 letters
        ("my hmastrnig is sore", "injury", "hamstring (fuzzy: hmastrnig)", 0.75),          # 2 edits from 9
        ("it hrut on the hills", "injury", "hurt (fuzzy: hrut)", 0.75),                    # 4 letters: a swap
    ])
    def test_a_misspelling_matches_at_three_quarters(self, typo: Policy, question: str, intent: str, term: str,
                                                     weight: float) -> None:
        s = score(question, typo)
        assert s.matched[intent] == ((term, weight),)

    @pytest.mark.parametrize("question", [
        "the rum was nice",          # 3 letters: no tolerance
        "it htur on the hills",      # 4 letters: a swap only, not a letter moved two places
        "it hur on the hills",       # 4 letters: no letter dropped
        "can i do the xaraton",      # the first letter differs
        "my hmastrnigg is sore",     # 3 edits
        "marathons",                 # stems to the term: an exact match, not a fuzzy one
    ])
    def test_what_is_not_a_misspelling(self, typo: Policy, question: str) -> None:
        matched = [t for terms in score(question, typo).matched.values() for t, _ in terms]
        assert not any("fuzzy" in t for t in matched)

    @pytest.mark.parametrize(("vocabulary", "question"), [
        ({"nutrition": {"en": {"=fasted": 1.5}}}, "how do i get faster"),           # English
        ({"nutrition": {"de": {"wiegen": 1.0}}}, "wegen dem Regen laufen?"),        # German "because of"
        ({"conditions": {"ru": {"скользко": 1.0}}}, "сколько бегать"),             # Russian "how much"
        ({"training": {"en": {"marathon": 1.5}}}, "el maraton"),                      # a word of its own elsewhere
        ({"injury": {"en": {"pain": 1.0}}}, "pian on vuoro"),                          # Finnish "soon", a swap of "pain"
    ], ids=["en", "de", "ru", "es", "fi-four-letters"])
    def test_an_everyday_word_is_never_read_as_a_misspelling(self, policy: Policy, vocabulary: dict[str, Any],
                                                             question: str) -> None:
        assert score(question, with_vocabulary(policy, vocabulary)).nothing_matched

    def test_never_for_substring_or_prefix_scripts(self, typo: Policy) -> None:
        assert score("怪我我", typo).matched["injury"] == (("怪我", 1.5),)
        assert score("괴복", typo).nothing_matched  # one jamo off is not tolerated for Hangul prefixes
        assert score("怪", typo).nothing_matched


class TestCompounds:
    """German, Dutch, the Nordic languages and Finnish write a compound as one word: a word the
    vocabulary does not know is read as its parts, at reduced weight, once per intent."""

    @pytest.mark.parametrize(("vocabulary", "question", "intent", "term", "weight"), [
        ({"injury": {"de": {"Schmerzen": 1.0}}}, "Knieschmerzen seit Montag", "injury",
         "Schmerzen (part of: knieschmerzen)", 0.75),                                   # the last part
        ({"injury": {"no": {"skade": 1.5}}}, "hvordan unngå kneskader?", "injury",
         "skade (part of: kneskader)", 1.125),
        ({"training": {"nl": {"trainen": 1.0}}}, "hockeytraining buiten of binnen?", "training",
         "trainen (part of: hockeytraining)", 0.75),
        ({"injury": {"fi": {"polvi": 1.0}}}, "polvikipu taas", "injury", "polvi (part of: polvikipu)", 0.75),
    ], ids=["de-head", "no-head", "nl-head", "fi-first-part"])
    def test_a_part_of_a_compound_matches_at_three_quarters(self, policy: Policy, vocabulary: dict[str, Any],
                                                            question: str, intent: str, term: str,
                                                            weight: float) -> None:
        assert score(question, with_vocabulary(policy, vocabulary)).matched[intent] == ((term, weight),)

    def test_one_word_counts_once_per_intent_whatever_its_parts(self, policy: Policy) -> None:
        both = with_vocabulary(policy, {"injury": {"de": {"Knie": 0.5, "Schmerz": 1.0}, "sv": {"smärta": 1.0}}})
        assert score("Knieschmerzen", both).matched["injury"] == (("Schmerz (part of: knieschmerzen)", 0.75),)

    @pytest.mark.parametrize(("vocabulary", "question"), [
        ({"training": {"en": {"training": 1.0}}}, "retraining tonight"),      # English is not read as parts
        ({"training": {"de": {"Ende": 1.0}}}, "am Wochenende"),             # an everyday word stays whole
        ({"injury": {"de": {"Knie": 1.0}}}, "Knies"),                       # too short to hold two parts
    ], ids=["not-compounding", "everyday-word", "short"])
    def test_what_is_not_read_as_parts(self, policy: Policy, vocabulary: dict[str, Any], question: str) -> None:
        assert score(question, with_vocabulary(policy, vocabulary)).nothing_matched

    def test_a_word_the_vocabulary_knows_is_not_split(self, policy: Policy) -> None:
        whole = with_vocabulary(policy, {"training": {"de": {"Laufschuhe": 1.0, "Lauf": 1.0}}})
        assert score("neue Laufschuhe", whole).matched["training"] == (("Laufschuhe", 1.0),)


class TestWordsRunTogether:
    """Chat runs English words together ("#kneepain", "ithurts"): a word that is no English word,
    no everyday word of any language and nothing any table knows or reads is read apart into
    common English words, at reduced weight, in a question in English or of no detected language,
    and says so."""

    @pytest.mark.parametrize(("vocabulary", "question", "intent", "term"), [
        ({"injury": {"en": {"pain": 1.0}}}, "#kneepain after my run", "injury", "pain (part of: kneepain)"),
        ({"injury": {"en": {"hurt": 1.0}}}, "ithurts when i go downstairs", "injury", "hurt (part of: ithurts)"),
        ({"training": {"en": {"leg day": 1.0, "day": 0.5}}}, "should i skip legday?", "training", "leg day (part of: legday)"),
        ({"training": {"en": {"run": 1.0}}}, "icantrun today", "training", "run (part of: icantrun)"),
        ({"injury": {"en": {"=acl": 1.0}}}, "tornacl last year, can i sprint", "injury", "=acl (part of: tornacl)"),
    ], ids=["hashtag", "it-hurts", "phrase-first", "three-words", "whole-word-term"])
    def test_words_run_together_match_at_three_quarters(self, policy: Policy, vocabulary: dict[str, Any],
                                                        question: str, intent: str, term: str) -> None:
        assert score(question, with_vocabulary(policy, vocabulary)).matched[intent][0] == (term, 0.75)

    @pytest.mark.parametrize(("vocabulary", "question"), [
        ({"injury": {"en": {"stroke": 1.0}}}, "backstroke drills"),      # an English word stays whole
        ({"nutrition": {"en": {"eat": 1.0}}}, "hill repeats tonight"),   # "repeats" is no "rep eats"
        ({"nutrition": {"en": {"ate": 1.0}}}, "pas na klate"),           # "kl" is no English word
        ({"injury": {"es": {"duele": 1.0}}}, "meduele la rodilla"),                 # English words only
        ({"recovery": {"en": {"flu": 1.0}}}, "¿cómo fluyen los electrolitos?"),     # not in a Spanish question
        ({"nutrition": {"en": {"lot": 1.0}}}, "alot of carbs"),          # no part of one letter but "i"
    ], ids=["english-word", "inflected", "not-english-part", "not-english", "not-in-another-language",
         "one-letter"])
    def test_what_is_not_read_apart(self, policy: Policy, vocabulary: dict[str, Any], question: str) -> None:
        matched = [t for terms in score(question, with_vocabulary(policy, vocabulary)).matched.values() for t, _ in terms]
        assert not any("part of" in t for t in matched)

    def test_a_word_one_table_has_is_not_read_apart_by_another(self, policy: Policy) -> None:
        assert "Joghurt" in policy.vocabulary["nutrition"]["de"]  # not a clinical term: "jog hurt" would be
        assert not clinical_terms_in("Ist Joghurt vor dem Lauf eine gute Idee?", policy)

    def test_a_clinical_word_run_together_keeps_the_injury_signal(self, policy: Policy) -> None:
        assert clinical_terms_in("#kneepain again, can i still race sunday?", policy)
        assert infer_scope(tokenise("can i do the long run nextweek"), policy)[0] == "week"


class TestArabicClitics:
    """Arabic writes "and", "for", "with", "like" and "the" onto the next word."""

    @pytest.mark.parametrize(("question", "term"), [
        ("هل أنا جاهز لسباق", "سباق (part of: لسباق)"),        # for + a race
        ("والسباق غدا", "سباق (part of: والسباق)"),            # and + the + race
    ], ids=["li", "wa-al"])
    def test_a_word_with_a_proclitic_meets_its_term_at_full_weight(self, policy: Policy, question: str,
                                                                    term: str) -> None:
        p = with_vocabulary(policy, {"training": {"ar": {"سباق": 1.0}}, "injury": {"ar": {"ركبة": 1.0}}})
        matched = [t for terms in score(question, p).matched.values() for t in terms]
        assert (term, 1.0) in matched

    def test_the_rest_must_be_three_letters_or_more(self, policy: Policy) -> None:
        p = with_vocabulary(policy, {"training": {"ar": {"جر": 1.0}}})
        assert score("لجر", p).nothing_matched
