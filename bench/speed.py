"""The speed measurements: decisions per second (full, fresh bundle, routing and selection alone,
never-seen questions) beside tiktoken's own rate on the same texts, impact analysis over a generated
log, and a playground rerun in process (AppTest). Each returns plain records; `report` turns them
into Markdown."""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib.util
import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.workload import ROOT, LogRow, Row, question_log
from coachctx.engine.audit import audit
from coachctx.engine.availability import FragmentFact, facts
from coachctx.engine.decision import Decision
from coachctx.engine.matching import (
    clinical_terms_in,
    forget_words,
    infer_scope,
    named_fragments_in,
    unread_words_in,
)
from coachctx.engine.pipeline import check_question, plan_for, select
from coachctx.engine.plan import Plan
from coachctx.engine.policy import Policy
from coachctx.engine.routing import route
from coachctx.engine.services import Bundle
from coachctx.engine.text import tokenise
from coachctx.engine.token_count import count_tokens, encoding


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
    effective, _ = infer_scope(tokens, policy, decided)
    clinical = clinical_terms_in(tokens, policy)
    plan = plan_for(decided, policy, effective, clinical, fragment_facts, costs, spend,
                    named=named_fragments_in(tokens, policy), unread=unread_words_in(tokens, policy))
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
    return [*_decision_timings(rows, bundles, policy, n_cold=n_cold, n_warm=n_warm),
            *_routing_timings(rows, bundles, policy, n_route=n_route, unseen=unseen),
            _compile_timing(policy, next(iter(bundles.values())))]


COMPILES = 5
"""Each compile takes a few hundred milliseconds: five give a steady median."""
_NEW_TERMS = itertools.count()
"""Numbers the added terms, so a second measurement in one process compiles afresh too."""


def _compile_timing(policy: Policy, bundle: Bundle) -> Timing:
    """A changed vocabulary compiled, then one decision with it: what a coach waits for after an
    edit in the playground's policy editor, and what every CLI command pays once. Each policy has
    one more term than the last, so it shares no compiled table with an earlier one."""
    data = policy.model_dump(mode="json")
    changed = []
    for _ in range(COMPILES):
        draft = copy.deepcopy(data)
        table = next(iter(draft["vocabulary"].values()))
        next(iter(table.values()))[f"benchcompile{next(_NEW_TERMS)}"] = 1.0
        changed.append(Policy.model_validate(draft))
    return _timed("policy compile: a changed vocabulary, then one decision", [
        partial(select, "my knee hurts, can I still run today?", bundle, p, count_naive=False) for p in changed],
        note="every term table of a policy with one more term compiled (the word memos warm), then select()")


def _decision_timings(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy, *,
                      n_cold: int, n_warm: int) -> list[Timing]:
    """Whole decisions: tokens counted afresh, on a fresh bundle (with tiktoken's own rate on the
    same texts beside it), and with the token cache warm."""
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
    return out


UNSEEN_PASSES = 3
"""The never-seen questions take well under a second a pass: the median of three steadies the figure."""


def _routing_timings(rows: Sequence[Row], bundles: Mapping[str, Bundle], policy: Policy, *,
                     n_route: int, unseen: Sequence[str]) -> list[Timing]:
    """Routing and selection alone: dev-style questions, then never-seen ones with every word memo
    emptied first."""
    out = []
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
        athletes = list(bundles)
        calls = [partial(route_and_select, q, prepared[athletes[i % len(athletes)]],
                         costs[athletes[i % len(athletes)]], policy, spend) for i, q in enumerate(unseen)]
        passes = []
        for _ in range(UNSEEN_PASSES):
            forget_words(policy)
            passes.append(_timed("routing + selection, never-seen multilingual questions", calls, note=(
                f"{len(unseen):,} questions in 22 languages (the corpus, tune and test), each decided once per pass, "
                "every per-word memo, memoised route and plan emptied before each pass; the median of "
                f"{UNSEEN_PASSES} passes")))
        out.append(sorted(passes, key=lambda t: t.seconds)[UNSEEN_PASSES // 2])
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
