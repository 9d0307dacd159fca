"""The shortcuts never-seen words take give the answers of the long way: stemming only under the
algorithms of a word's script, part stems shared across matchers, and a misspelling searched among
the words of its first letter."""

from __future__ import annotations

import random

import pytest
from rapidfuzz import process
from rapidfuzz.distance import OSA

from coachctx.engine.common_words import common_words, function_words
from coachctx.engine.matching import (
    ALGORITHMS,
    COMPOUNDING,
    STEMMER_SCRIPTS,
    TermMatcher,
    clinical_matcher,
    fragment_matcher,
    fuzzy_distance,
    part_stems,
    scope_matcher,
    vocabulary_matcher,
    word_stems,
)
from coachctx.engine.matching.policy_terms import forget_words, shared_words
from coachctx.engine.matching.readings import may_be_compound, may_have_readings
from coachctx.engine.matching.stems import stem_columns
from coachctx.engine.policy import Policy
from coachctx.engine.text import letter_scripts, stem, tokenise
from coachctx.engine.token_count import count_once, count_tokens, encoding

ODD_WORDS = ["5\u0301", "x\u0301y", "पानी", "दर्द", "مرحبا", "القدم", "πόνος", "колено", "ağrı", "łydka",
             "straße", "ʼokina", "ꝺa", "ยาว", "שלום", "2024", "5k", "vo2max", "bolalarцы", "日本"]


def _sample(n: int, seed: int) -> list[str]:
    words = sorted(common_words() | function_words())
    return [*random.Random(seed).sample(words, n), *ODD_WORDS]


@pytest.mark.parametrize("algorithm", sorted(a for a in ALGORITHMS if a not in ("word", "prefix")))
def test_a_stemmer_leaves_words_of_other_scripts_alone(algorithm: str) -> None:
    own = STEMMER_SCRIPTS.get(algorithm, "Latin")
    foreign = [w for w in _sample(3000, 1) if (s := letter_scripts(w)) is not None and own not in s]
    assert len(foreign) > 250
    assert [w for w in foreign if stem(w, algorithm) != w] == []


def test_word_stems_are_the_stems_under_every_algorithm() -> None:
    for word in _sample(1500, 2):
        got = {a: key for key, algorithms in word_stems(word) for a in algorithms}
        assert got == {a: word if a == "prefix" else stem(word, a) for a in ALGORITHMS}, word


def test_stem_columns_are_the_words_stems() -> None:
    words = _sample(1500, 2)
    for group, by_algorithm in stem_columns(words, ALGORITHMS):
        for i, word in enumerate(group):
            got = {a: stems[i] for a, stems in by_algorithm.items()}
            assert got == {a: key for key, algorithms in word_stems(word) for a in algorithms}, word


def test_the_tables_read_together_find_what_each_finds_alone(policy: Policy) -> None:
    """`shared_words`: each word looked up once for the policy's four tables."""
    matchers = [vocabulary_matcher(policy), clinical_matcher(policy), fragment_matcher(policy), scope_matcher(policy)]
    words = _sample(400, 10)
    questions = [" ".join(words[i:i + 9]) for i in range(0, len(words), 9)]
    questions += ["Knieschmerzen nach dem Lauf", "kneskader etter løping", "لسباق الماراثون", "무릎이 아파요",
                  "膝が痛い", "should I trian through this knee pian today", "zone 2 this week?"]
    forget_words(policy)
    for question in questions:
        together = shared_words(policy).find(tokenise(question))
        assert together == tuple(tuple(m.find(tokenise(question))) for m in matchers), question
    assert shared_words(policy).seen
    forget_words(policy)
    assert not shared_words(policy).seen


def test_part_stems_are_the_stems_of_the_parts() -> None:
    for word in [w for w in _sample(1500, 3) if len(w) >= 7]:
        for algorithm in sorted(COMPOUNDING):
            heads, modifiers = part_stems(word, algorithm)
            assert heads == tuple(stem(word[j:], algorithm) for j in range(3, len(word) - 3))
            assert modifiers == tuple(stem(word[:j], algorithm) for j in range(len(word) - 3, 3, -1))


@pytest.mark.parametrize("which", [vocabulary_matcher, clinical_matcher, scope_matcher, fragment_matcher])
def test_a_word_no_table_can_read_has_no_readings(policy: Policy, which: object) -> None:
    matcher: TermMatcher = which(policy)  # type: ignore[operator]
    words = [*_sample(3000, 8), *_typos(list(matcher.fuzzy)[:300], 9), "knieschmerzen", "kneskader", "لسباق"]
    skipped = [w for w in words if not may_have_readings(w)]
    assert len(skipped) > 1000
    assert [w for w in skipped if matcher.readings.near(w) or matcher.readings.parts(w)] == []


def test_a_word_no_table_can_read_as_a_compound_has_no_parts(policy: Policy) -> None:
    shared = shared_words(policy)
    words = [*_sample(3000, 11), "knieschmerzen", "kneskader", "polvikipu", "laufschuhe", "لسباق"]
    skipped = [w for w in words if not may_be_compound(w, shared.compound_singles)]
    assert len(skipped) > 1000
    assert [w for w in skipped for m in shared.matchers if m.readings.parts(w)] == []
    assert may_be_compound("knieschmerzen", shared.compound_singles)


def _typos(words: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for w in words:
        i = rng.randrange(len(w))
        c = rng.choice("aeiourstnkl")
        out += [w[:i] + w[i + 1:], w[:i] + c + w[i:], w[:i] + c + w[i + 1:], w[:i] + w[i + 1:i + 2] + w[i:i + 1]
                + w[i + 2:], c + w[1:], w[1:], c + w]
    return out


@pytest.mark.parametrize("which", [vocabulary_matcher, clinical_matcher])
def test_a_misspelling_finds_what_searching_every_word_finds(policy: Policy, which: object) -> None:
    matcher: TermMatcher = which(policy)  # type: ignore[operator]
    words = [w for w in matcher.fuzzy if fuzzy_distance(w)]  # four-letter terms are read only by a swap
    sample = random.Random(4).sample(words, min(200, len(words)))
    found, windows = 0, {}
    for word in _typos(sample, 5) + _typos(_typos(sample[:60], 6), 7):
        limit = fuzzy_distance(word)
        if not limit or not word.isalpha() or word in matcher.fuzzy:
            continue
        if (len(word), limit) not in windows:
            windows[len(word), limit] = [w for w in words if abs(len(w) - len(word)) <= limit]
        window = windows[len(word), limit]
        best = process.extractOne(word, window, scorer=OSA.distance, score_cutoff=limit, processor=None)
        want = (best[0], best[1]) if best is not None and best[0][0] == word[0] else None
        assert matcher.readings.closest(word, limit) == want, word
        found += want is not None
    assert found > 150


@pytest.mark.parametrize("text", ["", "knee pain", "Should I train through this pain?", "<|endoftext|> ignore that",
                                  "<|fim_prefix|>x<|im_start|>", "足首が痛い 🙄\n- readiness_training: 71/100"])
def test_counting_reads_special_tokens_as_text(text: str) -> None:
    assert count_once(text) == count_tokens(text) == len(encoding().encode(text, disallowed_special=()))
