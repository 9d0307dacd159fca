"""The Decision: the one result of `select()`, and its JSON (a public contract, see
schemas/decision.schema.json).

Every part is a frozen, slotted record whose fields are the JSON's keys in the JSON's order;
nested values are tuples and read-only mappings, so nothing reachable from a Decision can be
changed after `select()` returns it. `to_json()` turns records into objects, tuples into arrays.

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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Final, Literal, TypeVar

from coachctx.engine.availability import CostMode
from coachctx.engine.plan import Reason, ReasonCode, Role, Status, main_of
from coachctx.engine.policy import ScopeName
from coachctx.engine.routing import FallbackReason, RouteSource
from coachctx.engine.services import Availability

ROUTE_CONFIDENCE: Final = {"rules": 1.0, "model": 0.85, "fallback": 0.6}
NO_MATCH_CONFIDENCE: Final = 0.4

ScopeRequest = Literal["auto", "today", "week", "months"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class FrozenMap(Mapping[_K, _V]):
    """A read-only copy of a mapping: nothing can be set or deleted in it, and changing the
    original does not reach it. Unlike `types.MappingProxyType` it pickles, so the playground's
    cache (which pickles what it keeps) can hold a Decision."""

    __slots__ = ("_items",)
    _items: dict[_K, _V]

    def __init__(self, items: Mapping[_K, _V]) -> None:
        object.__setattr__(self, "_items", dict(items))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key: _K) -> _V:
        return self._items[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    def __reduce__(self) -> tuple[type[FrozenMap[_K, _V]], tuple[dict[_K, _V]]]:
        return type(self), (self._items,)


def frozen_map(items: Mapping[_K, _V]) -> Mapping[_K, _V]:
    """A read-only copy: the Decision's mappings cannot be changed through it or the original."""
    return FrozenMap(items)


def json_of(value: Any) -> Any:
    """A record as JSON data: records become objects (fields in order), tuples arrays."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_of(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {k: json_of(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [json_of(v) for v in value]
    return value


class Record:
    """A part of the Decision: frozen and slotted by its subclasses' `@dataclass`."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return json_of(self)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class ScopeChoice(Record):
    requested: ScopeRequest
    effective: ScopeName | None
    inferred_from: tuple[str, ...] | None
    """The words that implied the effective scope; None when the caller gave the scope."""


@dataclass(frozen=True, slots=True)
class ModelCall(Record):
    label: str | None
    raw: str | None
    latency_ms: float | None


@dataclass(frozen=True, slots=True)
class IntentChoice(Record):
    """The route: which intent, how it was decided, and the scores it was decided from."""

    name: str
    source: RouteSource
    scores: Mapping[str, float]
    matched: Mapping[str, tuple[tuple[str, float], ...]]
    """Intent -> (term, weight) for every intent some term matched."""
    top: str | None
    runner_up: str | None
    margin: float
    confident: bool
    contenders: tuple[str, ...]
    reason: str
    fallback_reason: FallbackReason | None
    threshold: float
    required_margin: float
    matched_nothing: bool
    scripts: tuple[str, ...]
    model: ModelCall | None
    """What the model said, when it was asked."""


@dataclass(frozen=True, slots=True)
class TokenCounts(Record):
    prompt: int
    naive: int | None
    """None when the caller asked for no naive count (`select(count_naive=False)`)."""
    saved_pct: float | None
    cost_mode: CostMode
    budget_spent: int
    selected_cost: int
    encoding: str


@dataclass(frozen=True, slots=True)
class PolicyRef(Record):
    source: str
    digest: str
    version: str | None


@dataclass(frozen=True, slots=True)
class ClinicalFlag(Record):
    is_clinical: bool
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Message(Record):
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class PromptMessages(Record):
    messages: tuple[Message, ...]
    naive_messages: tuple[Message, ...] | None
    """None when the caller asked for no naive count."""

    def chat(self) -> list[dict[str, str]]:
        """The messages as a chat API takes them."""
        return [m.to_json() for m in self.messages]


@dataclass(frozen=True, slots=True)
class ServiceStatus(Record):
    status: Availability
    detail: str


@dataclass(frozen=True, slots=True)
class Withheld(Record):
    fragment: str
    reason: ReasonCode
    detail: str


@dataclass(frozen=True, slots=True)
class FragmentDecision(Record):
    name: str
    status: Status
    role: Role
    reasons: tuple[Reason, ...]
    cost: int
    cost_hand: int
    cost_measured: int
    line: str | None
    service: str
    requested_by: Mapping[str, Role]
    """Intent -> `primary`/`secondary` for every intent considered (the routed one and, when
    routing is uncertain, the contenders) that asks for this fragment: why it was wanted."""


@dataclass(frozen=True, slots=True)
class Decision(Record):
    """Everything decided for one question about one athlete, and why."""

    question: str
    athlete: str
    scope: ScopeChoice
    tier: str
    budget: int
    intent: IntentChoice
    selected: tuple[str, ...]
    fragments: tuple[FragmentDecision, ...]
    warnings: tuple[str, ...]
    coverage: float
    confidence: float
    tokens: TokenCounts
    policy: PolicyRef
    version: str
    max_words: int
    language: str | None
    clinical: ClinicalFlag
    services: Mapping[str, ServiceStatus]
    prompt: PromptMessages

    @property
    def withheld(self) -> tuple[Withheld, ...]:
        """One row per withheld fragment: its main reason (`plan.main_of`, as the Plan picks it)."""
        rows = []
        for f in self.fragments:
            main = main_of(f.reasons, lambda r: r.code) if f.status == "withheld" else None
            if main is not None:
                rows.append(Withheld(f.name, main.code, main.detail))
        return tuple(rows)

    def fragment(self, name: str) -> FragmentDecision:
        for f in self.fragments:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "athlete": self.athlete,
            "scope": self.scope.to_json(),
            "tier": self.tier,
            "budget": self.budget,
            "intent": self.intent.to_json(),
            "selected": list(self.selected),
            "fragments": [f.to_json() for f in self.fragments],
            "withheld": [w.to_json() for w in self.withheld],
            "warnings": list(self.warnings),
            "coverage": self.coverage,
            "confidence": self.confidence,
            "tokens": self.tokens.to_json(),
            "policy": self.policy.to_json(),
            "version": self.version,
            "max_words": self.max_words,
            "language": self.language,
            "clinical": self.clinical.to_json(),
            "services": json_of(self.services),
            "prompt": self.prompt.to_json(),
        }
