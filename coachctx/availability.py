"""Availability: which fragments the services supplied, rendered as one line each, and the
typed reason for every one they did not: unreachable, never_computed or empty_field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from coachctx.fragments import FRAGMENTS
from coachctx.plan import FragmentState, Plan, Reason
from coachctx.services import Bundle
from coachctx.tokens import count_tokens

CostMode = Literal["hand", "measured"]
MAX_LINE_CHARS: Final = 600
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")


def one_line(text: str) -> str:
    """Athlete data is data: newlines and control characters become spaces, code fences are
    defused, and the line is capped, so no field can start a line of its own in the prompt."""
    text = _CONTROL.sub(" ", text).replace("```", "'''")
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"


@dataclass(frozen=True)
class FragmentFact:
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
    for fragment in FRAGMENTS:
        result = bundle[fragment.service]
        line: str | None = None
        missing: Reason | None = None
        if result.status == "unreachable":
            missing = Reason("unreachable", result.detail)
        elif result.status == "never_computed":
            missing = Reason("never_computed", result.detail)
        else:
            empty = fragment.empty_fields(result.data)
            if empty:
                missing = Reason("empty_field", f"{fragment.service} payload arrived, but "
                                 f"{' and '.join('data.' + f for f in empty)} {'is' if len(empty) == 1 else 'are'} empty")
            else:
                try:
                    line = one_line(fragment.render(fragment.extract(result.data)))
                except Exception as e:  # a payload of an unexpected shape must not stop the decision
                    missing = Reason("unreachable", f"{fragment.service} payload malformed at "
                                     f"data.{fragment.fields[0]} ({type(e).__name__})")
        measured = count_tokens(line) if line is not None else 0
        out[fragment.name] = FragmentFact(fragment.name, line, missing, fragment.cost, measured)
    return out


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
