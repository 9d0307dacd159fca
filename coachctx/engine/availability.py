"""Availability: which fragments the services supplied, rendered as one line each, and the
typed reason for every one they did not: unreachable, never_computed or empty_field."""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, NamedTuple

from coachctx.engine.fragments import FRAGMENTS
from coachctx.engine.plan import FragmentState, Plan, Reason
from coachctx.engine.prompt import NAIVE_PREFIX, naive_json
from coachctx.engine.services import Bundle, ServiceResult
from coachctx.engine.token_count import count_once, count_tokens

CostMode = Literal["hand", "measured"]
MAX_LINE_CHARS: Final = 600
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")


def one_line(text: str) -> str:
    """Athlete data is data: newlines and control characters become spaces, code fences are
    defused, and the line is capped, so no field can start a line of its own in the prompt."""
    if not (text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "
            and "```" not in text):
        # a printable text holds no control characters and no whitespace but the plain space: with
        # no doubled, leading or trailing space and no code fence there is nothing to change
        text = _CONTROL.sub(" ", text).replace("```", "'''")
        text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"


class FragmentFact(NamedTuple):
    """One fragment as one bundle supplies it. A named tuple: a fresh bundle makes eleven of
    these, and a tuple is several times cheaper to make than a frozen dataclass."""

    name: str
    line: str | None
    missing: Reason | None
    hand_cost: int
    measured_cost: int

    def cost(self, mode: CostMode) -> int:
        return self.hand_cost if mode == "hand" else self.measured_cost


def facts(bundle: Bundle) -> Mapping[str, FragmentFact]:
    """Every fragment's line or the reason it has none."""
    out: dict[str, FragmentFact] = {}
    services: dict[str, tuple[Reason | None, Mapping[str, Any]]] = {}
    for fragment in FRAGMENTS:
        found = services.get(fragment.service)
        if found is None:  # each service's result read once, not once per fragment
            found = services[fragment.service] = _service_state(bundle.results[fragment.service])
        missing, data = found
        line: str | None = None
        if missing is None:
            fact, empty = fragment.read(data)
            if empty:
                missing = Reason("empty_field", f"{fragment.service} payload arrived, but "
                                 f"{' and '.join('data.' + f for f in empty)} {'is' if len(empty) == 1 else 'are'} empty")
            else:
                try:
                    line = one_line(fragment.render(fact))
                except Exception as e:  # a payload of an unexpected shape must not stop the decision
                    missing = Reason("unreachable", f"{fragment.service} payload malformed at "
                                     f"data.{fragment.fields[0]} ({type(e).__name__})")
        measured = count_tokens(line) if line is not None else 0
        out[fragment.name] = FragmentFact(fragment.name, line, missing, fragment.cost, measured)
    return out


def _service_state(result: ServiceResult) -> tuple[Reason | None, Mapping[str, Any]]:
    """Why a service's fragments are missing (None when it answered), and its payload's data."""
    if result.status == "unreachable":
        return Reason("unreachable", result.detail), {}
    if result.status == "never_computed":
        return Reason("never_computed", result.detail), {}
    return None, result.data


@dataclass(frozen=True)
class Prepared:
    """What one bundle gives every question: its fragment facts, costs per mode, and the naive
    baseline's JSON and count, made on first use. Kept per Bundle object (a Bundle is immutable)."""

    facts: Mapping[str, FragmentFact]
    costs: Mapping[str, Mapping[str, int]]
    """cost mode -> fragment -> cost"""
    payload: object = field(repr=False)
    _lazy: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def naive_json(self) -> str:
        found = self._lazy.get("json")
        if found is None:
            found = self._lazy["json"] = naive_json(self.payload)
        return found  # type: ignore[return-value]

    @property
    def naive_payload_tokens(self) -> int:
        """Tokens of `NAIVE_PREFIX + naive_json`: counted when first asked for, once."""
        found = self._lazy.get("tokens")
        if found is None:
            found = self._lazy["tokens"] = count_once(NAIVE_PREFIX + self.naive_json)
        return found  # type: ignore[return-value]


PREPARED_LIMIT: Final = 1024
HAND_COSTS: Final[Mapping[str, int]] = MappingProxyType({f.name: f.cost for f in FRAGMENTS})
"""Every bundle's hand costs: the fragments' own, the same for all (read-only, so shared)."""
_prepared: dict[int, tuple[weakref.ref[Bundle], Prepared]] = {}


def prepared(bundle: Bundle) -> Prepared:
    """The bundle's `Prepared`, made once per Bundle object. Keyed by identity and checked through
    a weak reference, so a new object at a reused address never gets another bundle's facts."""
    entry = _prepared.get(id(bundle))
    if entry is not None and entry[0]() is bundle:
        return entry[1]
    fragment_facts = facts(bundle)
    measured = {n: f.measured_cost for n, f in fragment_facts.items()}
    made = Prepared(fragment_facts, {"hand": HAND_COSTS, "measured": measured}, bundle.naive_payload())
    if len(_prepared) >= PREPARED_LIMIT:
        _prepared.clear()
    key = id(bundle)
    _prepared[key] = (weakref.ref(bundle, lambda _, key=key: _forget(key)), made)  # type: ignore[misc]
    return made


def _forget(key: int) -> None:
    entry = _prepared.get(key)
    if entry is not None and entry[0]() is None:
        del _prepared[key]


class DropUnavailable:
    """Stage: withhold what the services could not supply; note it on unrequested ones too."""

    def __init__(self, fragment_facts: Mapping[str, FragmentFact]) -> None:
        self.facts = fragment_facts

    def __call__(self, plan: Plan) -> Plan:
        changes: dict[str, FragmentState] = {}
        for state in plan.fragments:
            missing = self.facts[state.name].missing
            if missing is not None:
                changes[state.name] = state.withhold(missing)
        return plan.update(changes)
