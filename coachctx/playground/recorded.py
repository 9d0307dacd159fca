"""A Decision's JSON read back: the Decision tab's own (`Decision.to_json()`) or the one a trace
recorded. Only the parts the page shows are read, each checked against the Decision's shape
(schemas/decision.schema.json), so a bad trace is refused naming the field
(`decision.intent.source: ...`) instead of being shown as guesses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast, get_args

from coachctx.engine.decision import ScopeRequest
from coachctx.engine.plan import Status
from coachctx.engine.routing import RouteSource
from coachctx.errors import TraceError


@dataclass(frozen=True)
class DecisionFacts:
    """What a label keeps of a decision: the question and athlete it was for, the scope it was
    asked with, and what the policy of the day did (the route, how it was decided, the digest)."""

    question: str
    athlete: str
    requested_scope: ScopeRequest
    intent: str
    source: RouteSource
    digest: str


@dataclass(frozen=True)
class RecordedFragment:
    """One fragment as a decision recorded it: where it went and the codes of its reasons, in order."""

    name: str
    status: Status
    reasons: tuple[str, ...]


def decision_facts(decision: Mapping[str, Any], where: str = "decision") -> DecisionFacts:
    """The question, athlete, requested scope, route and policy digest of a Decision's JSON, or
    `TraceError` naming the first field that is missing or of the wrong kind."""
    scope, intent, policy = (_object(decision, key, where) for key in ("scope", "intent", "policy"))
    return DecisionFacts(
        question=_text(decision, "question", where), athlete=_text(decision, "athlete", where),
        requested_scope=cast(ScopeRequest, _one_of(scope, "requested", get_args(ScopeRequest), f"{where}.scope")),
        intent=_text(intent, "name", f"{where}.intent"),
        source=cast(RouteSource, _one_of(intent, "source", get_args(RouteSource), f"{where}.intent")),
        digest=_text(policy, "digest", f"{where}.policy"))


def recorded_fragments(decision: Mapping[str, Any], where: str = "decision") -> dict[str, RecordedFragment]:
    """Every fragment of a Decision's JSON by name, or `TraceError` naming the first bad one."""
    fragments = decision.get("fragments")
    if not isinstance(fragments, list):
        raise TraceError(f"{where}.fragments: expected a list, got {_kind(fragments)}")
    out: dict[str, RecordedFragment] = {}
    for i, fragment in enumerate(fragments):
        at = f"{where}.fragments[{i}]"
        if not isinstance(fragment, Mapping):
            raise TraceError(f"{at}: expected an object, got {_kind(fragment)}")
        reasons = fragment.get("reasons")
        if not isinstance(reasons, list):
            raise TraceError(f"{at}.reasons: expected a list, got {_kind(reasons)}")
        codes = []
        for j, reason in enumerate(reasons):
            if not isinstance(reason, Mapping):
                raise TraceError(f"{at}.reasons[{j}]: expected an object, got {_kind(reason)}")
            codes.append(_text(reason, "code", f"{at}.reasons[{j}]"))
        name = _text(fragment, "name", at)
        status = cast(Status, _one_of(fragment, "status", get_args(Status), at))
        out[name] = RecordedFragment(name, status, tuple(codes))
    return out


def _object(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if not isinstance(value, Mapping):
        raise TraceError(f"{where}.{key}: expected an object, got {_kind(value)}")
    return value


def _text(parent: Mapping[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str):
        raise TraceError(f"{where}.{key}: expected text, got {_kind(value)}")
    return value


def _one_of(parent: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> str:
    value = parent.get(key)
    if value not in allowed:
        raise TraceError(f"{where}.{key}: expected one of {', '.join(allowed)}, got {_kind(value)}")
    return str(value)


def _kind(value: Any) -> str:
    """The value as an error names it: a short repr for text, numbers and booleans, else its kind."""
    if value is None:
        return "nothing"
    if isinstance(value, str | int | float | bool):
        return repr(value)[:60]
    return "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else type(value).__name__
