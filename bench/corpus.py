"""The fresh-question corpus (`corpus/tune.yaml`, `corpus/test.yaml`): its rows, the figures the
benchmark and the quality test read from it, and the prompt sizes of the code before issue 8.

    python -m bench.corpus --baseline    rewrite corpus/baseline_prompt_tokens.json

The baseline is what "today's median prompt" meant when issue 8 was filed: every corpus row
decided by commit `BASELINE_COMMIT` (its code and its policy, in a temporary git worktree, no
model), paid tier, athlete maya. It is written once and read by the benchmark and the tests, so
a clone needs no git history to be measured against it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from bench.measure import QualityRow
from bench.workload import ROOT, Row, dev_rows

CORPUS: Final = ROOT / "corpus"
SPLITS: Final = ("tune", "test", "holdout", "holdout2", "holdout3_tune", "holdout3_test", "holdout4_tune",
                 "holdout4_test")
BASELINE_SPLITS: Final = ("tune", "test", "holdout", "holdout2")
"""The sets written before the baseline was recorded: the third hold-out set came later, and the
baseline commit's prompt sizes are not recomputed (that commit's tree read today's fixtures)."""
"""The corpus halves, the hold-out set written after the vocabulary work of 2026-12-03
(corpus/holdout.yaml, read on 2026-12-04 and tuning data since), and the one written on 2026-12-04
(corpus/holdout2.yaml, only measured), and the two written later, each cut in halves before any row
was read (corpus/holdout3_*.yaml on 2026-12-07, corpus/holdout4_*.yaml on 2026-12-08): only their
tune halves' misses may be read."""
BASELINE_FILE: Final = CORPUS / "baseline_prompt_tokens.json"
BASELINE_COMMIT: Final = "27f603f"
"""The last commit before issue 8's engine changes (3583162)."""


def corpus_rows(split: str) -> list[Row]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    return dev_rows(CORPUS / f"{split}.yaml")


def summary(rows: Sequence[QualityRow]) -> dict[str, float]:
    """The figures issue 8 asks for, over any set of corpus rows decided by `measure_quality`."""
    needs = sum(len(r.needs) for r in rows)
    in_domain = [r for r in rows if r.in_domain]
    return {
        "rows": len(rows),
        "route_accuracy": sum(r.correct for r in rows) / len(rows),
        "needs_recall": sum(r.needs_met for r in rows) / needs if needs else 1.0,
        "rules_share": sum(r.source == "rules" for r in rows) / len(rows),
        "matched_nothing": sum(r.matched_nothing for r in rows) / len(rows),
        "matched_nothing_in_domain": (sum(r.matched_nothing for r in in_domain) / len(in_domain)
                                      if in_domain else 0.0),
        "median_prompt": statistics.median(r.prompt for r in rows),
        "prompt_over_oracle": sum(r.prompt for r in rows) / sum(r.oracle for r in rows),
    }


def baseline_tokens() -> dict[str, int]:
    """Question text -> prompt tokens under `BASELINE_COMMIT`."""
    data = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    return dict(data["prompt_tokens"])


def baseline_median(rows: Sequence[Row], recorded: Mapping[str, int]) -> float:
    missing = [r.q for r in rows if r.q not in recorded]
    if missing:
        raise LookupError(f"{len(missing)} corpus rows have no baseline (e.g. {missing[0]!r}): "
                          "run python -m bench.corpus --baseline")
    return statistics.median(recorded[r.q] for r in rows)


_BASELINE_SCRIPT: Final = """
import json, sys
from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
policy = load_policy()
bundle = fetch_bundle(FixtureUpstream(), "maya")
out = {q: select(q, bundle, policy, tier="paid").tokens.prompt for q in json.load(sys.stdin)}
json.dump(out, sys.stdout, ensure_ascii=False)
"""


def write_baseline() -> Path:
    questions = sorted({r.q for split in BASELINE_SPLITS for r in corpus_rows(split)})
    with tempfile.TemporaryDirectory(prefix="coachctx-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), BASELINE_COMMIT], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COACHCTX_"))}
            env["PYTHONPATH"] = str(tree)
            done = subprocess.run([sys.executable, "-c", _BASELINE_SCRIPT], cwd=tree, env=env, check=True,
                                  input=json.dumps(questions), capture_output=True, text=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False,
                           capture_output=True)
    tokens = json.loads(done.stdout)
    BASELINE_FILE.write_text(json.dumps({
        "commit": BASELINE_COMMIT,
        "how": "select(q, maya, default policy, tier='paid'), no model, at that commit",
        "prompt_tokens": dict(sorted(tokens.items())),
    }, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return BASELINE_FILE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", action="store_true", help=f"rewrite {BASELINE_FILE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.baseline:
        print(f"wrote {write_baseline().relative_to(ROOT)}")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
