"""What the benchmark runs on: the project's dev question set, the sample athletes' bundles, the
oracle prompt for a row, and a generated log of questions for the impact run."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

from coachctx.engine.decision import Decision
from coachctx.engine.prompt import build_prompt, system_block
from coachctx.engine.services import Bundle, ConditionsCache, FixtureUpstream, fetch_bundle

ROOT: Final = Path(__file__).resolve().parents[1]
DEV_QUESTIONS: Final = ROOT / "tests" / "data" / "questions" / "dev.yaml"
DEFAULT_ATHLETE: Final = "maya"
"""The dev set judges a row against maya (all four services healthy) unless it names another."""


@dataclass(frozen=True)
class Row:
    q: str
    intents: tuple[str, ...]
    needs: tuple[str, ...]
    scope: str | None
    lang: str
    athlete: str


def dev_rows(path: Path = DEV_QUESTIONS) -> list[Row]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Row(q=r["q"], intents=tuple(r.get("intents") or ()), needs=tuple(r.get("needs") or ()),
                scope=r.get("scope"), lang=r.get("lang", "en"), athlete=r.get("athlete", DEFAULT_ATHLETE))
            for r in data["questions"]]


def sample_bundles(upstream: FixtureUpstream | None = None) -> dict[str, Bundle]:
    upstream = upstream if upstream is not None else FixtureUpstream()
    cache = ConditionsCache()
    return {a: fetch_bundle(upstream, a, cache) for a in upstream.athletes()}


def rebuilt_prompt_tokens(decision: Decision, bundle: Bundle, fragments: Sequence[str]) -> int:
    """Tokens of a prompt with the decision's system block and question and the given fragments'
    lines (those the services supplied), built by the same functions `select()` uses."""
    system = system_block(bundle.language, decision.max_words, decision.clinical.terms)
    lines = [(n, line) for n in fragments if (line := decision.fragment(n).line) is not None]
    return build_prompt(system, lines, decision.question).tokens


def oracle_tokens(decision: Decision, bundle: Bundle, needs: Sequence[str]) -> int:
    """The oracle prompt: only the row's `needs`, nothing else."""
    return rebuilt_prompt_tokens(decision, bundle, needs)


# --- a generated log for the impact run --------------------------------------------------------

PREFIXES: Final = ("", "Coach, ", "Quick one: ", "Hey! ", "Honest answer please: ", "Sorry to bother you - ")
SUFFIXES: Final = ("", " Thanks.", " I'm a bit worried.", " Keep it short.", " Any advice?")


def phrasings(rows: Sequence[Row]) -> list[str]:
    """Every dev question wrapped in every prefix, suffix and race countdown: the distinct texts
    the log draws from (27 x 6 x 5 x 6 = 4,860 for the dev set)."""
    out = []
    for row in rows:
        for prefix in PREFIXES:
            for suffix in SUFFIXES:
                for weeks in (0, 2, 4, 6, 8, 12):
                    countdown = f" Race in {weeks} weeks." if weeks else ""
                    out.append(f"{prefix}{row.q}{suffix}{countdown}")
    return out


@dataclass(frozen=True)
class LogRow:
    question: str
    athlete: str
    tier: str


def question_log(rows: Sequence[Row], athletes: Sequence[str], n: int, *, seed: int = 20261202,
                 distinct: bool = False) -> list[LogRow]:
    """`n` logged questions: a phrasing, an athlete and a tier (80% paid) drawn uniformly with a
    fixed seed. `distinct=True` appends a request number so no two texts repeat (the worst case
    for anything that memoises routing)."""
    rng = random.Random(seed)
    texts = phrasings(rows)
    out = []
    for i in range(n):
        text = rng.choice(texts)
        if distinct:
            text = f"{text} (#{i})"
        out.append(LogRow(text, rng.choice(athletes), "paid" if rng.random() < 0.8 else "free"))
    return out
