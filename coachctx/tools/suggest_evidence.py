"""An edit to the vocabulary and its evidence on labelled rows: the rows it fixes, breaks, and moves
between the rules and the model, judged as routing without a model judges them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from coachctx.engine.matching import TermMatcher
from coachctx.engine.policy import Policy, validate_policy
from coachctx.engine.routing import is_confident, score
from coachctx.engine.text import Tokens
from coachctx.tools.suggest_log import LabelledRow

RULES_WEIGHT: Final = 0.1
"""A row a correct edit moves from the model to the rules counts this much: a model call saved."""
EditKind = Literal["add", "reweight", "remove"]


@dataclass(frozen=True)
class Edit:
    kind: EditKind
    intent: str
    language: str
    term: str
    weight: float | None
    """The new weight; None for a removal."""
    old_weight: float | None = None

    def describe(self) -> str:
        where = f"vocabulary.{self.intent}.{self.language}"
        if self.kind == "add":
            return f"add {self.term!r}: {self.weight:g} to {where}"
        if self.kind == "remove":
            return f"remove {self.term!r} ({self.old_weight:g}) from {where}"
        return f"change {self.term!r} in {where} from {self.old_weight:g} to {self.weight:g}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "intent": self.intent, "language": self.language, "term": self.term,
                "weight": self.weight, "old_weight": self.old_weight}


@dataclass(frozen=True)
class Suggestion:
    edit: Edit
    fixes: tuple[int, ...]
    """Rows routed wrong today and right with the edit (row numbers)."""
    breaks: tuple[int, ...]
    to_rules: tuple[int, ...]
    """Rows routed right both ways that the rules decide with the edit and did not before."""
    from_rules: tuple[int, ...]
    lint: tuple[str, ...] = ()
    """Lint findings the edit would add."""
    gain: float = 0.0

    def to_json(self, rows: Mapping[int, LabelledRow] | None = None) -> dict[str, Any]:
        def show(numbers: Sequence[int]) -> list[Any]:
            return [{"row": n, "question": rows[n].question, "labels": list(rows[n].intents),
                     "origin": rows[n].origin} for n in numbers] if rows else list(numbers)

        return {"edit": self.edit.to_json(), "describe": self.edit.describe(), "gain": self.gain,
                "fixes": show(self.fixes), "breaks": show(self.breaks), "to_rules": show(self.to_rules),
                "from_rules": show(self.from_rules), "lint": list(self.lint)}


@dataclass
class RoutedRow:
    label: LabelledRow
    tokens: Tokens
    scores: dict[str, float]
    intent: str
    ruled: bool

    @property
    def correct(self) -> bool:
        return self.intent in self.label.intents


def decide(scores: Mapping[str, float], policy: Policy) -> tuple[str, bool]:
    """The route without a model, from the intents' scores: (intent, decided by the rules). Ties
    keep the policy's intent order, as `Scores.ranked` does."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    (top, top_score), (_, runner_score) = ranked[0], ranked[1]
    ruled = is_confident(top_score, runner_score, policy.routing.confident_threshold, policy.routing.margin)
    return (top if top_score > 0 else "general"), ruled


def outcome(tokens: Tokens, policy: Policy, matcher: TermMatcher) -> tuple[dict[str, float], str, bool]:
    scores = dict(score(tokens, policy, matcher).scores)
    return (scores, *decide(scores, policy))


def evidence(edit: Edit, outcomes: Iterable[tuple[RoutedRow, str, bool]]) -> Suggestion:
    fixes: list[int] = []
    breaks: list[int] = []
    to_rules: list[int] = []
    from_rules: list[int] = []
    gain = 0.0
    for r, intent, ruled in outcomes:
        now = intent in r.label.intents
        if now and not r.correct:
            fixes.append(r.label.row)
            gain += r.label.weight
        elif r.correct and not now:
            breaks.append(r.label.row)
            gain -= r.label.weight
        elif now and ruled != r.ruled:
            (to_rules if ruled else from_rules).append(r.label.row)
            gain += RULES_WEIGHT * r.label.weight * (1 if ruled else -1)
    return Suggestion(edit, tuple(fixes), tuple(breaks), tuple(to_rules), tuple(from_rules), gain=round(gain, 6))


def worth(s: Suggestion) -> bool:
    """Nothing that breaks as much as it fixes."""
    return s.gain > 0 and len(s.fixes) + len(s.to_rules) > len(s.breaks)


def rank(s: Suggestion, support: float) -> tuple[Any, ...]:
    """Measured gain, then the evidence across rows (a word many rows of the intent use before a
    word of one row), then fewer breaks, then the edit itself: the same input, the same order."""
    return (-s.gain, -support, len(s.breaks), s.edit.kind, s.edit.intent, s.edit.language, s.edit.term,
            s.edit.weight or 0.0)


def apply_edits(policy: Policy, edits: Sequence[Edit]) -> Policy:
    """The policy with the edits made, validated like any policy."""
    data = policy.model_dump(mode="json")
    for e in edits:
        terms = data["vocabulary"][e.intent].setdefault(e.language, {})
        if e.kind == "remove":
            terms.pop(e.term, None)
        else:
            terms[e.term] = e.weight
    return validate_policy(data, "<suggested>")

