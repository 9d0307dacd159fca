"""`coachctx suggest`: vocabulary edits learned from labelled rows, each with its measured evidence."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import MINI_VOCABULARY, with_vocabulary
from openai_server import ChatBehaviour, ChatServer

from coachctx.cli import main
from coachctx.engine.policy import Policy
from coachctx.engine.routing import route
from coachctx.engine.text import tokenise
from coachctx.errors import InputError
from coachctx.tools.suggest import (
    LEARN_DEFAULTS,
    Edit,
    LabelledRow,
    apply_edits,
    learn,
    read_labelled,
    suggest,
)
from coachctx.tools.suggest_candidates import MAX_OFFERING_CHARS, MAX_OFFERING_WORDS, phrases
from coachctx.tools.suggest_log import conflicting_labels

HAMSTRING = [("my hamstring is tight after sprints", ["injury"]), ("hamstring twinge on the hills", ["injury"]),
             ("pulled my hamstring yesterday", ["injury"]), ("is a hamstring strain serious", ["injury"])]
OTHERS = [("how long should my long run be", ["training"]), ("what should i eat before a race", ["nutrition"]),
          ("i slept badly, recovery day?", ["recovery"]), ("thanks coach", ["general"]),
          ("knee pain after the interval session", ["injury", "training"])]


def rows(pairs: list[tuple[str, list[str]]], start: int = 1, origin: str = "coach") -> list[LabelledRow]:
    return [LabelledRow(i, q, tuple(labels), "en", origin) for i, (q, labels) in enumerate(pairs, start)]  # type: ignore[arg-type]


@pytest.fixture
def thin(policy: Policy) -> Policy:
    """A small vocabulary that does not know "hamstring"."""
    return with_vocabulary(policy, MINI_VOCABULARY)


@pytest.fixture
def full(policy: Policy) -> Policy:
    vocabulary: dict[str, Any] = {i: {lang: dict(t) for lang, t in by.items()} for i, by in MINI_VOCABULARY.items()}
    vocabulary["injury"]["en"]["hamstring"] = 1.0
    return with_vocabulary(policy, vocabulary)


class TestSuggest:
    def test_a_removed_term_is_proposed_again_from_the_rows_that_need_it(self, thin: Policy) -> None:
        labelled = rows(HAMSTRING + OTHERS)
        found = suggest(labelled, thin, limit=5)
        assert found, "nothing suggested"
        top = found[0]
        assert (top.edit.kind, top.edit.intent, top.edit.language, top.edit.term) == ("add", "injury", "en", "hamstring")
        assert sorted(top.fixes) == [1, 2, 3, 4] and top.breaks == ()
        assert top.gain == pytest.approx(4.0)

    def test_every_suggestion_fixes_more_than_it_breaks_and_its_evidence_is_measured(self, thin: Policy) -> None:
        labelled = rows(HAMSTRING + OTHERS)
        for s in suggest(labelled, thin, limit=20):
            assert len(s.fixes) + len(s.to_rules) > len(s.breaks) and s.gain > 0
            after = apply_edits(thin, [s.edit])
            for r in labelled:
                was, now = route(r.question, thin, None).intent, route(r.question, after, None).intent
                if r.row in s.fixes:
                    assert was not in r.intents and now in r.intents, (s.edit, r)
                elif r.row in s.breaks:
                    assert was in r.intents and now not in r.intents, (s.edit, r)
                else:
                    assert (was in r.intents) == (now in r.intents), (s.edit, r)

    def test_same_input_same_output_in_the_same_order(self, thin: Policy) -> None:
        labelled = rows(HAMSTRING + OTHERS)
        assert suggest(labelled, thin) == suggest(list(labelled), thin)

    def test_a_term_that_routes_rows_wrong_is_proposed_for_removal_or_a_lower_weight(self, policy: Policy) -> None:
        vocabulary: dict[str, Any] = {i: {lang: dict(t) for lang, t in by.items()} for i, by in MINI_VOCABULARY.items()}
        vocabulary["nutrition"]["en"]["bar"] = 1.5  # a bar of chocolate, but also "the bar is closed", "a bar of pain"
        bad = with_vocabulary(policy, vocabulary)
        labelled = rows([("sharp pain like an iron bar in my shin", ["injury"]), ("bar pain in the knee", ["injury"]),
                         ("protein bar before a race?", ["nutrition"])])
        edits = [(s.edit.kind, s.edit.term) for s in suggest(labelled, bad)]
        assert ("remove", "bar") in edits or ("reweight", "bar") in edits

    def test_a_function_word_is_never_proposed(self, thin: Policy) -> None:
        labelled = rows([("is it still ok when it is like this", ["injury"]),
                         ("still the same when i do it", ["injury"])])
        assert not [s for s in suggest(labelled, thin) if s.edit.term in {"still", "when", "it", "is", "the"}]

    def test_a_romanised_hindi_function_word_is_never_proposed(self, thin: Policy) -> None:
        labelled = [dataclasses.replace(r, lang="hi") for r in rows([
            ("bhai aaj hamstring me kya hua hai", ["injury"]), ("aaj phir hamstring kyu kheench raha hai", ["injury"]),
            ("kya hamstring ke liye ice theek hai", ["injury"])])]
        terms = {s.edit.term for s in suggest(labelled, thin)}
        edges = {w for t in terms for w in (t.split()[0], t.split()[-1])}
        assert "hamstring" in terms
        assert not edges & {"aaj", "kya", "hai", "liye", "me", "ke", "hua", "raha"}, terms

    def test_a_chat_spelling_the_matcher_reads_as_a_function_word_is_never_proposed(self, thin: Policy) -> None:
        # the English stemmer reads "whats" as "what" and "hows" as "how": a term of either would
        # be a term of the function word
        labelled = rows([("whats this hamstring twinge", ["injury"]), ("whats up with my hamstring", ["injury"]),
                         ("hows a hamstring strain healed", ["injury"]), ("hows ice for a hamstring?", ["injury"])])
        terms = {s.edit.term for s in suggest(labelled, thin)}
        assert "hamstring" in terms
        assert not {t for t in terms if set(t.split()) & {"whats", "hows"}}, terms

    def test_a_word_met_as_often_with_two_labels_is_filed_under_the_rarer(self, thin: Policy) -> None:
        # nearly every question about a sore shin also asks whether to train: the shin is the injury
        labelled = rows([("shin splints flaring up", ["injury", "training"]),
                         ("shin splints again, ice?", ["injury", "training"]),
                         *OTHERS[:1], ("long run on sunday, how far", ["training"])])
        added = [s.edit for s in suggest(labelled, thin) if s.edit.kind == "add"]
        assert added and {e.intent for e in added if "shin" in e.term or "splints" in e.term} == {"injury"}

    def test_one_row_is_no_evidence_against_a_term_other_rows_use(self, thin: Policy) -> None:
        # removing "race" (training) fixes the hip row and breaks neither training row (both also
        # say "train"), but two of the three rows it meets are training rows
        labelled = rows([("hip pain after the race", ["injury"]), ("race day train plan", ["training"]),
                         ("train for a race in june", ["training"])])
        assert route(labelled[0].question, thin, None).intent == "training"
        assert not [s for s in suggest(labelled, thin) if s.edit.term == "race"]
        one_more = rows([("groin pain after the race", ["injury"])], start=4)
        assert ("remove", "race") in {(s.edit.kind, s.edit.term) for s in suggest(labelled + one_more, thin)}

    def test_a_japanese_piece_never_starts_with_kana(self) -> None:
        # "ど朝" is the end of けど (but) and the start of 朝 (morning): no word
        row = LabelledRow(1, "朝練したいけど朝は体が重い", ("training",), "ja")
        pieces = {term for _, term in phrases(row, tokenise(row.question))}
        assert {"朝練", "体が重"} <= pieces
        assert not {p for p in pieces if p[0] in "したいけどはがい"}, pieces

    def test_a_candidate_the_policy_would_refuse_is_never_offered(self, policy: Policy) -> None:
        # a Korean message without spaces is one long word; a Korean term has at most 16 characters
        # (an adversarial pass: the whole suggest run stopped on "invalid policy <suggested>")
        long_korean, long_latin = "가나다라마바사아자차카타파하거너더러머", "a" * 90
        labelled = [LabelledRow(1, long_korean, ("injury",), "ko"), LabelledRow(2, f"{long_latin} hurts", ("injury",), "en")]
        offered = {term for row in labelled for _, term in phrases(row, tokenise(row.question))}
        assert long_korean not in offered and not {t for t in offered if long_latin in t}
        assert "hurts" in offered
        suggest(labelled, policy)  # no PolicyError

    def test_a_long_row_offers_candidates_from_its_start_only(self) -> None:
        # a logged row of 2,000 characters of chat offered ~900 phrases, ~1.4 MB a row (adversarial pass)
        words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(MAX_OFFERING_WORDS + 30)]
        row = LabelledRow(1, " ".join(words), ("training",), "en")
        offered = {term for _, term in phrases(row, tokenise(row.question))}
        assert words[MAX_OFFERING_WORDS - 1] in offered and words[MAX_OFFERING_WORDS] not in offered
        han = LabelledRow(2, "膝" * MAX_OFFERING_CHARS + "痛" * 50, ("injury",), "ja")
        assert {term for _, term in phrases(han, tokenise(han.question))} == {"膝膝", "膝膝膝", "膝膝膝膝"}

    def test_a_romanised_word_is_filed_under_its_rows_language_and_an_english_word_under_english(self) -> None:
        # the policy keeps romanised Hindi under hi ("thakan", "neend"); "strength" is English in any row
        row = LabelledRow(1, "bhai aaj thakan hai, strength training skip kar du kya?", ("recovery", "training"), "hi")
        filed = {(lang, term) for lang, term in phrases(row, tokenise(row.question))}
        assert {("hi", "thakan"), ("en", "strength"), ("en", "strength training")} <= filed
        assert not {term for lang, term in filed if lang == "en" and "thakan" in term}, filed

    def test_a_romanised_term_routes_an_unseen_question_the_detector_reads_as_another_language(
            self, thin: Policy) -> None:
        labelled = [LabelledRow(1, "bhai kal se bahut kamzori hai", ("recovery",), "hi"),
                    LabelledRow(2, "kamzori ke baad aaram karun kya", ("recovery",), "hi")]
        learned, edits = learn(labelled, thin)
        assert {(e.intent, e.language, e.term) for e in edits} >= {("recovery", "hi", "kamzori")}
        unseen = "kamzori lag rahi hai aaj"  # detected as Italian by its everyday words
        assert route(unseen, thin, None).intent != "recovery"
        assert route(unseen, learned, None).intent == "recovery"

    def test_a_word_read_only_as_a_misspelling_can_get_its_own_term(self, policy: Policy) -> None:
        vocabulary: dict[str, Any] = {i: {lang: dict(t) for lang, t in by.items()} for i, by in MINI_VOCABULARY.items()}
        vocabulary["recovery"]["en"]["cooked"] = 1.0  # "I'm cooked": exhausted
        misread = with_vocabulary(policy, vocabulary)
        labelled = rows([("corked my thigh again", ["injury"]), ("corked quad, ice or not", ["injury"])])
        assert all(route(r.question, misread, None).intent == "recovery" for r in labelled)  # corked ~ cooked
        top = suggest(labelled, misread, limit=1)[0]
        assert (top.edit.kind, top.edit.intent, top.edit.term) == ("add", "injury", "corked")
        assert sorted(top.fixes) == [1, 2]

    def test_a_models_label_counts_half(self, thin: Policy) -> None:
        found = suggest(rows(HAMSTRING, origin="model"), thin, limit=1)
        assert found[0].edit.term == "hamstring" and found[0].gain == pytest.approx(2.0)

    def test_applying_learned_edits_never_lowers_accuracy_on_rows_it_did_not_see(self, thin: Policy,
                                                                                 full: Policy) -> None:
        seen = rows(HAMSTRING[:3] + OTHERS)
        unseen = rows([("hamstring cramps at night", ["injury"]), ("sore hamstring after the race", ["injury"]),
                       ("what should i eat after a long run", ["nutrition"]), ("tired, recovery please", ["recovery"])],
                      start=100)
        learned, edits = learn(seen, thin, max_edits=10)
        assert edits

        def accuracy(p: Policy) -> float:
            return sum(route(r.question, p, None).intent in r.intents for r in unseen) / len(unseen)

        assert accuracy(learned) >= accuracy(thin)


class TestLearn:
    def test_a_word_an_intents_rows_share_is_reinforced_though_a_ruled_row_becomes_unsure(
            self, policy: Policy) -> None:
        vocabulary: dict[str, Any] = {i: {lang: dict(t) for lang, t in by.items()} for i, by in MINI_VOCABULARY.items()}
        del vocabulary["recovery"]["en"]["sleep"]
        no_sleep = with_vocabulary(policy, vocabulary)
        labelled = rows([("sleep badly before the race", ["recovery", "training"]),
                         ("sleep ok, train tomorrow?", ["recovery", "training"]), ("long interval session", ["training"])])
        assert all(route(r.question, no_sleep, None).source == "rules" for r in labelled)
        sleep = Edit("add", "recovery", "en", "sleep", LEARN_DEFAULTS.reinforce_weight)
        learned, edits = learn(labelled, no_sleep)
        assert sleep in edits  # a model call on the first two rows; the same route without one
        assert all(route(r.question, learned, None).intent in r.intents for r in labelled)
        kept = dataclasses.replace(LEARN_DEFAULTS, reinforce_keeps_rules=True)
        assert sleep not in learn(labelled, no_sleep, settings=kept)[1]


class TestReading:
    def test_corpus_yaml_jsonl_and_model_routes(self, tmp_path: Path) -> None:
        y = tmp_path / "labels.yaml"
        y.write_text("questions:\n  - {q: hamstring twinge, intents: [injury], lang: en}\n", encoding="utf-8")
        assert read_labelled(y) == [LabelledRow(1, "hamstring twinge", ("injury",), "en", "coach")]
        j = tmp_path / "labels.jsonl"
        j.write_text("\n".join(json.dumps(o) for o in [
            {"question": "hamstring twinge", "intents": ["injury"], "origin": "coach"},
            {"question": "hammy", "model_label": "injury"},
            {"question": "thanks", "intent": {"name": "general", "source": "rules"}},   # a rules route: no label
            {"question": "tight hammy", "intent": {"name": "injury", "source": "model"}},
        ]) + "\n", encoding="utf-8")
        got = read_labelled(j)
        assert [(r.row, r.question, r.intents, r.origin) for r in got] == [
            (1, "hamstring twinge", ("injury",), "coach"), (2, "hammy", ("injury",), "model"),
            (4, "tight hammy", ("injury",), "model")]

    def test_a_csv_model_label_column_is_a_model_label_and_a_coachs_intents_win(self, tmp_path: Path) -> None:
        c = tmp_path / "log.csv"
        c.write_text("question,intents,model_label,lang\nhamstring twinge,injury,training,en\n"
                     "tight hammy,,injury,\nthanks,,,\n", encoding="utf-8")
        assert read_labelled(c) == [LabelledRow(1, "hamstring twinge", ("injury",), "en", "coach"),
                                    LabelledRow(2, "tight hammy", ("injury",), None, "model")]
        c.write_text("question,model_label\nhammy,injuri\n", encoding="utf-8")
        with pytest.raises(InputError, match=r"log\.csv: row 1: unknown intent 'injuri'"):
            read_labelled(c)
        c.write_text('question,intents\nhammy,injury\n"unclosed,injury\nquad,injury\n', encoding="utf-8")
        with pytest.raises(InputError, match=r"^.*log\.csv: row 2: line 3: not valid CSV: a quoted cell opened on "
                                             r"this line is never closed$"):
            read_labelled(c)

    @pytest.mark.parametrize(("text", "message"), [
        ('{"question": "a", "intents": ["injury"]}\n{"question": "b", "intents": ["injuri"]}\n',
         r"line 2: unknown intent 'injuri'"),
        ('{"question": "a", "intents": ["injury"]}\nnot json\n', r"line 2: column 1: not valid JSON: Expecting value$"),
        ('{"question": "", "intents": ["injury"]}\n', r"line 1: no question"),
        ('{"question": "a", "intents": ["injury"], "origin": "robot"}\n', r"row 1: origin must be coach or model"),
        ('{"question": "a"}\n', r"no labelled rows"),
        ('{"question": "a", "intents": ["injury"], "needs": ["nonesuch"]}\n', r"line 1: needs: unknown fragment 'nonesuch'"),
        ('{"q": "knee pain", "question": "eat", "intents": ["injury"]}\n',
         r"line 1: both `question` and `q` are given \(which one is meant\?\)"),
        ('question,intents,intents\nknee pain,injury,training\n', r"line 1: the column 'intents' appears twice"),
    ], ids=["unknown-intent", "not-json", "empty-question", "bad-origin", "no-labels", "unknown-need", "question-and-q",
            "column-twice"])
    def test_a_bad_log_names_the_line(self, tmp_path: Path, text: str, message: str) -> None:
        log = tmp_path / ("log.jsonl" if text.startswith("{") else "log.csv")
        log.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=message):
            read_labelled(log)


class TestCommand:
    def test_suggest_prints_edits_with_their_evidence(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "log.jsonl"
        log.write_text("".join(json.dumps({"question": q, "intents": i}) + "\n" for q, i in HAMSTRING + OTHERS),
                       encoding="utf-8")
        assert main(["suggest", str(log), "--max", "3", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["rows"] == len(HAMSTRING + OTHERS) and len(doc["suggestions"]) <= 3
        for s in doc["suggestions"]:
            assert s["gain"] > 0 and all({"row", "question", "labels", "origin"} <= set(f) for f in s["fixes"])

    def test_a_question_labelled_two_ways_is_shown_beside_the_suggestions(
            self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The same words labelled injury in some rows and training in others: no edit can route it
        both ways, and a suggestion fixing one side says nothing of the other."""
        rows = [("glute medius is grumbling, can I still do hills?", ["injury"], "coach")] * 3 + [
            ("Glute medius is grumbling - can I still do HILLS", ["training"], "coach"),
            ("glute medius is grumbling, can I still do hills?", ["training"], "model"),
            ("what should I eat before a race", ["nutrition"], "coach"), ("what should I eat before a race",
                                                                          ["nutrition"], "coach")]
        log = tmp_path / "log.jsonl"
        log.write_text("".join(json.dumps({"question": q, "intents": i, "origin": o}) + "\n" for q, i, o in rows),
                       encoding="utf-8")
        assert main(["suggest", str(log), "--max", "1"]) == 0
        out = capsys.readouterr().out
        assert "1 question(s) labelled differently in different rows" in out
        assert "injury: 3 rows (1, 2, 3); training: 1 row (4); training by a model: 1 row (5)" in out
        assert main(["suggest", str(log), "--max", "1", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["conflicts"] == [
            [{"row": n, "intents": i, "origin": o} for n, (_, i, o) in enumerate(rows[:5], 1)]]

    def test_questions_without_words_are_one_question_only_when_their_text_is(self) -> None:
        """Emoji alone have no words to compare: "🏃" and "😴" are two questions (all such rows
        were once one conflicting question), "🏃" twice is one."""
        rows = [LabelledRow(n, q, (intent,)) for n, (q, intent) in enumerate(
            [("🏃", "training"), ("😴", "recovery"), ("🏃", "injury"), ("🏃 ", "training")], 1)]
        assert [[r.row for r in group] for group in conflicting_labels(rows)] == [[1, 3, 4]]

    @pytest.mark.parametrize("value", ["0", "201", "x", "1e3"])
    def test_max_is_a_bounded_whole_number(self, tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "log.jsonl"
        log.write_text('{"question": "a", "intents": ["injury"]}\n', encoding="utf-8")
        with pytest.raises(SystemExit) as e:
            main(["suggest", str(log), "--max", value])
        assert e.value.code == 2 and "--max" in capsys.readouterr().err

    def test_a_bad_log_is_one_line_and_exit_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "log.jsonl"
        log.write_text('{"question": "a", "intents": ["nope"]}\n', encoding="utf-8")
        assert main(["suggest", str(log)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "line 1: unknown intent 'nope'" in err


def test_edit_describes_itself() -> None:
    assert Edit("add", "injury", "en", "hammy", 1.0).describe() == "add 'hammy': 1 to vocabulary.injury.en"
    assert Edit("remove", "nutrition", "en", "bar", None, 1.5).describe() == "remove 'bar' (1.5) from vocabulary.nutrition.en"


# --- a model's decisions are labels too (real OpenAI SDK over HTTP to a local server) -------------

UNMATCHED = "that thing from yesterday is back"
"""No vocabulary term matches it: the rules are unsure, so a configured model is asked."""


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    server = ChatServer().start()
    server.behaviour = ChatBehaviour(content="injury")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    try:
        yield server
    finally:
        server.stop()


def explain_json(question: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["explain", question, "--athlete", "maya", "--json", *extra]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


class TestModelLabels:
    def test_an_explain_json_line_routed_by_the_model_is_a_model_label(
            self, model: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        routed = explain_json(UNMATCHED, capsys)
        assert routed["intent"]["source"] == "model" and model.requests, "the model was not asked"
        ruled = explain_json("How hard should tonight's interval session be?", capsys)
        assert ruled["intent"]["source"] == "rules"
        log = tmp_path / "decisions.jsonl"
        log.write_text("".join(json.dumps(d) + "\n" for d in (ruled, routed)), encoding="utf-8")
        assert read_labelled(log) == [LabelledRow(2, UNMATCHED, ("injury",), None, "model")]

    def test_a_trace_file_and_trace_lines_routed_by_the_model_are_model_labels(
            self, model: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        trace = tmp_path / "t.json"
        explain_json(UNMATCHED, capsys, "--trace-out", str(trace))
        doc = json.loads(trace.read_text(encoding="utf-8"))
        assert doc["decision"]["intent"]["source"] == "model"
        assert read_labelled(trace) == [LabelledRow(1, UNMATCHED, ("injury",), None, "model")]
        lines = tmp_path / "traces.jsonl"
        lines.write_text(json.dumps(doc) + "\n" + json.dumps(doc) + "\n", encoding="utf-8")
        assert [(r.row, r.origin, r.weight) for r in read_labelled(lines)] == [(1, "model", 0.5), (2, "model", 0.5)]

    def test_a_model_label_column_feeds_suggest_at_half_a_coachs_weight(self, thin: Policy, tmp_path: Path) -> None:
        coach, models = tmp_path / "coach.jsonl", tmp_path / "model.jsonl"
        coach.write_text("".join(json.dumps({"question": q, "intents": i}) + "\n" for q, i in HAMSTRING),
                         encoding="utf-8")
        models.write_text("".join(json.dumps({"question": q, "model_label": i[0]}) + "\n" for q, i in HAMSTRING),
                          encoding="utf-8")
        by_coach, by_model = suggest(read_labelled(coach), thin, limit=1), suggest(read_labelled(models), thin, limit=1)
        assert by_coach[0].edit == by_model[0].edit and by_coach[0].edit.term == "hamstring"
        assert by_model[0].gain == pytest.approx(by_coach[0].gain / 2)

    def test_a_trace_with_a_bad_model_intent_names_the_line(self, tmp_path: Path) -> None:
        log = tmp_path / "traces.jsonl"
        good = {"decision": {"question": "a", "intent": {"name": "injury", "source": "model"}}}
        bad = {"decision": {"question": "b", "intent": {"name": "injuri", "source": "model"}}}
        log.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=r"traces\.jsonl: line 2: unknown intent 'injuri'"):
            read_labelled(log)
