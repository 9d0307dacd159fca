"""The page around the tabs under AppTest: the athlete entries in the sidebar, the icon, and the guard
that asks before a reload loses an unsaved edit."""

from __future__ import annotations

from typing import Any

from app_support import ATHLETES, ROOT, draft_with, set_margin_zero, started
from streamlit.testing.v1 import AppTest

from coachctx import playground as pg
from coachctx.engine.services import FixtureUpstream


class TestPage:
    def test_athlete_entries_say_what_is_special(self, bundles: dict[str, Any]) -> None:
        upstream = FixtureUpstream()
        labels = {a: pg.athlete_label(a, bundles[a], upstream.describe(a)) for a in ATHLETES}
        assert labels["omar"] == "omar — readiness service down · English"
        assert labels["ines"] == "ines — baselines never computed · Portuguese"
        assert "empty fields" in labels["tom"] and "pain and injury today" in labels["tom"]
        assert labels["maya"] == "maya — all services healthy · English"
        assert "prompt-injection" in labels["priya"]
        at = started()
        assert at.selectbox(key="athlete").format_func("omar") == labels["omar"]

    def test_the_page_icon_is_a_local_file(self) -> None:
        source = (ROOT / "coachctx" / "playground" / "ui" / "page.py").read_text(encoding="utf-8")
        assert "page_icon=ICON" in source and ":material/" not in source.split("page_icon=")[1][:40]
        assert (ROOT / "assets" / "favicon.png").is_file()

    def test_the_unsaved_edits_guard_follows_the_draft(self) -> None:
        at = started("Policy editor")
        assert "coachctxUnsaved = false" in guard_script(at)
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        assert "coachctxUnsaved = true" in guard_script(at)


def guard_script(at: AppTest) -> str:
    bodies = [str(getattr(e.proto, "body", "")) for e in at.get("html")]
    return next(b for b in bodies if "coachctxUnsaved" in b)
