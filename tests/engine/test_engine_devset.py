"""Route accuracy and needs recall over tests/data/questions/dev.yaml, with no model.

Route accuracy: the routed intent is one of the row's `intents`. Needs recall: the share of all the
rows' `needs` fragments that end up selected (athlete maya unless the row names one, tier paid, the
row's scope if it gives one, else auto). The numbers are printed; the test fails below 90% / 95%.
"""

from __future__ import annotations

import pytest
from engine_support import dev_rows

from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.services import Bundle

MIN_ROUTE_ACCURACY = 0.90
MIN_NEEDS_RECALL = 0.95


class TestDevSet:
    def test_the_rows_are_well_formed(self, bundles: dict[str, Bundle]) -> None:
        for row in dev_rows():
            assert row["q"].strip()
            assert set(row["intents"]) <= set(INTENTS), row
            assert row.get("athlete", "maya") in bundles, row

    def test_route_accuracy_and_needs_recall(self, policy: Policy, bundles: dict[str, Bundle],
                                             capsys: pytest.CaptureFixture[str]) -> None:
        rows = dev_rows()
        routed_ok = 0
        needed = found = 0
        misses: list[str] = []
        for row in rows:
            d = select(row["q"], bundles[row.get("athlete", "maya")], policy, tier="paid",
                       scope=row.get("scope") or "auto", classifier=None)
            if d.intent.name in row["intents"]:
                routed_ok += 1
            else:
                misses.append(f"  route: {row['q']!r} -> {d.intent.name} ({d.intent.source}), "
                              f"expected one of {row['intents']}")
            for need in row["needs"]:
                needed += 1
                if need in d.selected:
                    found += 1
                else:
                    reasons = "; ".join(r.code for r in d.fragment(need).reasons) or "-"
                    misses.append(f"  need:  {row['q']!r} -> {need} withheld ({reasons}) under {d.intent.name}")
        accuracy = routed_ok / len(rows)
        recall = found / needed if needed else 1.0
        report = (f"dev set: {len(rows)} questions; route accuracy {accuracy:.1%} ({routed_ok}/{len(rows)}); "
                  f"needs recall {recall:.1%} ({found}/{needed})")
        with capsys.disabled():
            print("\n" + report + ("\n" + "\n".join(misses) if misses else ""))
        assert accuracy >= MIN_ROUTE_ACCURACY, report + "\n" + "\n".join(misses)
        assert recall >= MIN_NEEDS_RECALL, report + "\n" + "\n".join(misses)
