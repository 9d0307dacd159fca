"""Impact analysis: run a question set (`tools/questions.py`) through two policies and report
what changes (`tools/impact_report.py`). A row naming no athlete is judged against `maya`, as the
dev set says. Rows that cannot be decided (empty question, unknown athlete or tier) are skipped
with their reason, never fatal to a run of 100,000.

Impact never calls a model: a question the rules are unsure of takes the keyword fallback, as
`select()` does without a classifier, and is counted as `unsure` so the reader knows.

Speed: the decision runs the pipeline's own selection stages (`pipeline.plan_for`) and its own
prompt counting (`prompt.system_tokens`, `pipeline.max_words_for`), but each athlete's bundle and
fragment facts are computed once, each question is tokenised once for both policies, and a plan
is computed once per distinct (athlete, budget, scope, intent, contenders).
`tests/tools/test_impact.py` pins that every outcome equals `select()`'s.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from coachctx.engine.availability import CostMode, FragmentFact, facts
from coachctx.engine.collector import collector_paused
from coachctx.engine.matching import (
    clinical_matcher,
    clinical_terms_in,
    compile_matchers,
    fragment_matcher,
    infer_scope,
    named_fragments_in,
    scope_matcher,
    unread_words_in,
    vocabulary_matcher,
)
from coachctx.engine.pipeline import max_words_for, plan_for
from coachctx.engine.policy import DEFAULT_TIER, Policy
from coachctx.engine.prompt import chat_tokens, system_block
from coachctx.engine.prompt import system_tokens as system_tokens_of
from coachctx.engine.routing import Route, route
from coachctx.engine.services import Bundle, ConditionsCache, FixtureUpstream, Upstream, fetch_bundle
from coachctx.engine.text import Tokens, tokenise
from coachctx.engine.token_count import count_once
from coachctx.errors import InputError
from coachctx.reading import shown
from coachctx.tools.impact_checks import check_arguments
from coachctx.tools.impact_report import ImpactReport, Outcome, RowImpact, Totals, describe_changes
from coachctx.tools.questions import Question, QuestionSet

DEFAULT_ATHLETE: Final = "maya"
"""The dev set judges every row that names no athlete against maya (all services healthy)."""
_MEMO_LIMIT: Final = 20_000

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` about a hundred times during a run, and at the end."""


# --- deciding fast -----------------------------------------------------------------------------


@runtime_checkable
class KnowsAthletes(Protocol):
    def has(self, athlete: str) -> bool: ...


@dataclass
class _Athlete:
    bundle: Bundle
    facts: Mapping[str, FragmentFact]
    costs: Mapping[str, int]


class Bundles:
    """Each athlete fetched once, conditions once per city, fragment facts computed once."""

    def __init__(self, upstream: Upstream | None = None, cost_mode: CostMode = "hand") -> None:
        self.upstream: Upstream = upstream if upstream is not None else FixtureUpstream()
        self.cost_mode: CostMode = cost_mode
        self.conditions = ConditionsCache()
        self._athletes: dict[str, _Athlete] = {}

    def get(self, athlete: str) -> _Athlete:
        if athlete not in self._athletes:
            if isinstance(self.upstream, KnowsAthletes) and not self.upstream.has(athlete):
                raise InputError(f"unknown athlete {shown(athlete)}")
            bundle = fetch_bundle(self.upstream, athlete, self.conditions)
            fragment_facts = facts(bundle)
            self._athletes[athlete] = _Athlete(bundle, fragment_facts,
                                               {n: f.cost(self.cost_mode) for n, f in fragment_facts.items()})
        return self._athletes[athlete]


@dataclass(frozen=True)
class _Routed:
    intent: str
    source: str
    contenders: tuple[str, ...]
    scope: str | None
    clinical: tuple[str, ...]
    route: Route
    evidence: tuple[str, ...]
    """The intents that scored, best first (their order decides which evidence is spent first): with the
    clinical flag, they decide the plan as much as the route."""
    named: tuple[tuple[str, tuple[str, ...]], ...]
    """The fragments the question names, with the terms that name them."""
    unread: tuple[str, ...]
    """The words of a question the policy cannot read (`unread_words_in`)."""


class PolicyRunner:
    """Decides questions under one policy the way `select()` does without a model, memoising
    what repeats. `tests/tools/test_impact.py` pins its outcomes to `select()`'s."""

    def __init__(self, policy: Policy, bundles: Bundles) -> None:
        self.policy = policy
        self.bundles = bundles
        self._plans: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
        self._systems: dict[tuple[Any, ...], int] = {}
        """system key -> tokens of the system message's content: counted once per key"""
        p = policy
        self.routing_key = (tuple(m(p).fingerprint for m in (vocabulary_matcher, clinical_matcher, scope_matcher,
                                                              fragment_matcher)),
                            p.routing.model_dump_json(), p.unmatched is None, tuple(p.fragment_terms),
                            tuple((name, tuple(scope.implied_by)) for name, scope in p.scopes.items()))
        """Everything `_route` reads from the policy: two runners with equal keys route alike."""

    def decide(self, q: Question, tokens: Tokens, athlete: str, tier: str, question_tokens: int | None = None) -> Outcome:
        """Raises KeyError for a tier the policy does not define, InputError for an unknown athlete.
        `question_tokens` is `count_once(q.question)`, counted once for both policies."""
        spend = self.policy.tiers[tier]
        a = self.bundles.get(athlete)
        r = self._route(q, tokens)
        if len(self._plans) >= _MEMO_LIMIT:
            self._plans.clear()
        plan_key = (athlete, spend, r.scope, r.intent, r.contenders, r.evidence, bool(r.clinical), r.source, r.named)
        planned = self._plans.get(plan_key)
        if planned is None:
            planned = self._plans[plan_key] = self._plan(a, spend, r)
        selected, withheld = planned
        max_words = max_words_for(r.route, self.policy)
        system_key = (athlete, max_words, r.clinical, selected)
        system_tokens = self._systems.get(system_key)
        if system_tokens is None:
            if len(self._systems) >= _MEMO_LIMIT:
                self._systems.clear()
            block = system_block(a.bundle.language, max_words, list(r.clinical))
            system_tokens = self._systems[system_key] = system_tokens_of(
                block, [(n, a.facts[n].line or "") for n in selected], pieces=False)
        if question_tokens is None:
            question_tokens = count_once(q.question)
        return Outcome(r.intent, r.source, r.contenders, r.scope, selected, withheld,
                       chat_tokens(system_tokens, question_tokens))

    def _route(self, q: Question, tokens: Tokens) -> _Routed:
        """`select()`'s routing without a classifier, its scope and its clinical terms: once per
        question for both policies when everything routing reads is equal in them."""
        key = ("routed", self.routing_key, q.scope)
        found = tokens.memo.get(key)
        if found is None:
            found = tokens.memo[key] = self._route_now(q, tokens)
        return found  # type: ignore[return-value]

    def _route_now(self, q: Question, tokens: Tokens) -> _Routed:
        r = route(tokens, self.policy, None)
        scope = infer_scope(tokens, self.policy, r)[0] if q.scope == "auto" else q.scope
        return _Routed(r.intent, r.source, r.contenders, scope, tuple(clinical_terms_in(tokens, self.policy)), r,
                       tuple(n for n, v in r.scores.ranked() if v > 0),
                       tuple((f, tuple(terms)) for f, terms in named_fragments_in(tokens, self.policy).items()),
                       unread_words_in(tokens, self.policy))

    def _plan(self, a: _Athlete, spend: int, r: _Routed) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        plan = plan_for(r.route, self.policy, r.scope, r.clinical, a.facts, a.costs, spend, named=dict(r.named),
                        unread=r.unread)
        withheld = []
        for s in plan.fragments:
            if s.status == "withheld":
                main = s.main_reason
                if main is not None:
                    withheld.append((s.name, main.code))
        return tuple(plan.selected), tuple(withheld)


@dataclass(frozen=True)
class ChunkResult:
    """What `decide_chunk` gives back for a run of questions, in their order."""

    rows: tuple[RowImpact, ...]
    skipped: tuple[tuple[int, str], ...]


class ImpactJob:
    """Everything needed to decide questions under two policies, made once per run and installed
    once per worker process. It pickles as the two policy documents (not their compiled tables),
    the upstream and the settings; `token` names the run, so a worker keeps one engine per run."""

    def __init__(self, base: Policy, candidate: Policy, *, upstream: Upstream | None = None,
                 default_athlete: str = DEFAULT_ATHLETE, cost_mode: CostMode = "hand") -> None:
        self.base, self.candidate = base, candidate
        self.upstream = upstream
        self.default_athlete = default_athlete
        self.cost_mode: CostMode = cost_mode
        self.token = uuid.uuid4().hex

    def __getstate__(self) -> dict[str, Any]:
        return {"base": self.base.model_dump(mode="json"), "candidate": self.candidate.model_dump(mode="json"),
                "upstream": self.upstream, "default_athlete": self.default_athlete, "cost_mode": self.cost_mode,
                "token": self.token}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.base = Policy.model_validate(state["base"])
        candidate = Policy.model_validate(state["candidate"])
        # one object when the documents are equal: everything compiled from it is shared
        self.candidate = self.base if candidate == self.base else candidate
        self.upstream, self.default_athlete = state["upstream"], state["default_athlete"]
        self.cost_mode, self.token = state["cost_mode"], state["token"]


class _Engine:
    """One run's deciding state in one process: bundles fetched once, both policies' memos."""

    def __init__(self, job: ImpactJob) -> None:
        self.job = job
        bundles = Bundles(job.upstream, job.cost_mode)
        self.runners = (PolicyRunner(job.base, bundles), PolicyRunner(job.candidate, bundles))
        self.tokens: dict[str, Tokens] = {}


_ENGINES: dict[str, _Engine] = {}
_ENGINE_LIMIT: Final = 4


def _engine(job: ImpactJob) -> _Engine:
    engine = _ENGINES.get(job.token)
    if engine is None:
        if len(_ENGINES) >= _ENGINE_LIMIT:
            _ENGINES.pop(next(iter(_ENGINES)))
        engine = _ENGINES[job.token] = _Engine(job)
    return engine


@collector_paused()  # deciding makes no garbage in cycles: the collector walking it was ~10% of the time
def decide_chunk(job: ImpactJob, chunk: Sequence[Question]) -> ChunkResult:
    """Decide a run of questions under both policies: the one function the single-process path,
    the process pool and the Dask engine all run, so they cannot disagree."""
    engine = _engine(job)
    base, candidate = job.base, job.candidate
    rows: list[RowImpact] = []
    skipped: list[tuple[int, str]] = []
    memos = engine.tokens
    for q in chunk:
        athlete = q.athlete or job.default_athlete
        tier = q.tier or DEFAULT_TIER
        no_tier = [name for name, p in (("base", base), ("candidate", candidate)) if tier not in p.tiers]
        if no_tier:
            skipped.append((q.row, f"unknown tier {shown(tier)} in {' and '.join(no_tier)}"))
            continue
        tokens = memos.get(q.question)
        if tokens is None:
            if len(memos) >= _MEMO_LIMIT:
                memos.clear()
            tokens = memos[q.question] = tokenise(q.question)
        question_tokens = count_once(q.question)
        try:
            a, b = (r.decide(q, tokens, athlete, tier, question_tokens) for r in engine.runners)
        except InputError as e:
            skipped.append((q.row, str(e)))
        else:
            rows.append(RowImpact(q, athlete, tier, a, b, describe_changes(a, b)))
    return ChunkResult(tuple(rows), tuple(skipped))


def _install(job: ImpactJob) -> None:
    """A pool worker's initializer: the run's engine, built once per process."""
    _engine(job)


_Decided = tuple[int, Outcome, Outcome, tuple[str, ...]]


def _decide_installed(token: str, chunk: Sequence[Question]) -> tuple[list[_Decided], tuple[tuple[int, str], ...]]:
    """`decide_chunk` in a pool worker; each row comes back as its place in the chunk and the two
    outcomes, since the parent holds the questions already."""
    result = decide_chunk(_ENGINES[token].job, chunk)
    out: list[_Decided] = []
    i = 0
    for r in result.rows:  # in the chunk's order, minus the skipped (row numbers may repeat)
        while chunk[i] is not r.question:
            i += 1
        out.append((i, r.base, r.candidate, r.changes))
        i += 1
    return out, result.skipped


def _rows_back(job: ImpactJob, chunk: Sequence[Question],
               answer: tuple[list[_Decided], tuple[tuple[int, str], ...]]) -> ChunkResult:
    rows = []
    for i, a, b, changes in answer[0]:
        q = chunk[i]
        rows.append(RowImpact(q, q.athlete or job.default_athlete, q.tier or DEFAULT_TIER, a, b, changes))
    return ChunkResult(tuple(rows), answer[1])


CHUNK_ROWS: Final = 2000
"""Questions per chunk sent to a worker: large enough that shipping them costs little."""


def run_impact(questions: QuestionSet | Sequence[Question], base: Policy, candidate: Policy, *,
               base_name: str = "base", candidate_name: str = "candidate", upstream: Upstream | None = None,
               default_athlete: str = DEFAULT_ATHLETE, cost_mode: CostMode = "hand",
               progress: Progress | None = None, jobs: int = 1, changed_only: bool = False) -> ImpactReport:
    """Decide every question under both policies and compare. Never calls a model.

    `jobs` > 1 decides chunks of the set in that many worker processes (the upstream must then
    pickle); rows come back in the set's order, so the report is the same as with one.
    `changed_only` keeps only the rows whose decision changed, with the figures over every row
    added up chunk by chunk (`Totals`): a large log's unchanged rows are not held."""
    check_arguments(questions, base, candidate, base_name=base_name, candidate_name=candidate_name,
                     upstream=upstream, default_athlete=default_athlete, cost_mode=cost_mode, progress=progress,
                     jobs=jobs, changed_only=changed_only)
    started = time.perf_counter()
    qs = questions.questions if isinstance(questions, QuestionSet) else tuple(questions)
    skipped = list(questions.skipped) if isinstance(questions, QuestionSet) else []
    job = ImpactJob(base, candidate, upstream=upstream, default_athlete=default_athlete, cost_mode=cost_mode)
    for policy in (base, candidate):
        compile_matchers(policy)  # here, once: forked workers inherit the tables instead of compiling them
    total = len(qs)
    size = max(1, -(-total // 100)) if jobs == 1 else max(1, min(CHUNK_ROWS, -(-total // (jobs * 4))))
    chunks = [qs[i:i + size] for i in range(0, total, size)]
    rows: list[RowImpact] = []
    done = 0
    totals: Totals | None = None

    def collect(results: Iterable[ChunkResult]) -> None:
        nonlocal done, totals
        for chunk, result in zip(chunks, results, strict=True):
            if changed_only:
                part = Totals.of(result.rows)
                totals = part if totals is None else totals + part
                rows.extend(r for r in result.rows if r.changed)
            else:
                rows.extend(result.rows)
            skipped.extend(result.skipped)
            done += len(chunk)
            if progress is not None:
                progress(done, total)

    try:
        if jobs == 1 or len(chunks) == 1:
            collect(decide_chunk(job, chunk) for chunk in chunks)
        else:
            with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), initializer=_install,
                                     initargs=(job,)) as pool:
                answers = pool.map(_decide_installed, itertools.repeat(job.token), chunks)
                collect(_rows_back(job, chunk, answer) for chunk, answer in zip(chunks, answers, strict=True))
    finally:
        _ENGINES.pop(job.token, None)
    return ImpactReport(source=questions.source if isinstance(questions, QuestionSet) else "<questions>",
                        base_name=base_name, candidate_name=candidate_name, base_digest=base.digest,
                        candidate_digest=candidate.digest, rows=tuple(rows),
                        skipped=tuple(sorted(skipped)), seconds=time.perf_counter() - started,
                        totals=totals if changed_only else None)
