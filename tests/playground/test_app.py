"""The Streamlit playground under AppTest (no browser), plus the plain helpers it uses.

The Versions and Impact tabs have their own file, tests/playground/test_app_versions.py.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
import yaml
from app_support import _clear_streamlit_caches, open_tab  # noqa: F401  (autouse fixture)
from openai_server import ChatBehaviour, ChatServer
from streamlit.testing.v1 import AppTest

from coachctx import cli
from coachctx import playground as pg
from coachctx.engine.decision import ModelCall
from coachctx.engine.pipeline import SCOPE_REQUESTS, select
from coachctx.engine.policy import Policy, load_policy, parse_policy, policy_to_yaml
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError, PolicyError
from coachctx.model import model_settings
from coachctx.tools.policy_diff import diff_policies
from coachctx.tools.trace import MAX_TRACE_BYTES, make_trace

APP = str(Path(__file__).resolve().parents[2] / "app.py")
ATHLETES = ("maya", "kenji", "lucia", "omar", "ines", "tom", "priya")
READINESS = {"readiness_training", "readiness_injury"}




def new_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=30)


def started(tab: str | None = None) -> AppTest:
    """The page after its first run, with `tab` open (only the open tab is laid out)."""
    at = new_app().run()
    assert not at.exception, [e.stack_trace for e in at.exception]
    return at if tab is None else open_tab(at, tab)


def decision(at: AppTest) -> dict[str, Any]:
    value: dict[str, Any] = at.session_state["decision"]
    return value


def fragments_table(at: AppTest) -> Any:
    for df in at.dataframe:
        frame = df.value
        if "fragment" in frame.columns and "line" in frame.columns:
            return frame.set_index("fragment")
    raise AssertionError("no fragments table on the page")


def draft_with(change: Any) -> str:
    """The checked-in policy as data, changed by `change(data)`, dumped as YAML."""
    data = yaml.safe_load(policy_to_yaml(load_policy()))
    change(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def set_margin_zero(data: dict[str, Any]) -> None:
    data["routing"]["margin"] = 0.0


def margin_zero_and_no_secondaries(data: dict[str, Any]) -> None:
    data["routing"]["margin"] = 0.0
    data["tiers"]["paid"] = 0


def all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    parts += [i.value for i in at.info] + [s.value for s in at.success] + [c.value for c in at.caption]
    return "\n".join(str(p) for p in parts)


# --- question in, fragments out ----------------------------------------------------------------


class TestDecisionView:
    def test_pain_question_on_maya_selects_both_readiness_fragments(self) -> None:
        at = started()
        at.text_input(key="question").input("How much protein per day?").run()
        at.text_input(key="question").input(pg.PAIN_QUESTION).run()
        assert not at.exception
        d = decision(at)
        assert d["question"] == pg.PAIN_QUESTION and d["athlete"] == "maya"
        assert set(d["selected"]) >= READINESS
        table = fragments_table(at)
        assert len(table) == 11
        for name in READINESS:
            assert table.loc[name, "status"] == pg.STATUS_LABELS["selected"]
            assert table.loc[name, "role"] == pg.ROLE_LABELS["primary"]
        assert set(table["hand"]) and set(table["measured"])  # both costs side by side
        withheld = table[table["status"] == pg.STATUS_LABELS["withheld"]]
        assert all(withheld["why"].str.len() > 0)
        assert "training" in d["intent"]["contenders"] and "injury" in d["intent"]["contenders"]
        assert "Routed to" in all_text(at)

    def test_example_question_is_one_click_away(self) -> None:
        at = started()
        at.text_input(key="question").input("thanks!").run()
        assert decision(at)["question"] == "thanks!"
        index = pg.EXAMPLE_QUESTIONS.index(pg.PAIN_QUESTION)
        at.button(key=f"example_{index}").click().run()
        assert at.text_input(key="question").value == pg.PAIN_QUESTION
        assert decision(at)["question"] == pg.PAIN_QUESTION

    def test_every_example_question_decides(self) -> None:
        at = started()
        for index, question in enumerate(pg.EXAMPLE_QUESTIONS):
            at.button(key=f"example_{index}").click().run()
            assert not at.exception, (question, [e.stack_trace for e in at.exception])
            assert decision(at)["question"] == question

    def test_a_question_no_vocabulary_matches_names_its_script(self) -> None:
        at = started()
        at.text_input(key="question").input("วันนี้ควรซ้อมวิ่งไหม").run()  # Thai: the policy has no Thai terms
        assert not at.exception
        d = decision(at)
        assert d["intent"]["matched_nothing"] and "Thai" in d["intent"]["scripts"]
        assert any("No vocabulary matched" in i.value and "Thai" in i.value for i in at.info)

    def test_empty_question_explains_instead_of_failing(self) -> None:
        at = started()
        at.text_input(key="question").input("   ").run()
        assert not at.exception
        assert "Type a question" in all_text(at)

    def test_unavailable_service_warns_in_the_audit(self) -> None:
        at = started()
        at.selectbox(key="athlete").set_value("omar").run()
        assert not at.exception
        d = decision(at)
        reasons = {f["name"]: [r["code"] for r in f["reasons"]] for f in d["fragments"]}
        assert "unreachable" in reasons["readiness_training"]
        assert any("Audit warning" in w.value and "readiness" in w.value for w in at.warning)

    def test_custom_budget_and_measured_costs_reach_the_decision(self) -> None:
        at = started()
        at.selectbox(key="tier").set_value("custom").run()
        at.number_input(key="budget").set_value(0).run()
        at.selectbox(key="cost_mode").set_value("measured").run()
        d = decision(at)
        assert d["tier"] == "custom" and d["budget"] == 0 and d["tokens"]["cost_mode"] == "measured"
        over = [f["name"] for f in d["fragments"] if any(r["code"] == "over_budget" for r in f["reasons"])]
        assert over, "a zero budget must withhold every secondary as over_budget"
        assert all(f["role"] != "primary" for f in d["fragments"] if f["name"] in over)

    @pytest.mark.parametrize("athlete", ATHLETES)
    def test_no_exception_for_any_athlete_scope_or_tier(self, athlete: str) -> None:
        at = started()
        at.selectbox(key="athlete").set_value(athlete).run()
        for scope in SCOPE_REQUESTS:
            for tier in ("free", "paid", "custom"):
                at.selectbox(key="scope").set_value(scope)
                at.selectbox(key="tier").set_value(tier)
                at.run()
                assert not at.exception, (athlete, scope, tier, [e.stack_trace for e in at.exception])
                d = decision(at)
                assert (d["athlete"], d["scope"]["requested"]) == (athlete, scope)
                assert d["tier"] == tier
                assert len(fragments_table(at)) == 11


# --- the policy editor -------------------------------------------------------------------------


class TestPolicyEditor:
    def test_yaml_edit_changes_the_decision(self) -> None:
        at = started("Policy editor")
        before = decision(at)
        assert before["intent"]["source"] != "rules"
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        assert not at.exception
        after = decision(at)
        assert after["policy"]["digest"] != before["policy"]["digest"]
        # margin 0: the tie is "certain", yet the other intent has evidence in the question, so its exclude
        # cannot remove the readiness signal it holds as primary
        assert after["intent"]["source"] == "rules"
        assert set(after["selected"]) >= READINESS
        assert any(r["code"] == "kept_despite_exclude" and "evidence in the question" in r["detail"]
                   for f in after["fragments"] for r in f["reasons"] if f["name"] in READINESS)

    def test_draft_set_through_session_state_changes_the_decision(self) -> None:
        at = new_app()
        at.session_state["policy_yaml"] = draft_with(lambda d: d["tiers"].update(paid=0))
        at.run()
        assert not at.exception
        d = decision(at)
        assert d["budget"] == 0
        assert all(f["role"] != "secondary" or f["status"] == "withheld" for f in d["fragments"])

    def test_form_control_writes_the_draft(self) -> None:
        at = started("Policy editor")
        before = decision(at)["policy"]["digest"]
        margin = next(n for n in at.number_input if n.label == "Margin over the runner-up")
        margin.set_value(0.0).run()
        assert not at.exception
        assert parse_policy(at.session_state["policy_yaml"]).routing.margin == 0.0
        after = decision(at)
        assert after["policy"]["digest"] != before and after["intent"]["source"] == "rules"

    def test_form_list_edit_and_new_term(self) -> None:
        at = started("Policy editor")
        at.selectbox(key="ed_intent").set_value("injury").run()
        exclude = next(m for m in at.multiselect if m.label == "Withheld facts (exclude)")
        exclude.set_value([]).run()
        assert parse_policy(at.session_state["policy_yaml"]).intent("injury").exclude == []
        at.text_input(key="add.injury.term").input("zorblat").run()
        at.button(key="add.injury.go").click().run()
        assert not at.exception
        policy = parse_policy(at.session_state["policy_yaml"])
        assert policy.vocabulary["injury"]["en"]["zorblat"] == 1.0
        at.text_input(key="question").input("a zorblat again").run()
        assert ["zorblat", 1.0] in decision(at)["intent"]["matched"]["injury"]

    def test_invalid_draft_shows_the_error_and_keeps_the_working_policy(self) -> None:
        at = started("Policy editor")
        good = decision(at)
        bad = draft_with(lambda d: d["intents"]["injury"]["primary"].__setitem__(0, "readiness_injry"))
        at.text_area(key="policy_yaml").set_value(bad).run()
        assert not at.exception
        text = all_text(at)
        assert "intents.injury.primary[0]" in text
        assert "intent injury → primary list → item 1" in text
        assert "did you mean 'readiness_injury'" in text
        assert any("problem" in e.value for e in at.error)
        after = decision(at)
        assert after["policy"]["digest"] == good["policy"]["digest"]
        assert after["selected"] == good["selected"]
        assert at.session_state["policy_yaml"] == bad  # the coach's text is kept to be fixed

    def test_yaml_syntax_error_names_the_line(self) -> None:
        at = started("Policy editor")
        good = decision(at)["policy"]["digest"]
        at.text_area(key="policy_yaml").set_value("tiers: {free: 50}\nrouting: {margin: [1\n").run()
        assert not at.exception
        assert "**line 2**" in all_text(at)  # where the unclosed mapping starts, not where the text ends
        assert decision(at)["policy"]["digest"] == good

    def test_diff_lists_the_changed_setting(self) -> None:
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        changes = next(df.value for df in at.dataframe if list(df.value.columns) == list(pg.DIFF_COLUMNS))
        row = changes[changes["path"] == "routing.margin"].iloc[0]
        assert (row["section"], row["change"], row["kind"]) == ("Routing thresholds", "margin: 1 -> 0", "changed")
        assert any("`margin: 1 -> 0`" in m for m in (e.value for e in at.markdown))

    def test_import_through_the_uploader_replaces_the_draft(self) -> None:
        at = started("Policy editor")
        exported = pg.export_policy_yaml(parse_policy(draft_with(set_margin_zero)))
        at.file_uploader(key="policy_upload").set_value(("mine.yaml", exported.encode(), "application/x-yaml")).run()
        assert not at.exception
        assert at.session_state["policy_yaml"] == exported
        assert decision(at)["policy"]["digest"] == parse_policy(exported).digest

    def test_import_of_a_bad_file_keeps_the_draft(self) -> None:
        at = started("Policy editor")
        draft = at.session_state["policy_yaml"]
        at.file_uploader(key="policy_upload").set_value(("bad.yaml", b"!!python/object:os.system {}",
                                                         "application/x-yaml")).run()
        assert not at.exception
        assert at.session_state["policy_yaml"] == draft
        assert any("was not imported" in e.value for e in at.error)


def comment_lines(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


CHECKED_IN_TEXT = (Path(__file__).resolve().parents[2] / "policy" / "default.yaml").read_text(encoding="utf-8")


class TestEditorFeedback:
    def test_a_form_edit_changes_one_line_and_keeps_every_comment(self) -> None:
        at = started("Policy editor")
        margin = next(n for n in at.number_input if n.label == "Margin over the runner-up")
        margin.set_value(0.5).run()
        text = at.session_state["policy_yaml"]
        assert comment_lines(text) == comment_lines(CHECKED_IN_TEXT)
        changed = [(a, b) for a, b in zip(CHECKED_IN_TEXT.splitlines(), text.splitlines(), strict=True) if a != b]
        assert len(changed) == 1 and "margin: 0.5" in changed[0][1] and "# ..." in changed[0][1]
        assert any("Set confidence threshold" in s.value or "margin" in s.value for s in at.success)

    def test_adding_a_term_that_exists_says_so_and_changes_nothing(self) -> None:
        at = started("Policy editor")
        at.selectbox(key="ed_intent").set_value("injury").run()
        before = at.session_state["policy_yaml"]
        at.text_input(key="add.injury.term").input("Pain").run()
        at.button(key="add.injury.go").click().run()
        assert at.session_state["policy_yaml"] == before
        assert any("already a term of injury" in i.value and "en" in i.value for i in at.info)

    def test_a_new_term_is_one_added_entry(self) -> None:
        at = started("Policy editor")
        at.selectbox(key="ed_intent").set_value("injury").run()
        at.text_input(key="add.injury.term").input("zorblat").run()
        at.button(key="add.injury.go").click().run()
        text = at.session_state["policy_yaml"]
        assert comment_lines(text) == comment_lines(CHECKED_IN_TEXT)
        changed = [b for a, b in zip(CHECKED_IN_TEXT.splitlines(), text.splitlines(), strict=True) if a != b]
        assert len(changed) == 1 and changed[0].rstrip().endswith("zorblat: 1.0}")
        assert any("Added “zorblat”" in s.value for s in at.success)

    def test_removing_an_exclude_explains_and_offers_add_to_secondary(self) -> None:
        at = started("Policy editor")
        at.selectbox(key="ed_intent").set_value("training").run()
        exclude = next(m for m in at.multiselect if m.label == "Withheld facts (exclude)")
        assert "readiness_recovery" in exclude.value
        exclude.set_value([f for f in exclude.value if f != "readiness_recovery"]).run()
        assert parse_policy(at.session_state["policy_yaml"]).intent("training").exclude == ["readiness_injury"]
        warning = next(w.value for w in at.warning if "exclude list" in w.value)
        assert "does not ask for" in warning and "not asked for" in warning and "secondary" in warning
        at.text_input(key="question").input("How hard should my interval session be?").run()
        withheld = {f["name"]: [r["code"] for r in f["reasons"]] for f in decision(at)["fragments"]}
        assert withheld["readiness_recovery"] == ["not_requested"]  # still out, as the warning said
        at.button(key="editor_offer").click().run()
        assert "readiness_recovery" in parse_policy(at.session_state["policy_yaml"]).intent("training").secondary
        assert "readiness_recovery" in decision(at)["selected"]

    def test_an_edit_that_changes_nothing_says_so(self) -> None:
        at = started("Policy editor")
        at.selectbox(key="ed_intent").set_value("injury").run()
        primary = next(m for m in at.multiselect if m.label == "Essential facts (primary)")
        before = at.session_state["policy_yaml"]
        primary.set_value(list(primary.value)).run()
        max_words = next(n for n in at.number_input if n.label == "Longest reply (words)")
        max_words.set_value(max_words.value).run()
        assert at.session_state["policy_yaml"] == before

    def test_a_yaml_error_is_reported_once_at_its_line_with_the_line_shown(self) -> None:
        at = started("Policy editor")
        lines = CHECKED_IN_TEXT.splitlines()
        assert lines[10].startswith("  margin:")
        lines[10] = "  margin: [1.0, 2.0"  # line 11: a list never closed
        at.text_area(key="policy_yaml").set_value("\n".join(lines) + "\n").run()
        assert not at.exception
        problems = [m.value for m in at.markdown if m.value.startswith("- **line")]
        assert len(problems) == 1 and problems[0].startswith("- **line 11**"), problems
        assert "line 13" not in problems[0]
        snippet = next(c.value for c in at.code if "> 11 |" in c.value)
        assert "margin: [1.0, 2.0" in snippet and " 10 |" in snippet


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]


ROUND_TRIP_DRAFT = """# head comment
routing:
  margin: 1.0   # why the margin
intents:
  training:
    primary: [readiness_training, training_block]   # the essentials
    exclude: [readiness_recovery, readiness_injury]
scopes:
  week:
    modifiers:
      - {action: demote, fragment: readiness_training, reason: "a week"}   # kept
      - action: drop
        fragment: conditions_today
        reason: today only
"""


class TestTextEditsKeepTheFile:
    """Table edits that remove rows cut whole lines; the ruamel fallback keeps the file's shape."""

    def test_a_deleted_modifier_row_is_one_removed_line(self) -> None:
        data = pg.draft_data(CHECKED_IN_TEXT)
        assert data is not None
        modifiers = data["scopes"]["week"]["modifiers"]
        out = pg.edit_draft_text(CHECKED_IN_TEXT, ("scopes", "week", "modifiers"), modifiers[1:])
        removed = changed_lines(CHECKED_IN_TEXT, out)
        assert len(removed) == 1 and removed[0].startswith("-      - {action:")
        assert comment_lines(out) == comment_lines(CHECKED_IN_TEXT)
        assert pg.draft_data(out) == pg.with_setting(data, ("scopes", "week", "modifiers"), modifiers[1:])

    def test_a_deleted_term_or_language_cuts_only_its_own_text(self) -> None:
        data = pg.draft_data(CHECKED_IN_TEXT)
        assert data is not None
        injury = data["vocabulary"]["injury"]
        fewer_terms = {k: v for k, v in injury["en"].items() if k != "pain"}
        out = pg.edit_draft_text(CHECKED_IN_TEXT, ("vocabulary", "injury", "en"), fewer_terms)
        assert len(changed_lines(CHECKED_IN_TEXT, out)) == 2  # one line loses "pain: 1.0, "
        fewer_languages = {k: v for k, v in injury.items() if k != "en"}
        out = pg.edit_draft_text(CHECKED_IN_TEXT, ("vocabulary", "injury"), fewer_languages)
        removed = changed_lines(CHECKED_IN_TEXT, out)
        assert removed and all(line.startswith("-") for line in removed)  # only the language's own lines go
        assert pg.draft_data(out) == pg.with_setting(data, ("vocabulary", "injury"), fewer_languages)
        assert comment_lines(out) == comment_lines(CHECKED_IN_TEXT)

    def test_the_round_trip_fallback_keeps_comments_indentation_and_flow_style(self) -> None:
        from coachctx.playground.form_edits import _round_trip

        out = _round_trip(ROUND_TRIP_DRAFT, ("intents", "training", "exclude"), ["readiness_recovery"])
        assert changed_lines(ROUND_TRIP_DRAFT, out) == [
            "-    exclude: [readiness_recovery, readiness_injury]", "+    exclude: [readiness_recovery]"]
        out = _round_trip(ROUND_TRIP_DRAFT, ("scopes", "week", "modifiers"),
                          [{"action": "drop", "fragment": "conditions_today", "reason": "today only"}])
        assert changed_lines(ROUND_TRIP_DRAFT, out) == [
            '-      - {action: demote, fragment: readiness_training, reason: "a week"}   # kept']


class TestExportImport:
    def test_export_keeps_the_drafts_comments_and_imports_back(self, tmp_path: Path) -> None:
        text = CHECKED_IN_TEXT.replace("margin: 1.0 ", "margin: 0.5 ")
        policy = parse_policy(text)
        exported = pg.export_policy_yaml(policy, text)
        assert comment_lines(CHECKED_IN_TEXT)[0] in exported and "# ... and lead the runner-up" in exported
        assert cli.main(["check-policy", str(_write(tmp_path / "e.yaml", exported))]) == 0
        _, again = pg.import_policy_bytes(exported.encode(), "e.yaml")
        assert again.digest == policy.digest
        assert pg.export_policy_yaml(again, exported) == exported  # no second header on a re-export


    def test_export_round_trips_and_check_policy_accepts_it(self, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
        policy = parse_policy(draft_with(set_margin_zero))
        exported = pg.export_policy_yaml(policy)
        path = tmp_path / "exported.yaml"
        path.write_text(exported, encoding="utf-8")
        assert cli.main(["check-policy", str(path)]) == 0
        assert f"digest {policy.digest}" in capsys.readouterr().out
        text, again = pg.import_policy_bytes(path.read_bytes(), path.name)
        assert text == exported
        assert again.digest == policy.digest
        assert pg.export_policy_yaml(again) == exported

    def test_import_refuses_oversized_files_before_parsing(self) -> None:
        with pytest.raises(PolicyError, match=r"^invalid policy big\.yaml: big\.yaml is 524,289 bytes; a policy file "
                                              r"may be at most 524,288 bytes \(512 KB\)"):
            pg.import_policy_bytes(b"#" * (pg.MAX_IMPORT_BYTES + 1), "big.yaml")

    def test_import_refuses_non_utf8_and_object_tags(self) -> None:
        with pytest.raises(PolicyError, match=r"not UTF-8"):
            pg.import_policy_bytes(b"\xff\xfe\x00", "latin.yaml")
        with pytest.raises(PolicyError, match=r"YAML"):
            pg.import_policy_bytes(b"!!python/object/apply:os.system ['true']", "evil.yaml")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- sharing: the URL ----------------------------------------------------------------------------


class TestUrlState:
    def test_query_params_restore_the_view(self) -> None:
        at = new_app()
        at.query_params.update(q="Is the pollution too high for a run?", athlete="omar", scope="today",
                               tier="custom", budget="120", costs="measured")
        at.run()
        assert not at.exception
        assert at.text_input(key="question").value == "Is the pollution too high for a run?"
        assert at.selectbox(key="athlete").value == "omar"
        d = decision(at)
        assert (d["athlete"], d["scope"]["requested"], d["tier"], d["budget"], d["tokens"]["cost_mode"]) == \
            ("omar", "today", "custom", 120, "measured")
        # the first run replaces the browser's address itself (a script: no history entry); from the
        # next run on, the address is written through Streamlit
        assert any("history.replaceState" in h.proto.body and "draft=" in h.proto.body for h in at.get("html"))
        at.run()
        assert at.query_params["draft"] == at.session_state["draft_id"]  # the draft, not a digest, restores the policy
        assert at.query_params["athlete"] == "omar"

    def test_the_url_follows_the_inputs(self) -> None:
        at = started()
        at.selectbox(key="athlete").set_value("kenji").run()
        assert at.query_params["athlete"] == "kenji"
        assert at.query_params["q"] == decision(at)["question"]

    def test_a_different_policy_digest_is_pointed_out(self) -> None:
        at = new_app()
        at.query_params.update(q=pg.PAIN_QUESTION, athlete="maya", policy="0123456789ab")
        at.run()
        assert any("0123456789ab" in w.value and "names policy" in w.value for w in at.sidebar.warning)

    def test_bad_values_in_the_link_are_ignored_and_reported(self) -> None:
        at = new_app()
        at.query_params.update(q=pg.PAIN_QUESTION, athlete="nobody", tier="gold")
        at.run()
        assert not at.exception
        assert decision(at)["athlete"] == "maya"
        notes = " ".join(i.value for i in at.sidebar.info)
        assert "'nobody'" in notes and "'gold'" in notes


class TestDraftSurvivesReloadAndHistory:
    """A reload is a new session with the same address; a restart also loses every cache."""

    def edited(self) -> tuple[AppTest, str]:
        at = started("Policy editor")
        text = draft_with(set_margin_zero)
        at.text_area(key="policy_yaml").set_value(text).run()
        assert not at.exception
        return at, text

    def reopen(self, at: AppTest, *, restart: bool = False) -> AppTest:
        if restart:
            st.cache_data.clear()
            st.cache_resource.clear()
        again = new_app()
        again.query_params.update(dict(at.query_params))
        again.run()
        assert not again.exception, [e.stack_trace for e in again.exception]
        return again

    @pytest.mark.parametrize("restart", [False, True], ids=["reload", "restart"])
    def test_an_edited_draft_survives(self, restart: bool) -> None:
        at, text = self.edited()
        assert at.query_params["draft"] == at.session_state["draft_id"]
        assert "policy" not in at.query_params  # the draft restores the policy; no digest churn in history
        again = self.reopen(at, restart=restart)
        assert again.text_area(key="policy_yaml").value == text
        assert decision(again)["policy"]["digest"] == decision(at)["policy"]["digest"]
        # about the user's own reload, nothing speaks of a link someone shared
        assert not at.sidebar.warning and not again.sidebar.warning
        assert any("kept in the policy store" in c.value for c in again.sidebar.caption)

    def test_an_invalid_draft_survives_too(self) -> None:
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value("routing: [unclosed\n").run()
        again = self.reopen(at)
        assert again.text_area(key="policy_yaml").value == "routing: [unclosed\n"
        assert decision(again)["policy"]["digest"] == load_policy().digest  # the last valid policy decides

    def test_a_loaded_version_stays_the_draft_base_after_a_reload(self) -> None:
        at = started("Versions")
        at.text_input(key="author").input("ana").run()
        at.text_input(key="save_message").input("baseline").run()
        at.selectbox(key="save_label").set_value("live").run()
        at.button(key="save_version").click().run()
        open_tab(at, "Policy editor").text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        again = self.reopen(at)
        assert again.session_state["draft_base"] == 1
        assert decision(again)["policy"]["source"] == "playground draft, edited from store:v1"

    def test_an_untouched_page_keeps_nothing_and_the_first_edit_adds_no_history_entry(self) -> None:
        from coachctx.tools.store import PolicyStore, default_store_url

        at = started("Policy editor")
        at.text_input(key="question").input("thanks!").run()
        address = dict(at.query_params)
        draft_id = at.session_state["draft_id"]
        assert address["draft"] == draft_id
        with PolicyStore(default_store_url()) as store:
            assert store.get_draft(draft_id) is None
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        assert dict(at.query_params) == address  # same address: Back is not spent on the edit
        with PolicyStore(default_store_url()) as store:
            assert store.get_draft(draft_id) is not None

    def test_a_draft_id_the_store_does_not_have_starts_from_the_checked_in_policy(self) -> None:
        at = new_app()
        at.query_params.update(q=pg.PAIN_QUESTION, draft="AbCdEfGh1234")
        at.run()
        assert not at.exception
        assert at.session_state["draft_id"] == "AbCdEfGh1234"
        assert decision(at)["policy"]["digest"] == load_policy().digest

    def test_the_store_keeps_and_overwrites_a_draft(self, tmp_path: Path) -> None:
        from coachctx.tools.store import PolicyStore, StoreError

        with PolicyStore(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
            assert store.get_draft("AbCdEfGh1234") is None
            store.put_draft("AbCdEfGh1234", "routing: [unclosed\n", None)
            store.put_draft("AbCdEfGh1234", CHECKED_IN_TEXT, 3)
            kept = store.get_draft("AbCdEfGh1234")
            assert kept is not None and (kept.yaml, kept.base) == (CHECKED_IN_TEXT, 3)
            assert store.get_draft("../../etc") is None
            with pytest.raises(StoreError, match=r"^draft id 'x' is not valid$"):
                store.put_draft("x", "", None)

    def test_the_store_drops_stale_drafts_and_keeps_only_the_newest(self, tmp_path: Path) -> None:
        from datetime import UTC, datetime, timedelta

        from coachctx.tools.store import DRAFT_MAX_AGE, PolicyStore

        start = datetime(2026, 1, 1, tzinfo=UTC)
        later = start + DRAFT_MAX_AGE + timedelta(minutes=1)
        with PolicyStore(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
            store.put_draft("OldDraft0001", "routing: {}\n", None, now=start)
            store.put_draft("KeptDraft001", "routing: {}\n", None, now=start + timedelta(days=1))
            store.put_draft("FreshDraft01", "routing: {}\n", None, now=later)
            assert store.get_draft("OldDraft0001") is None  # untouched for longer than DRAFT_MAX_AGE
            assert store.get_draft("KeptDraft001") is not None and store.get_draft("FreshDraft01") is not None
            store.max_drafts = 3
            for i in range(5):
                store.put_draft(f"Draft{i:07d}", "routing: {}\n", None, now=later + timedelta(hours=i + 1))
            assert [i for i in range(5) if store.get_draft(f"Draft{i:07d}") is not None] == [2, 3, 4]
            assert store.get_draft("FreshDraft01") is None

    def test_back_and_forward_restore_the_question(self) -> None:
        at = started().run()  # the first run's address is written by a script in the browser
        first = dict(at.query_params)
        at.text_input(key="question").input("How much protein per day?").run()
        second = dict(at.query_params)
        assert second["q"] == "How much protein per day?"
        at.query_params.clear()
        at.query_params.update(first)  # what Back does: the same session reruns with the older entry
        at.run()
        assert at.text_input(key="question").value == pg.PAIN_QUESTION
        assert decision(at)["question"] == pg.PAIN_QUESTION
        assert dict(at.query_params) == first  # and the page does not push the newer view again
        at.query_params.clear()
        at.query_params.update(second)  # Forward
        at.run()
        assert decision(at)["question"] == "How much protein per day?"

    def test_back_restores_the_athlete_and_keeps_the_draft(self) -> None:
        at, text = self.edited()
        before = dict(at.query_params)
        at.selectbox(key="athlete").set_value("omar").run()
        at.query_params.clear()
        at.query_params.update(before)
        at.run()
        assert at.selectbox(key="athlete").value == "maya"
        assert at.text_area(key="policy_yaml").value == text


class TestAddressParameters:
    @pytest.mark.parametrize(("params", "shown"), [
        ({"tier": "custom", "budget": "²"}, "'²'"),
        ({"tier": "custom", "budget": "-5"}, "'-5'"),
        ({"tier": "custom", "budget": "99999999999"}, "'99999999999'"),
        ({"scope": "yesterday"}, "'yesterday'"),
        ({"costs": "guess"}, "'guess'"),
        ({"athlete": "../etc/passwd"}, "'../etc/passwd'"),
        ({"policy": "<script>"}, "'<script>'"),
        ({"draft": "x"}, "'x'"),
        ({"q": "x" * 3000}, "longer than"),
        ({"q": "   "}, "empty"),
    ])
    def test_a_bad_parameter_gives_a_message_and_falls_back(self, params: dict[str, str], shown: str) -> None:
        at = new_app()
        at.query_params.update(params)
        at.run()
        assert not at.exception, [e.stack_trace for e in at.exception]
        notes = " ".join(i.value for i in at.sidebar.info)
        assert shown in notes
        d = decision(at)
        assert d["athlete"] == "maya" and d["question"] == pg.PAIN_QUESTION

    def test_decode_view_never_raises(self) -> None:
        default = pg.ViewState(question="q", athlete="maya")
        for value in ("²", "٣", "1e3", "", "\ufffd", "0x10", " 7"):
            view, notes = pg.decode_view({"budget": value, "tier": "custom"}, athletes=["maya"], tiers=["paid"],
                                         default=default)
            assert view.budget is None and notes, value
        assert pg.decode_view({"budget": "7"}, athletes=["maya"], tiers=["paid"], default=default)[0].budget == 7

    def test_lone_surrogates_are_replaced(self) -> None:
        assert pg.clean_text("knee \ud800 pain") == "knee \ufffd pain"
        view, _ = pg.decode_view({"q": "knee \udfff"}, athletes=["maya"], tiers=["paid"],
                                 default=pg.ViewState(question="q", athlete="maya"))
        assert view.question == "knee \ufffd"


# --- reproduce a trace ---------------------------------------------------------------------------


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
        assert "at most 5 MB" in labels["trace_upload"] and "at most 512 KB" in labels["policy_upload"]

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
        trace["inputs"]["athlete"] = "zoe"
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


class TestSmallerThings:
    def test_a_model_answer_of_none_is_said_in_words(self) -> None:
        assert pg.model_answer(ModelCall(label=None, raw=None, latency_ms=812.4)) == "asked, but gave no answer in 812 ms"
        assert pg.model_answer(ModelCall(label="injury", raw="injury", latency_ms=None)) == "answered `injury`"
        assert "None" not in pg.model_answer(ModelCall(label=None, raw=None, latency_ms=None))

    def test_the_chart_s_threshold_and_margin_labels_sit_on_different_lines(self, maya: Any) -> None:
        d = select(pg.PAIN_QUESTION, maya, load_policy())  # threshold 1, margin band from 0 to 1
        spec = pg.routing_chart(d)
        texts = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "text"]
        offsets = sorted(layer["mark"]["dy"] for layer in texts)
        assert len(offsets) == 2 and offsets[1] - offsets[0] >= 12  # one text line apart

    def test_the_page_icon_is_a_local_file(self) -> None:
        source = (Path(APP).parent / "coachctx" / "playground" / "ui" / "page.py").read_text(encoding="utf-8")
        assert "page_icon=ICON" in source and ":material/" not in source.split("page_icon=")[1][:40]
        assert (Path(APP).parent / "assets" / "favicon.png").is_file()

    def test_the_unsaved_edits_guard_follows_the_draft(self) -> None:
        at = started("Policy editor")
        assert "coachctxUnsaved = false" in guard_script(at)
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        assert "coachctxUnsaved = true" in guard_script(at)

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


def guard_script(at: AppTest) -> str:
    bodies = [str(getattr(e.proto, "body", "")) for e in at.get("html")]
    return next(b for b in bodies if "coachctxUnsaved" in b)


# --- replies -------------------------------------------------------------------------------------


REPLY_CHUNKS = ("Keep today easy ", "and skip the intervals. ", "If the pain persists, see a physiotherapist.")


@pytest.fixture
def fake_openai() -> Iterator[ChatServer]:
    server = ChatServer().start()
    server.behaviour = ChatBehaviour(content="injury", reply_chunks=REPLY_CHUNKS)
    try:
        yield server
    finally:
        server.stop()


class TestReply:
    def test_without_a_key_the_button_explains_what_to_configure(self) -> None:
        at = started("Prompt & reply")
        button = at.button(key="generate")
        assert button.disabled
        assert "OPENAI_API_KEY" in (button.help or "")
        assert any("OPENAI_API_KEY" in i.value and "secrets.toml" in i.value for i in at.info)
        assert "reply" not in at.session_state

    def test_reply_streams_from_an_openai_compatible_server(self, fake_openai: ChatServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("COACHCTX_MODEL", "coach-model")
        at = started("Prompt & reply")
        d = decision(at)
        assert d["intent"]["source"] == "model" and d["intent"]["name"] == "injury"
        at.button(key="generate").click().run()
        assert not at.exception
        reply = at.session_state["reply"]["text"]
        assert reply == "".join(REPLY_CHUNKS)
        streamed = [r["body"] for r in fake_openai.requests if r["body"].get("stream")]
        assert len(streamed) == 1 and streamed[0]["messages"] == d["prompt"]["messages"]
        # routing and the reply read one set of settings: the same model, key and endpoint
        assert {r["body"]["model"] for r in fake_openai.requests} == {"coach-model"}
        assert {r["headers"]["authorization"] for r in fake_openai.requests} == {"Bearer sk-test"}
        words = next(m for m in at.metric if m.label == "Words")
        assert words.value == f"{pg.count_words(reply)} / {d['max_words']}"
        assert any("ends with a referral" in s.value for s in at.success)

    def test_a_policy_without_referral_terms_says_the_referral_is_not_checked(
            self, fake_openai: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        at = new_app()
        at.session_state["policy_yaml"] = draft_with(lambda d: d.pop("referral_terms"))
        at.run()
        assert decision(at)["clinical"]["is_clinical"]
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert not at.exception
        assert at.session_state["reply"]["text"].endswith("see a physiotherapist.")
        assert any("the policy lists no referral terms" in w.value for w in at.warning)
        assert not any("referral" in s.value for s in at.success)

    def test_reply_settings_from_secrets_toml(self, fake_openai: ChatServer) -> None:
        at = new_app()
        at.secrets["OPENAI_BASE_URL"] = fake_openai.base_url
        at.run()
        assert not at.exception
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert at.session_state["reply"]["text"] == "".join(REPLY_CHUNKS)
        assert any("secrets.toml" in c.value for c in at.caption)

    def test_a_failing_endpoint_is_reported_not_raised(self, monkeypatch: pytest.MonkeyPatch) -> None:
        at = new_app()
        at.session_state["typed_api_key"] = "sk-test"
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
        at.run()
        assert not at.exception
        assert decision(at)["intent"]["source"] == "fallback"
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert not at.exception
        assert any("No reply" in e.value for e in at.error)


# --- a slow stream during reply generation (issue 5, B2) -----------------------------------------


STALL_CHUNKS = ("Keep today easy ", "and skip the intervals. ")
REPLY_TIMEOUT_S = 1


@pytest.fixture
def stalling_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """Answers classification at once, but a streamed reply sends two chunks and then goes
    silent for longer than the page's reply timeout, holding the connection open."""
    server = ChatServer().start()
    server.behaviour = ChatBehaviour(content="injury", reply_chunks=STALL_CHUNKS,
                                     stall_after_chunks_s=20 * REPLY_TIMEOUT_S)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COACHCTX_REPLY_TIMEOUT", str(REPLY_TIMEOUT_S))
    try:
        yield server
    finally:
        server.stop()


class TestSlowReplyStream:
    def test_a_stalled_stream_keeps_the_partial_reply_and_the_page_stays_usable(self, stalling_openai: ChatServer) -> None:
        at = started("Prompt & reply")
        assert decision(at)["intent"]["source"] == "model"
        started_at = time.monotonic()
        at.button(key="generate").click().run()
        assert time.monotonic() - started_at < 15, "the stall was not cut off by the reply timeout"
        assert not at.exception, [e.stack_trace for e in at.exception]
        partial = "".join(STALL_CHUNKS)
        reply = at.session_state["reply"]
        assert reply["text"] == partial
        assert f"sent nothing for {REPLY_TIMEOUT_S} s" in reply["error"]
        stopped = [e.value for e in at.error if "stopped part-way" in e.value]
        assert stopped and f"after {pg.count_words(partial)} words" in stopped[0]

        at.run()  # a rerun shows the same partial reply and message, and nothing raises
        assert not at.exception
        assert any(m.value == partial.strip() for m in at.markdown)
        assert any("stopped part-way" in e.value for e in at.error)
        at.text_input(key="question").input("How much protein per day?").run()
        assert not at.exception
        assert decision(at)["question"] == "How much protein per day?"
        assert not any("stopped part-way" in e.value for e in at.error)  # the partial reply was for the other prompt


# --- helpers on their own ------------------------------------------------------------------------


class TestHelpers:
    def test_a_form_edit_goes_through_a_draft_holding_a_list_where_a_mapping_goes(self) -> None:
        assert pg.with_setting({"intents": ["training"]}, ("intents", "training", "max_words"), 100) == \
            {"intents": {"training": {"max_words": 100}}}
        with pytest.raises(InputError, match=r"no item 5 at intents\.training\.primary\.5"):
            pg.with_setting({"intents": {"training": {"primary": ["a"]}}}, ("intents", "training", "primary", 5), "b")

    def test_describe_path_speaks_the_coach_s_language(self) -> None:
        assert pg.describe_path("intents.injury.primary[1]") == "intent injury → primary list → item 2"
        assert pg.describe_path("vocabulary.training.en.pain") == "vocabulary of training → language en → term 'pain'"
        assert pg.describe_path("scopes.week.modifiers[0].fragment") == "time horizon week → modifier 1 → fragment"
        assert pg.describe_path("line 3, column 2") == "line 3, column 2"

    def test_line_of_points_into_the_draft(self) -> None:
        text = "routing:\n  margin: -1\nintents:\n  injury:\n    primary:\n      - a\n      - b\n"
        assert pg.line_of(text, "routing.margin") == 2
        assert pg.line_of(text, "intents.injury.primary[1]") == 7

    def test_view_state_round_trips_through_the_url(self) -> None:
        view = pg.ViewState(question="¿Puedo correr hoy?", athlete="lucia", scope="week", tier="custom", budget=80,
                            cost_mode="measured", policy_digest="abcdef123456")
        back, notes = pg.decode_view(pg.encode_view(view), athletes=ATHLETES, tiers=["free", "paid"],
                                     default=pg.ViewState(question="x", athlete="maya"))
        assert back == view and notes == []

    def test_referral_and_word_count(self, policy: Policy) -> None:
        assert pg.referral_line("Rest. If it persists, see a physiotherapist.", policy) == \
            "If it persists, see a physiotherapist."
        assert pg.referral_line("See a doctor first. Then rest. Then eat.", policy) is None
        assert pg.referral_line("Ruhe dich aus. Geh bitte zum Arzt.", policy) == "Geh bitte zum Arzt."
        assert pg.referral_line("痛みが続くなら医師に相談してください。", policy) == "痛みが続くなら医師に相談してください。"
        assert pg.count_words("one two three") == 3
        assert pg.count_words("足首が痛い") == 5

    def test_the_referral_terms_are_the_policy_s(self, policy: Policy) -> None:
        own = parse_policy(draft_with(lambda d: d.update(referral_terms={"de": ["Hausärztin"], "en": ["coach"]})))
        assert pg.referral_line("Rest. Ask your HAUSÄRZTIN.", own) == "Ask your HAUSÄRZTIN."
        assert pg.referral_line("Rest. Your coaches know best.", own) == "Your coaches know best."
        assert pg.referral_line("Rest. If it persists, see a physiotherapist.", own) is None
        assert pg.referral_line("Rest. Talk to your headcoach.", own) is None  # a term starts a word
        none = parse_policy(draft_with(lambda d: d.pop("referral_terms")))
        d = select("My knee hurts, can I run?", fetch_bundle(FixtureUpstream(), "maya"), none)
        report = pg.reply_report("Rest. See a physiotherapist.", d, none)
        assert report.clinical and (report.referral, report.referral_checked) == (None, False)
        assert pg.reply_report("Rest. See a physiotherapist.", d, policy).referral == "See a physiotherapist."

    def test_model_settings_prefer_the_typed_key_then_env_then_secrets(self) -> None:
        assert not model_settings({}, {}, None).configured
        from_secrets = model_settings({}, {"OPENAI_API_KEY": "s"}, None)
        assert from_secrets.configured and from_secrets.source == ".streamlit/secrets.toml"
        env = model_settings({"OPENAI_API_KEY": "e"}, {"OPENAI_API_KEY": "s"}, None)
        assert env.api_key == "e" and env.source == "environment"
        typed = model_settings({"OPENAI_API_KEY": "e"}, {}, "t")
        assert typed.api_key == "t" and typed.source == "a key typed in this session"

    def test_diff_frame_names_each_change_and_the_line_diff_shows_it(self, policy: Policy) -> None:
        draft = parse_policy(draft_with(lambda d: d["intents"]["general"].update(max_words=99)))
        changes = pg.diff_frame(diff_policies(policy, draft))
        assert list(changes["path"]) == ["intents.general.max_words"]
        assert list(changes["change"]) == ["max_words: 150 -> 99"]
        added = [line for line in pg.yaml_diff(policy, draft).splitlines() if line.startswith("+ ")]
        assert any("max_words: 99" in line for line in added)

    def test_table_edits_rebuild_vocabulary_and_modifiers(self) -> None:
        data = yaml.safe_load(policy_to_yaml(load_policy()))
        rows = pg.vocabulary_rows(data, "injury").to_dict("records")
        pain = next(i for i, r in enumerate(rows) if r["term"] == "pain")
        edits = {"edited_rows": {str(pain): {"weight": 2.5}}, "deleted_rows": [0] if pain != 0 else [1],
                 "added_rows": [{"language": "es", "term": "molestia", "weight": None}, {"term": "no language"}]}
        vocabulary = pg.vocabulary_from_rows(pg.apply_table_edits(rows, edits))
        assert vocabulary["en"]["pain"] == 2.5 and vocabulary["es"]["molestia"] == 1.0
        assert len(vocabulary["en"]) == len(data["vocabulary"]["injury"]["en"]) - 1
        mods = pg.modifier_rows(data, "today").to_dict("records")
        added = {"action": "drop", "fragment": "chronotype", "reason": "not today", "intents": "training, injury"}
        rebuilt = pg.modifiers_from_rows(pg.apply_table_edits(mods, {"added_rows": [added]}))
        assert rebuilt[-1] == {"action": "drop", "fragment": "chronotype", "reason": "not today",
                               "intents": ["training", "injury"]}
        assert rebuilt[:-1] == data["scopes"]["today"]["modifiers"]
        changed = pg.with_setting(data, ("scopes", "today", "modifiers"), rebuilt)
        assert parse_policy(pg.draft_to_yaml(changed)).scopes["today"].modifiers[-1].fragment == "chronotype"
