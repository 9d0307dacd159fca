"""Scope modifiers: the question's horizon promotes, demotes or drops fragments, each with
the policy's own reason string."""

from __future__ import annotations

from collections.abc import Sequence

from coachctx.engine.plan import KEEPS_WHATEVER_THE_HORIZON, FragmentState, Plan, Reason
from coachctx.engine.policy import Modifier, Policy


class ApplyScope:
    """Stage: apply the modifiers of one scope for the routed intent and its contenders. A promote
    that an exclude overrules is noted on the plan (`Plan.warnings`)."""

    def __init__(self, policy: Policy, scope: str | None, intents: Sequence[str]) -> None:
        self.scope = scope
        scope_policy = policy.scopes.get(scope) if scope is not None else None  # type: ignore[call-overload]
        mods = scope_policy.modifiers if scope_policy is not None else []
        self.modifiers: list[Modifier] = [m for m in mods if _applies(m, policy, intents)]

    def __call__(self, plan: Plan) -> Plan:
        changes: dict[str, FragmentState] = {}
        warnings: list[str] = []
        for m in self.modifiers:
            state = changes.get(m.fragment, plan[m.fragment])
            tag = f"scope {self.scope}: {m.reason}"
            if m.action != "promote" and not KEEPS_WHATEVER_THE_HORIZON.isdisjoint(state.codes):
                continue  # a clinical or unread question keeps readiness_injury whatever the horizon
            if "excluded" in state.codes:
                if m.action == "promote":
                    warnings.append(f"scope {self.scope} promotes {m.fragment}, but the routed intent "
                                         f"excludes it; the exclude wins")
                continue
            if m.action == "promote" and state.role != "primary":
                state = FragmentState(state.name, "primary", "selected",
                                      (*[r for r in state.reasons if r.code != "not_requested"],
                                       Reason("promoted_by_scope", tag)))
            elif m.action == "demote" and state.role == "primary":
                state = FragmentState(state.name, "secondary", state.status,
                                      (*state.reasons, Reason("demoted_by_scope", tag)))
            elif m.action == "drop" and state.role != "none" and state.status == "selected":
                state = state.withhold(Reason("dropped_by_scope", tag))
            else:
                continue
            changes[m.fragment] = state
        if not changes and not warnings:
            return plan  # nothing moved: the plan is already in prompt order
        return _move_demoted_last(plan.update(changes).reorder(), changes).noted(warnings=warnings)


def _applies(m: Modifier, policy: Policy, intents: Sequence[str]) -> bool:
    """A modifier without `intents` applies to every route; one with them, when one of the routed
    intent and its contenders is listed. A drop or demote named for some intents never reaches a
    fragment that a contender outside its list holds as primary: "today's weather says nothing
    about next week" is said of a training question, not of the weather question it competes with."""
    if m.intents is None:
        return True
    if not set(m.intents) & set(intents):
        return False
    return m.action == "promote" or not any(
        m.fragment in policy.intent(c).primary for c in intents if c not in m.intents)


def _move_demoted_last(plan: Plan, changes: dict[str, FragmentState]) -> Plan:
    """A demoted fragment is spent last among the secondaries."""
    demoted = [s for s in plan.fragments if s.name in changes and "demoted_by_scope" in s.codes]
    if not demoted:
        return plan
    rest = [s for s in plan.fragments if s not in demoted]
    cut = max((i + 1 for i, s in enumerate(rest) if s.role != "none"), default=0)
    return plan.with_fragments((*rest[:cut], *demoted, *rest[cut:]))
