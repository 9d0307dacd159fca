"""The form beside the policy YAML under AppTest: each control writes the draft, says what it did, and
changes only its own lines of the file (every comment kept)."""

from __future__ import annotations

import difflib

import pytest
import yaml
from app_support import CHECKED_IN_TEXT, comment_lines, decision, started

from coachctx import playground as pg
from coachctx.engine.policy import load_policy, parse_policy, policy_to_yaml
from coachctx.errors import InputError


class TestFormControls:
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


class TestFormHelpers:
    """The form's edits of the draft's data, called directly."""

    def test_a_form_edit_goes_through_a_draft_holding_a_list_where_a_mapping_goes(self) -> None:
        assert pg.with_setting({"intents": ["training"]}, ("intents", "training", "max_words"), 100) == \
            {"intents": {"training": {"max_words": 100}}}
        with pytest.raises(InputError, match=r"no item 5 at intents\.training\.primary\.5"):
            pg.with_setting({"intents": {"training": {"primary": ["a"]}}}, ("intents", "training", "primary", 5), "b")

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
