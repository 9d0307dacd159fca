"""The impact report: what one policy decides for one question (`Outcome`), what changed between
two (`RowImpact`), the figures over a set (`Metrics`, `Totals`), the report and its text."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from coachctx.engine.policy import INTENTS
from coachctx.tools.questions import Question


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
        return {**self.json_head(), "rows": list(self.json_rows(changed_only))}

    def json_head(self) -> dict[str, Any]:
        """`to_json` but its rows: what a writer streaming the rows one at a time puts first."""
        return {"questions": self.source,
                "base": {"name": self.base_name, "digest": self.base_digest},
                "candidate": {"name": self.candidate_name, "digest": self.candidate_digest},
                "summary": self.summary(), "seconds": round(self.seconds, 3), "notes": list(self.notes),
                "metrics": {"base": self.base_metrics.to_json(), "candidate": self.candidate_metrics.to_json()},
                "skipped": [{"row": row, "reason": why} for row, why in self.skipped]}

    def json_rows(self, changed_only: bool = False) -> Iterator[dict[str, Any]]:
        """`to_json`'s rows, made one at a time."""
        return (r.to_json() for r in (self.changed_rows() if changed_only else self.rows))



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
