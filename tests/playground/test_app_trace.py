"""The Reproduce a trace tab under AppTest, and the size limit every upload states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_support import decision, draft_with, margin_zero_and_no_secondaries, open_tab, started

from coachctx import cli
from coachctx import playground as pg
from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError
from coachctx.tools.trace import MAX_TRACE_BYTES, make_trace


def write_trace(tmp_path: Path, question: str = pg.PAIN_QUESTION) -> bytes:
    path = tmp_path / "trace.json"
    assert cli.main(["explain", question, "--athlete", "maya", "--trace-out", str(path), "--json"]) == 0
    return path.read_bytes()


class TestTraceReproduce:
    def test_same_policy_reproduces_the_recorded_decision(self, tmp_path: Path) -> None:
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("trace.json", write_trace(tmp_path), "application/json")).run()
        assert not at.exception
        assert any("Same decision" in s.value for s in at.success)
        frame = next(df.value for df in at.dataframe if "recorded" in df.value.columns and "now" in df.value.columns
                     and "changed" in df.value.columns)
        assert not frame["changed"].any()

    def test_a_changed_draft_highlights_the_differences(self, tmp_path: Path) -> None:
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value(draft_with(margin_zero_and_no_secondaries)).run()
        open_tab(at, "Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("trace.json", write_trace(tmp_path), "application/json")).run()
        assert not at.exception
        assert any("difference" in e.value for e in at.error)
        diffs = next(df.value for df in at.dataframe if list(df.value.columns) == ["field", "recorded", "now"])
        assert {"intent.source", "selected"} <= set(diffs["field"])
        frame = next(df.value for df in at.dataframe if "changed" in df.value.columns).set_index("fragment")
        assert frame["changed"].any()

    def test_a_trace_from_another_bundle_is_replayed_from_its_snapshot(self) -> None:
        policy = load_policy()
        bundle = fetch_bundle(FixtureUpstream(), "tom")
        d = select("Is the air quality ok for a run?", bundle, policy)
        trace = make_trace(d, bundle, cost_mode="hand", budget=None)
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("t.json", json.dumps(trace).encode(), "application/json"))
        at.run()
        assert any("Same decision" in s.value for s in at.success)
        at.button(key="open_trace").click().run()
        assert at.selectbox(key="athlete").value == "tom"
        assert decision(at)["question"] == "Is the air quality ok for a run?"

    def test_garbage_is_refused_with_a_message(self) -> None:
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("t.json", b"{not json", "application/json")).run()
        assert not at.exception
        assert any("Cannot reproduce" in e.value and "not valid JSON" in e.value for e in at.error)


class TestUploads:
    def test_sizes_are_stated_in_one_unit(self) -> None:
        assert [pg.human_size(n) for n in (512 * 1024, 5 * 1024 * 1024, int(5.2 * 1024 * 1024))] == \
            ["512 KB", "5 MB", "5.2 MB"]
        with pytest.raises(InputError, match=r"^t\.json is 6 MB; a trace may be at most 5 MB$"):
            pg.check_upload_size("t.json", 6 * 1024 * 1024, 5 * 1024 * 1024, "a trace")
        pg.check_upload_size("t.json", 5 * 1024 * 1024, 5 * 1024 * 1024, "a trace")  # at the limit: accepted

    def test_each_uploader_states_its_limit_once(self) -> None:
        at = started()
        labels = {u.key: u.label for tab in ("Reproduce a trace", "Policy editor")
                  for u in open_tab(at, tab).get("file_uploader")}
        assert "at most 5 MB" in labels["trace_upload"] and "at most 1 MB" in labels["policy_upload"]

    def test_an_oversized_trace_is_refused_inline_in_place_of_the_last_result(self, tmp_path: Path) -> None:
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("trace.json", write_trace(tmp_path), "application/json")).run()
        assert any("Same decision" in s.value for s in at.success)
        big = b" " * (MAX_TRACE_BYTES + 1)
        at.file_uploader(key="trace_upload").set_value(("big.json", big, "application/json")).run()
        assert not at.exception
        assert any("big.json is 5,242,881 bytes; a trace may be at most 5,242,880 bytes (5 MB)" in e.value
                   for e in at.error)
        assert not any("Same decision" in s.value for s in at.success)

    def test_a_trace_of_an_unknown_athlete_says_so_when_opened(self) -> None:
        bundle = fetch_bundle(FixtureUpstream(), "tom")
        trace = make_trace(select("Is the air ok for a run?", bundle, load_policy()), bundle, cost_mode="hand",
                           budget=None)
        trace["inputs"]["athlete"] = trace["bundle"]["athlete"] = "zoe"  # a production athlete, not a sample one
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("t.json", json.dumps(trace).encode(), "application/json"))
        at.run()
        assert any("'zoe' is not one of the sample athletes" in w.value for w in at.warning)
        at.button(key="open_trace").click().run()
        assert decision(at)["question"] == "Is the air ok for a run?" and decision(at)["athlete"] == "maya"
        assert any("'zoe' is not a sample athlete here" in i.value for i in at.info)

    def test_a_trace_holding_a_lone_surrogate_is_refused_in_place_never_a_crash(self) -> None:
        # files are read strictly (README, Reliability): coachctx never writes such a trace itself
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        trace = make_trace(select("knee pain?", bundle, load_policy()), bundle, cost_mode="hand", budget=None)
        raw = json.dumps(trace).replace("knee pain?", "knee \\ud800 pain?").encode()
        at = started("Reproduce a trace")
        at.file_uploader(key="trace_upload").set_value(("t.json", raw, "application/json")).run()
        assert not at.exception, [e.stack_trace for e in at.exception]
        assert not [b for b in at.button if b.key == "open_trace"]
        assert any("lone surrogate" in e.value for e in at.error), [e.value for e in at.error]
