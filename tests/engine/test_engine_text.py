"""Stage: normalise and tokenise, per script."""

from __future__ import annotations

import random
import unicodedata

import pytest

from coachctx.engine.matching import clinical_terms_in
from coachctx.engine.policy import Policy
from coachctx.engine.routing import score
from coachctx.engine.text import MAX_TOKEN_CHARS, _word_chunks, normalise, script_of, stem, tokenise


class TestNormalise:
    def test_nfkc_folds_fullwidth_and_casefolds(self) -> None:
        assert normalise("ＴＲＡＩＮＩＮＧ Pain") == "training pain"

    def test_casefold_is_not_lower(self) -> None:
        # lower() keeps ß; casefold() makes it ss, so "STRASSE" and "Straße" meet
        assert normalise("Straße") == normalise("STRASSE") == "strasse"

    @pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u200f", "\ufeff", "\u2066"])
    def test_invisible_format_characters_are_removed(self, invisible: str) -> None:
        assert normalise(f"tr{invisible}ain") == "train"

    def test_compatibility_forms_are_composed(self) -> None:
        assert normalise("ﬁt e\u0301cole") == "fit école"


class TestTokenise:
    @pytest.mark.parametrize(("question", "words"), [
        ("Should I train through this pain?", ("should", "i", "train", "through", "this", "pain")),
        ("¿Puedo correr hoy con dolor de rodilla?", ("puedo", "correr", "hoy", "con", "dolor", "de", "rodilla")),
        ("Was soll ich vor dem Wettkampf essen?", ("was", "soll", "ich", "vor", "dem", "wettkampf", "essen")),
        ("Je suis très fatigué, dois-je me reposer ?",
         ("je", "suis", "très", "fatigué", "dois", "je", "me", "reposer")),
        ("Posso treinar hoje com dor no joelho?", ("posso", "treinar", "hoje", "com", "dor", "no", "joelho")),
        ("Posso allenarmi oggi con il dolore al ginocchio?",
         ("posso", "allenarmi", "oggi", "con", "il", "dolore", "al", "ginocchio")),
    ], ids=["en", "es", "de", "fr", "pt", "it"])
    def test_latin_languages_split_into_words(self, question: str, words: tuple[str, ...]) -> None:
        tokens = tokenise(question)
        assert tokens.words == words
        assert tokens.unspaced == ""
        assert tokens.scripts == ("Latin",)

    @pytest.mark.parametrize(("question", "words"), [
        ("my knee hurtsss sooo bad", ("my", "knee", "hurts", "so", "bad")),
        ("cant sleeeep, feeeel wrecked", ("cant", "sleep", "feel", "wrecked")),
        ("колено болиттт", ("колено", "болит")),
        ("ran 1000m in 3:000", ("ran", "1000m", "in", "3", "000")),
    ], ids=["trailing", "inside", "cyrillic", "digits-kept"])
    def test_a_held_down_letter_reads_as_the_word(self, question: str, words: tuple[str, ...]) -> None:
        assert tokenise(question).words == words

    @pytest.mark.parametrize(("question", "words"), [
        ("سباق ٥ كم", ("سباق", "5", "كم")), ("५ किमी", ("5", "किमी")), ("１０ｋ", ("10k",)), ("۱۲ km", ("12", "km")),
    ], ids=["arabic-indic", "devanagari", "full-width", "persian"])
    def test_digits_of_every_script_read_as_ascii(self, question: str, words: tuple[str, ...]) -> None:
        assert tokenise(question).words == words

    @pytest.mark.parametrize(("question", "words"), [
        ("my kneeeee hurts", ("my", "knee", "hurts")),
        ("paaaain in my calf", ("pain", "in", "my", "calf")),
        ("sooooore legs", ("sore", "legs")),
        ("bin sooo müüüüde", ("bin", "so", "müde")),
        ("goooood mooooorgen", ("good", "morgen")),
        ("hamstriiing kiiiipu", ("hamstring", "kipu")),
    ], ids=["double-at-the-end", "single-inside", "both", "umlaut", "everyday-reading-kept", "no-everyday-reading-one-letter"])
    def test_a_held_down_run_reads_as_one_or_two_letters(self, question: str, words: tuple[str, ...]) -> None:
        # a run stands for one or two letters: the reading that is an everyday word of some language
        assert tokenise(question).words == words

    @pytest.mark.parametrize(("question", "words"), [
        ("tô com muita dooooor", ("tô", "com", "muita", "dor")),
        ("the dooooor is open", ("the", "door", "is", "open")),
        ("j'ai maaaal au genou", ("j", "ai", "mal", "au", "genou")),
    ], ids=["portuguese", "english", "french"])
    def test_a_held_down_run_reads_in_the_questions_language(self, question: str, words: tuple[str, ...]) -> None:
        assert tokenise(question).words == words

    def test_a_held_down_pain_word_is_still_clinical(self, policy: Policy) -> None:
        for stretched, plain in (("paaaain in my kneeeee, intervals today?", "pain in my knee, intervals today?"),
                                 ("sooooore kneeeee, should i run", "sore knee, should i run")):
            assert clinical_terms_in(plain, policy)
            assert clinical_terms_in(stretched, policy) == clinical_terms_in(plain, policy)

    @pytest.mark.parametrize(("question", "words"), [
        ("knee \u0440\u0430in", ("knee", "pain")),  # Cyrillic р and а in a Latin word: a tie, read as Latin
        ("s\u043ere kn\u0435\u0435", ("sore", "knee")),
        ("\u0431o\u043b\u0438\u0442 \u043a\u043e\u043b\u0435\u043d\u043e", ("болит", "колено")),  # a Latin o
        ("\u03c1ain", ("pain",)),  # a Greek rho
        ("rus\u0441\u043a\u0438\u0439", ("rusский",)),  # к and и have no Latin look-alike, r and u no Cyrillic
        ("\u0455\u043er\u0435 kn\u0435\u0435 run", ("sore", "knee", "run")),  # whole words of look-alikes
        ("my \u043a\u043e\u043b\u0435\u043d\u043e hurts", ("my", "колено", "hurts")),  # a Russian word: к, л, н
        ("\u043a\u043e\u043b\u0435\u043d\u043e \u0441\u043e\u0440 run", ("колено", "сор", "run")),  # mostly Russian
    ], ids=["cyrillic-in-latin", "latin-majority", "latin-in-cyrillic", "greek-in-latin", "no-look-alike",
            "look-alike-words", "a-russian-word", "not-a-latin-question"])
    def test_look_alike_letters_of_another_script_read_as_the_word(self, question: str,
                                                                    words: tuple[str, ...]) -> None:
        assert tokenise(question).words == words

    @pytest.mark.parametrize("invisible", ["\ufe0f", "\ufe0e", "\u034f", "\u3164", "\U000e0100", "\u180b", "\u2065",
                                           "\U000e0080", "\ufdd0", "\x00", "\x7f", "\x1b", "\x9f"])
    def test_invisible_marks_inside_a_word_are_not_part_of_it(self, invisible: str, policy: Policy) -> None:
        question = f"my knee pa{invisible}in{invisible} is sharp, intervals today?"
        assert tokenise(question).words == tokenise("my knee pain is sharp, intervals today?").words
        assert clinical_terms_in(question, policy) == ["pain"]

    def test_a_stretched_word_meets_its_term(self, policy: Policy) -> None:
        assert score("my knee hurtsss sooo bad", policy).matched["injury"]
        assert score("my knee hurtsss sooo bad", policy).matched["injury"] == \
            score("my knee hurts so bad", policy).matched["injury"]

    def test_ascii_words_of_a_non_ascii_question_are_latin_words(self) -> None:
        # ASCII chunks take a shortcut: one Latin word each, digits of no script, stretched letters
        # undone, a number written onto an everyday word read apart, as in an ASCII question
        t = tokenise("Café 2024 zone2 vo2max sooooo 膝 müde")
        assert t.words == ("café", "2024", "zone", "2", "vo2max", "so", "müde")
        assert t.words[2:5] == tokenise("zone2 vo2max").words
        assert t.unspaced == "膝"
        assert t.scripts == ("Latin", "Han")
        assert tokenise("١٢ 2024").scripts == ()

    def test_russian_keeps_cyrillic_words(self) -> None:
        tokens = tokenise("Что съесть перед тренировкой?")
        assert tokens.words == ("что", "съесть", "перед", "тренировкой")
        assert tokens.scripts == ("Cyrillic",)

    def test_korean_is_split_on_spaces(self) -> None:
        tokens = tokenise("오늘 훈련해도 될까요? 무릎이 아파요")
        assert tokens.words == ("오늘", "훈련해도", "될까요", "무릎이", "아파요")
        assert tokens.unspaced == ""
        assert tokens.scripts == ("Hangul",)

    def test_japanese_keeps_runs_for_substring_matching(self) -> None:
        tokens = tokenise("足首が痛いのですが、走ってもいいですか？")
        assert tokens.words == ()
        assert tokens.unspaced == "足首が痛いのですが 走ってもいいですか"
        assert tokens.scripts == ("Han", "Hiragana")

    def test_chinese_keeps_runs_for_substring_matching(self) -> None:
        tokens = tokenise("我应该休息几天来恢复？")
        assert tokens.words == ()
        assert tokens.unspaced == "我应该休息几天来恢复"
        assert tokens.scripts == ("Han",)

    def test_katakana_is_unspaced(self) -> None:
        assert tokenise("トレーニング").scripts == ("Katakana",)
        assert tokenise("トレーニング").unspaced == "トレーニング"

    def test_mixed_scripts_split_at_the_boundary(self) -> None:
        tokens = tokenise("HRVが低い today")
        assert tokens.words == ("hrv", "today")
        assert tokens.unspaced == "が低い"
        assert tokens.scripts == ("Latin", "Hiragana", "Han")

    def test_arabic_script_is_detected(self) -> None:
        tokens = tokenise("هل يمكنني الركض اليوم؟")
        assert tokens.scripts == ("Arabic",)
        assert tokens.words == ("هل", "يمكنني", "الركض", "اليوم")

    def test_arabic_harakat_stay_inside_the_word(self) -> None:
        assert tokenise("الرَّكض").words == ("الرَّكض",)

    def test_thai_script_is_detected_and_vowel_marks_do_not_split_words(self) -> None:
        tokens = tokenise("ฉันควรวิ่งวันนี้ไหม")
        assert tokens.scripts == ("Thai",)
        assert tokens.words == ("ฉันควรวิ่งวันนี้ไหม",)

    def test_devanagari_virama_does_not_split_words(self) -> None:
        assert tokenise("दर्द है").words == ("दर्द", "है")

    def test_punctuation_underscores_and_emoji_are_not_words(self) -> None:
        tokens = tokenise("run_fast!!! 🏃‍♀️ ... 5k")
        assert tokens.words == ("run", "fast", "5k")
        assert tokens.scripts == ("Latin",)

    def test_word_chunks_match_the_character_walk(self) -> None:
        # the regex split must cut exactly where a walk character by character cuts: letters and
        # digits, and combining marks that follow them (not marks after a space or a symbol)
        def walk(text: str) -> list[str]:
            chunks, current = [], ""
            for ch in text:
                if ch.isalnum() or (current and unicodedata.category(ch).startswith("M")):
                    current += ch
                elif current:
                    chunks, current = [*chunks, current], ""
            return [*chunks, current] if current else chunks

        pool = list("aéदरθ日ก5٥_ -.,!\u200d") + ["\u0301", "\u093f", "\u0e31", "\u064e", "\u20dd", "\u0903"]
        rng = random.Random(13)
        for _ in range(20_000):
            text = "".join(rng.choice(pool) for _ in range(rng.randrange(12)))
            assert _word_chunks(text) == walk(text), repr(text)

    def test_no_letters_gives_no_tokens(self) -> None:
        tokens = tokenise("?!… 🙂")
        assert (tokens.words, tokens.unspaced, tokens.scripts) == ((), "", ())

    def test_very_long_tokens_are_capped(self) -> None:
        assert tokenise("ab" * 250).words == (("ab" * 250)[:MAX_TOKEN_CHARS],)

    @pytest.mark.parametrize(("ch", "script"), [
        ("a", "Latin"), ("é", "Latin"), ("я", "Cyrillic"), ("あ", "Hiragana"), ("ア", "Katakana"), ("漢", "Han"),
        ("한", "Hangul"), ("ع", "Arabic"), ("ก", "Thai"), ("α", "Greek"), ("7", "Common"), ("?", "Common"),
    ])
    def test_script_of(self, ch: str, script: str) -> None:
        assert script_of(ch) == script


class TestStem:
    @pytest.mark.parametrize(("algorithm", "a", "b"), [
        ("english", "train", "training"),
        ("english", "injury", "injuries"),
        ("spanish", "recuperación", "recuperacion"),
        ("german", "schmerz", "schmerzen"),
        ("french", "repos", "reposer"),
        ("portuguese", "treino", "treinos"),
        ("italian", "allenamento", "allenamenti"),
        ("russian", "тренировка", "тренировкой"),
    ])
    def test_inflections_meet_at_one_stem(self, algorithm: str, a: str, b: str) -> None:
        assert stem(a, algorithm) == stem(b, algorithm)

    def test_different_words_keep_different_stems(self) -> None:
        assert stem("rest", "english") != stem("race", "english")
