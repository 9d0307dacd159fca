"""Do suggestions learned from labelled questions close the gap a thinned vocabulary leaves?

    python -m bench.suggest          print the figures (what `make bench` reports in section 3c)
    python -m bench.suggest --choose how `learn`'s settings were chosen: each candidate setting learned
                                     from 70% of the tune half and measured on the other 30%

How the policies are made and measured: `METHOD` below.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
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
from coachctx.engine.routing import route
from coachctx.engine.services import Bundle
from coachctx.tools.suggest import LEARN_DEFAULTS, Edit, LabelledRow, LearnSettings, learn, read_labelled
from coachctx.tools.suggest_candidates import FUNCTION_STEM_TOP

THIN_SEED: Final = 20261204
_D = LEARN_DEFAULTS
METHOD: Final = (
    "The default policy is thinned: from every intent's list of terms for every language, half of the "
    f"terms (rounded down, so a list of one keeps it) are removed: those first when the list is ordered by "
    f"a SHA-256 hash of the seed ({THIN_SEED}), the intent, the language and the term, so adding a term to one "
    "list moves no other term in or out. `learn` then reads "
    "the corpus tune half (coach labels) and edits the thinned policy in three steps: the best suggestions "
    f"round after round until none gains (a new term needs {_D.min_support:g} more rows of its intent than of "
    "others, and is filed under the intent with most such support, of equals the one fewer rows are labelled "
    "with; a term is removed, or made lighter or heavier, only when it meets as many more rows against the edit "
    "than for it), then every word or phrase an intent's rows share "
    f"({100 * _D.reinforce_precision:.0f}% of the rows it meets) that breaks no row, at weight "
    f"{_D.reinforce_weight:g} (it may leave a row the rules decided unsure), and every function word an intent's "
    f"rows share ({100 * _D.everyday_precision:.0f}% of the rows it meets, {_D.everyday_support:g} more rows of "
    f"its intent than of others) that breaks no row, at weight {_D.everyday_weight:g}, so that a question "
    "matching nothing else (\"what should i do today\") is not left to the fallback; then the first step again. "
    "Otherwise a candidate term is never a function word, nor a word the matcher stems like one of its language's "
    f"{FUNCTION_STEM_TOP} commonest (\"whats\" is \"what\"), "
    "and a Japanese piece never starts with Hiragana. A term is filed under the row's language when it is in that "
    "language's script, or when it is a language of another script written in Latin letters (romanised Hindi, "
    "Arabic, Greek or Russian: \"thakan\" under hi, as the policy keeps such terms) and not all English everyday "
    "words; otherwise under its script's usual language (Latin: en). These rules and settings were chosen by "
    "`python -m bench.suggest --choose`: learning from 70% of the tune half and checking on the other 30%, "
    "three fixed splits pooled; the test half played no part. The thinned, learned and full "
    "policies are measured on both halves as `bench.corpus` measures (`select()`, maya, paid tier, no model: "
    "an unsure question takes the keyword fallback). The test half is only ever measured: `learn` never reads it."
)


def thinned(policy: Policy, seed: int = THIN_SEED) -> Policy:
    """The policy with half of each intent's terms removed from each language's list: those that
    come first when the list is ordered by a hash of the seed and the term, so a term added to or
    removed from one list moves no other term in or out (a shared random stream reshuffled every
    list after it)."""
    data = policy.model_dump(mode="json")
    for intent in sorted(data["vocabulary"]):
        by_language = data["vocabulary"][intent]
        for language in sorted(by_language):
            terms = sorted(by_language[language], key=lambda t: _thin_key(seed, intent, language, t))
            for term in terms[: len(terms) // 2]:
                del by_language[language][term]
    return validate_policy(data, "<thinned>")


def _thin_key(seed: int, intent: str, language: str, term: str) -> str:
    return hashlib.sha256(f"{seed}\0{intent}\0{language}\0{term}".encode()).hexdigest()


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


INNER_SEEDS: Final = (7, 8, 9)
INNER_SHARE: Final = 0.7


def inner_split(rows: Sequence[LabelledRow], seed: int,
                share: float = INNER_SHARE) -> tuple[list[LabelledRow], list[LabelledRow]]:
    """The tune half cut in two, per language by one fixed seed: `share` to learn from, the rest to
    check. `learn`'s settings are chosen on such splits; the test half plays no part."""
    rng = random.Random(seed)
    fit: list[LabelledRow] = []
    check: list[LabelledRow] = []
    for lang in sorted({r.lang or "" for r in rows}):
        mine = [r for r in rows if (r.lang or "") == lang]
        rng.shuffle(mine)
        cut = round(share * len(mine))
        fit += mine[:cut]
        check += mine[cut:]
    return sorted(fit, key=lambda r: r.row), sorted(check, key=lambda r: r.row)


def route_accuracy(policy: Policy, rows: Sequence[LabelledRow]) -> float:
    """The share of rows routed to one of their labels without a model, as `select()` would route them."""
    return sum(route(r.question, policy, None).intent in r.intents for r in rows) / len(rows)


_ = dataclasses.replace
CANDIDATES: Final[Mapping[str, LearnSettings]] = {
    "the defaults (chosen)": LEARN_DEFAULTS,
    "reinforcing words keep every ruled row ruled (the old rule)": _(LEARN_DEFAULTS, reinforce_keeps_rules=True),
    "reinforce weight 0.5": _(LEARN_DEFAULTS, reinforce_weight=0.5),
    "reinforce weight 0.1": _(LEARN_DEFAULTS, reinforce_weight=0.1),
    "reinforce weight 0.02": _(LEARN_DEFAULTS, reinforce_weight=0.02),
    "reinforce 0.02 a row, at most 0.3": _(LEARN_DEFAULTS, reinforce_weight=0.3, reinforce_per_row=0.02),
    "reinforce precision 0.5": _(LEARN_DEFAULTS, reinforce_precision=0.5),
    "reinforce precision 0.8": _(LEARN_DEFAULTS, reinforce_precision=0.8),
    "reinforce precision 1": _(LEARN_DEFAULTS, reinforce_precision=1.0),
    "min support 1": _(LEARN_DEFAULTS, min_support=1.0),
    "min support 3": _(LEARN_DEFAULTS, min_support=3.0),
    "new terms at weight 1 only": _(LEARN_DEFAULTS, new_weights=(1.0,)),
    "new terms at 0.5, 1 or 1.5": _(LEARN_DEFAULTS, new_weights=(0.5, 1.0, 1.5)),
    "no reinforcement": _(LEARN_DEFAULTS, reinforce=False),
    "no function words": _(LEARN_DEFAULTS, everyday_weight=0.0),
    "function words at support 1, precision 0.6": _(LEARN_DEFAULTS, everyday_support=1.0, everyday_precision=0.6),
    "function words at support 3, precision 0.8": _(LEARN_DEFAULTS, everyday_support=3.0, everyday_precision=0.8),
    "function words at support 5, precision 0.9": _(LEARN_DEFAULTS, everyday_support=5.0, everyday_precision=0.9),
}
"""The settings `--choose` compares, by name."""


def choose(full: Policy, candidates: Mapping[str, LearnSettings] = CANDIDATES,
           seeds: Sequence[int] = INNER_SEEDS) -> dict[str, float]:
    """Each candidate's share of the thinned policy's gap to the full policy recovered on the checking
    part of the tune splits, pooled over the splits (rows routed right, summed)."""
    thin = thinned(full)
    splits = [inner_split(read_labelled(CORPUS / "tune.yaml"), seed) for seed in seeds]
    low = sum(route_accuracy(thin, check) * len(check) for _, check in splits)
    high = sum(route_accuracy(full, check) * len(check) for _, check in splits)
    n = sum(len(check) for _, check in splits)
    print(f"tune splits {list(seeds)}: {n} checking rows in all; thinned {100 * low / n:.1f}%, "
          f"full {100 * high / n:.1f}%", flush=True)
    out = {}
    for name, settings in candidates.items():
        started = time.perf_counter()
        got = sum(route_accuracy(learn(fit, thin, settings=settings)[0], check) * len(check) for fit, check in splits)
        out[name] = (got - low) / (high - low)
        print(f"{name}: {100 * got / n:.1f}%  recovered {100 * out[name]:.1f}%  "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suggest")
    parser.add_argument("--choose", action="store_true", help="compare learn's settings on a split of the tune half")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="with --choose: only the candidates whose name holds NAME (repeatable)")
    args = parser.parse_args(argv)
    if args.choose:
        names = [n for n in CANDIDATES if args.only is None or any(part in n for part in args.only)]
        choose(load_policy(), {n: CANDIDATES[n] for n in names})
        return 0
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
