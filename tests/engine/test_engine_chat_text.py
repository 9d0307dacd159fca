"""Questions as chat apps, copy-paste and keyboards deliver them: markup and escapes around the
words, a word broken at a line end, letters a keyboard lacks, Arabic written the Egyptian way or on
a Persian keyboard, "fancy text" letters, digits for letters, words run together. Each reads as the
plain question does, and a clinical one stays clinical."""

from __future__ import annotations

import pytest
from engine_support import with_vocabulary

from coachctx.engine.chat_text import unwrap
from coachctx.engine.matching import clinical_terms_in
from coachctx.engine.policy import Policy
from coachctx.engine.routing import score
from coachctx.engine.text import stem, stem_variants, tokenise


class TestUnwrap:
    @pytest.mark.parametrize(("delivered", "plain"), [
        ("my <b>knee</b> pain is sharp", "my knee pain is sharp"),
        ('my <span class="x">knee pain</span><br/>today?', "my knee pain today?"),
        ("j'ai&nbsp;mal&nbsp;au&nbsp;genou", "j'ai mal au genou"),
        ("meu joelho d&#243;i", "meu joelho dói"),
        ("meu joelho d&#xF3;i", "meu joelho dói"),
        ("I have an inju-\nry in my knee", "I have an injury in my knee"),
        ("tengo una le-  \r\n  sión", "tengo una lesión"),
        ("my knee p a i n is sharp", "my knee pain is sharp"),
        ("P-A-I-N in my knee", "pain in my knee"),
        ("p.a.i.n, U.S.A. trip", "pain, usa trip"),
        ("knee pain8/10, run?", "knee pain 8/10, run?"),
        ("dolor7 / 10 en la rodilla", "dolor 7 / 10 en la rodilla"),
        ("MyKneeHurts, run today?", "my knee hurts, run today?"),
        ("#KneePain again", "# knee pain again"),
        ("myKneeHurtsCanIRunToday", "my knee hurts can i run today"),
        ("my knee is in p@in, $ore sh!n too, it hurt$", "my knee is in pain, sore shin too, it hurts"),
    ], ids=["bold", "span-and-break", "nbsp", "decimal-reference", "hex-reference", "hyphen-at-line-end", "crlf",
            "spelt-with-spaces", "spelt-with-dashes", "spelt-with-dots", "score-on-word", "score-spaced",
            "camel-case", "camel-case-hashtag", "camel-case-with-a-one-letter-word", "symbols-for-letters"])
    def test_a_delivered_question_has_the_plain_questions_words(self, delivered: str, plain: str) -> None:
        assert tokenise(delivered).words == tokenise(plain).words

    @pytest.mark.parametrize("question", [
        "is 5 < 6 and 7 > 3 a good pace", "R&D; week", "salt &pepper; ok", "run 5k - \n then 10k", "a-\n1 split",
        "e.g. a run", "is it a 5 k", "x - y. z", "膝 痛い", "waja3 ktir", "vo2max 5/10", "MRIs, PBs and McD",
        "mail me@gmail.com, $50 shoes!! wow!", "@coach run today!",
    ], ids=["comparison", "ampersand", "unknown-reference", "dash-before-a-line", "dash-before-a-number",
            "two-letters", "a-number-between", "different-separators", "two-cjk-words", "arabic-chat-digit",
            "a-number-in-a-word", "names-in-camel-case", "an-address-a-price-and-shouting", "a-mention"])
    def test_what_is_not_markup_stays(self, question: str) -> None:
        assert unwrap(question) == question

    def test_spaced_out_han_and_kana_read_as_one_text(self) -> None:
        assert tokenise("足 首 を 怪 我 し ま し た").unspaced == tokenise("足首を怪我しました").unspaced

    def test_a_tag_shaped_piece_reads_as_a_tag(self) -> None:
        assert tokenise("x<y>z").words == ("x", "z")

    def test_the_raw_question_is_kept_for_the_model(self) -> None:
        assert tokenise("my <b>knee</b>").raw == "my <b>knee</b>"


class TestFancyLettersAndDigits:
    @pytest.mark.parametrize(("delivered", "plain"), [
        ("my \U0001d424\U0001d427\U0001d41e\U0001d41e \U0001d421\U0001d42e\U0001d42b\U0001d42d\U0001d42c",
         "my knee hurts"),
        ("my \u1d0b\u0274\u1d07\u1d07 \u029c\u1d1c\u0280\u1d1b\ua731", "my knee hurts"),
        ("\U0001f17a\U0001f17d\U0001f174\U0001f174 pain", "knee pain"),
        ("\U0001f150\U0001f152\U0001f157\U0001f154 again", "ache again"),
        ("\u24da\u24dd\u24d4\u24d4 hurts", "knee hurts"),
        ("\u24ab\u249c\u24a4\u24a9 today", "pain today"),
        ("p\u0336a\u0336i\u0336n\u0336 today", "pain today"),
        ("p\u0332a\u0332i\u0332n\u0332 today", "pain today"),
        ("so much p41n", "so much pain"),
        ("KN33 hurts", "knee hurts"),
        ("h3lp, k1ll1ng me", "help, killing me"),
        ("it hurts4days", "it hurts 4 days"),
        ("week2 of the plan", "week 2 of the plan"),
        ("Ｐ４１Ｎ today", "pain today"),
    ], ids=["bold", "small-capitals", "negative-squared", "negative-circled", "circled", "parenthesized",
            "struck-through", "underlined", "leet", "leet-capitals",
            "leet-ones", "number-between-words", "number-after-a-word", "full-width-leet"])
    def test_a_delivered_question_has_the_plain_questions_words(self, delivered: str, plain: str) -> None:
        assert tokenise(delivered).words == tokenise(plain).words

    @pytest.mark.parametrize("word", [
        "vo2max", "5k", "10km", "5am", "2day", "x400", "b12", "waja3", "mat3ab", "s7a", "t1d", "ex8es", "koimh8hka", "c25k",
    ])
    def test_a_number_that_belongs_to_its_word_stays(self, word: str) -> None:
        # units, times, model names, textspeak and Arabic/Greek chat's digits for letters: a term may be any of them
        assert tokenise(word).words == (word,)

    def test_a_term_with_digits_meets_the_question_that_writes_it(self, policy: Policy) -> None:
        # terms are read by the same rules as questions, so a split term is a phrase the question has too
        assert clinical_terms_in("waja3 fi rukbati", policy)
        assert clinical_terms_in("3ndi wag3 fi rjli", policy)

    @pytest.mark.parametrize("question", [
        "my wage is low, can i afford a coach", "Ich wage mich an einen Marathon", "day112 of my run streak",
        "run streak day1177", "edge530 or fenix7?",
    ], ids=["wage", "german-wage", "day-count", "day-count-4-digits", "model-names"])
    def test_a_reading_of_digits_makes_no_everyday_question_clinical(self, question: str, policy: Policy) -> None:
        # Arabic chat's "wag3" (pain) is not leetspeak for "wage"; a count on a word is not an emergency number
        assert clinical_terms_in(question, policy) == []

    def test_a_long_held_down_run_is_read_in_linear_time(self) -> None:
        # the run's end was found by a pattern anchored at the word's end, tried from every letter
        words = tokenise("no" + "o" * 20_000 + "pe " + "a" * 20_000 + "1").words
        assert words[0].startswith("no") and len(words) == 2


class TestCamelCaseTerms:
    def test_a_term_with_capitals_inside_meets_every_way_a_question_writes_it(self, policy: Policy) -> None:
        crossfit = with_vocabulary(policy, {"training": {"en": {"CrossFit": 1.0}}})
        for question in ("crossfit tonight?", "CrossFit tonight?", "cross fit tonight?", "CROSSFIT tonight?"):
            assert score(question, crossfit).matched["training"] == (("CrossFit", 1.0),), question

    @pytest.mark.parametrize("emoji", ["\U0001f974", "\U0001f635", "\U0001f922", "\U0001f92e", "\U0001f605"])
    def test_a_face_for_a_state_of_mind_reads_as_nothing(self, emoji: str) -> None:
        # woozy, dizzy, nauseated and vomiting faces are jet lag, a hangover or a gel's taste as often as a symptom
        assert tokenise(f"race in 4 days {emoji} what now").words == tokenise("race in 4 days what now").words


class TestTypedSpellings:
    @pytest.mark.parametrize(("term", "typed", "algorithm"), [
        ("knæ", "knae", "danish"), ("læge", "laege", "danish"), ("hævet", "haevet", "norwegian"),
("müde", "muede", "german"), ("fuß", "fuss", "german"),
        ("ركبتي", "ركبتى", "arabic"), ("كسر", "کسر", "arabic"),
        ("ağrısı", "ağrisi", "turkish"),
    ])
    def test_a_term_is_filed_under_what_a_keyboard_without_its_letters_types(
            self, term: str, typed: str, algorithm: str) -> None:
        # a question word is looked up by its own stem: the term must be filed under that stem too
        assert stem(typed, algorithm) in stem_variants(term, algorithm)

    @pytest.mark.parametrize(("term", "typed", "algorithm"), [
        ("læge", "laege", "english"), ("müde", "muede", "spanish"), ("ركبتي", "ركبتى", "english"),
        ("ømme", "oemme", "danish"), ("في", "فی", "arabic"),
    ])
    def test_only_the_spellings_that_keep_terms_apart_are_filed(self, term: str, typed: str, algorithm: str) -> None:
        # ø as "oe" and the Persian yeh would make two terms one ("ømme"/"ømhed", "حمى"/"حمية")
        assert stem(typed, algorithm) not in stem_variants(term, algorithm)


class TestClinicalAsDelivered:
    @pytest.mark.parametrize(("delivered", "plain"), [
        ("my <b>knee pain</b> is sharp, intervals today?", "my knee pain is sharp, intervals today?"),
        ("j'ai&nbsp;mal&nbsp;au&nbsp;genou", "j'ai mal au genou"),
        ("I have an inju-\nry in my knee", "I have an injury in my knee"),
        ("mit knae gor ondt", "mit knæ gør ondt"),
        ("min ankel er haevet", "min ankel er hævet"),
        ("عندي کسر في القدم", "عندي كسر في القدم"),
        ("ركبتى بتوجعنى", "ركبتي بتوجعني"),
        ("GÖĞÜS AĞRISI VAR", "göğüs ağrısı var"),
        ("어제부터허리가아파요", "어제부터 허리가 아파요"),
        ("\u0455\u043er\u0435 kn\u0435\u0435, run?", "sore knee, run?"),
        ("足 首 を 怪 我 し ま し た", "足首を怪我しました"),
        ("달리다가발목을삐끗했어요", "달리다가 발목을 삐끗했어요"),
        ("so much p41n after intervals, train today?", "so much pain after intervals, train today?"),
        ("it hurts4days, intervals today?", "it hurts 4 days, intervals today?"),
        ("\u026a\u1d1b \u029c\u1d1c\u0280\u1d1b\ua731 when i sprint", "it hurts when i sprint"),
        ("\U0001f178\U0001f183 \U0001f177\U0001f184\U0001f181\U0001f183\U0001f182 when i sprint",
         "it hurts when i sprint"),
        ("ItHurts when i sprint, tempo today?", "it hurts when i sprint, tempo today?"),
        ("dolor4dias, entreno hoy?", "dolor 4 dias, entreno hoy?"),
        ("SwollenAnkle before my race, tempo?", "swollen ankle before my race, tempo?"),
        ("ACLTear, can i cycle?", "acl tear, can i cycle?"),
        ("\U0001f915 after my run today, intervals?", "injured after my run today, intervals?"),
        ("\U0001fa7c for 2 weeks, when can i run", "crutches for 2 weeks, when can i run"),
        ("\U0001f912 should i run today", "fever should i run today"),
        ("무릎이너무아파요", "무릎이 너무 아파요"),
        ("어제부터계속아파요 오늘 뛰어도 돼?", "어제부터 계속 아파요 오늘 뛰어도 돼?"),
    ], ids=["html", "nbsp", "hyphenated", "danish-ascii", "norwegian-ascii", "persian-keyboard", "egyptian-yeh",
            "turkish-capitals", "korean-without-spaces", "korean-without-spaces-2", "cyrillic-look-alike-words",
            "spaced-japanese", "leet", "number-between-words", "small-capitals", "negative-squared", "camel-case",
            "spanish-number-between-words", "camel-case-not-everyday", "camel-case-abbreviation", "bandaged-face",
            "crutch", "thermometer-face", "korean-after-an-adverb", "korean-after-an-adverb-2"])
    def test_a_clinical_question_stays_clinical(self, delivered: str, plain: str, policy: Policy) -> None:
        assert clinical_terms_in(plain, policy)
        assert clinical_terms_in(delivered, policy)


class TestNotReadIntoOtherWords:
    """What the readings above must not do: make an everyday word clinical, or a term disappear."""

    @pytest.mark.parametrize("question", [
        "커피를 마셔도 되나요?", "커피를마셔도되나요?", "대회 주의사항 알려주세요", "헤어질 때 인사", "한숨이 나와요 기록 때문에",
        "중심장소에서 만나요 러닝크루", "배열이 이상해요 계획표", "퍼부어도 뛰어요? 비가 많이 와요",
    ], ids=["coffee", "coffee-run-together", "precautions", "part-ways", "a-sigh", "meeting-place", "order",
            "pouring-rain"])
    def test_a_korean_term_is_not_found_inside_an_everyday_word(self, question: str, policy: Policy) -> None:
        # 커피를 holds 피를 (blood), 주의사항 의사 (doctor), 헤어질 어질 (dizzy): only after a particle
        assert clinical_terms_in(question, policy) == []

    @pytest.mark.parametrize(("wrapped", "one_line"), [
        ("I had an x-\nray yesterday", "I had an x-ray yesterday"),
        ("my post-\nop knee, run?", "my post-op knee, run?"),
        ("an ACL-\ntear, can I cycle?", "an ACL-tear, can I cycle?"),
        ("is it a knee-\ninjury?", "is it a knee-injury?"),
    ], ids=["x-ray", "post-op", "acl-tear", "knee-injury"])
    def test_a_hyphenated_word_that_wrapped_keeps_its_terms(self, wrapped: str, one_line: str,
                                                            policy: Policy) -> None:
        assert clinical_terms_in(one_line, policy)
        assert clinical_terms_in(wrapped, policy) == clinical_terms_in(one_line, policy)
