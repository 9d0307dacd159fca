"""The Decision: the one result of `select()`, and its JSON (a public contract, see
schemas/decision.schema.json).

coverage
    Share of requested fragments (primary and secondary, after scope drops) that the services
    actually supplied. 1.0 when nothing was requested. Budget cuts do not lower it: the data
    arrived, the tier chose not to pay for it.
confidence
    coverage x a routing factor: 1.0 for a clean rules win, 0.85 when the model chose, 0.6 for a
    fallback that still had keyword evidence, 0.4 for a fallback on a question nothing matched.
    A model or fallback route never reports the confidence of a clean rules win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from coachctx.engine.plan import main_of

ROUTE_CONFIDENCE: Final = {"rules": 1.0, "model": 0.85, "fallback": 0.6}
NO_MATCH_CONFIDENCE: Final = 0.4


@dataclass(frozen=True)
class FragmentDecision:
    name: str
    status: str
    role: str
    reasons: tuple[dict[str, str], ...]
    cost: int
    cost_hand: int
    cost_measured: int
    line: str | None
    service: str
    requested_by: dict[str, str] = field(default_factory=dict)
    """Intent -> `primary`/`secondary` for every intent considered (the routed one and, when
    routing is uncertain, the contenders) that asks for this fragment: why it was wanted."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "role": self.role, "reasons": list(self.reasons),
                "cost": self.cost, "cost_hand": self.cost_hand, "cost_measured": self.cost_measured,
                "line": self.line, "service": self.service, "requested_by": dict(self.requested_by)}


@dataclass(frozen=True)
class Decision:
    """Everything decided for one question about one athlete, and why."""

    question: str
    athlete: str
    scope: dict[str, Any]
    tier: str
    budget: int
    intent: dict[str, Any]
    selected: tuple[str, ...]
    fragments: tuple[FragmentDecision, ...]
    warnings: tuple[str, ...]
    coverage: float
    confidence: float
    tokens: dict[str, Any]
    policy: dict[str, Any]
    version: str
    max_words: int
    language: str | None
    clinical: dict[str, Any]
    prompt: dict[str, Any]
    services: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def withheld(self) -> list[dict[str, str]]:
        """One row per withheld fragment: its main reason (`plan.main_of`, as the Plan picks it)."""
        rows = []
        for f in self.fragments:
            if f.status != "withheld":
                continue
            main = main_of(f.reasons, lambda r: r["code"])
            if main is not None:
                rows.append({"fragment": f.name, "reason": main["code"], "detail": main["detail"]})
        return rows

    def fragment(self, name: str) -> FragmentDecision:
        for f in self.fragments:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "athlete": self.athlete,
            "scope": self.scope,
            "tier": self.tier,
            "budget": self.budget,
            "intent": self.intent,
            "selected": list(self.selected),
            "fragments": [f.to_json() for f in self.fragments],
            "withheld": self.withheld,
            "warnings": list(self.warnings),
            "coverage": self.coverage,
            "confidence": self.confidence,
            "tokens": self.tokens,
            "policy": self.policy,
            "version": self.version,
            "max_words": self.max_words,
            "language": self.language,
            "clinical": self.clinical,
            "services": self.services,
            "prompt": self.prompt,
        }
