"""The label → suggestion → apply → impact → save loop of the playground, under AppTest.

Each test has its own policy store (conftest.py's `store_url`, a SQLite file under tmp_path); the
test opens the same file with `PolicyStore` to see what the page stored, as the CLI would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from app_support import CHECKED_IN, new_app, ok, open_tab
from streamlit.testing.v1 import AppTest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy, parse_policy, read_policy_text
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError
from coachctx.playground import labels as pl
from coachctx.tools.store import PolicyStore, QuestionLabel
from coachctx.tools.suggest import Edit, apply_edits
from coachctx.tools.trace import make_trace

GLUTE = "glute medius niggle again after the long run"
"""Routed to training by a coin flip (training 2, injury 1.5): a coach says injury."""


def started(question: str = GLUTE) -> AppTest:
    at = ok(new_app(timeout=90).run())
    return ok(at.text_input(key="question").input(question).run())


def open_label_box(at: AppTest, key: str) -> AppTest:
    """Open “This should be…” as a click does (its inputs are built only while it is open)."""
    at.session_state[f"{key}.box"] = True
    return ok(at.run())


def label_it(at: AppTest, key: str, intents: list[str], needs: list[str] | None = None, author: str = "ana") -> None:
    open_label_box(at, key)
    at.multiselect(key=f"{key}.intents").set_value(intents)
    if needs:
        at.multiselect(key=f"{key}.needs").set_value(needs)
    ok(at.text_input(key=f"{key}.author").input(author).run())
    ok(at.button(key=f"{key}.store").click().run())


def picks(at: AppTest) -> dict[str, Any]:
    return {c.key.removeprefix("suggest_pick."): c for c in at.checkbox if str(c.key).startswith("suggest_pick.")}


def test_label_suggest_apply_impact_save(store_url: str) -> None:
    at = started()
    assert at.session_state["decision"]["intent"]["name"] == "training"
    comments = read_policy_text(CHECKED_IN).count("\n#")
    label_it(at, "label_decision", ["injury"], ["readiness_injury"])
    assert "Stored label 1" in " ".join(s.value for s in at.success)

    with PolicyStore(store_url) as store:
        [stored] = store.question_labels()
    assert (stored.question, stored.intents, stored.needs, stored.author) == (GLUTE, ("injury",), ("readiness_injury",),
                                                                            "ana")
    assert (stored.athlete, stored.route_source, stored.routed, stored.policy_digest) == (
        "maya", "fallback", "training", load_policy().digest)

    open_tab(at, "Suggest")  # only the open tab is laid out
    found = picks(at)
    glute = next(key for key in found if "|glute medius|" in key)
    assert glute.startswith("add|injury|en|")
    evidence = " ".join(m.value for m in at.markdown)
    assert f"**fixes** row 1: “{GLUTE}” → injury (label {stored.id} by ana)" in evidence
    assert at.button(key="suggest_apply").disabled  # nothing ticked, nothing applied
    ok(found[glute].check().run())
    ok(at.button(key="suggest_apply").click().run())

    draft = at.session_state["policy_yaml"]
    assert "glute medius" in draft
    assert draft.count("\n#") == comments  # the checked-in file's comments are all still there
    assert at.session_state["decision"]["intent"]["name"] == "injury"
    assert glute not in picks(at)  # the applied edit is no longer suggested
    diff = " ".join(m.value for m in at.markdown)
    assert "glute medius" in diff

    ok(at.button(key="suggest_impact_run").click().run())
    key, report = at.session_state["suggest_impact"]
    assert (report.base_metrics.route_accuracy, report.candidate_metrics.route_accuracy) == (0.0, 1.0)
    assert [r.question.row for r in report.rows if r.changed] == [1]

    assert "glute medius" in at.text_input(key="suggest_save_message").value
    ok(at.button(key="suggest_save").click().run())
    assert any("Saved version 1" in s.value for s in at.success)
    with PolicyStore(store_url) as store:
        [version] = store.history()
    assert version.author == "ana" and "glute medius" in version.yaml
    assert parse_policy(version.yaml, "v1").digest == at.session_state["decision"]["policy"]["digest"]
    assert at.session_state["draft_base"] == 1


def test_a_label_needs_an_intent_and_an_author(store_url: str) -> None:
    at = open_label_box(started(), "label_decision")
    assert at.button(key="label_decision.store").disabled
    at.multiselect(key="label_decision.intents").set_value(["injury"])
    ok(at.run())
    assert at.button(key="label_decision.store").disabled  # no author yet
    ok(at.text_input(key="label_decision.author").input("ana").run())
    assert not at.button(key="label_decision.store").disabled
    assert at.session_state["coach_name"] == "ana"  # kept for the session: the next label and the save use it


def test_a_trace_is_labelled_on_the_reproduce_tab(store_url: str) -> None:
    bundle = fetch_bundle(FixtureUpstream(), "lucia")
    trace = make_trace(select(GLUTE, bundle, load_policy()), bundle, cost_mode="hand", budget=None)
    at = open_tab(started("thanks!"), "Reproduce a trace")
    at.file_uploader(key="trace_upload").set_value(("t.json", json.dumps(trace).encode(), "application/json"))
    ok(at.run())
    label_it(at, "label_trace", ["injury", "training"], author="kai")
    with PolicyStore(store_url) as store:
        [stored] = store.question_labels()
    assert (stored.question, stored.athlete, stored.intents, stored.author) == (GLUTE, "lucia", ("injury", "training"),
                                                                              "kai")


def test_an_uploaded_labelled_log_is_learned_from_and_a_bad_one_named(store_url: str, tmp_path: Path) -> None:
    at = open_tab(started(), "Suggest")
    rows = "".join(json.dumps({"question": q, "intents": ["injury"]}) + "\n"
                   for q in (GLUTE, "glute medius sore on the stairs"))
    at.file_uploader(key="suggest_upload").set_value(("log.jsonl", rows.encode(), "application/x-ndjson"))
    ok(at.run())
    assert any("|glute medius|" in key for key in picks(at))
    evidence = " ".join(m.value for m in at.markdown)
    assert "(log.jsonl row 1)" in evidence and "(log.jsonl row 2)" in evidence

    bad = json.dumps({"question": "x", "intents": ["trainig"]}) + "\n"
    at.file_uploader(key="suggest_upload").set_value(("bad.jsonl", ("\n" + bad).encode(), "application/x-ndjson"))
    ok(at.run())
    errors = " ".join(e.value for e in at.error)
    assert "Cannot use bad.jsonl: bad.jsonl: line 2: unknown intent 'trainig'" in errors


def test_a_log_too_large_to_learn_from_in_the_page_is_named_not_learned(store_url: str) -> None:
    """A 1.7 MB log of 300-word rows held the shared server for 104 s and 4 GB (an adversarial pass)."""
    at = open_tab(started(), "Suggest")
    long_row = " ".join(f"word{i}" for i in range(100))
    rows = "".join(json.dumps({"question": f"{n} {long_row}", "intents": ["training"]}) + "\n"
                   for n in range(pl.MAX_PAGE_LEARNING_WORDS // 100 + 1))
    at.file_uploader(key="suggest_upload").set_value(("big.jsonl", rows.encode(), "application/x-ndjson"))
    ok(at.run())
    warning = " ".join(w.value for w in at.warning)
    assert f"hold {(pl.MAX_PAGE_LEARNING_WORDS // 100 + 1) * 101:,} words; the page learns from at most" in warning
    assert "`coachctx suggest FILE`" in warning and not picks(at)


class TestApplyToDraft:
    """The draft's text is edited where the edit is, and reads back as `apply_edits` makes it."""

    def test_add_reweight_and_remove_keep_comments_and_match_apply_edits(self) -> None:
        text = read_policy_text(CHECKED_IN)
        policy = parse_policy(text, "checked-in")
        intent, language = "injury", "en"
        term, weight = next(iter(policy.vocabulary[intent][language].items()))
        other = list(policy.vocabulary[intent][language])[1]
        edits = [Edit("add", intent, language, "glute medius", 1.0),
                 Edit("reweight", intent, language, term, weight / 2, weight),
                 Edit("remove", intent, language, other, None, policy.vocabulary[intent][language][other])]
        out = pl.apply_to_draft(text, policy, edits)
        assert parse_policy(out, "out").digest == apply_edits(policy, edits).digest
        assert out.count("\n#") == text.count("\n#")
        changed = [line for line in out.splitlines() if line not in text.splitlines()]
        assert 1 <= len(changed) <= 3, changed  # the language's line(s), not a re-dump of the file

    def test_removing_a_term_the_draft_no_longer_has_is_refused(self) -> None:
        text = read_policy_text(CHECKED_IN)
        with pytest.raises(InputError, match=r"^the draft has no term 'zorblat' in vocabulary\.injury\.en any more$"):
            pl.apply_to_draft(text, parse_policy(text, "x"), [Edit("remove", "injury", "en", "zorblat", None, 1.0)])

    def test_a_label_of_a_decision_records_what_the_policy_did(self) -> None:
        decision = {"question": GLUTE, "athlete": "maya", "scope": {"requested": "week"},
                    "intent": {"name": "training", "source": "fallback"}, "policy": {"digest": "abcdef123456"}}
        assert pl.label_of_decision(decision, intents=["injury"], needs=[], author="ana") == QuestionLabel(
            question=GLUTE, intents=("injury",), author="ana", athlete="maya", needs=None, scope="week",
            policy_digest="abcdef123456", route_source="fallback", routed="training")


def test_a_labels_language_is_guessed_can_be_changed_and_is_stored(store_url: str) -> None:
    at = open_label_box(started("mi rodilla duele después de correr, ¿descanso?"), "label_decision")
    assert at.selectbox(key="label_decision.lang").value == "es"  # guessed from its everyday words
    at.selectbox(key="label_decision.lang").set_value("pt")
    label_it(at, "label_decision", ["injury"])
    ok(at.text_input(key="question").input(GLUTE).run())
    assert at.selectbox(key="label_decision.lang").value == "en"  # a new question: guessed again
    label_it(at, "label_decision", ["injury"])
    with PolicyStore(store_url) as store:
        assert [x.lang for x in store.question_labels()] == ["pt", "en"]


def test_a_stored_label_is_deleted_from_the_suggest_tab(store_url: str) -> None:
    at = started()
    label_it(at, "label_decision", ["injury"])
    ok(at.text_input(key="question").input("thanks!").run())
    label_it(at, "label_decision", ["general"])
    with PolicyStore(store_url) as store:
        first, second = store.question_labels()
    at = open_tab(at, "Suggest")
    at.selectbox(key="suggest_delete_pick").set_value(first.id)
    ok(at.button(key="suggest_delete").click().run())
    assert f"Deleted label {first.id}." in " ".join(s.value for s in at.success)
    with PolicyStore(store_url) as store:
        assert [x.id for x in store.question_labels()] == [second.id]
    assert not any("|glute medius|" in key for key in picks(at))  # nothing learned from the deleted label


def test_a_question_labelled_two_ways_is_shown_above_the_suggestions(store_url: str) -> None:
    with PolicyStore(store_url) as store:
        store.add_question_labels([QuestionLabel(question=GLUTE, intents=("injury",), author="ana"),
                                   QuestionLabel(question=GLUTE.upper() + "!", intents=("training",), author="ben"),
                                   QuestionLabel(question="thanks!", intents=("general",), author="ana")])
    at = open_tab(ok(new_app(timeout=90).run()), "Suggest")
    [warning] = [w.value for w in at.warning if "labelled one way" in w.value]
    assert warning.startswith("1 question(s) are labelled one way in some rows and another way in others.")
    assert warning.endswith(f"- “{GLUTE}” → injury: 1 row (1); training: 1 row (2)")
