"""Policy lookup and excludes: the first plan from the routed intent and its contenders.

Certain routing (one contender): the intent's lists apply as written, excludes in full.
Uncertain routing: primaries are the union of the contenders' primaries, secondaries the union
of their secondaries, and an exclude applies only if no contender asks for the fragment; a
softened exclude is recorded as `kept_despite_exclude`, naming who needed it.
"""

from __future__ import annotations

from collections.abc import Sequence

from coachctx.plan import FragmentState, Plan, Reason
from coachctx.policy import Policy


def _union(lists: Sequence[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for items in lists:
        out.extend(i for i in items if i not in out)
    return out


def lookup(policy: Policy, intent: str, contenders: Sequence[str], *, soften_excludes: bool = True) -> Plan:
    """The plan the policy asks for. `contenders` includes `intent` (first) when uncertain;
    `soften_excludes=False` reproduces the original design (excludes of the routed intent
    always apply) so the audit can show what it lost."""
    # the original design looked at the routed intent alone, so its excludes always applied
    ordered = [intent, *[c for c in contenders if c != intent]] if soften_excludes else [intent]
    intents = [policy.intent(name) for name in ordered]
    primary = _union([i.primary for i in intents])
    secondary = [f for f in _union([i.secondary for i in intents]) if f not in primary]
    plan = Plan.initial(primary, secondary)
    changes: dict[str, FragmentState] = {}
    for state in plan.fragments:
        excluded_by = [n for n in ordered if state.name in policy.intent(n).exclude]
        if state.role == "none":
            if excluded_by and len(ordered) > 1:
                changes[state.name] = state.withhold(Reason(
                    "excluded", f"{_names(excluded_by)} excludes it and no contender "
                                f"({_names(ordered)}) asks for it"))
            elif excluded_by:
                changes[state.name] = state.withhold(Reason("excluded", f"the {excluded_by[0]} intent excludes it"))
            else:
                changes[state.name] = state.withhold(Reason(
                    "not_requested", f"{_names(ordered)} neither asks for nor excludes it"))
        elif excluded_by:
            needed_by = [n for n in ordered if policy.intent(n).requests(state.name)]
            changes[state.name] = state.note(Reason(
                "kept_despite_exclude",
                f"{_names(excluded_by)} excludes it, but routing is uncertain and "
                f"{_names(needed_by)} needs it as {policy.intent(needed_by[0]).requests(state.name)}"))
    return plan.update(changes)


def _names(names: Sequence[str]) -> str:
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]
