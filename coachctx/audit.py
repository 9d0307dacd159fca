"""Audit: read the routing source and the withheld reasons together and say what looks wrong.

With the uncertain-routing fix in place, "an exclude removed a runner-up's primary" should
never fire for the default policy; the audit is what proves it.
"""

from __future__ import annotations

from coachctx.plan import Plan
from coachctx.policy import Policy
from coachctx.routing import Route


def audit(route: Route, plan: Plan, policy: Policy) -> list[str]:
    warnings: list[str] = []
    scores = route.scores.scores
    top_score = scores.get(route.intent, 0.0)
    # Contenders are measured from the top keyword score, as selection measures them: when the
    # model picks the runner-up, an intent within `margin` of that pick but not of the top is no
    # contender, and its primary being excluded is the policy working, not a lost signal.
    keyword_top = route.scores.top[1]
    if route.source != "rules":
        for state in plan.fragments:
            if "excluded" not in state.codes:
                continue
            for other, value in route.scores.ranked():
                if other == route.intent or value <= 0 or state.name not in policy.intent(other).primary:
                    continue
                if keyword_top - value > policy.routing.margin + 1e-9:
                    continue
                who = "the runner-up" if other == route.runner_up else "the contender"
                warnings.append(
                    f"intent came from the {route.source}; exclude removed {state.name}, which is primary for "
                    f"{who} {other} (score {value:g} vs {top_score:g})")
    for state in plan.fragments:
        if state.role == "primary" and state.status == "withheld":
            missing = [r for r in state.reasons if r.code in ("unreachable", "never_computed", "empty_field")]
            if missing:
                warnings.append(f"primary fragment {state.name} is missing ({missing[0].code}: "
                                f"{missing[0].detail}); the reply cannot use it")
    if route.matched_nothing:
        seen = ", ".join(route.scripts) or "no letters"
        warnings.append(f"no vocabulary matched (scripts seen: {seen}); such questions always leave the rules")
    if route.fallback_reason in ("model_error", "model_timeout", "invalid_label"):
        warnings.append(f"the model could not route this question ({route.fallback_reason}); "
                        f"fell back to {route.intent}")
    return warnings
