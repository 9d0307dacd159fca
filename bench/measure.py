"""The five measurements. Each returns plain records; `report` turns them into Markdown."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.grow import GrowingUpstream
from bench.workload import ROOT, LogRow, Row, oracle_tokens, question_log, rebuilt_prompt_tokens
from coachctx.engine.audit import audit
from coachctx.engine.availability import CostMode, FragmentFact, facts
from coachctx.engine.decision import Decision
from coachctx.engine.matching import clinical_terms_in, forget_words, infer_scope, named_fragments_in
from coachctx.engine.pipeline import check_question, plan_for, select
from coachctx.engine.plan import Plan
from coachctx.engine.policy import Policy
from coachctx.engine.routing import ModelAnswer, route
from coachctx.engine.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.engine.text import tokenise
from coachctx.engine.token_count import count_tokens, encoding

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
            out.append(TokenRow(athlete, row.q, row.lang, d.tokens.prompt, d.tokens.naive,
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
        naive = [d.tokens.naive for _, d in decisions]
        selected = [d.tokens.prompt for _, d in decisions]
        oracle = [oracle_tokens(d, bundle, row.needs) for row, d in decisions]
        points.append(GrowthPoint(
            level=level, bundle_bytes=len(payload.encode()), bundle_tokens=count_tokens(payload),
            naive=statistics.median(naive), selected=statistics.median(selected), oracle=statistics.median(oracle),
            saving_total=1 - sum(selected) / sum(naive),
            paid_binds_measured=sum(_binds(d) for d in measured) / len(measured),
            longest_line_tokens=max(f.cost_measured for f in decisions[0][1].fragments)))
    return points


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


# --- 4. speed ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    name: str
    n: int
    seconds: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    note: str = ""

    @property
    def per_second(self) -> float:
        return self.n / self.seconds if self.seconds else float("inf")


def _timed(name: str, calls: Sequence[Callable[[], object]], before: Callable[[], None] | None = None,
           note: str = "") -> Timing:
    latencies = []
    gc.collect()
    total = 0.0
    for call in calls:
        if before is not None:
            before()
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        total += elapsed
        latencies.append(elapsed * 1000)
    latencies.sort()
    return Timing(name, len(calls), total, p50_ms=_percentile(latencies, 50), p99_ms=_percentile(latencies, 99),
                  note=note)


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(pct / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def route_and_select(question: str, fragment_facts: Mapping[str, FragmentFact], costs: Mapping[str, int],
                     policy: Policy, spend: int) -> Plan:
    """`select()`'s routing and selection stages alone, over fragment facts computed once per
    bundle: no prompt building, no token counting, no Decision."""
    tokens = tokenise(check_question(question))
    decided = route(tokens, policy, None)
    effective, _ = infer_scope(tokens, policy)
    clinical = clinical_terms_in(tokens, policy)
    plan = plan_for(decided, policy, effective, clinical, fragment_facts, costs, spend,
                    named=named_fragments_in(tokens, policy))
    audit(decided, plan, policy, clinical)
    return plan


def _workload(rows: Sequence[Row], bundles: Mapping[str, Bundle], n: int) -> list[tuple[str, str]]:
    pairs = [(row.q, athlete) for row in rows for athlete in bundles]
    return [pairs[i % len(pairs)] for i in range(n)]


def _fresh(bundle: Bundle) -> Bundle:
    """The same data in a new Bundle object: nothing made for the old one is reused."""
    return Bundle(bundle.athlete, dict(bundle.results), bundle.city, bundle.language)


def texts_to_count(d: Decision) -> list[str]:
    """What a decision must count with tiktoken, at least: every fragment line the services supplied
    (the Decision reports each one's measured cost), the prompt's system message and the question."""
    return [*(f.line for f in d.fragments if f.line is not None), d.prompt.messages[0].content, d.question]


def measure_pipeline_speed(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy, *,
                           n_cold: int, n_warm: int, n_route: int,
                           unseen: Sequence[str] = ()) -> list[Timing]:
    out = []
    cold = _workload(rows, bundles, n_cold)
    out.append(_timed(
        "full pipeline, token cache cleared before each decision", [
            partial(select, q, bundles[a], policy) for q, a in cold],
        before=count_tokens.cache_clear,
        note="select() with every line and both prompts counted by tiktoken afresh"))
    fresh: list[Bundle] = []

    def new_bundle(athlete: str) -> Callable[[], None]:
        def make() -> None:
            count_tokens.cache_clear()
            fresh.append(_fresh(bundles[athlete]))
        return make

    calls, befores = [], []
    for q, a in cold:
        befores.append(new_bundle(a))
        calls.append(partial(lambda q: select(q, fresh[-1], policy, count_naive=False), q))
    out.append(_timed_each("full decision, fresh bundle, naive count off", calls, befores,
                           note="select(count_naive=False) on a new Bundle object with the token cache cleared: "
                                "every line rendered and counted, the prompt counted from its pieces"))
    # tiktoken's own rate on the texts those decisions must count: the limit a decision cannot beat
    texts = [texts_to_count(select(q, bundles[a], policy, count_naive=False)) for q, a in cold]
    encode = encoding().encode_ordinary  # what count_tokens calls: the fastest way tiktoken offers
    out.append(_timed("tiktoken alone: encode the texts each decision above must count", [
        partial(lambda ts: [encode(t) for t in ts], ts) for ts in texts],
        note="tiktoken's encode_ordinary on the same decisions' fragment lines, system message and question"))
    warm = _workload(rows, bundles, n_warm)
    for q, a in warm[: len(rows) * len(bundles)]:
        select(q, bundles[a], policy)
    out.append(_timed(
        "full pipeline, token cache warm", [partial(select, q, bundles[a], policy) for q, a in warm],
        note="select() with repeated prompt texts counted from count_tokens' LRU cache"))
    prepared = {a: facts(b) for a, b in bundles.items()}
    costs = {a: {n: f.cost("hand") for n, f in fs.items()} for a, fs in prepared.items()}
    spend = policy.tiers["paid"]
    for row in rows:  # self-check: the same selection as select()
        for a, b in bundles.items():
            assert route_and_select(row.q, prepared[a], costs[a], policy, spend).selected == \
                list(select(row.q, b, policy).selected), (a, row.q)
    many = _workload(rows, bundles, n_route)
    out.append(_timed(
        "routing + selection alone", [
            partial(route_and_select, q, prepared[a], costs[a], policy, spend) for q, a in many],
        note="tokenise, route, scope, lookup, availability, budget, audit; fragment facts computed once per athlete"))
    if unseen:
        forget_words(policy)
        athletes = list(bundles)
        out.append(_timed(
            "routing + selection, never-seen multilingual questions", [
                partial(route_and_select, q, prepared[athletes[i % len(athletes)]],
                        costs[athletes[i % len(athletes)]], policy, spend) for i, q in enumerate(unseen)],
            note=f"{len(unseen):,} questions in 22 languages (the corpus, tune and test), each decided once, "
                 "every per-word memo and memoised route emptied before the first"))
    return out


def _timed_each(name: str, calls: Sequence[Callable[[], object]], befores: Sequence[Callable[[], None]],
                note: str = "") -> Timing:
    """`_timed` with a different preparation, untimed, before each call."""
    steps = iter(befores)
    return _timed(name, calls, before=lambda: next(steps)(), note=note)


@dataclass(frozen=True)
class ImpactResult:
    timings: list[Timing]
    method: str
    changed: int | None = None
    distinct_texts: int = 0
    candidate_change: str = ""


def candidate_policy(policy: Policy) -> tuple[Policy, str]:
    """The policy change the impact run evaluates: a more generous free tier."""
    data = policy.model_dump(mode="json")
    before = data["tiers"].get("free", 50)
    data["tiers"]["free"] = before * 2
    return Policy.model_validate(data), f"tiers.free {before} -> {before * 2}"


def impact_available() -> bool:
    return importlib.util.find_spec("coachctx.tools.impact") is not None


@contextlib.contextmanager
def all_cores() -> Iterator[str]:
    """Lift the benchmark's pinning to one core for a multi-process measurement (forked workers
    inherit the affinity of the process that starts them)."""
    if not hasattr(os, "sched_setaffinity"):
        yield "affinity not settable"
        return
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    try:
        yield f"{len(os.sched_getaffinity(0))} cores"
    finally:
        os.sched_setaffinity(0, pinned)


def measure_impact(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy, *,
                   n: int, n_distinct: int, jobs: int = 2) -> ImpactResult:
    athletes = list(bundles)
    log = question_log(rows, athletes, n)
    distinct_log = question_log(rows, athletes, n_distinct, distinct=True)
    distinct_texts = len({r.question for r in log})
    if impact_available():
        from coachctx.tools import impact
        from coachctx.tools.questions import Question

        candidate, change = candidate_policy(policy)

        def run(entries: Sequence[LogRow], jobs: int = 1) -> tuple[float, Any]:
            questions = [Question(row=i, question=r.question, athlete=r.athlete, tier=r.tier)
                         for i, r in enumerate(entries, 1)]
            forget_words(policy, candidate)  # each run starts as a new process would
            gc.collect()
            started = time.perf_counter()
            report = impact.run_impact(questions, policy, candidate, base_name="default",
                                       candidate_name="candidate", jobs=jobs)
            return time.perf_counter() - started, report

        seconds, report = run(log)
        seconds_distinct, one = run(distinct_log)
        with all_cores() as cores:
            seconds_jobs, several = run(distinct_log, jobs)
        assert several.to_json()["rows"] == one.to_json()["rows"]  # self-check: the same report
        return ImpactResult(
            timings=[
                Timing(f"impact.run_impact, {n:,} logged questions", n, seconds,
                       note=f"{distinct_texts:,} distinct texts; each row decided under two policies"),
                Timing(f"impact.run_impact, {n_distinct:,} all-distinct questions", n_distinct, seconds_distinct,
                       note="no text repeats: the worst case for its route memo"),
                Timing(f"impact.run_impact(jobs={jobs}), {n_distinct:,} all-distinct questions", n_distinct,
                       seconds_jobs, note=f"{jobs} worker processes, unpinned ({cores}); the same rows as one process"),
            ],
            method="coachctx.tools.impact.run_impact (default policy vs a candidate)",
            changed=report.summary()["changed"], distinct_texts=distinct_texts, candidate_change=change)
    # no impact module: select() over the same log, bundles reused
    gc.collect()
    started = time.perf_counter()
    for r in log:
        select(r.question, bundles[r.athlete], policy, tier=r.tier)
    seconds = time.perf_counter() - started
    return ImpactResult(
        timings=[Timing(f"select() over {n:,} logged questions", n, seconds,
                        note="coachctx.tools.impact not importable: select() with bundles reused, one policy")],
        method="select() loop (coachctx.tools.impact was not importable)", distinct_texts=distinct_texts)


@dataclass(frozen=True)
class AppResult:
    measured: bool
    note: str
    first_run_s: float | None = None
    reruns_s: list[float] = field(default_factory=list)
    question: str = ""


def measure_app(questions: Sequence[str]) -> AppResult:
    """Streamlit AppTest: the first run of app.py, then one rerun per question typed in."""
    app = ROOT / "app.py"
    if not app.is_file():
        return AppResult(False, "app.py does not exist: not measured")
    try:
        from streamlit.testing.v1 import AppTest
    except ImportError as e:
        return AppResult(False, f"streamlit.testing is not importable ({e}): not measured")
    # the app opens the policy store; measure against a throwaway one, not the user's
    os.environ["COACHCTX_STORE"] = os.path.join(tempfile.mkdtemp(prefix="coachctx-bench-"), "policies.sqlite")
    at = AppTest.from_file(str(app), default_timeout=120)
    started = time.perf_counter()
    at.run()
    first = time.perf_counter() - started
    if at.exception:
        return AppResult(False, f"app.py raised on its first run: {at.exception[0].value}")
    try:
        box = at.text_input(key="question")
    except KeyError:
        return AppResult(False, "app.py has no text_input with key 'question': rerun not measured", first)
    reruns = []
    for q in questions:
        started = time.perf_counter()
        box.set_value(q).run()
        reruns.append(time.perf_counter() - started)
        if at.exception:
            return AppResult(False, f"app.py raised after a question was typed: {at.exception[0].value}", first)
    return AppResult(True, "streamlit.testing.v1.AppTest, in process, no browser", first, reruns, questions[0])


# --- 5. budget ---------------------------------------------------------------------------------


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
