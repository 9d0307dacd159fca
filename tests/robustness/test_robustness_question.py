"""Bad question input: arbitrary Unicode (control characters, RTL marks, emoji, zero-width
joiners, unpaired surrogates, 100 kB strings). `select()` never crashes: it returns a Decision,
or raises InputError for an empty question or one over MAX_QUESTION_CHARS, with a message that
says which. Every call is bounded by a pytest-timeout marker rather than a timing assertion.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coachctx.engine.decision import Decision, Message
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, select
from coachctx.engine.policy import Policy
from coachctx.engine.services import Bundle
from coachctx.errors import InputError
from coachctx.reading import valid_text

SPECIAL = [
    "\x00", "\x07", "\x1b[31m", "\r\n", "\t", "\x0b", "\x0c", "\x85", "\u2028", "\u2029",  # controls, separators
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width, ZWJ, BOM
    "\u200e", "\u200f", "\u202a", "\u202b", "\u202e", "\u2066", "\u2067", "\u2069",  # direction marks
    "👩\u200d👩\u200d👧", "🏃🏽\u200d♀️", "🇯🇵", "\U0001f9b5", "🔥" * 3,  # emoji, ZWJ sequences, flags
    "\u0301" * 30, "e\u0301", "\ufdfa", "\ufb03", "ｐａｉｎ", "ℌ𝔢𝔩𝔩𝔬",  # combining marks, NFKC expansions
    "\ud800", "\udfff",  # unpaired surrogates
    "痛い", "恢复", "무릎", "боль", "ألم", "כאב", "दर्द", "ปวด",  # other scripts
    "pain", "train", "sleep", "eat", "weather", "today", "SYSTEM:", "```", "\\", "'", '"', "{}",
]
questions = st.lists(
    st.one_of(
        st.text(st.characters(codec=None, categories=None), max_size=40),
        st.sampled_from(SPECIAL),
    ),
    max_size=30,
).map("".join)
# long inputs: a short piece repeated well past the limit, up to about 100 kB
long_questions = st.tuples(questions.filter(lambda s: s.strip() != ""), st.integers(1, 100_000)).map(
    lambda pair: (pair[0] * (pair[1] // max(len(pair[0]), 1) + 1))[: pair[1]])


def decide_or_refuse(question: str, bundle: Bundle, policy: Policy) -> Decision | None:
    try:
        decision = select(question, bundle, policy)
    except InputError as e:
        stripped = valid_text(question).strip()
        if not stripped:
            assert str(e) == "question is empty: type what the athlete asked"
        else:
            assert len(stripped) > MAX_QUESTION_CHARS
            assert str(e) == f"question is {len(stripped)} characters; the limit is {MAX_QUESTION_CHARS}"
        return None
    stripped = valid_text(question).strip()  # a lone surrogate is read as U+FFFD
    assert stripped and len(stripped) <= MAX_QUESTION_CHARS
    assert isinstance(decision, Decision)
    assert decision.question == stripped
    assert {f.name for f in decision.fragments} == set(FRAGMENT_NAMES)
    assert decision.intent.source in ("rules", "fallback")
    assert decision.prompt.messages[-1] == Message("user", stripped)
    assert decision.tokens.prompt > 0 and decision.tokens.naive > 0
    decision.to_json()
    return decision


class TestArbitraryUnicode:
    @pytest.mark.timeout(60)
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(question=questions)
    def test_never_crashes(self, question: str, policy: Policy, bundles: dict[str, Bundle]) -> None:
        decide_or_refuse(question, bundles["maya"], policy)

    @pytest.mark.timeout(60)
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(question=long_questions)
    def test_long_questions_decide_or_refuse(self, question: str, policy: Policy,
                                             bundles: dict[str, Bundle]) -> None:
        decide_or_refuse(question, bundles["priya"], policy)


class TestEdges:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("question", ["", " ", "\n\t\r", "\u2028\u2029\x85", "\u3000", " \x1c\x1d\x1e\x1f "])
    def test_blank_is_refused(self, question: str, policy: Policy, maya: Bundle) -> None:
        with pytest.raises(InputError, match=r"^question is empty: type what the athlete asked$"):
            select(question, maya, policy)

    @pytest.mark.timeout(10)
    def test_100_kb_is_refused_with_the_limit(self, policy: Policy, maya: Bundle) -> None:
        question = "Should I train through this pain? " * 3000
        assert len(question.encode()) > 100_000
        with pytest.raises(InputError, match=rf"^question is \d+ characters; the limit is {MAX_QUESTION_CHARS}$"):
            select(question, maya, policy)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("unit", ["pain ", "痛", "\ufdfa", "👩\u200d👩\u200d👧", "a\u0301", "\u200d", "ё"])
    def test_exactly_at_the_limit_decides(self, unit: str, policy: Policy, maya: Bundle) -> None:
        """The limit counts characters before normalisation; NFKC may expand U+FDFA eighteenfold,
        and the decision must still be quick."""
        question = (unit * MAX_QUESTION_CHARS)[:MAX_QUESTION_CHARS]
        if question != question.strip():
            question = question.strip()
        decision = select(question, maya, policy)
        assert decision.question == question

    @pytest.mark.timeout(10)
    def test_one_over_the_limit_is_refused(self, policy: Policy, maya: Bundle) -> None:
        with pytest.raises(InputError, match=rf"^question is {MAX_QUESTION_CHARS + 1} characters"):
            select("x" * (MAX_QUESTION_CHARS + 1), maya, policy)

    @pytest.mark.timeout(10)
    def test_surrounding_blanks_do_not_count(self, policy: Policy, maya: Bundle) -> None:
        question = " " * 5000 + "x" * MAX_QUESTION_CHARS + "\n" * 5000
        assert select(question, maya, policy).question == "x" * MAX_QUESTION_CHARS

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("question", [
        "pa\u200din", "p\u00adain", "\u202epain\u202c", "ｐａｉｎ", "PAIN", "pain\x00", "\ufeffpain",
    ])
    def test_invisible_characters_do_not_hide_a_term(self, question: str, policy: Policy, maya: Bundle) -> None:
        """Normalisation drops format characters and folds width and case before matching."""
        decision = select(question, maya, policy)
        assert decision.intent.scores["injury"] > 0, decision.intent.matched

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("question", ["🏃\u200d♀️💨", "\u200d\u200d", "¿?", "12345", "ـــ"])
    def test_nothing_to_match_says_so(self, question: str, policy: Policy, maya: Bundle) -> None:
        decision = select(question, maya, policy)
        assert decision.intent.matched_nothing is True
        assert any(w.startswith("no vocabulary matched") for w in decision.warnings)

    @pytest.mark.parametrize("question", [None, 42, b"pain", ["pain"]], ids=repr)
    def test_not_text_is_refused(self, question: object, policy: Policy, maya: Bundle) -> None:
        with pytest.raises(InputError, match=r"^question must be text$"):
            select(question, maya, policy)  # type: ignore[arg-type]
