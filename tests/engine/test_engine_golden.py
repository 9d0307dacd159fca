"""The fast engine decides exactly as the engine before it: every dev question x sample athlete x
tier x cost mode and every corpus row x tier x cost mode gives the Decision recorded in
tests/data/golden/ (route, reasons, lines, prompt, naive prompt, token counts), under the policy
recorded with it. See tests/golden_support.py."""

from __future__ import annotations

import pytest
from golden_support import case_key, cases, decision_digest, golden_policy_text, read_golden

from coachctx.engine.pipeline import select
from coachctx.engine.policy import parse_policy
from coachctx.engine.services import Bundle


@pytest.mark.timeout(300)
def test_every_recorded_decision_is_unchanged(bundles: dict[str, Bundle]) -> None:
    golden = read_golden()
    policy = parse_policy(golden_policy_text(), "golden")
    checked: set[str] = set()
    differ: list[str] = []
    for q, athlete, tier, mode in cases(list(bundles)):
        key = case_key(q, athlete, tier, mode)
        if key not in golden or key in checked:
            continue
        checked.add(key)
        d = select(q, bundles[athlete], policy, tier=tier, cost_mode=mode)  # type: ignore[arg-type]
        if decision_digest(d.to_json()) != golden[key]:
            differ.append(f"{key} ({athlete}, {tier}, {mode})")
    # the corpus may grow; the recorded rows it still holds must all be there to check
    assert len(checked) >= 0.95 * len(golden), f"only {len(checked)} of {len(golden)} recorded cases found"
    assert not differ, f"{len(differ)} decisions changed, e.g. {differ[:5]}"
