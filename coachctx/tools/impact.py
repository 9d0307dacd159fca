"""Impact analysis: run a set of questions through two policies and report what changes.

A question set is YAML in the format of tests/data/questions/dev.yaml (`q`, labels `intents`,
`needs` and `scope`, the horizon the question implies), or a log as JSONL or CSV with a
`question` (or `q`) column and optional `athlete`, `scope` (the scope the caller asked for),
`tier`, `intents` and `needs` columns. A row naming no athlete is judged against `maya`, as
the dev set says. Rows that cannot be decided (empty question, unknown athlete or tier) are
skipped with their reason, never fatal to a run of 100,000.

Per question the report gives each policy's intent, routing source, selected and withheld
fragments and prompt tokens, and what changed; where rows are labelled, route accuracy, needs
recall, token totals and a per-intent confusion table per policy.

Impact never calls a model: a question the rules are unsure of takes the keyword fallback, as
`select()` does without a classifier, and is counted as `unsure` so the reader knows.

Speed: the decision is the same sequence of stages as `select()` (route, lookup, scope,
availability, budget, prompt), but each athlete's bundle and fragment facts are computed once,
each question is tokenised once for both policies, and a plan is computed once per distinct
(athlete, budget, scope, intent, contenders). `tests/test_impact.py` pins that every outcome
equals `select()`'s.
"""

from __future__ import annotations

import csv
import io
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from coachctx.engine.availability import CostMode, FragmentFact, facts
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, SCOPE_REQUESTS, max_words_for, plan_for
from coachctx.engine.policy import INTENTS, Policy, YamlLimits, parse_yaml
from coachctx.engine.prompt import chat_tokens, system_block
from coachctx.engine.prompt import system_tokens as system_tokens_of
from coachctx.engine.routing import (
    Route,
    clinical_matcher,
    clinical_terms_in,
    compile_matchers,
    fragment_matcher,
    infer_scope,
    named_fragments_in,
    route,
    scope_matcher,
    vocabulary_matcher,
)
from coachctx.engine.services import Bundle, ConditionsCache, FixtureUpstream, Upstream, fetch_bundle
from coachctx.engine.text import Tokens, tokenise
from coachctx.engine.token_count import count_once
from coachctx.errors import InputError, PolicyError
from coachctx.reading import ReadError, check_json_value, file_path, parse_json, printable, read_text

DEFAULT_ATHLETE: Final = "maya"
"""The dev set judges every row that names no athlete against maya (all services healthy)."""
DEFAULT_TIER: Final = "paid"
MAX_QUESTIONS: Final = 1_000_000
MAX_FILE_BYTES: Final = 512 * 1024 * 1024
MAX_YAML_BYTES: Final = 16 * 1024 * 1024
"""YAML is parsed whole and far slower than JSONL or CSV: a set this large belongs in a log."""
QUESTION_SET_YAML: Final = YamlLimits(max_bytes=MAX_YAML_BYTES, max_nodes=4 * MAX_QUESTIONS)
FORMATS: Final = {".yaml": "yaml", ".yml": "yaml", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
_MEMO_LIMIT: Final = 20_000

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` about a hundred times during a run, and at the end."""


# --- reading question sets ---------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One row of a question set."""

    row: int
    """1-based: the list index in YAML, the line in JSONL, the data row in CSV."""
    question: str
    athlete: str | None = None
    scope: str = "auto"
    """The scope requested (logs); `auto` infers it from the question, as `select()` does."""
    tier: str | None = None
    intents: tuple[str, ...] | None = None
    """Labels: the intents any of which is a correct route. None when unlabelled."""
    needs: tuple[str, ...] | None = None
    """Labels: fragments an expert would insist on. None when unlabelled."""
    expected_scope: str | None = None
    """Label: the horizon the question implies (dev.yaml's `scope`)."""
    lang: str | None = None
    """The language it is written in, where the set says (the corpus does)."""
    origin: str | None = None
    """Who labelled it, where the set says: `coach` or `model` (`coachctx suggest` weighs them)."""


@dataclass(frozen=True)
class QuestionSet:
    source: str
    questions: tuple[Question, ...]
    skipped: tuple[tuple[int, str], ...] = ()
    """(row, why) for rows that could not be read."""


def read_questions(path: str | Path) -> QuestionSet:
    """Read a question set; the format comes from the suffix (.yaml/.yml, .jsonl/.ndjson, .csv)."""
    p = file_path(path, "a question set file")
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise InputError(f"{p}: unknown question set format {p.suffix or '(no suffix)'!r}; "
                         f"use one of {', '.join(FORMATS)}")
    limit = MAX_YAML_BYTES if fmt == "yaml" else MAX_FILE_BYTES
    text = read_text(p, limit, expected="a question set file", strip_bom=True)
    return parse_questions(text, fmt, str(p))


def parse_questions(text: str, fmt: str, source: str = "<questions>") -> QuestionSet:
    """Parse a question set already in memory (the app's upload). `fmt`: yaml, jsonl or csv."""
    if not isinstance(text, str):
        raise InputError(f"{source}: expected the question set's text, got {type(text).__name__}")
    if fmt == "yaml":
        records = _yaml_records(text, source)
    elif fmt == "jsonl":
        records = _jsonl_records(text)
    elif fmt == "csv":
        records = _csv_records(text, source)
    else:
        raise InputError(f"{source}: unknown question set format {fmt!r}; use yaml, jsonl or csv")
    questions: list[Question] = []
    skipped: list[tuple[int, str]] = []
    for row, record in records:
        if len(questions) >= MAX_QUESTIONS:
            raise InputError(f"{source}: more than {MAX_QUESTIONS} questions; split the set")
        if isinstance(record, str):
            skipped.append((row, record))
            continue
        try:
            questions.append(_question(row, record, labels_scope=fmt == "yaml"))
        except ValueError as e:
            skipped.append((row, str(e)))
    if not questions:
        why = f" (row {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise InputError(f"{source}: no questions found{why}")
    return QuestionSet(source, tuple(questions), tuple(skipped))


def _yaml_records(text: str, source: str) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    try:
        data = parse_yaml(text, source, QUESTION_SET_YAML)
    except PolicyError as e:  # the policy's guarded loader: same limits on nesting, aliases, expansion
        where, problem = e.problems[0]
        raise InputError(f"{source}: not valid YAML ({f'{where}: ' if where else ''}{problem})") from e
    check_json_value(data, source)
    items = data.get("questions") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise InputError(f"{source}: expected a list of questions (or a mapping with `questions:`)")
    for i, item in enumerate(items, 1):
        if isinstance(item, str):
            item = {"q": item}
        yield i, item if isinstance(item, Mapping) else f"expected a mapping with `q`, got {type(item).__name__}"


def _jsonl_records(text: str) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    # JSONL lines end at \n only: `splitlines()` would also cut at U+2028 or \x1e inside a string
    for line_no, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = parse_json(line, f"line {line_no}")
        except ReadError as e:
            if e.where.startswith("line 1, "):  # a JSON syntax error: its column on this line
                yield line_no, f"{e.problem} ({e.where.removeprefix('line 1, ')})"
            else:
                yield line_no, f"{e.where}: {e.problem}" if e.where else e.problem
            continue
        yield line_no, obj if isinstance(obj, Mapping) else f"expected a JSON object, got {type(obj).__name__}"


def _csv_records(text: str, source: str) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    # newline="": the csv module reads line ends itself, so a file ending lines in \r alone (old
    # spreadsheets) reads, and a newline inside a quoted cell stays in the cell
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
    except csv.Error as e:  # a header cell past the csv module's field limit
        raise InputError(f"{source}: not valid CSV in the header ({e})") from e
    columns = [c.strip().casefold() for c in header]
    if "question" not in columns and "q" not in columns:
        # the header is data: a quoted newline or 100 kB in it must not make the error span lines
        shown = printable(", ".join(header)) or "nothing"
        raise InputError(f"{source}: no `question` (or `q`) column; the header has: "
                         f"{shown if len(shown) <= 200 else shown[:197] + '...'}")
    try:
        for i, record in enumerate(reader, 1):
            yield i, {(k or "").strip().casefold(): v for k, v in record.items()}
    except csv.Error as e:
        raise InputError(f"{source}: not valid CSV near data row {reader.line_num} ({e})") from e


def _labels(value: Any, known: Sequence[str], what: str, kind: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        # CSV cells: "training;injury", "training|injury" or "training injury"
        value = [v for v in value.replace("|", " ").replace(";", " ").replace(",", " ").split() if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what}: expected a list of names")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise ValueError(f"{what}: unknown {kind} {unknown[0]!r}")
    return tuple(value)


def _text(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected text, got {type(value).__name__}")
    return value.strip()


def _question(row: int, record: Mapping[str, Any], *, labels_scope: bool) -> Question:
    q = record.get("question", record.get("q"))
    if not isinstance(q, str) or not q.strip():
        raise ValueError("the question is empty" if q in (None, "") or isinstance(q, str)
                         else f"question: expected text, got {type(q).__name__}")
    if len(q.strip()) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question is {len(q.strip())} characters; the limit is {MAX_QUESTION_CHARS}")
    scope = _text(record, "scope")
    if scope is not None and scope not in SCOPE_REQUESTS:
        raise ValueError(f"unknown scope {scope!r}; use one of: {', '.join(SCOPE_REQUESTS)}")
    intents_value = record.get("intents", record.get("intent"))
    needs_value = record.get("needs")
    if isinstance(needs_value, str) and not needs_value.strip() and intents_value not in (None, ""):
        needs_value = []  # a CSV row with intents but an empty needs cell needs nothing
    return Question(
        row=row, question=q.strip(), athlete=_text(record, "athlete"),
        scope="auto" if labels_scope or scope is None else scope,
        tier=_text(record, "tier"),
        intents=_labels(intents_value if intents_value != "" else None, INTENTS, "intents", "intent"),
        needs=_labels(needs_value if needs_value != "" else None, FRAGMENT_NAMES, "needs", "fragment"),
        expected_scope=scope if labels_scope and scope != "auto" else None,
        lang=_text(record, "lang"), origin=_text(record, "origin"),
    )


# --- deciding fast -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one policy decides for one question (the parts the report needs)."""

    intent: str
    source: str
    contenders: tuple[str, ...]
    scope: str | None
    selected: tuple[str, ...]
    withheld: tuple[tuple[str, str], ...]
    """(fragment, main reason code) for every withheld fragment, in plan order."""
    tokens: int

    def __reduce__(self) -> tuple[Any, ...]:
        # positional: a worker sends back a hundred thousand of these, field names each time add up
        return Outcome, (self.intent, self.source, self.contenders, self.scope, self.selected, self.withheld,
                         self.tokens)

    @property
    def unsure(self) -> bool:
        """The rules were not sure: in production this question would ask the model."""
        return self.source != "rules"

    def to_json(self) -> dict[str, Any]:
        return {"intent": self.intent, "source": self.source, "contenders": list(self.contenders),
                "scope": self.scope, "selected": list(self.selected), "withheld": dict(self.withheld),
                "tokens": self.tokens}


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
                raise InputError(f"unknown athlete {athlete!r}")
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


class PolicyRunner:
    """Decides questions under one policy the way `select()` does without a model, memoising
    what repeats. `tests/test_impact.py` pins its outcomes to `select()`'s."""

    def __init__(self, policy: Policy, bundles: Bundles) -> None:
        self.policy = policy
        self.bundles = bundles
        self._plans: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
        self._systems: dict[tuple[Any, ...], int] = {}
        """system key -> tokens of the system message's content: counted once per key"""
        p = policy
        self.routing_key = (tuple(m(p).fingerprint for m in (vocabulary_matcher, clinical_matcher, scope_matcher,
                                                              fragment_matcher)),
                            p.routing.model_dump_json(), p.unmatched is None, tuple(p.fragment_terms))
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
        scope = infer_scope(tokens, self.policy)[0] if q.scope == "auto" else q.scope
        return _Routed(r.intent, r.source, r.contenders, scope, tuple(clinical_terms_in(tokens, self.policy)), r,
                       tuple(n for n, v in r.scores.ranked() if v > 0),
                       tuple((f, tuple(terms)) for f, terms in named_fragments_in(tokens, self.policy).items()))

    def _plan(self, a: _Athlete, spend: int, r: _Routed) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        plan = plan_for(r.route, self.policy, r.scope, r.clinical, a.facts, a.costs, spend, named=dict(r.named))
        withheld = []
        for s in plan.fragments:
            if s.status == "withheld":
                main = s.main_reason
                if main is not None:
                    withheld.append((s.name, main.code))
        return tuple(plan.selected), tuple(withheld)


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowImpact:
    question: Question
    athlete: str
    tier: str
    base: Outcome
    candidate: Outcome
    changes: tuple[str, ...]
    """What changed, as short phrases; empty when both policies decide alike."""

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_json(self) -> dict[str, Any]:
        q = self.question
        return {"row": q.row, "question": q.question, "athlete": self.athlete, "tier": self.tier,
                "scope": q.scope, "labels": {"intents": _list(q.intents), "needs": _list(q.needs),
                                             "scope": q.expected_scope},
                "base": self.base.to_json(), "candidate": self.candidate.to_json(),
                "changed": self.changed, "changes": list(self.changes)}


def _list(values: tuple[str, ...] | None) -> list[str] | None:
    return list(values) if values is not None else None


def describe_changes(a: Outcome, b: Outcome) -> tuple[str, ...]:
    out: list[str] = []
    if a.intent != b.intent or a.source != b.source:
        out.append(f"intent {a.intent} ({a.source}) -> {b.intent} ({b.source})")
    elif a.contenders != b.contenders:
        out.append(f"contenders {', '.join(a.contenders)} -> {', '.join(b.contenders)}")
    if a.scope != b.scope:
        out.append(f"scope {a.scope or 'none'} -> {b.scope or 'none'}")
    gained = [f for f in b.selected if f not in a.selected]
    lost = [f for f in a.selected if f not in b.selected]
    out += [f"+{f}" for f in gained] + [f"-{f}" for f in lost]
    if not gained and not lost and a.selected != b.selected:
        out.append("prompt order changed")
    wa, wb = dict(a.withheld), dict(b.withheld)
    out += [f"{f} withheld: {wa[f]} -> {wb[f]}" for f in wa if f in wb and wa[f] != wb[f]]
    if a.tokens != b.tokens:
        out.append(f"tokens {a.tokens} -> {b.tokens}")
    return tuple(out)


@dataclass(frozen=True)
class Metrics:
    """One policy's figures over the set. Rates are None when no row carries that label."""

    questions: int
    tokens_total: int
    unsure: int
    route_labelled: int
    route_correct: int
    needs_total: int
    needs_met: int
    needs_rows: int
    needs_rows_met: int
    """Labelled rows whose every need was selected."""
    scope_labelled: int
    scope_correct: int
    confusion: dict[str, dict[str, int]]
    """expected intent -> routed intent -> count, over rows with intent labels. A row accepting
    several intents counts under the routed one when it is among them, else under its first."""

    @property
    def route_accuracy(self) -> float | None:
        return self.route_correct / self.route_labelled if self.route_labelled else None

    @property
    def needs_recall(self) -> float | None:
        return self.needs_met / self.needs_total if self.needs_total else None

    @property
    def scope_accuracy(self) -> float | None:
        return self.scope_correct / self.scope_labelled if self.scope_labelled else None

    @property
    def tokens_mean(self) -> float:
        return self.tokens_total / self.questions if self.questions else 0.0

    def __add__(self, other: Metrics) -> Metrics:
        """The figures over both sets of rows: what partitions decided apart add up to."""
        counts = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "confusion"}
        confusion = {e: {i: n + other.confusion[e][i] for i, n in row.items()} for e, row in self.confusion.items()}
        return Metrics(**counts, confusion=confusion)

    def to_json(self) -> dict[str, Any]:
        return {"questions": self.questions, "tokens_total": self.tokens_total,
                "tokens_mean": round(self.tokens_mean, 2), "unsure": self.unsure,
                "route_accuracy": _round(self.route_accuracy), "route_correct": self.route_correct,
                "route_labelled": self.route_labelled, "needs_recall": _round(self.needs_recall),
                "needs_met": self.needs_met, "needs_total": self.needs_total,
                "needs_rows_met": self.needs_rows_met, "needs_rows": self.needs_rows,
                "scope_accuracy": _round(self.scope_accuracy), "scope_correct": self.scope_correct,
                "scope_labelled": self.scope_labelled, "confusion": self.confusion}


def _round(x: float | None) -> float | None:
    return round(x, 4) if x is not None else None


def metrics(rows: Sequence[RowImpact], which: str) -> Metrics:
    """Figures for `which` ("base" or "candidate") over `rows`."""
    confusion = {e: dict.fromkeys(INTENTS, 0) for e in INTENTS}
    tokens = unsure = route_labelled = route_correct = 0
    needs_total = needs_met = needs_rows = needs_rows_met = scope_labelled = scope_correct = 0
    for row in rows:
        o: Outcome = getattr(row, which)
        q = row.question
        tokens += o.tokens
        unsure += o.unsure
        if q.intents:
            route_labelled += 1
            ok = o.intent in q.intents
            route_correct += ok
            confusion[o.intent if ok else q.intents[0]][o.intent] += 1
        if q.needs is not None:
            met = sum(1 for f in q.needs if f in o.selected)
            needs_total += len(q.needs)
            needs_met += met
            needs_rows += 1
            needs_rows_met += met == len(q.needs)
        if q.expected_scope is not None:
            scope_labelled += 1
            scope_correct += o.scope == q.expected_scope
    return Metrics(len(rows), tokens, unsure, route_labelled, route_correct, needs_total, needs_met, needs_rows,
                   needs_rows_met, scope_labelled, scope_correct, confusion)


@dataclass(frozen=True)
class Totals:
    """Both policies' metrics and the change counts over a set of rows; totals of parts add up."""

    base: Metrics
    candidate: Metrics
    counts: dict[str, int]
    """changed, intent_changed, selection_changed, tokens_changed"""

    @classmethod
    def of(cls, rows: Sequence[RowImpact]) -> Totals:
        return cls(metrics(rows, "base"), metrics(rows, "candidate"), cls.count(rows))

    @staticmethod
    def count(rows: Sequence[RowImpact]) -> dict[str, int]:
        changed = [r for r in rows if r.changed]
        return {"changed": len(changed),
                "intent_changed": sum(1 for r in changed if r.base.intent != r.candidate.intent),
                "selection_changed": sum(1 for r in changed if r.base.selected != r.candidate.selected),
                "tokens_changed": sum(1 for r in changed if r.base.tokens != r.candidate.tokens)}

    def __add__(self, other: Totals) -> Totals:
        return Totals(self.base + other.base, self.candidate + other.candidate,
                      {k: v + other.counts[k] for k, v in self.counts.items()})


@dataclass(frozen=True)
class ImpactReport:
    source: str
    base_name: str
    candidate_name: str
    base_digest: str
    candidate_digest: str
    rows: tuple[RowImpact, ...]
    skipped: tuple[tuple[int, str], ...]
    seconds: float
    notes: tuple[str, ...] = ()
    totals: Totals | None = None
    """Figures over every row decided, for a report that keeps only the changed rows (`rows`):
    what a run over a log too large to hold gives back. None: `rows` holds every row."""
    base_metrics: Metrics = field(init=False)
    candidate_metrics: Metrics = field(init=False)

    def __post_init__(self) -> None:
        totals = self.totals if self.totals is not None else Totals.of(self.rows)
        object.__setattr__(self, "base_metrics", totals.base)
        object.__setattr__(self, "candidate_metrics", totals.candidate)

    def changed_rows(self) -> list[RowImpact]:
        return [r for r in self.rows if r.changed]

    def summary(self) -> dict[str, int]:
        counts = self.totals.counts if self.totals is not None else Totals.count(self.rows)
        return {"questions": self.base_metrics.questions, "skipped": len(self.skipped), **counts}

    def table(self, changed_only: bool = False) -> list[dict[str, Any]]:
        """One flat record per question, for a dataframe."""
        rows = self.changed_rows() if changed_only else self.rows
        return [{"row": r.question.row, "question": r.question.question, "athlete": r.athlete,
                 "base_intent": f"{r.base.intent} ({r.base.source})",
                 "candidate_intent": f"{r.candidate.intent} ({r.candidate.source})",
                 "base_selected": ", ".join(r.base.selected), "candidate_selected": ", ".join(r.candidate.selected),
                 "base_tokens": r.base.tokens, "candidate_tokens": r.candidate.tokens,
                 "changes": "; ".join(r.changes)} for r in rows]

    def to_json(self, changed_only: bool = False) -> dict[str, Any]:
        rows = self.changed_rows() if changed_only else self.rows
        return {"questions": self.source,
                "base": {"name": self.base_name, "digest": self.base_digest},
                "candidate": {"name": self.candidate_name, "digest": self.candidate_digest},
                "summary": self.summary(), "seconds": round(self.seconds, 3), "notes": list(self.notes),
                "metrics": {"base": self.base_metrics.to_json(), "candidate": self.candidate_metrics.to_json()},
                "skipped": [{"row": row, "reason": why} for row, why in self.skipped],
                "rows": [r.to_json() for r in rows]}


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
            skipped.append((q.row, f"unknown tier {tier!r} in {' and '.join(no_tier)}"))
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
               progress: Progress | None = None, jobs: int = 1) -> ImpactReport:
    """Decide every question under both policies and compare. Never calls a model.

    `jobs` > 1 decides chunks of the set in that many worker processes (the upstream must then
    pickle); rows come back in the set's order, so the report is the same as with one."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be a whole number >= 1, got {jobs!r}")
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

    def collect(results: Iterable[ChunkResult]) -> None:
        nonlocal done
        for chunk, result in zip(chunks, results, strict=True):
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
                        skipped=tuple(sorted(skipped)), seconds=time.perf_counter() - started)


# --- text --------------------------------------------------------------------------------------


def _rate(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "-"


def render_impact(report: ImpactReport, *, changed_only: bool = False) -> str:
    s = report.summary()
    b, c = report.base_metrics, report.candidate_metrics
    lines = [
        f"impact of {report.candidate_name} ({report.candidate_digest}) against {report.base_name} "
        f"({report.base_digest}) on {report.source}",
        f"{s['questions']} questions decided, {s['skipped']} skipped, in {report.seconds:.2f} s; "
        f"{s['changed']} changed (intent {s['intent_changed']}, selection {s['selection_changed']}, "
        f"tokens {s['tokens_changed']})",
        *[f"note: {n}" for n in report.notes],
        "",
        f"{'':<24} {'base':<22} candidate",
    ]

    def row(label: str, x: str, y: str) -> None:
        lines.append(f"{label:<24} {x:<22} {y}")

    row("route accuracy", _rate(b.route_correct, b.route_labelled), _rate(c.route_correct, c.route_labelled))
    row("needs recall", _rate(b.needs_met, b.needs_total), _rate(c.needs_met, c.needs_total))
    row("every need met", _rate(b.needs_rows_met, b.needs_rows), _rate(c.needs_rows_met, c.needs_rows))
    row("scope accuracy", _rate(b.scope_correct, b.scope_labelled), _rate(c.scope_correct, c.scope_labelled))
    row("unsure (to the model)", str(b.unsure), str(c.unsure))
    row("prompt tokens", f"{b.tokens_total} (mean {b.tokens_mean:.1f})", f"{c.tokens_total} (mean {c.tokens_mean:.1f})")
    if b.route_labelled:
        for name, m in (("base", b), ("candidate", c)):
            lines += ["", f"confusion, {name} (rows: labelled intent, columns: routed)",
                      f"{'':<11}" + "".join(f"{i[:10]:>11}" for i in INTENTS)]
            lines += [f"{e:<11}" + "".join(f"{m.confusion[e][r]:>11}" for r in INTENTS) for e in INTENTS]
    shown = report.changed_rows() if changed_only else list(report.rows)
    lines += ["", f"questions ({'changed only, ' if changed_only else ''}{len(shown)})"]
    for r in shown:
        q = r.question
        lines.append(f"#{q.row} {q.question!r} [{r.athlete}, {r.tier}]")
        if not r.changed:
            lines.append(f"    same       {_outcome(r.base)}")
            continue
        lines.append(f"    base       {_outcome(r.base)}")
        lines.append(f"    candidate  {_outcome(r.candidate)}")
        lines.append(f"    changed    {'; '.join(r.changes)}")
    if report.skipped:
        lines += ["", f"skipped ({len(report.skipped)})"]
        lines += [f"#{row} {why}" for row, why in report.skipped[:50]]
        if len(report.skipped) > 50:
            lines.append(f"... and {len(report.skipped) - 50} more")
    return "\n".join(lines)


def _outcome(o: Outcome) -> str:
    return f"{o.intent} ({o.source}); selected {', '.join(o.selected) or 'nothing'}; {o.tokens} tokens"
