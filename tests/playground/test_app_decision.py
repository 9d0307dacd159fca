"""The Decision tab under AppTest (no browser): a question and an athlete in, the fragments sent and
withheld out, with the route, its chart and the model's answer."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from app_support import (
    ATHLETES,
    READINESS,
    all_text,
    audit_warnings,
    click_example,
    decision,
    fragments_table,
    started,
)

from coachctx import playground as pg
from coachctx.engine.decision import ModelCall
from coachctx.engine.pipeline import SCOPE_REQUESTS, select
from coachctx.engine.policy import load_policy
from coachctx.playground.fact_rows import fact_rows_html, inline_html


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
        click_example(at, index)
        assert at.text_input(key="question").value == pg.PAIN_QUESTION
        assert decision(at)["question"] == pg.PAIN_QUESTION

    def test_every_example_question_decides(self) -> None:
        at = started()
        for index, question in enumerate(pg.EXAMPLE_QUESTIONS):
            click_example(at, index)
            assert not at.exception, (question, [e.stack_trace for e in at.exception])
            assert decision(at)["question"] == question

    def test_a_question_no_vocabulary_matches_names_its_script(self) -> None:
        at = started()
        at.text_input(key="question").input("วันนี้ควรซ้อมวิ่งไหม").run()  # Thai: the policy has no Thai terms
        assert not at.exception
        d = decision(at)
        assert d["intent"]["matched_nothing"] and "Thai" in d["intent"]["scripts"]
        assert any("No vocabulary matched" in line and "Thai" in line for line in all_text(at).splitlines())

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
        assert any("Audit warning" in w and "readiness" in w for w in audit_warnings(at))

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


class TestDecisionDetails:
    def test_each_fact_is_a_row_that_says_why_and_shows_its_data_as_written(self, maya: Any) -> None:
        d = select(pg.PAIN_QUESTION, maya, load_policy())
        page = fact_rows_html(d)
        assert page.count("<details data-fact=") == len(d.fragments) == 11
        for f in d.fragments:
            title, _ = pg.fragment_row(f, d)
            assert f'data-fact="{f.name}"><summary>{inline_html(title)}</summary>' in page
        assert page.count("<strong>Why:</strong>") == 11
        assert inline_html("**Line sent:** <b>5x2km</b> & `hand`  \nnext") == (
            "<strong>Line sent:</strong> &lt;b&gt;5x2km&lt;/b&gt; &amp; <code>hand</code><br>next")

    def test_a_fact_no_intent_asks_for_is_titled_by_why_it_is_out(self, maya: Any) -> None:
        d = select("Should I train through this knee pain tomorrow?", maya, load_policy())
        for f in d.fragments:
            title, _ = pg.fragment_row(f, d)
            if f.role == "none" and any(r.code == "excluded" for r in f.reasons):
                assert "excluded" in title and "not asked for" not in title, title
            elif f.role == "none":
                assert "not asked for" in title, title
        assert any(f.role == "none" and f.reasons[0].code == "excluded" for f in d.fragments)

    def test_a_fact_sent_for_what_the_question_is_says_so_in_words(self, maya: Any) -> None:
        # Hungarian, which the policy has no terms in: no intent asks for the injury readiness, the
        # question's unread words send it
        d = select("Fáj a térdem futás után, futhatok holnap?", maya, load_policy(), tier="free")
        why = pg.explain_fragment(d.fragment("readiness_injury"), d)
        assert why.startswith("The policy cannot read most of the question — most of the question's words (fáj")
        assert not why.startswith(" ")

    def test_a_model_answer_of_none_is_said_in_words(self) -> None:
        assert pg.model_answer(ModelCall(label=None, raw=None, latency_ms=812.4)) == "asked, but gave no answer in 812 ms"
        assert pg.model_answer(ModelCall(label="injury", raw="injury", latency_ms=None)) == "answered `injury`"
        assert "None" not in pg.model_answer(ModelCall(label=None, raw=None, latency_ms=None))

    def test_the_chart_s_threshold_and_margin_labels_sit_on_different_lines(self, maya: Any) -> None:
        d = select(pg.PAIN_QUESTION, maya, load_policy())  # threshold 1, margin band from 0 to 1
        chart = pg.routing_chart_html(d)
        tops = re.findall(r'<div class="note" style="top: ([0-9.]+)(?:rem)?; left: ([0-9.]+)%', chart)
        assert [left for _, left in tops] == ["0.00", "66.67"]  # the band from 0, threshold 1 on a 0-1.5 axis
        assert len({top for top, _ in tops}) == 2  # one text line apart

    def test_the_chart_draws_a_bar_per_intent_and_escapes_what_it_shows(self, maya: Any) -> None:
        d = select(pg.PAIN_QUESTION, maya, load_policy())
        chart = pg.routing_chart_html(d)
        assert chart.count('class="bar"') == len(d.intent.scores)
        routed = re.search(rf'title="{d.intent.name}: score ([0-9.]+) \(routed\)', chart)
        assert routed is not None and float(routed.group(1)) == d.intent.scores[d.intent.name]
        hostile = replace(d, intent=replace(d.intent, matched={d.intent.name: (("<script>x</script>", 1.0),)}))
        assert "<script>" not in pg.routing_chart_html(hostile)
