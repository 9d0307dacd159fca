"""The fast matcher's indexes follow every way a TermMatcher is made: `with_term` (what
`coachctx suggest` measures an edit with) finds what compiling the grown table finds, and
`score(question, policy, matcher)` scores with the given table."""

from __future__ import annotations

import pytest
from engine_support import dev_rows

from coachctx.engine.matching import TermMatcher
from coachctx.engine.policy import Policy
from coachctx.engine.routing import score
from coachctx.engine.text import tokenise

EDITS = [("injury", "en", "shin splints", 2.0), ("recovery", "de", "Erholungsphase", 1.5),
         ("nutrition", "ja", "補給食", 1.0), ("training", "ko", "인터벌", 1.0), ("conditions", "vi", "nắng", 1.0),
         ("injury", "en", "knee", 3.0)]
QUESTIONS = ["My shin splints are back", "Brauche ich eine Erholungsphase?", "補給食は何がいい？",
             "인터벌 해도 돼요?", "trời nắng quá", "knee pain again", "shin splint?"]


@pytest.mark.parametrize(("label", "language", "term", "weight"), EDITS)
def test_with_term_finds_what_compiling_finds(policy: Policy, label: str, language: str, term: str,
                                              weight: float) -> None:
    grown = policy.model_dump(mode="json")["vocabulary"]
    grown[label].setdefault(language, {})[term] = max(weight, grown[label].get(language, {}).get(term, 0.0))
    compiled = TermMatcher.compile(grown)
    added = TermMatcher.compile(policy.vocabulary).with_term(label, language, term, weight)
    for q in [*QUESTIONS, *(row["q"] for row in dev_rows())]:
        want = score(tokenise(q), policy, compiled)
        got = score(tokenise(q), policy, added)
        # the same terms and scores; `with_term` lists an added Han/Kana term after the others, where
        # compiling lists it in its language's place
        assert got.scores == want.scores, q
        assert {k: sorted(v) for k, v in got.matched.items()} == {k: sorted(v) for k, v in want.matched.items()}, q
    assert score(tokenise(QUESTIONS[EDITS.index((label, language, term, weight))]), policy, added) \
        .scores[label] > 0


def test_a_term_its_language_cannot_match_is_filed_nowhere_and_the_rest_still_match() -> None:
    """A policy refuses such a term (`term_text.never_matches`); a table built without one, as a
    suggestion's is, must not fail on it."""
    matcher = TermMatcher.compile({"injury": {"en": {"膝痛": 1.0, "knee": 1.0}}, "general": {"zh": {"thx": 1.0}}})
    assert [t.term for t in matcher.find(tokenise("my knee 膝痛 thx"))] == ["knee"]
