"""Audit: read the routing source, the scores and the withheld reasons together and say what
looks wrong.

With evidence beating exclusion, "an exclude removed a primary of an intent with evidence" should
never fire for the default policy; the audit is what proves it. It also warns when a clinical
question's prompt lacks `readiness_injury`.
"""

from __future__ import annotations

from collections.abc import Sequence

from coachctx.engine.lookup import CLINICAL_FRAGMENT, evidence_of
from coachctx.engine.plan import MISSING, Plan
from coachctx.engine.policy import Policy
from coachctx.engine.routing import Route


def audit(route: Route, plan: Plan, policy: Policy, clinical: Sequence[str] = ()) -> list[str]:
    """The warnings for this route and plan, the stages' own notes (`plan.warnings`) not included."""
    warnings: list[str] = []
    scores = route.scores.scores
    top_score = scores.get(route.intent, 0.0)
    evidence = evidence_of(route)
    for state in plan.fragments:
        if "excluded" not in state.codes:
            continue
        for other in evidence:
            value = scores[other]
            if other == route.intent:
                continue
            asks = policy.intent(other).requests(state.name)
            if asks != "primary":
                continue
            who = "the runner-up" if other == route.runner_up else "the contender"
            warnings.append(
                f"intent came from the {route.source}; exclude removed {state.name}, which is primary for "
                f"{who} {other} (score {value:g} vs {top_score:g})")
    for state in plan.fragments:
        if state.role == "primary" and state.status == "withheld":
            missing = [r for r in state.reasons if r.code in MISSING]
            if missing:
                warnings.append(f"primary fragment {state.name} is missing ({missing[0].code}: "
                                f"{missing[0].detail}); the reply cannot use it")
    if clinical and CLINICAL_FRAGMENT not in plan.selected:
        why = plan[CLINICAL_FRAGMENT].main_reason
        warnings.append(f"the question sounds clinical ({', '.join(clinical)}) but the prompt lacks "
                        f"{CLINICAL_FRAGMENT}" + (f" ({why.code}: {why.detail})" if why else ""))
    if route.matched_nothing:
        seen = ", ".join(route.scripts) or "no letters"
        warnings.append(f"no vocabulary matched (scripts seen: {seen}); such questions always leave the rules")
    if route.fallback_reason in ("model_error", "model_timeout", "invalid_label"):
        warnings.append(f"the model could not route this question ({route.fallback_reason}); "
                        f"fell back to {route.intent}")
    return warnings
