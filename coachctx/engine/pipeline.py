"""`select()`: the whole pipeline as a bare sequence of stages over data already fetched.

route -> policy lookup + excludes -> scope modifiers -> availability -> budget -> audit ->
Decision. Nothing here touches the network except the injected classifier, called only when
the rules are unsure.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _pkg_version
from typing import Any, Final, NamedTuple, TypeVar, cast, get_args

from coachctx.engine.audit import audit
from coachctx.engine.availability import CostMode, DropUnavailable, FragmentFact, Prepared, prepared
from coachctx.engine.budget import SpendBudget
from coachctx.engine.decision import (
    NO_MATCH_CONFIDENCE,
    ROUTE_CONFIDENCE,
    ClinicalFlag,
    Decision,
    FragmentDecision,
    IntentChoice,
    Message,
    ModelCall,
    PolicyRef,
    PromptMessages,
    ScopeChoice,
    ScopeRequest,
    ServiceStatus,
    TokenCounts,
    frozen_map,
)
from coachctx.engine.fragments import BY_NAME, FRAGMENT_NAMES
from coachctx.engine.lookup import Named, evidence_of, lookup
from coachctx.engine.matching import clinical_terms_in, infer_scope, named_fragments_in, unread_words_in
from coachctx.engine.modifiers import ApplyScope
from coachctx.engine.plan import MISSING, Plan, Reason, Role, Status
from coachctx.engine.policy import CUSTOM_TIER, DEFAULT_TIER, MAX_BUDGET, SCOPES, Policy, ScopeName
from coachctx.engine.prompt import build_naive_prompt, system_block, system_message
from coachctx.engine.prompt import naive_tokens as naive_tokens_of
from coachctx.engine.prompt import prompt_tokens as prompt_tokens_of
from coachctx.engine.routing import Classifier, Route, route
from coachctx.engine.services import Bundle
from coachctx.engine.text import tokenise
from coachctx.engine.token_count import count_once
from coachctx.errors import InputError
from coachctx.reading import shown, valid_text

MAX_QUESTION_CHARS: Final = 2000
PLAN_MEMO_LIMIT: Final = 4096
"""Plans, lookup plans and requested-by maps memoised per policy; each memo is emptied when it
reaches this many."""
SCOPE_REQUESTS: Final[tuple[str, ...]] = get_args(ScopeRequest)
COST_MODES: Final = ("hand", "measured")
_K = TypeVar("_K")
_V = TypeVar("_V")

try:
    VERSION: Final = _pkg_version("coachctx")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0.0.0+source"  # type: ignore[misc]


def check_question(question: str) -> str:
    """The question, stripped, lone surrogates read as U+FFFD (`reading.valid_text`); InputError if
    it is empty or too long."""
    if not isinstance(question, str):
        raise InputError("question must be text")
    stripped = valid_text(question).strip()
    if not stripped:
        raise InputError("question is empty: type what the athlete asked")
    if len(stripped) > MAX_QUESTION_CHARS:
        raise InputError(f"question is {len(stripped)} characters; the limit is {MAX_QUESTION_CHARS}")
    return stripped


def _check_types(bundle: object, policy: object, **names: object) -> None:
    """Arguments of the wrong kind are refused by name, not met by a TypeError deep inside."""
    if not isinstance(bundle, Bundle):
        raise InputError(f"bundle must be a coachctx Bundle (fetch_bundle), got {type(bundle).__name__}")
    if not isinstance(policy, Policy):
        raise InputError(f"policy must be a coachctx Policy (load_policy), got {type(policy).__name__}")
    for name, value in names.items():
        if not isinstance(value, str):
            raise InputError(f"{name} must be text, got {type(value).__name__}")


def _check_options(*, classifier: object, policy_version: object,
                   soften_excludes: object, recorded_route: object, count_naive: object) -> None:
    """`select`'s keyword options of the wrong kind, refused by name (an adversarial pass met
    `policy_source=None` as "unhashable type: 'slice'" and `soften_excludes="no"` read as true)."""
    if classifier is not None and not callable(classifier):
        raise InputError(f"classifier must be callable (question -> label) or None, got {type(classifier).__name__}")
    if policy_version is not None and not isinstance(policy_version, str):
        raise InputError(f"policy_version must be text or None, got {type(policy_version).__name__}")
    for name, flag in (("soften_excludes", soften_excludes), ("count_naive", count_naive)):
        if not isinstance(flag, bool):
            raise InputError(f"{name} must be True or False, got {shown(flag)}")
    if recorded_route is not None and not isinstance(recorded_route, Route):
        raise InputError(f"recorded_route must be a Route (from a trace) or None, got {type(recorded_route).__name__}")


def resolve_budget(policy: Policy, tier: str, budget: int | None) -> int:
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_BUDGET:
            raise InputError(f"budget must be a whole number from 0 to {MAX_BUDGET}, got {shown(budget)}")
        return budget
    if tier not in policy.tiers:
        raise InputError(f"unknown tier {shown(tier)}; the policy defines: {', '.join(policy.tiers)}")
    return policy.tiers[tier]


def select(
    question: str,
    bundle: Bundle,
    policy: Policy,
    *,
    scope: str = "auto",
    tier: str = DEFAULT_TIER,
    budget: int | None = None,
    cost_mode: CostMode = "hand",
    classifier: Classifier | None = None,
    policy_source: str = "policy/default.yaml",
    policy_version: str | None = None,
    soften_excludes: bool = True,
    recorded_route: Route | None = None,
    count_naive: bool = True,
) -> Decision:
    """Decide what the assistant may see for this question about this athlete.

    Always returns a Decision (an empty selection is a valid one); raises InputError only for
    unusable arguments. `recorded_route` replays a route from a trace instead of routing again.
    `count_naive=False` leaves the naive baseline (a comparison figure, and the largest text a
    decision would count) out: `tokens.naive`, `tokens.saved_pct` and `prompt.naive_messages` are None.
    """
    question, requested, spend = _checked(question, bundle, policy, scope=scope, tier=tier, budget=budget,
                                          cost_mode=cost_mode, policy_source=policy_source)
    _check_options(classifier=classifier, policy_version=policy_version,
                   soften_excludes=soften_excludes, recorded_route=recorded_route, count_naive=count_naive)
    tokens = tokenise(question)

    decided = recorded_route if recorded_route is not None else route(tokens, policy, classifier)
    effective, inferred_from = infer_scope(tokens, policy, decided) if requested == "auto" else (requested, None)
    ready = prepared(bundle)
    clinical = clinical_terms_in(tokens, policy)
    plan = plan_for(decided, policy, effective, clinical, ready.facts, ready.costs[cost_mode], spend,
                    named=named_fragments_in(tokens, policy), soften_excludes=soften_excludes,
                    unread=unread_words_in(tokens, policy))
    return _decision(
        question, bundle, policy, decided, plan, ready, clinical,
        scope=_shared(policy, ScopeChoice, requested, cast("ScopeName | None", effective),
                      None if inferred_from is None else tuple(inferred_from)),
        tier=tier if budget is None else CUSTOM_TIER, spend=spend, cost_mode=cost_mode, count_naive=count_naive,
        policy_ref=_shared(policy, PolicyRef, policy_source, policy.digest, policy_version))


def _decision(question: str, bundle: Bundle, policy: Policy, decided: Route, plan: Plan, ready: Prepared,
              clinical: Sequence[str], *, scope: ScopeChoice, tier: str, spend: int, cost_mode: CostMode,
              count_naive: bool, policy_ref: PolicyRef) -> Decision:
    """The Decision a plan makes: the prompt of what it selected, its token counts, coverage and
    confidence, and every fragment's record with its reasons."""
    costs = ready.costs[cost_mode]
    max_words = max_words_for(decided, policy)
    system = system_block(bundle.language, max_words, clinical)
    lines = [(n, ready.facts[n].line or "") for n in plan.selected]
    naive = build_naive_prompt(system, None, question, payload_json=ready.naive_json) if count_naive else None
    notes = _plan_notes(policy, decided, plan, clinical)
    factor = NO_MATCH_CONFIDENCE if decided.matched_nothing else ROUTE_CONFIDENCE[decided.source]
    prompt_tokens, naive_tokens, saved_pct = _token_counts(system, lines, question, ready, count_naive=count_naive)
    return Decision(
        question=question,
        athlete=bundle.athlete,
        scope=scope,
        tier=tier,
        budget=spend,
        intent=_intent(decided, policy),
        selected=notes.selected,
        fragments=_fragments(notes, ready.facts, costs),
        warnings=notes.warnings,
        coverage=notes.coverage,
        confidence=round(notes.coverage * factor, 4),
        tokens=TokenCounts(prompt_tokens, naive_tokens, saved_pct, cost_mode, budget_spent=plan.spent,
                           selected_cost=sum([costs[n] for n in notes.selected]), encoding="cl100k_base"),
        policy=policy_ref,
        version=VERSION,
        max_words=max_words,
        language=bundle.language,
        clinical=_shared(policy, ClinicalFlag, bool(clinical), tuple(clinical)),
        services=frozen_map({s: ServiceStatus(r.status, r.detail) for s, r in bundle.results.items()}),
        prompt=PromptMessages((Message("system", system_message(system, lines)), Message("user", question)),
                              None if naive is None else _messages(naive.messages)),
    )


def _checked(question: str, bundle: Bundle, policy: Policy, *, scope: str, tier: str, budget: int | None,
             cost_mode: str, policy_source: str) -> tuple[str, ScopeRequest, int]:
    """The question stripped, the scope requested and the budget to spend; InputError for any
    unusable argument."""
    question = check_question(question)
    _check_types(bundle, policy, scope=scope, tier=tier, cost_mode=cost_mode, policy_source=policy_source)
    if scope not in SCOPE_REQUESTS:
        raise InputError(f"unknown scope {shown(scope)}; use one of: {', '.join(SCOPE_REQUESTS)}")
    if cost_mode not in COST_MODES:
        raise InputError(f"unknown cost mode {shown(cost_mode)}; use hand or measured")
    return question, cast(ScopeRequest, scope), resolve_budget(policy, tier, budget)


def _token_counts(system: str, lines: Sequence[tuple[str, str]], question: str, ready: Prepared, *,
                  count_naive: bool) -> tuple[int, int | None, float | None]:
    """The prompt's tokens, and the naive baseline's with what the prompt saves (None without it)."""
    question_tokens = count_once(question)
    # the lines were counted alone for their measured costs: the prompt adds only the system block
    prompt = prompt_tokens_of(system, lines, question, question_tokens=question_tokens,
                              line_tokens=[ready.facts[name].measured_cost for name, _ in lines])
    if not count_naive:
        return prompt, None, None
    naive = naive_tokens_of(system, ready.naive_payload_tokens, question, question_tokens=question_tokens)
    return prompt, naive, round(100 * (naive - prompt) / naive, 1)


def max_words_for(decided: Route, policy: Policy) -> int:
    """The reply's word limit: the routed intent's, or the largest of the contenders' when the
    rules were not sure."""
    if decided.source == "rules":
        return policy.intent(decided.intent).max_words
    return max(policy.intent(c).max_words for c in decided.contenders)


class PlanNotes(NamedTuple):
    """What a Decision reads from its plan and route alone, made once per plan, route and
    clinical terms (`_plan_notes`): the same for every bundle whose facts give that plan."""

    selected: tuple[str, ...]
    fragments: tuple[tuple[str, Status, Role, tuple[Reason, ...], str, Mapping[str, Role]], ...]
    """Each fragment's name, status, role, reasons, service and requested_by, in plan order."""
    warnings: tuple[str, ...]
    coverage: float


def _plan_notes(policy: Policy, decided: Route, plan: Plan, clinical: Sequence[str]) -> PlanNotes:
    """The plan's notes for this route, memoised per policy by the route's and the plan's identity
    (each kept beside its notes, so an id is never reused while remembered) and the clinical terms.
    Plans and routes are shared by the questions that decide alike; the audit reads only them."""
    memo: dict[tuple[int, int, tuple[str, ...]], tuple[Route, Plan, PlanNotes]] = policy.derived(
        "plan_notes", lambda _: {})
    key = (id(decided), id(plan), tuple(clinical))
    entry = memo.get(key)
    if entry is not None and entry[0] is decided and entry[1] is plan:
        return entry[2]
    requested_by = _requested_by(policy, plan.considered)
    notes = PlanNotes(
        selected=tuple(plan.selected),
        fragments=tuple((s.name, s.status, s.role, s.reasons, BY_NAME[s.name].service, requested_by[s.name])
                        for s in plan.fragments),
        warnings=(*audit(decided, plan, policy, clinical), *plan.warnings),
        coverage=_coverage(plan))
    return _remember(memo, key, (decided, plan, notes))[2]


def _fragments(notes: PlanNotes, fragment_facts: Mapping[str, FragmentFact],
               costs: Mapping[str, int]) -> tuple[FragmentDecision, ...]:
    """Every fragment's record: the plan's notes on it and what the bundle supplied."""
    out = []
    for name, status, role, reasons, service, requested_by in notes.fragments:
        fact = fragment_facts[name]
        out.append(FragmentDecision(name, status, role, reasons, costs[name], fact.hand_cost, fact.measured_cost,
                                    fact.line, service, requested_by))
    return tuple(out)


_R = TypeVar("_R")


def _shared(policy: Policy, record: Callable[..., _R], *fields: Hashable) -> _R:
    """`record(*fields)`, made once per policy and fields and shared: for the small records many
    Decisions hold alike (the clinical flag, the scope, the policy reference). Records are frozen."""
    memo: dict[tuple[object, ...], Any] = policy.derived("records", lambda _: {})
    key = (record, *fields)
    found = memo.get(key)
    if found is None:
        found = _remember(memo, key, record(*fields))
    return found  # type: ignore[no-any-return]


def _requested_by(policy: Policy, considered: tuple[str, ...]) -> Mapping[str, Mapping[str, Role]]:
    """Fragment -> which of the intents read asks for it, and as what: once per policy and set of
    intents read (read-only maps, shared by the Decisions that read the same intents)."""
    memo: dict[tuple[str, ...], Mapping[str, Mapping[str, Role]]] = policy.derived("requested_by", lambda _: {})
    found = memo.get(considered)
    if found is None:
        found = _remember(memo, considered, {
            name: frozen_map({i: r for i in considered if (r := policy.intent(i).requests(name)) is not None})
            for name in FRAGMENT_NAMES})
    return found


def plan_for(decided: Route, policy: Policy, scope: str | None, clinical: Sequence[str],
             fragment_facts: Mapping[str, FragmentFact], costs: Mapping[str, int], spend: int, *,
             named: Named, soften_excludes: bool = True, unread: Sequence[str] = ()) -> Plan:
    """Policy lookup, scope modifiers, availability and budget: the one sequence of selection
    stages, shared by `select()`, impact analysis and the benchmark. `named` is
    `named_fragments_in(question)`: the fragments the question's fragment terms name; `unread` is
    `unread_words_in(question)`: the words of a question the policy cannot read. The plan
    carries the stages' notes: the intents read, warnings, the budget spent.

    Memoised per policy on everything the stages read (each fragment's availability and cost, the
    budget, scope, and what lookup reads), so a question like one decided before reuses its plan;
    lookup's own plan is memoised apart, since it does not depend on the bundle, budget or scope.
    Plans are immutable, so sharing them is safe."""
    asked = (*_lookup_key(decided, clinical, named, soften_excludes), tuple(unread))
    key = (tuple((f.missing, costs[n]) for n, f in fragment_facts.items()), spend, scope, asked)
    memo: dict[object, Plan] = policy.derived("plans", lambda _: {})
    found = memo.get(key)
    if found is None:
        lookups: dict[object, Plan] = policy.derived("lookups", lambda _: {})
        plan = lookups.get(asked)
        if plan is None:
            plan = lookup(policy, decided.intent, decided.contenders, soften_excludes=soften_excludes,
                          evidence=evidence_of(decided), clinical=clinical, unmatched=decided.unmatched, named=named,
                          unread=unread, guessed=decided.guessed)
            _remember(lookups, asked, plan)
        for stage in (ApplyScope(policy, scope, decided.contenders), DropUnavailable(fragment_facts),
                      SpendBudget(spend, costs)):
            plan = stage(plan)
        found = _remember(memo, key, plan)
    return found


def _lookup_key(decided: Route, clinical: Sequence[str], named: Named, soften_excludes: bool) -> tuple[object, ...]:
    """Everything `lookup` reads. Of the evidence, that is which intents have it (in order) and the
    terms of those it did not route to: a contender's own terms change nothing, so questions that
    differ only there share a plan."""
    evidence = evidence_of(decided)
    ordered = (decided.intent, *decided.contenders)
    return (decided.intent, decided.contenders, decided.unmatched, decided.guessed,
            tuple(evidence), tuple((i, terms) for i, terms in evidence.items() if i not in ordered),
            tuple(clinical), tuple((f, tuple(terms)) for f, terms in named.items()), soften_excludes)


def _remember(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    """Keep a value in a bounded memo: emptied when it reaches `PLAN_MEMO_LIMIT`."""
    if len(memo) >= PLAN_MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


def _coverage(plan: Plan) -> float:
    requested = [s for s in plan.fragments if s.role != "none" and "dropped_by_scope" not in s.codes]
    if not requested:
        return 1.0
    arrived = [s for s in requested if not MISSING & set(s.codes)]
    return round(len(arrived) / len(requested), 4)


def _intent(r: Route, policy: Policy) -> IntentChoice:
    """The route as the Decision records it: once per Route object (routes without a model are
    shared by the questions that match alike), kept beside the route so an id is never reused."""
    memo: dict[int, tuple[Route, IntentChoice]] = policy.derived("intent_choices", lambda _: {})
    entry = memo.get(id(r))
    if entry is not None and entry[0] is r:
        return entry[1]
    return _remember(memo, id(r), (r, _intent_choice(r, policy)))[1]


def _intent_choice(r: Route, policy: Policy) -> IntentChoice:
    top_score = r.scores.scores.get(r.top, 0.0) if r.top else 0.0
    runner_score = r.scores.scores.get(r.runner_up, 0.0) if r.runner_up else 0.0
    return IntentChoice(
        name=r.intent,
        source=r.source,
        scores=frozen_map(r.scores.scores),
        matched=frozen_map({k: tuple((t, w) for t, w in v) for k, v in r.scores.matched.items() if v}),
        top=r.top,
        runner_up=r.runner_up,
        margin=round(top_score - runner_score, 6),
        confident=r.confident,
        contenders=tuple(r.contenders),
        reason=r.reason,
        fallback_reason=r.fallback_reason,
        threshold=policy.routing.confident_threshold,
        required_margin=policy.routing.margin,
        matched_nothing=r.matched_nothing,
        scripts=tuple(r.scripts),
        model=None if r.model_raw is None and r.model_latency_ms is None else
        ModelCall(label=r.model_label, raw=r.model_raw, latency_ms=r.model_latency_ms),
    )


def _messages(messages: Sequence[Mapping[str, str]]) -> tuple[Message, ...]:
    return tuple(Message(m["role"], m["content"]) for m in messages)


assert set(SCOPES) < set(SCOPE_REQUESTS)
