"""The page's address under AppTest: a link restores the view, a reload or a restart keeps the draft,
Back and Forward restore the question, and a bad parameter falls back with a message."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from app_support import (
    ATHLETES,
    CHECKED_IN_TEXT,
    decision,
    draft_with,
    new_app,
    open_tab,
    set_margin_zero,
    started,
)
from streamlit.testing.v1 import AppTest

from coachctx import playground as pg
from coachctx.engine.policy import load_policy


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

    def test_view_state_round_trips_through_the_url(self) -> None:
        view = pg.ViewState(question="¿Puedo correr hoy?", athlete="lucia", scope="week", tier="custom", budget=80,
                            cost_mode="measured", policy_digest="abcdef123456")
        back, notes = pg.decode_view(pg.encode_view(view), athletes=ATHLETES, tiers=["free", "paid"],
                                     default=pg.ViewState(question="x", athlete="maya"))
        assert back == view and notes == []
