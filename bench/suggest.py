"""Do suggestions learned from labelled questions close the gap a thinned vocabulary leaves?

    python -m bench.suggest          print the figures (what `make bench` reports in section 3c)

How the policies are made and measured: `METHOD` below.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bench.corpus import CORPUS, corpus_rows
from bench.corpus import summary as corpus_summary
from bench.measure import QualityRow, measure_quality
from bench.workload import sample_bundles
from coachctx.engine.policy import Policy, load_policy, validate_policy
from coachctx.engine.services import Bundle
from coachctx.tools.suggest import Edit, learn, read_labelled

THIN_SEED: Final = 20261204
METHOD: Final = (
    "The default policy is thinned: from every intent's list of terms for every language, half of the "
    f"terms (rounded down, so a list of one keeps it) are removed, drawn by one `random.Random({THIN_SEED})` "
    "list after list (intents, then languages, in sorted order; each list sorted by term). `learn` then reads "
    "the corpus tune half (coach labels) and edits the thinned policy in three steps: the best suggestions "
    "round after round until none gains (a new term needs two more rows of its intent than of others), "
    "then every word or phrase an intent's rows share (60% of the rows it meets) that breaks no row, at "
    "weight 0.5, then the first step again. The thinned, learned and full policies are measured on both "
    "halves as `bench.corpus` measures (`select()`, maya, paid tier, no model: an unsure question takes the "
    "keyword fallback). The test half is only ever measured: `learn` never reads it."
)


def thinned(policy: Policy, seed: int = THIN_SEED) -> Policy:
    """The policy with half of each intent's terms removed from each language's list."""
    rng = random.Random(seed)
    data = policy.model_dump(mode="json")
    for intent in sorted(data["vocabulary"]):
        by_language = data["vocabulary"][intent]
        for language in sorted(by_language):
            terms = sorted(by_language[language])
            for term in rng.sample(terms, len(terms) // 2):
                del by_language[language][term]
    return validate_policy(data, "<thinned>")


def term_count(policy: Policy) -> int:
    return sum(len(terms) for by_language in policy.vocabulary.values() for terms in by_language.values())


@dataclass(frozen=True)
class SuggestResult:
    policies: Mapping[str, Policy]
    """thinned, learned, full"""
    decided: Mapping[str, Mapping[str, Sequence[QualityRow]]]
    """split -> policy name -> rows"""
    edits: Sequence[Edit]
    learn_seconds: float
    tune_rows: int

    def figure(self, split: str, name: str, key: str) -> float:
        return corpus_summary(self.decided[split][name])[key]

    def recovered(self, split: str) -> float:
        """The share of the thinned policy's route-accuracy gap to the full policy that learning closed."""
        thin, learned, full = (self.figure(split, n, "route_accuracy") for n in ("thinned", "learned", "full"))
        return (learned - thin) / (full - thin) if full != thin else 1.0

    def edit_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for e in self.edits:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        return kinds


def measure_suggest(full: Policy, bundles: Mapping[str, Bundle] | None = None) -> SuggestResult:
    bundles = bundles if bundles is not None else sample_bundles()
    thin = thinned(full)
    labelled = read_labelled(CORPUS / "tune.yaml")
    started = time.perf_counter()
    learned, edits = learn(labelled, thin)
    seconds = time.perf_counter() - started
    policies = {"thinned": thin, "learned": learned, "full": full}
    decided = {split: {name: measure_quality(rows, bundles, p) for name, p in policies.items()}
               for split in ("tune", "test") for rows in [corpus_rows(split)]}
    return SuggestResult(policies, decided, edits, seconds, len(labelled))


def summary_lines(result: SuggestResult) -> list[list[Any]]:
    out = []
    for split in ("test", "tune"):
        for name in ("thinned", "learned", "full"):
            c = corpus_summary(result.decided[split][name])
            out.append([f"{split} half", name, f"{term_count(result.policies[name]):,}",
                        f"{100 * c['route_accuracy']:.1f}%", f"{100 * c['rules_share']:.1f}%"])
    return out


def main() -> int:
    result = measure_suggest(load_policy())
    print(f"learned {len(result.edits)} edits {result.edit_kinds()} from {result.tune_rows} tune rows "
          f"in {result.learn_seconds:.1f} s")
    for line in summary_lines(result):
        print("  ".join(str(c) for c in line))
    for split in ("test", "tune"):
        print(f"{split}: gap recovered {100 * result.recovered(split):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
