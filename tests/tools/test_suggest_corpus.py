"""`learn` and `suggest` on the real policy and the corpus tune half: terms removed come back, the
suggestions never lower accuracy on rows they did not see, the settings are chosen inside the tune
half. The small, hand-made cases are in test_suggest.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.corpus import CORPUS
from bench.suggest import THIN_SEED, thinned
from coachctx.engine.matching import filed_under
from coachctx.engine.policy import Policy
from coachctx.engine.routing import route
from coachctx.tools.suggest import Edit, LabelledRow, apply_edits, learn, read_labelled, suggest

# --- on the real policy and the corpus tune half (a few hundred rows: the full learn run is `make bench`) ---

REMOVED = {("recovery", "en"): ("sleep",), ("conditions", "en"): ("weather",)}
"""The English terms whose removal alone routes the most tune rows wrong (the vocabulary is redundant)."""


def tune_rows(lang: str) -> list[LabelledRow]:
    return [r for r in read_labelled(CORPUS / "tune.yaml") if r.lang == lang]


def without(policy: Policy, removed: Mapping[tuple[str, str], Sequence[str]]) -> Policy:
    return apply_edits(policy, [Edit("remove", i, lang, t, None, policy.vocabulary[i][lang][t])  # type: ignore[index]
                                for (i, lang), terms in removed.items() for t in terms])


def accuracy(policy: Policy, rows: Sequence[LabelledRow]) -> float:
    return sum(route(r.question, policy, None).intent in r.intents for r in rows) / len(rows)


class TestOnTheCorpus:
    def test_removed_terms_come_back_or_terms_with_the_same_effect(self, policy: Policy) -> None:
        cut = without(policy, REMOVED)
        rows = tune_rows("en")
        needing = {r.row for r in rows if route(r.question, policy, None).intent in r.intents
                   and route(r.question, cut, None).intent not in r.intents}
        assert len(needing) >= 3, "the removed terms route too few tune rows to test with"
        found = suggest(rows, cut, limit=20, lint=False)
        stems = {filed_under(t, lang) for (_, lang), terms in REMOVED.items() for t in terms}
        back = [s for s in found if s.edit.kind == "add" and filed_under(s.edit.term, s.edit.language) in stems]
        assert back, [s.edit.describe() for s in found]
        fixed = {n for s in found for n in s.fixes}
        assert len(needing & fixed) >= len(needing) * 0.6, (needing, fixed)

    def test_applying_the_suggestions_never_lowers_accuracy_on_rows_they_did_not_see(self, policy: Policy) -> None:
        thin = thinned(policy)
        rows = tune_rows("en")
        seen, unseen = rows[::2], rows[1::2]  # a held-back split of tune rows: every other one
        top = suggest(seen, thin, limit=10, lint=False)
        assert top
        assert accuracy(apply_edits(thin, [s.edit for s in top]), unseen) >= accuracy(thin, unseen)
        learned, edits = learn(seen, thin)
        assert len(edits) > len(top)
        assert accuracy(learned, seen) > accuracy(thin, seen)

    def test_learning_everything_raises_accuracy_on_rows_it_did_not_see(self, policy: Policy) -> None:
        # 88.2% thinned; at the old reinforcement weight 0.5 the unseen half fell (87.2%), at 0.05 it
        # rose to 90.3%, and with words filed under the intent they mean, removals that need evidence
        # and reinforcing words that may leave a ruled row unsure to 92.8%. That was one draw of the
        # thinned policy; draws differ by a few points (2026-12-07, after the policy grew: 91.8%,
        # 94.4%, 91.3% on the three below), so the floor holds for their mean, and each draw must gain
        rows = tune_rows("en")
        seen, unseen = rows[::2], rows[1::2]
        learned_accuracy = []
        for seed in (THIN_SEED, 1, 2):
            thin = thinned(policy, seed)
            learned, _ = learn(seen, thin)
            assert accuracy(learned, unseen) > accuracy(thin, unseen), seed
            learned_accuracy.append(accuracy(learned, unseen))
        assert sum(learned_accuracy) / len(learned_accuracy) >= 0.92

    def test_the_same_rows_give_the_same_edits_in_the_same_order(self, policy: Policy) -> None:
        thin, rows = thinned(policy), tune_rows("de")
        assert suggest(rows, thin, lint=False) == suggest(list(rows), thin, lint=False)
        assert learn(rows, thin)[1] == learn(rows, thin)[1]


def test_the_settings_are_chosen_on_a_fixed_split_inside_the_tune_half() -> None:
    from bench.suggest import INNER_SEEDS, inner_split

    rows = read_labelled(CORPUS / "tune.yaml")
    for seed in INNER_SEEDS:
        fit, check = inner_split(rows, seed)
        assert sorted(r.row for r in fit + check) == [r.row for r in rows]  # every tune row once, no other
        assert inner_split(list(rows), seed) == (fit, check)
        for lang in {r.lang for r in rows}:
            mine = sum(r.lang == lang for r in rows)
            assert sum(r.lang == lang for r in fit) == round(0.7 * mine)
    assert inner_split(rows, INNER_SEEDS[0])[1] != inner_split(rows, INNER_SEEDS[1])[1]


def test_learning_from_the_tune_half_recovers_most_of_the_thinned_gap_on_the_test_half(policy: Policy) -> None:
    """Issue 9's bar, as `make bench` measures it (section 3c): the whole tune half learned from,
    the test half only measured. 69.9% before function words were learned (2026-12-06), 80.8% after."""
    from bench.suggest import measure_suggest

    result = measure_suggest(policy)
    assert result.figure("test", "learned", "route_accuracy") > result.figure("test", "thinned", "route_accuracy")
    assert result.recovered("test") >= 0.80
