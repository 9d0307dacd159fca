"""Budget: spend the tier's tokens on secondary fragments only, in order. Primary is never cut."""

from __future__ import annotations

from collections.abc import Mapping

from coachctx.engine.plan import FragmentState, Plan, Reason


class SpendBudget:
    """Stage: keep secondaries in order while they fit; a piece that does not fit is withheld
    as `over_budget` (needed vs left) and later, smaller pieces may still fit. The tokens spent
    go on the plan (`Plan.spent`)."""

    def __init__(self, budget: int, costs: Mapping[str, int]) -> None:
        if budget < 0:
            raise ValueError("budget must be >= 0")
        self.budget = budget
        self.costs = costs

    def __call__(self, plan: Plan) -> Plan:
        left = self.budget
        changes: dict[str, FragmentState] = {}
        for state in plan.fragments:
            if state.role != "secondary" or state.status != "selected":
                continue
            cost = self.costs[state.name]
            if cost <= left:
                left -= cost
            else:
                changes[state.name] = state.withhold(Reason(
                    "over_budget", f"needs {cost} tokens, {left} left of the {self.budget}-token budget"))
        return plan.update(changes).noted(spent=self.budget - left)
