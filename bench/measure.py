"""Tokens, growth, decision quality and budget: each returns plain records; `report` turns them into
Markdown. The speed measurements (pipeline, impact, the app) are in `bench/speed.py`."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.grow import GrowingUpstream
from bench.workload import Row, oracle_tokens, rebuilt_prompt_tokens
from coachctx.engine.availability import CostMode
from coachctx.engine.decision import Decision
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.routing import ModelAnswer
from coachctx.engine.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.engine.token_count import count_tokens

# --- 1. tokens ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenRow:
    athlete: str
    question: str
    lang: str
    selected: int
    naive: int
    oracle: int
    selected_free: int


def measure_tokens(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy) -> list[TokenRow]:
    """Every sample athlete x every dev question: selected (paid tier) vs naive vs oracle."""
    out = []
    for athlete, bundle in bundles.items():
        for row in rows:
            d = select(row.q, bundle, policy, tier="paid")
            # self-check: the oracle is built the way select() builds its prompt
            assert rebuilt_prompt_tokens(d, bundle, d.selected) == d.tokens.prompt, (athlete, row.q)
            free = select(row.q, bundle, policy, tier="free")
            out.append(TokenRow(athlete, row.q, row.lang, d.tokens.prompt, naive_tokens(d),
                                oracle_tokens(d, bundle, row.needs), free.tokens.prompt))
    return out


# --- 2. growth ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrowthPoint:
    level: int
    bundle_bytes: int
    bundle_tokens: int
    naive: float
    selected: float
    oracle: float
    saving_total: float
    """1 - sum(selected) / sum(naive) over the dev questions."""
    paid_binds_measured: float
    """Share of questions where the paid budget cut something with measured costs."""
    longest_line_tokens: int


def measure_growth(rows: Sequence[Row], policy: Policy, levels: Sequence[int],
                   athlete: str = "maya") -> list[GrowthPoint]:
    upstream = FixtureUpstream()
    reference = {f.name: f.line for f in select("thanks!", fetch_bundle(upstream, athlete), policy).fragments}
    points = []
    for level in levels:
        bundle = fetch_bundle(GrowingUpstream(upstream, level), athlete)
        payload = json.dumps(bundle.naive_payload(), ensure_ascii=False)
        decisions = [(row, select(row.q, bundle, policy, tier="paid")) for row in rows]
        # self-check: growing (or stripping) changes what a fragment line says only through the
        # training block's key sessions
        lines = {f.name: f.line for f in decisions[0][1].fragments}
        assert {n: v for n, v in lines.items() if n != "training_block"} == \
            {n: v for n, v in reference.items() if n != "training_block"}, level
        measured = [select(row.q, bundle, policy, tier="paid", cost_mode="measured") for row in rows]
        naive = [naive_tokens(d) for _, d in decisions]
        selected = [d.tokens.prompt for _, d in decisions]
        oracle = [oracle_tokens(d, bundle, row.needs) for row, d in decisions]
        points.append(GrowthPoint(
            level=level, bundle_bytes=len(payload.encode()), bundle_tokens=count_tokens(payload),
            naive=statistics.median(naive), selected=statistics.median(selected), oracle=statistics.median(oracle),
            saving_total=1 - sum(selected) / sum(naive),
            paid_binds_measured=sum(_binds(d) for d in measured) / len(measured),
            longest_line_tokens=max(f.cost_measured for f in decisions[0][1].fragments)))
    return points


def naive_tokens(d: Decision) -> int:
    """The naive prompt's count, which `select()` computes unless asked not to."""
    if d.tokens.naive is None:
        raise ValueError(f"no naive count for {d.question!r}: select() was called with count_naive=False")
    return d.tokens.naive


def _binds(d: Decision) -> bool:
    return any(r.code == "over_budget" for f in d.fragments for r in f.reasons)


# --- 3. decision quality -----------------------------------------------------------------------


@dataclass(frozen=True)
class QualityRow:
    question: str
    lang: str
    intents: tuple[str, ...]
    needs: tuple[str, ...]
    intent: str
    source: str
    fallback_reason: str | None
    needs_met: int
    ideal_intent: str
    ideal_needs_met: int
    exclude_warnings: int
    matched_nothing: bool = False
    """No vocabulary term matched: the question saw the policy's unmatched set."""
    prompt: int = 0
    oracle: int = 0
    """Tokens of the prompt built from the row's `needs` alone (`oracle_tokens`)."""

    @property
    def correct(self) -> bool:
        return self.intent in self.intents

    @property
    def in_domain(self) -> bool:
        """Labelled with some intent other than `general`: a question the vocabulary should reach."""
        return any(i != "general" for i in self.intents)

    @property
    def ideal_correct(self) -> bool:
        return self.ideal_intent in self.intents


def _ideal_model(label: str) -> Callable[[str, Sequence[str]], ModelAnswer]:
    """A model that always answers the row's first label: the upper bound of asking one."""
    def classify(question: str, intents: Sequence[str]) -> ModelAnswer:
        return ModelAnswer(raw=label, latency_ms=0.0)
    return classify


def measure_quality(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy) -> list[QualityRow]:
    out = []
    for row in rows:
        bundle = bundles[row.athlete]
        d = select(row.q, bundle, policy)
        ideal = select(row.q, bundle, policy, classifier=_ideal_model(row.intents[0])) if row.intents else d
        out.append(QualityRow(
            question=row.q, lang=row.lang, intents=row.intents, needs=row.needs, intent=d.intent.name,
            source=d.intent.source, fallback_reason=d.intent.fallback_reason,
            needs_met=sum(n in d.selected for n in row.needs), ideal_intent=ideal.intent.name,
            ideal_needs_met=sum(n in ideal.selected for n in row.needs),
            exclude_warnings=sum("exclude removed" in w for w in d.warnings),
            matched_nothing=d.intent.matched_nothing, prompt=d.tokens.prompt,
            oracle=oracle_tokens(d, bundle, row.needs)))
    return out


# --- 4. budget ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetRow:
    tier: str
    cost_mode: str
    budget: int
    decisions: int
    bound: int
    cut: int
    max_spent: int
    max_secondary_cost: int
    """The most any decision's selected-or-cut secondaries would have cost."""


def measure_budget(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy) -> list[BudgetRow]:
    out = []
    modes: tuple[CostMode, ...] = ("hand", "measured")
    for tier in ("free", "paid"):
        for mode in modes:
            bound = cut = max_spent = max_secondary = 0
            n = 0
            for bundle in bundles.values():
                for row in rows:
                    d = select(row.q, bundle, policy, tier=tier, cost_mode=mode)
                    n += 1
                    over = [f for f in d.fragments if any(r.code == "over_budget" for r in f.reasons)]
                    bound += bool(over)
                    cut += len(over)
                    max_spent = max(max_spent, d.tokens.budget_spent)
                    secondary = sum(f.cost for f in d.fragments if f.role == "secondary"
                                    and (f.status == "selected" or f in over))
                    max_secondary = max(max_secondary, secondary)
            out.append(BudgetRow(tier, mode, policy.tiers[tier], n, bound, cut, max_spent, max_secondary))
    return out
