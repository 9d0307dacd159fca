"""The checked-in vocabulary beyond the dev set: every language routes, and a broad question set
(all ten languages, phrasings dev.yaml does not have) keeps its route accuracy."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from engine_support import derive_policy

from bench.collisions import collisions
from coachctx.engine.common_words import common_words, everyday_words, function_words, question_language
from coachctx.engine.policy import Policy
from coachctx.engine.routing import route
from coachctx.engine.text import tokenise

BROAD = Path(__file__).parents[1] / "data" / "questions_broad.yaml"
REQUIRED_LANGUAGES = ("en", "es", "de", "fr", "pt", "it", "ja", "zh", "ko", "ru")


class TestVocabulary:
    def test_every_intent_has_terms_in_every_required_language(self, policy: Policy) -> None:
        missing = [(intent, lang) for intent, by_lang in policy.vocabulary.items()
                   for lang in REQUIRED_LANGUAGES if not by_lang.get(lang)]  # type: ignore[call-overload]
        assert missing == []

    def test_broad_question_set_routes_at_least_90_percent(self, policy: Policy) -> None:
        rows = yaml.safe_load(BROAD.read_text(encoding="utf-8"))["questions"]
        assert len(rows) >= 100
        wrong = []
        per_lang: Counter[str] = Counter()
        for row in rows:
            r = route(row["q"], policy, None)
            per_lang[row.get("lang", "en")] += 1
            if r.intent not in row["intents"]:
                wrong.append((row["q"], r.intent, row["intents"]))
        accuracy = 1 - len(wrong) / len(rows)
        print(f"broad set route accuracy {accuracy:.1%} over {len(rows)} questions; misses: {wrong}")
        assert set(per_lang) >= set(REQUIRED_LANGUAGES)
        assert accuracy >= 0.90, wrong

    def test_a_question_in_each_language_reaches_the_rules(self, policy: Policy) -> None:
        rows = yaml.safe_load(BROAD.read_text(encoding="utf-8"))["questions"]
        ruled = {row.get("lang", "en") for row in rows if route(row["q"], policy, None).source == "rules"}
        assert ruled >= set(REQUIRED_LANGUAGES)


class TestFalseFriends:
    """Every language's terms meet every question, so a term must not be an everyday word elsewhere."""

    TOP = 400

    def test_no_term_matches_one_of_the_commonest_words_of_another_language(self, policy: Policy) -> None:
        found = collisions(policy, top=self.TOP)
        assert [str(c) for c in found] == []

    def test_the_check_finds_a_false_friend(self, policy: Policy) -> None:
        def add(d: dict[str, Any]) -> None:
            d["vocabulary"]["conditions"]["es"]["helada"] = 1.0  # stems to "hel": Swedish "hela" (whole)

        found = collisions(derive_policy(policy, add), top=self.TOP, languages=["es"])
        assert ("vocabulary.conditions", "helada", "sv", "hela") in {(c.where, c.term, c.other, c.word) for c in found}


class TestCommonWords:
    def test_the_shipped_list_is_what_the_generator_writes(self) -> None:
        done = subprocess.run([sys.executable, "-m", "bench.common_words", "--check"], capture_output=True, text=True,
                              cwd=Path(__file__).parents[2])
        assert done.returncode == 0, done.stdout + done.stderr

    def test_words_with_combining_marks_are_kept(self) -> None:
        # a Devanagari vowel sign or virama is no letter (str.isalpha is false): the lists once
        # held 59 of Hindi's 400 commonest words
        assert {"है", "में", "क्या", "लिए"} <= function_words()
        assert {"है", "में", "क्या"} <= set(everyday_words()["hi"][:50])
        assert question_language(tokenise("आज मुझे क्या खाना चाहिए").words) == "hi"

    def test_romanised_hindi_function_words_are_function_words(self) -> None:
        assert {"kya", "hai", "mujhe", "liye", "aaj"} <= function_words()
        assert not {"karna", "kal", "dard"} & function_words()  # to do, yesterday or tomorrow, pain

    def test_it_holds_everyday_words_of_several_languages_and_no_rare_ones(self) -> None:
        words = common_words()
        assert {"faster", "wegen", "сколько", "maratón", "σήμερα"} <= words
        assert not {"hamstrnig", "intreval", "run"} & words  # typos, and words too short to be read as typos
