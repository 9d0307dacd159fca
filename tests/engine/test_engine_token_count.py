"""Prompt tokens summed from cached pieces equal a full count of the assembled prompt."""

from __future__ import annotations

import pytest
from engine_support import dev_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from coachctx.engine.availability import one_line, prepared
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.prompt import (
    NAIVE_PREFIX,
    build_naive_prompt,
    build_prompt,
    naive_json,
    naive_tokens,
    prompt_tokens,
    system_block,
    with_newline,
)
from coachctx.engine.services import Bundle
from coachctx.engine.token_count import count_once

# text that stresses cl100k's pre-tokeniser at the cuts: punctuation, spaces and newlines at the
# ends, digits, contractions, several scripts
_TEXT = st.text(alphabet=st.sampled_from(list("ab Z9.,:;'s-\n\t!?)(\"é膝통ь ")) | st.characters(), max_size=60)


class TestCountingFromPieces:
    @settings(max_examples=300, deadline=None)
    @given(system=_TEXT, texts=st.lists(_TEXT, max_size=6), question=_TEXT)
    def test_any_prompt(self, system: str, texts: list[str], question: str) -> None:
        lines = [(FRAGMENT_NAMES[i % len(FRAGMENT_NAMES)], one_line(t)) for i, t in enumerate(texts)]
        assert prompt_tokens(system, lines, question) == build_prompt(system, lines, question).tokens

    @settings(max_examples=300, deadline=None)
    @given(system=_TEXT, texts=st.lists(_TEXT, max_size=6), question=_TEXT)
    def test_any_prompt_from_the_lines_own_counts(self, system: str, texts: list[str], question: str) -> None:
        lines = [(FRAGMENT_NAMES[i % len(FRAGMENT_NAMES)], one_line(t)) for i, t in enumerate(texts)]
        alone = [count_once(text) for _, text in lines]
        assert prompt_tokens(system, lines, question, line_tokens=alone) == build_prompt(system, lines, question).tokens

    @settings(max_examples=500, deadline=None)
    @given(text=_TEXT, end=st.sampled_from(["", "a", "Z", "7", "2026", "km", "é", ".", ")", "%", "'s", "\u0947"]))
    def test_a_newline_after_a_text(self, text: str, end: str) -> None:
        text = one_line(text + end)
        assert with_newline(text, count_once(text)) == count_once(text + "\n") == with_newline(text)

    @settings(max_examples=200, deadline=None)
    @given(system=_TEXT, payload=st.dictionaries(_TEXT, _TEXT | st.integers(), max_size=4), question=_TEXT)
    def test_any_naive_prompt(self, system: str, payload: dict[str, object], question: str) -> None:
        payload_tokens = count_once(NAIVE_PREFIX + naive_json(payload))
        assert naive_tokens(system, payload_tokens, question) == build_naive_prompt(system, payload, question).tokens

    @pytest.mark.timeout(120)
    def test_every_dev_decision(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        for bundle in bundles.values():
            for q in (row["q"] for row in dev_rows()):
                for tier in ("free", "paid"):
                    d = select(q, bundle, policy, tier=tier)
                    system = system_block(bundle.language, d.max_words, d.clinical.terms)
                    lines = [(n, d.fragment(n).line or "") for n in d.selected]
                    assert d.tokens.prompt == build_prompt(system, lines, d.question).tokens
                    assert d.tokens.naive == build_naive_prompt(system, bundle.naive_payload(), d.question).tokens

    def test_the_naive_count_only_on_request(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        d = select("Should I train through this pain?", bundles["maya"], policy, count_naive=False)
        full = select("Should I train through this pain?", bundles["maya"], policy)
        assert d.tokens.naive is None and d.tokens.saved_pct is None
        assert full.tokens.naive > full.tokens.prompt == d.tokens.prompt
        assert d.prompt.messages == full.prompt.messages and d.prompt.naive_messages is None

    def test_a_bundle_is_prepared_once_per_object(self, bundles: dict[str, Bundle]) -> None:
        maya = bundles["maya"]
        assert prepared(maya) is prepared(maya)
        assert prepared(maya) is not prepared(bundles["tom"])
        copy = Bundle(maya.athlete, dict(maya.results), maya.city, maya.language)
        assert prepared(copy) is not prepared(maya) and prepared(copy).facts == prepared(maya).facts
