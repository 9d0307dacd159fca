"""Golden Decisions: what the engine decided, before it was made fast, for every dev question x
sample athlete x tier x cost mode and every corpus row x tier x cost mode.

    python tests/golden_support.py --record    rewrite tests/data/golden/ (only before a change
                                               meant to alter decisions, never to make a test pass)

The file holds no question text, only hashes: a key per (question, athlete, tier, cost mode) and
the digest of the whole Decision JSON (route, every fragment's reasons and line, the prompt and the
naive prompt, token counts). The policy it was recorded with is kept beside it, so a later edit of
the vocabulary does not turn a speed check into a vocabulary check.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml

ROOT: Final = Path(__file__).resolve().parents[1]
GOLDEN_DIR: Final = ROOT / "tests" / "data" / "golden"
GOLDEN_FILE: Final = GOLDEN_DIR / "decisions.json.gz"
GOLDEN_POLICY: Final = GOLDEN_DIR / "policy.yaml.gz"
DEV_QUESTIONS: Final = ROOT / "tests" / "data" / "questions" / "dev.yaml"
CORPUS_FILES: Final = (ROOT / "corpus" / "tune.yaml", ROOT / "corpus" / "test.yaml")
TIERS: Final = ("free", "paid")
COST_MODES: Final = ("hand", "measured")


def cases(athletes: list[str]) -> Iterator[tuple[str, str, str, str]]:
    """(question, athlete, tier, cost mode): dev x every athlete, corpus rows x their athlete."""
    dev = yaml.safe_load(DEV_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    for row in dev:
        for athlete in athletes:
            for tier in TIERS:
                for mode in COST_MODES:
                    yield row["q"], athlete, tier, mode
    for path in CORPUS_FILES:
        for row in yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]:
            for tier in TIERS:
                for mode in COST_MODES:
                    yield row["q"], row.get("athlete", "maya"), tier, mode


def case_key(question: str, athlete: str, tier: str, mode: str) -> str:
    return hashlib.sha256(json.dumps([question, athlete, tier, mode], ensure_ascii=False).encode()).hexdigest()[:20]


def decision_digest(decision_json: dict[str, Any]) -> str:
    """Everything the Decision says except the package version."""
    data = {k: v for k, v in decision_json.items() if k != "version"}
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]


def golden_policy_text() -> str:
    return gzip.decompress(GOLDEN_POLICY.read_bytes()).decode("utf-8")


def read_golden() -> dict[str, str]:
    return json.loads(gzip.decompress(GOLDEN_FILE.read_bytes()))["decisions"]  # type: ignore[no-any-return]


def record(*, keep_policy: bool = False) -> int:
    """Record every case's decision under the checked-in policy, or with `keep_policy` under the
    policy recorded before (an engine change whose effect is meant: only its decisions move)."""
    from coachctx.engine.pipeline import select
    from coachctx.engine.policy import DEFAULT_POLICY_PATH, parse_policy
    from coachctx.engine.services import FixtureUpstream, fetch_bundle

    text = golden_policy_text() if keep_policy else DEFAULT_POLICY_PATH.read_text(encoding="utf-8")
    policy = parse_policy(text, "golden")
    upstream = FixtureUpstream()
    bundles = {a: fetch_bundle(upstream, a) for a in upstream.athletes()}
    out: dict[str, str] = {}
    for q, athlete, tier, mode in cases(list(bundles)):
        d = select(q, bundles[athlete], policy, tier=tier, cost_mode=mode)  # type: ignore[arg-type]
        out[case_key(q, athlete, tier, mode)] = decision_digest(d.to_json())
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    GOLDEN_POLICY.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    GOLDEN_FILE.write_bytes(gzip.compress(json.dumps({"policy_digest": policy.digest, "decisions": out},
                                                     sort_keys=True).encode(), mtime=0))
    print(f"recorded {len(out)} decisions under policy {policy.digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--record", action="store_true", required=True)
    parser.add_argument("--keep-policy", action="store_true", help="record under the policy recorded before")
    raise SystemExit(record(keep_policy=parser.parse_args().keep_policy))
