"""The fresh-question corpus (corpus/): how it is made, and the decision quality it measures.

The thresholds are floors on the test half, the rows no term was chosen from. They sit at what the
vocabulary has reached and only ever rise (issue 8 asks for route 93%, needs 98%, at most 3% of
in-domain rows matching nothing, and a median prompt at most 15% above the code before issue 8).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from bench.corpus import (
    BASELINE_COMMIT,
    BASELINE_SPLITS,
    CORPUS,
    SPLITS,
    baseline_median,
    baseline_tokens,
    corpus_rows,
    summary,
)
from bench.measure import measure_quality
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, SCOPES, Policy
from coachctx.engine.services import Bundle

# Floors at what the test half has reached (2026-12-03, second session: route 94.2%, needs 98.3%,
# in-domain matching nothing 2.9%, median prompt +23.5%; 2026-12-04: route 95.3%, needs 98.6%, 1.9%,
# +23.2%; later that day +14.3%, once the prompt lines stopped repeating the fragment's name and a
# bullet before their own label); issue 8's targets are 93% / 98% / 3% / +15%. Only ever raised.
MIN_ROUTE_ACCURACY = 0.95
MIN_NEEDS_RECALL = 0.985
MAX_MATCHED_NOTHING_IN_DOMAIN = 0.02
MAX_PROMPT_GROWTH = 0.15

# The hold-out set (corpus/holdout.yaml) was written after the second session's vocabulary work. At
# the start of that session's work it scored route 92.3%, needs 96.7%, 3.7% in-domain matching
# nothing; 93.5% / 98.0% / 3.0% after. Its misses were read on 2026-12-04 (tuning data since):
# 94.9% / 98.4% / 1.5% after that day's changes. Only ever raised.
HOLDOUT_MIN_ROUTE_ACCURACY = 0.94
HOLDOUT_MIN_NEEDS_RECALL = 0.98
HOLDOUT_MAX_MATCHED_NOTHING_IN_DOMAIN = 0.02

# The second hold-out set (corpus/holdout2.yaml) was written on 2026-12-04 after the first was read,
# and is only measured. Measured before any of that day's vocabulary additions (figures only, with
# the writers' labels): route 92.8%, needs 98.2%. Settled labels, after that day's changes: route
# 94.8%, needs 98.1%, in-domain matching nothing 1.8%. Floors there; only raised.
HOLDOUT2_MIN_ROUTE_ACCURACY = 0.94
HOLDOUT2_MIN_NEEDS_RECALL = 0.98
HOLDOUT2_MAX_MATCHED_NOTHING_IN_DOMAIN = 0.02

# The third hold-out set (corpus/holdout3_*.yaml) was written on 2026-12-07 after every change until
# then, in new styles (voice-to-text, pasted readouts, third person, negated or past pain, romanised
# scripts), and cut in halves before any row was read. First measured, before any change made for
# it: tune half route 91.5%, needs 98.6%, in-domain matching nothing 2.5%; test half 90.7% / 97.0% /
# 2.8%; readiness_injury kept on 60 of 61 and 53 of 56 rows that need it. After that stop's changes
# (compound parts in the question's language, 1,172 acute clinical terms, leetspeak and accents):
# tune 91.9% / 98.6% / 2.5%, test 90.7% / 97.4% / 2.8%, kept on 60 of 61 and 54 of 56. After the
# clinical terms joined the injury vocabulary (2026-12-08): tune 92.6%, test 91.6% / 97.4% / 1.9%.
# Floors there; only raised.
HOLDOUT3_MIN_ROUTE_ACCURACY = 0.91
HOLDOUT3_MIN_NEEDS_RECALL = 0.97
HOLDOUT3_MAX_MATCHED_NOTHING_IN_DOMAIN = 0.03
HOLDOUT3_MIN_INJURY_KEPT = 0.96

# The fourth (corpus/holdout4_*.yaml) was written on 2026-12-08 after every change until then, in
# more styles (rambling, mostly emoji, all caps, censored swearing, acronyms, formal, past injury as
# background), 8 rows in each language besides English, and cut in halves before any row was read.
# First measured, before any change made for it: tune half route 88.2%, needs 97.4%, in-domain
# matching nothing 3.4%, readiness_injury kept on 81 of 83 rows that need it; test half 89.9% /
# 94.9% / 3.6%, 81 of 84. After the illness terms joined injury (a tie with recovery): route 90.2% and
# 90.9%, the rest the same. After the clinical terms joined the injury vocabulary (weight 0.5): tune
# 92.3% / 97.2% / 1.9%, test 90.9% / 95.5% / 3.6%. Floors there; only raised.
HOLDOUT4_MIN_ROUTE_ACCURACY = 0.90
HOLDOUT4_MIN_NEEDS_RECALL = 0.95
HOLDOUT4_MAX_MATCHED_NOTHING_IN_DOMAIN = 0.04
HOLDOUT4_MIN_INJURY_KEPT = 0.96

REQUIRED_LANGUAGES = ("nl", "pl", "tr", "sv", "da", "no", "fi", "el", "ar", "hi", "id", "vi")


class TestTheCorpus:
    def test_it_is_what_the_raw_files_give(self) -> None:
        done = subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), "--check"], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr

    def test_size_and_languages(self) -> None:
        rows = corpus_rows("tune") + corpus_rows("test")
        per_language = Counter(r.lang for r in rows)
        assert len(rows) >= 1500
        assert len(per_language) >= 20
        assert per_language["en"] >= 600
        assert min(n for lang, n in per_language.items() if lang != "en") >= 30, per_language
        assert set(REQUIRED_LANGUAGES) <= set(per_language)

    def test_labels_are_valid(self) -> None:
        for row in corpus_rows("tune") + corpus_rows("test"):
            assert row.q.strip() and row.intents, row
            assert set(row.intents) <= set(INTENTS), row
            assert set(row.needs) <= set(FRAGMENT_NAMES) and len(row.needs) <= 3, row
            assert row.scope is None or row.scope in SCOPES, row
            assert row.needs or "general" in row.intents, row  # only a question general may answer needs nothing

    def test_the_split_is_sixty_forty_per_language_and_disjoint(self) -> None:
        tune, test = corpus_rows("tune"), corpus_rows("test")
        assert not {r.q for r in tune} & {r.q for r in test} - _repeated_texts()
        for lang, n in Counter(r.lang for r in tune + test).items():
            in_tune = sum(r.lang == lang for r in tune)
            assert abs(in_tune - 0.6 * n) <= 1, (lang, in_tune, n)

    def test_every_disagreement_says_how_it_was_settled(self) -> None:
        lines = (CORPUS / "disagreements.jsonl").read_text(encoding="utf-8").splitlines()
        assert lines
        for line in lines:
            d = json.loads(line)
            assert d["rules"], d
            assert d["writer"] != d["second"] or d["rules"] == ["same sets in another order"], d


def _repeated_texts() -> set[str]:
    """Texts two writers happened to type identically ("thanks!"): the same question in both halves."""
    counts = Counter(r.q for r in corpus_rows("tune") + corpus_rows("test"))
    return {q for q, n in counts.items() if n > 1}


@pytest.fixture(scope="module")
def decided(policy: Policy, bundles: dict[str, Bundle]) -> dict[str, list]:  # type: ignore[type-arg]
    return {split: measure_quality(corpus_rows(split), bundles, policy) for split in SPLITS}


class TestQualityWhereNobodyTuned:

    def test_the_test_half_meets_the_floors(self, decided: dict[str, list],  # type: ignore[type-arg]
                                            capsys: pytest.CaptureFixture[str]) -> None:
        test, tune = summary(decided["test"]), summary(decided["tune"])
        base = baseline_median(corpus_rows("test"), baseline_tokens())
        report = "\n".join(
            f"corpus {name} half: {s['rows']:.0f} rows; route {s['route_accuracy']:.1%}; needs "
            f"{s['needs_recall']:.1%}; by rules {s['rules_share']:.1%}; in-domain matching nothing "
            f"{s['matched_nothing_in_domain']:.1%}; median prompt {s['median_prompt']:.0f}"
            for name, s in (("test", test), ("tune", tune))) + f" (test half at {BASELINE_COMMIT}: {base:.0f})"
        with capsys.disabled():
            print("\n" + report)
        # Figures only: the test half's rows are never shown, so no term is chosen by reading them.
        detail = report
        assert test["route_accuracy"] >= MIN_ROUTE_ACCURACY, detail
        assert test["needs_recall"] >= MIN_NEEDS_RECALL, detail
        assert test["matched_nothing_in_domain"] <= MAX_MATCHED_NOTHING_IN_DOMAIN, detail
        assert test["median_prompt"] <= base * (1 + MAX_PROMPT_GROWTH), detail

    @pytest.mark.parametrize(("split", "floors"), [
        ("holdout", (HOLDOUT_MIN_ROUTE_ACCURACY, HOLDOUT_MIN_NEEDS_RECALL, HOLDOUT_MAX_MATCHED_NOTHING_IN_DOMAIN)),
        ("holdout2", (HOLDOUT2_MIN_ROUTE_ACCURACY, HOLDOUT2_MIN_NEEDS_RECALL, HOLDOUT2_MAX_MATCHED_NOTHING_IN_DOMAIN)),
        *[(half, (HOLDOUT3_MIN_ROUTE_ACCURACY, HOLDOUT3_MIN_NEEDS_RECALL, HOLDOUT3_MAX_MATCHED_NOTHING_IN_DOMAIN))
          for half in ("holdout3_tune", "holdout3_test")],
        *[(half, (HOLDOUT4_MIN_ROUTE_ACCURACY, HOLDOUT4_MIN_NEEDS_RECALL, HOLDOUT4_MAX_MATCHED_NOTHING_IN_DOMAIN))
          for half in ("holdout4_tune", "holdout4_test")],
    ])
    def test_the_hold_out_sets_meet_their_floors(self, decided: dict[str, list], split: str,  # type: ignore[type-arg]
                                                 floors: tuple[float, float, float],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
        s = summary(decided[split])
        base = baseline_median(corpus_rows(split), baseline_tokens()) if split in BASELINE_SPLITS else float("nan")
        detail = (f"{split}: {s['rows']:.0f} rows; route {s['route_accuracy']:.1%}; needs {s['needs_recall']:.1%}; "
                  f"by rules {s['rules_share']:.1%}; in-domain matching nothing {s['matched_nothing_in_domain']:.1%}; "
                  f"median prompt {s['median_prompt']:.0f} (at {BASELINE_COMMIT}: {base:.0f})")
        with capsys.disabled():
            print("\n" + detail)
        min_route, min_needs, max_nothing = floors
        assert s["route_accuracy"] >= min_route, detail
        assert s["needs_recall"] >= min_needs, detail
        assert s["matched_nothing_in_domain"] <= max_nothing, detail


class TestTheHoldOutSets:
    @pytest.mark.parametrize(("split", "floor"), [("holdout3_tune", HOLDOUT3_MIN_INJURY_KEPT),
                                                  ("holdout3_test", HOLDOUT3_MIN_INJURY_KEPT),
                                                  ("holdout4_tune", HOLDOUT4_MIN_INJURY_KEPT),
                                                  ("holdout4_test", HOLDOUT4_MIN_INJURY_KEPT)])
    def test_a_question_with_pain_in_it_keeps_the_injury_fragment(self, policy: Policy, bundles: dict[str, Bundle],
                                                                  split: str, floor: float) -> None:
        needing = [r for r in corpus_rows(split) if "readiness_injury" in r.needs]
        kept = sum("readiness_injury" in select(r.q, bundles["maya"], policy).selected for r in needing)
        assert len(needing) >= 50
        # figures only: the rows are never shown
        assert kept / len(needing) >= floor, f"{split}: {kept} of {len(needing)}"

    @pytest.mark.parametrize("split", ["holdout", "holdout2"])
    def test_size_languages_and_labels(self, split: str) -> None:
        rows = corpus_rows(split)
        per_language = Counter(r.lang for r in rows)
        assert len(rows) >= 500 and len(per_language) >= 20 and per_language["en"] >= 180
        for row in rows:
            assert row.intents and set(row.intents) <= set(INTENTS), row
            assert set(row.needs) <= set(FRAGMENT_NAMES) and len(row.needs) <= 3, row
            assert row.needs or "general" in row.intents, row

    @pytest.mark.parametrize(("name", "english"), [("holdout3", 180), ("holdout4", 90)])
    def test_the_later_sets_are_two_halves_of_every_language(self, name: str, english: int) -> None:
        tune, test = corpus_rows(f"{name}_tune"), corpus_rows(f"{name}_test")
        rows = tune + test
        per_language = Counter(r.lang for r in rows)
        assert len(rows) >= 490 and len(per_language) == 22 and per_language["en"] >= english
        # writers independently type the same short thing ("what now", the brief's own example)
        assert len({r.q for r in tune} & {r.q for r in test}) <= 2
        assert {r.lang for r in tune} == {r.lang for r in test}
        for row in rows:
            assert row.intents and set(row.intents) <= set(INTENTS), row
            assert set(row.needs) <= set(FRAGMENT_NAMES) and len(row.needs) <= 3, row

    @pytest.mark.parametrize("split", ["holdout", "holdout2", "holdout3_tune", "holdout3_test", "holdout4_tune",
                                       "holdout4_test"])
    def test_it_is_mostly_questions_the_corpus_halves_do_not_have(self, split: str) -> None:
        # writers independently type the same short things ("hey", "what should i do today")
        halves = {r.q for r in corpus_rows("tune") + corpus_rows("test")}
        holdout = corpus_rows(split)
        shared = [r.q for r in holdout if r.q in halves]
        assert len(shared) <= 0.03 * len(holdout), shared
