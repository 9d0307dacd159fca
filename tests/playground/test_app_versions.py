"""The playground's Versions tab under AppTest: save, load, revert and diff versions in the policy
store, and a stale save refused without losing the draft.

Each test has its own policy store (conftest.py's `store_url`). "Another coach" is a `PolicyStore`
opened on the same file by the test, as a second app instance or the CLI would."""

from __future__ import annotations

import sqlite3

import pytest
from app_support import (
    CHECKED_IN,
    NO_LABEL,
    decision,
    draft_with,
    frame_with,
    injury_readiness_for_training,
    ok,
    open_tab,
    recovery_for_training,
    save,
    started,
    texts,
)
from streamlit.testing.v1 import AppTest

from coachctx import playground as pg
from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy, parse_policy, read_policy_text
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.tools.policy_diff import diff_policies
from coachctx.tools.store import PolicyStore
from coachctx.tools.trace import parse_trace, replay


def impact_of_the_draft_against_live(at: AppTest) -> None:
    """On the Impact tab: which logged questions the draft changes, and how, against live."""
    open_tab(at, "Impact")
    assert at.selectbox(key="impact_candidate").value == "@draft"
    at.selectbox(key="impact_base").set_value("label:live")
    ok(at.button(key="impact_run").click().run())
    report = at.session_state["impact_result"]["report"]
    assert 300 <= len(report.rows) <= 500
    assert report.summary()["selection_changed"] > 0 and report.summary()["intent_changed"] == 0
    table = frame_with(at, "question", "base_selected", "candidate_selected", "changes")
    assert len(table) == report.summary()["changed"]  # "show changed only" is on by default
    gained = table[table["changes"].str.contains(r"\+readiness_recovery")]
    assert len(gained) > 0
    assert all("readiness_recovery" in s for s in gained["candidate_selected"])
    assert not any("readiness_recovery" in s for s in gained["base_selected"])
    metrics = frame_with(at, "measure", "base", "candidate", "change").set_index("measure")
    assert metrics.loc["route accuracy", "change"] == "same"
    assert "%" in metrics.loc["needs recall", "base"]
    assert "tokens" in metrics.loc["prompt tokens, total", "change"] or \
        metrics.loc["prompt tokens, total", "change"].startswith("+")
    at.toggle(key="impact_changed_only").set_value(False).run()
    assert len(frame_with(at, "question", "changes")) == len(report.rows)


def the_edit_saved_as_version_2_on_live(at: AppTest, store_url: str) -> None:
    save(at, "training may see last night's recovery", label="live")
    with PolicyStore(store_url) as store:
        assert store.labels()["live"].version == 2
        v2 = store.get(2)
        assert v2.parent == 1 and v2.author == "ana"
        assert parse_policy(v2.yaml).digest == parse_policy(draft_with(recovery_for_training)).digest
    assert decision(at)["policy"]["version"] == "2"
    history = frame_with(at, "version", "labels", "author", "message", "digest", "parent")
    assert list(history["version"]) == [2, 1] and history.iloc[0]["labels"] == "live"


def live_reverted_to_version_1(at: AppTest, store_url: str) -> None:
    """Live back to where it pointed before its last move; nothing is deleted."""
    assert at.button(key="revert_go").label == "Revert live to version 1"
    ok(at.button(key="revert_go").click().run())
    with PolicyStore(store_url) as store:
        assert store.labels()["live"].version == 1
        assert [(m.kind, m.previous, m.version) for m in store.label_log("live")] == \
            [("label", 2, 1), ("save", 1, 2), ("save", None, 1)]
        assert [v.number for v in store.history()] == [2, 1]  # a revert deletes nothing
    assert any("live now points at version 1" in s for s in texts(at.success))


def version_1_loaded(store_url: str, text: str, *, author: str, label: str, message: str) -> AppTest:
    """`text` saved as version 1 under `label`, then loaded into the draft from the Versions tab."""
    with PolicyStore(store_url) as store:
        store.save(text, message=message, author=author, label=label)
    at = started("Versions")
    at.selectbox(key="load_ref").set_value(1)
    at.button(key="load_go").click().run()
    return at


class TestDoneWhen:
    def test_edit_a_rule_see_the_impact_save_it_and_revert_live(self, store_url: str) -> None:
        at = started("Versions")
        assert store_url.removeprefix("sqlite:///") in " ".join(texts(at.markdown))  # the store in use is shown
        assert decision(at)["policy"] == {"source": "policy/default.yaml", "digest": load_policy().digest,
                                          "version": None}

        save(at, "baseline: the checked-in policy", label="live")
        assert decision(at)["policy"]["source"] == "store:v1" and decision(at)["policy"]["version"] == "1"

        # edit a rule in the draft
        open_tab(at, "Policy editor").text_area(key="policy_yaml").set_value(draft_with(recovery_for_training)).run()
        assert not at.exception
        assert decision(at)["policy"]["version"] is None
        assert decision(at)["policy"]["source"] == "playground draft, edited from store:v1"

        impact_of_the_draft_against_live(at)
        the_edit_saved_as_version_2_on_live(at, store_url)
        live_reverted_to_version_1(at, store_url)
        # the page still decides with the draft (version 2) until the coach uses version 1 here
        assert decision(at)["policy"]["version"] == "2"
        at.button(key="use_moved").click().run()
        assert decision(at)["policy"]["version"] == "1"

    def test_a_stale_save_is_refused_and_loses_nothing(self, store_url: str) -> None:
        checked_in = read_policy_text(CHECKED_IN)
        at = version_1_loaded(store_url, checked_in, author="ben", label="live", message="baseline")
        assert at.session_state["draft_base"] == 1
        mine = draft_with(recovery_for_training)
        open_tab(at, "Policy editor").text_area(key="policy_yaml").set_value(mine).run()

        theirs = draft_with(injury_readiness_for_training)
        with PolicyStore(store_url) as store:  # another coach saves on live meanwhile
            store.save(theirs, message="training sees injury readiness", author="ben", label="live", base=1)

        save(at, "training may see recovery", label="live")
        status = at.session_state["versions_status"]
        assert status["kind"] == "stale" and status["head"] == 2 and status["base"] == 1
        refused = [e for e in texts(at.error) if "ben saved version 2 on live" in e]
        assert refused and "after the version 1 your draft is based on" in refused[0]
        assert "Nothing is lost" in refused[0] and "another coach" not in refused[0]
        assert at.session_state["policy_yaml"] == mine  # the draft is kept
        assert at.session_state["draft_base"] == 1
        with PolicyStore(store_url) as store:
            assert [v.number for v in store.history()] == [2, 1]
            assert store.labels()["live"].version == 2
            assert store.get(2).yaml == theirs  # their version is intact
        # what they changed is on the page, so the coach can redo the change on top of it
        assert any("readiness_injury" in m and "exclude -> secondary" in m for m in texts(at.markdown))

        # and the coach's own work can be kept as a version of its own
        save(at, "training may see recovery (kept beside ben's)", label=NO_LABEL)
        with PolicyStore(store_url) as store:
            v3 = store.get(3)
            assert (v3.parent, v3.yaml) == (1, mine)
            assert store.labels()["live"].version == 2


class TestVersionActions:
    def test_the_default_save_succeeds_when_the_draft_label_is_elsewhere(self, store_url: str) -> None:
        with PolicyStore(store_url) as store:
            store.save(draft_with(recovery_for_training), message="ben's", author="ben", label="draft")
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value(draft_with(injury_readiness_for_training)).run()
        open_tab(at, "Versions")
        assert at.selectbox(key="save_label").value == NO_LABEL  # draft points at 1, the draft is based on none
        at.text_input(key="author").input("ana")
        at.text_input(key="save_message").input("mine").run()
        at.button(key="save_version").click().run()
        assert at.session_state["versions_status"]["kind"] == "ok"
        with PolicyStore(store_url) as store:
            assert [v.number for v in store.history()] == [2, 1] and store.labels()["draft"].version == 1

    def test_a_new_label_and_an_existing_one_are_described_by_where_they_point(self, store_url: str) -> None:
        at = started("Versions")
        assert at.selectbox(key="save_label").value == "draft"
        assert any("draft does not exist yet" in c for c in texts(at.caption))
        save(at, "baseline", label="draft")
        assert any("draft now points at version 1" in c for c in texts(at.caption))

    def test_a_refusal_names_the_same_person_as_you(self, store_url: str) -> None:
        at = version_1_loaded(store_url, read_policy_text(CHECKED_IN), author="ana", label="live", message="baseline")
        with PolicyStore(store_url) as store:  # the same coach, in another tab
            store.save(draft_with(injury_readiness_for_training), message="other tab", author="ana", label="live",
                       base=1)
        open_tab(at, "Policy editor").text_area(key="policy_yaml").set_value(draft_with(recovery_for_training)).run()
        save(at, "this tab", label="live", author="ana")
        refused = [e for e in texts(at.error) if "Not saved" in e]
        assert refused and "you (ana) saved version 2 on live" in refused[0]

    def test_use_live_here_decides_with_the_live_version(self, store_url: str) -> None:
        with PolicyStore(store_url) as store:
            store.save(draft_with(recovery_for_training), message="live one", author="ben", label="live")
        at = started("Versions")
        assert decision(at)["policy"]["version"] is None
        at.button(key="use_live").click().run()
        assert decision(at)["policy"]["version"] == "1"
        assert at.session_state["draft_base"] == 1


def test_a_page_on_the_stored_checked_in_policy_says_so_from_its_first_run_and_keeps_no_draft(
        store_url: str) -> None:
    """The checked-in policy saved as version 1: the first run already names version 1, so the first
    question reruns the inputs and decision alone, not the whole page (which once left the old
    decision drawn beside the new one in a slow browser); and an untouched draft is not stored."""
    with PolicyStore(store_url) as store:
        store.save(read_policy_text(CHECKED_IN), message="checked in", author="ana", label="live")
    at = started()
    header = [c for c in texts(at.caption) if "Deciding with" in c]
    assert "stored version 1" in header[0] and at.session_state["draft_base"] == 1
    kept_at_first = "draft_kept" in at.session_state
    at.text_input(key="question").set_value("How much protein per day?").run()
    assert [c for c in texts(at.caption) if "Deciding with" in c] == header
    assert not kept_at_first and "draft_kept" not in at.session_state  # nothing edited, nothing kept


class TestVersions:
    def test_diff_between_two_versions_lists_the_moved_fragment(self, store_url: str) -> None:
        with PolicyStore(store_url) as store:
            store.save(read_policy_text(CHECKED_IN), message="baseline", author="ana", label="live")
            store.save(draft_with(injury_readiness_for_training), message="training sees injury readiness",
                       author="ben", label="live", base=1)
        at = started("Versions")
        at.selectbox(key="diff_a").set_value("v1")
        at.selectbox(key="diff_b").set_value("v2").run()
        assert not at.exception
        shown = "\n".join(texts(at.markdown))
        assert "**1 change** from v1" in shown
        assert "- **training**: `readiness_injury: exclude -> secondary`" in shown

    def test_a_draft_based_on_no_version_cannot_replace_a_label(self, store_url: str) -> None:
        with PolicyStore(store_url) as store:
            store.save(draft_with(recovery_for_training), message="recovery for training", author="ben",
                       label="live")
        at = started()
        assert at.session_state["draft_base"] is None  # the checked-in draft equals no stored version
        save(at, "my checked-in copy", label="live")
        refused = [e for e in texts(at.error) if "live already points at another version" in e]
        assert refused and "your draft is not based on a stored version" in refused[0]
        assert "--base" not in refused[0]  # the page's words, not the CLI's
        with PolicyStore(store_url) as store:
            assert [v.number for v in store.history()] == [1] and store.labels()["live"].version == 1

    def test_load_undo_and_the_version_in_decisions_and_traces(self, store_url: str) -> None:
        edited = draft_with(recovery_for_training)
        at = version_1_loaded(store_url, edited, author="ana", label="draft", message="training sees recovery")
        assert at.session_state["policy_yaml"] == edited
        d = decision(at)
        assert d["policy"]["source"] == "store:v1" and d["policy"]["version"] == "1"
        assert at.selectbox(key="save_label").value == "draft"
        # a trace downloaded from the page records the version it was decided under
        bundle = fetch_bundle(FixtureUpstream(), d["athlete"])
        again = select(d["question"], bundle, parse_policy(edited), policy_source="store:v1", policy_version="1")
        trace = parse_trace(pg.decision_trace_json(again, bundle, cost_mode="hand", budget=None))
        assert trace.decision["policy"] == d["policy"]
        assert replay(trace, parse_policy(edited), policy_source="store:v1").same

        at.button(key="undo_load").click().run()
        assert at.session_state["policy_yaml"] == read_policy_text(CHECKED_IN)
        assert at.session_state["draft_base"] is None

    def test_an_unusable_store_leaves_the_rest_of_the_page_working(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("COACHCTX_STORE", "nosuchdriver://somewhere/db")
        at = started("Versions")
        assert set(decision(at)["selected"]) >= {"readiness_training", "readiness_injury"}
        assert any("policy store cannot be used" in e for e in texts(at.error))
        # the draft id was made by this page: there is no kept draft of it to fail to read back
        assert not any("could not be read back" in t for t in texts(at.info))


class TestVersionHelpers:
    """What the tab shows about versions, called directly."""

    def test_diff_frame_and_markdown_speak_in_the_policy_s_terms(self) -> None:
        before = load_policy()
        after = parse_policy(draft_with(injury_readiness_for_training))
        diff = diff_policies(before, after)
        frame = pg.diff_frame(diff)
        assert list(frame["change"]) == ["readiness_injury: exclude -> secondary"]
        assert list(frame["path"]) == ["intents.training.secondary"]
        text = pg.diff_markdown(diff, "live", "draft")
        assert "Intents: what each may see" in text and "`readiness_injury: exclude -> secondary`" in text
        assert pg.diff_markdown(diff_policies(before, before), "a", "b").startswith("No differences")

    def test_policy_origin_prefers_the_version_the_draft_came_from(self, store_url: str) -> None:
        text = read_policy_text(CHECKED_IN)
        digest = load_policy().digest
        with PolicyStore(store_url) as store:
            store.save(text, message="one", author="ana")
        # two versions with one digest: a store saved before a second save of the same rules was refused
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as raw:
            raw.execute("INSERT INTO policy_versions (parent, digest, author, message, created_at, yaml) "
                        "SELECT parent, digest, author, 'two', created_at, yaml FROM policy_versions")
        with PolicyStore(store_url) as store:
            store.set_label("live", 2, author="ana")
            versions, labels = store.history(), store.labels()

        def origin(base: int | None, d: str = digest) -> pg.PolicyOrigin:
            return pg.policy_origin(d, checked_in_digest=digest, checked_in_source="policy/default.yaml",
                                    versions=versions, labels=labels, base=base)

        assert origin(1).source == "store:v1"
        assert origin(None).source == "store:v2" and "(live)" in origin(None).description
        assert origin(1, "0" * 12) == pg.PolicyOrigin("playground draft, edited from store:v1", None,
                                                      "your unsaved draft, edited from version 1")
        assert pg.policy_origin(digest, checked_in_digest=digest, checked_in_source="policy/default.yaml",
                                versions=[], labels={}, base=None).source == "policy/default.yaml"
