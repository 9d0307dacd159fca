"""The value the selection stages pass along: every fragment's role, status and reasons, and
the notes the stages make on the way (warnings, the budget spent, the intents read).

Stages never delete a fragment: they return a new `Plan` in which it is withheld with a
typed reason. A `Stage` is any function `Plan -> Plan`; a stage keeps no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, TypeVar

from coachctx.engine.fragments import FRAGMENT_NAMES

Role = Literal["primary", "secondary", "none"]
Status = Literal["selected", "withheld"]
ReasonCode = Literal[
    "not_requested", "excluded", "dropped_by_scope", "unreachable", "never_computed", "empty_field",
    "over_budget", "promoted_by_scope", "demoted_by_scope", "kept_despite_exclude", "evidence_in_question",
    "clinical_question", "unread_question", "unmatched_question",
]
REASON_CODES: tuple[ReasonCode, ...] = ReasonCode.__args__  # type: ignore[attr-defined]
MISSING: frozenset[str] = frozenset({"unreachable", "never_computed", "empty_field"})
"""The codes that say the services did not supply a fragment."""
KEEPS_WHATEVER_THE_HORIZON: frozenset[str] = frozenset({"clinical_question", "unread_question", "unmatched_question"})
"""The codes of a fragment no scope modifier drops or demotes: what the question itself needs."""
WITHHOLDING: frozenset[str] = frozenset({"not_requested", "excluded", "dropped_by_scope", "over_budget", *MISSING})
"""The codes that withhold a fragment; the others only note why it is where it is."""

_R = TypeVar("_R")


def main_of(reasons: Sequence[_R], code: Callable[[_R], str]) -> _R | None:
    """The reason shown for a withheld fragment: the first one that withholds it, else the first.
    `code` reads a reason's code (a `Reason`, or a reason's JSON in a Decision)."""
    return next((r for r in reasons if code(r) in WITHHOLDING), reasons[0] if reasons else None)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a fragment is where it is: a typed code and a sentence for people."""

    code: ReasonCode
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


@dataclass(frozen=True)
class FragmentState:
    name: str
    role: Role
    status: Status
    reasons: tuple[Reason, ...] = ()
    codes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The reasons' codes, made once: the stages and the audit ask for them of every fragment."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", tuple([r.code for r in self.reasons]) if self.reasons else ())

    # built directly rather than by `dataclasses.replace`, which inspects the fields on every call:
    # a plan makes a few dozen of these per question
    def withhold(self, reason: Reason) -> FragmentState:
        return FragmentState(self.name, self.role, "withheld", (*self.reasons, reason))

    def note(self, reason: Reason) -> FragmentState:
        return FragmentState(self.name, self.role, self.status, (*self.reasons, reason))

    @property
    def main_reason(self) -> Reason | None:
        """The reason shown for a withheld fragment (`main_of`)."""
        return main_of(self.reasons, lambda r: r.code)


@dataclass(frozen=True)
class Plan:
    """Fragments in prompt order: primaries first (in policy order), then secondaries in
    budget order, then the rest in registry order."""

    fragments: tuple[FragmentState, ...]
    considered: tuple[str, ...] = ()
    """The intents whose lists the plan read: the routed intent, its contenders, then the
    intents with evidence in the question (lookup's note)."""
    warnings: tuple[str, ...] = ()
    """What a stage found worth saying (a scope promoting what an exclude withholds)."""
    spent: int = 0
    """Tokens of the budget spent on secondaries (the budget stage's note)."""

    @classmethod
    def initial(cls, primary: Iterable[str], secondary: Iterable[str]) -> Plan:
        return cls(_initial_states(tuple(primary), tuple(secondary)))

    def __getitem__(self, name: str) -> FragmentState:
        for state in self.fragments:
            if state.name == name:
                return state
        raise KeyError(name)

    def with_fragments(self, fragments: tuple[FragmentState, ...]) -> Plan:
        """The plan with these fragments in this order, its notes kept."""
        return Plan(fragments, self.considered, self.warnings, self.spent)

    def update(self, changes: Mapping[str, FragmentState]) -> Plan:
        if not changes:
            return self
        return self.with_fragments(tuple(changes.get(s.name, s) for s in self.fragments))

    def reorder(self) -> Plan:
        """Prompt order again after roles changed: primary, secondary, none (stable)."""
        rank = {"primary": 0, "secondary": 1, "none": 2}
        return self.with_fragments(tuple(sorted(self.fragments, key=lambda s: rank[s.role])))

    def noted(self, *, warnings: Sequence[str] = (), spent: int | None = None,
              considered: Sequence[str] | None = None) -> Plan:
        """The plan with a stage's notes added: warnings appended, the others set."""
        return Plan(self.fragments, self.considered if considered is None else tuple(considered),
                    (*self.warnings, *warnings), self.spent if spent is None else spent)

    @property
    def selected(self) -> list[str]:
        return [s.name for s in self.fragments if s.status == "selected"]


@lru_cache(maxsize=1024)
def _initial_states(primary: tuple[str, ...], secondary: tuple[str, ...]) -> tuple[FragmentState, ...]:
    """`Plan.initial`'s fragments, made once per pair of lists: the states are immutable, and many
    questions ask for the same lists."""
    states = [FragmentState(n, "primary", "selected") for n in primary]
    states += [FragmentState(n, "secondary", "selected") for n in secondary if n not in primary]
    chosen = {s.name for s in states}
    states += [FragmentState(n, "none", "withheld") for n in FRAGMENT_NAMES if n not in chosen]
    return tuple(states)


Stage = Callable[[Plan], Plan]
"""A selection stage: takes the plan so far, returns a new one. Never drops a fragment."""
