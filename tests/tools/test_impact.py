"""Impact analysis: reading question sets, the fast path pinned to select(), metrics, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coachctx.cli import main
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, load_policy, policy_to_yaml, validate_policy
from coachctx.engine.services import Bundle
from coachctx.errors import InputError
from coachctx.tools.impact import run_impact
from coachctx.tools.impact_report import render_impact
from coachctx.tools.questions import Question, QuestionSet, parse_questions, read_questions
from coachctx.tools.store import PolicyStore

ROOT = Path(__file__).resolve().parents[2]
DEV_QUESTIONS = ROOT / "tests" / "data" / "questions" / "dev.yaml"
SMALL = ROOT / "tests" / "data" / "small.yaml"

# beyond dev.yaml: languages and shapes it lacks (Korean prefixes, Portuguese, Italian, phrases)
EXTRA = [
    "무릎이 아픈데 달려도 될까요?", "Posso treinar hoje com dor no joelho?", "Quanto devo mangiare prima della gara?",
    "Should I run a long run in this heat next week?", "thank you", "!!!", "ok 123",
    "I slept badly, is a tempo run today a good idea?", "Je dois courir demain, il fait très chaud",
]


def worse(policy: Policy) -> Policy:
    """The checked-in policy with readiness_nutrition dropped from nutrition's primary list (a
    clinical question keeps readiness_injury whatever the lists say, so that one cannot be lost)."""
    data = policy.model_dump(mode="json")
    data["intents"]["nutrition"]["primary"].remove("readiness_nutrition")
    return validate_policy(data)


def decided(d: Any) -> tuple[Any, ...]:
    return (d.intent.name, d.intent.source, tuple(d.intent.contenders), d.scope.effective, d.selected,
            tuple((w.fragment, w.reason) for w in d.withheld), d.tokens.prompt)


class TestReading:
    def test_the_dev_set(self) -> None:
        qs = read_questions(DEV_QUESTIONS)
        assert len(qs.questions) == 27 and qs.skipped == ()
        first = qs.questions[0]
        assert (first.row, first.intents, first.needs, first.expected_scope, first.scope) == (
            1, ("training",), ("readiness_training",), "today", "auto")
        assert qs.questions[-1].needs == () and qs.questions[-1].intents == ("general",)

    def test_jsonl_log_with_optional_columns(self) -> None:
        text = "\n".join([
            json.dumps({"question": "Is a nap good?", "athlete": "kenji", "scope": "today", "tier": "free"}),
            "",
            json.dumps({"q": "thanks!"}),
            json.dumps({"question": "  "}),
            "{not json",
            json.dumps({"question": "hi", "scope": "tomorrow"}),
            json.dumps(["a list"]),
            json.dumps({"questoin": "typo in the key"}),
        ])
        qs = parse_questions(text, "jsonl", "log.jsonl")
        assert [(q.row, q.question, q.athlete, q.scope, q.tier) for q in qs.questions] == [
            (1, "Is a nap good?", "kenji", "today", "free"), (3, "thanks!", None, "auto", None)]
        assert [row for row, _ in qs.skipped] == [4, 5, 6, 7, 8]
        assert qs.skipped[0] == (4, "the question is empty")
        assert qs.skipped[4] == (8, "no question: the row has no `question` (or `q`); it has ['questoin']")
        assert qs.skipped[2][1] == "unknown scope 'tomorrow'; use one of: auto, today, week, months"

    def test_a_name_written_twice_is_one(self) -> None:
        """`needs: [readiness_injury, readiness_injury]` counted the need twice: recall 0 of 2 (a fifth pass)."""
        qs = parse_questions(json.dumps({"q": "knee?", "intents": ["injury", "injury"],
                                         "needs": ["readiness_injury", "readiness_injury"]}), "jsonl", "l.jsonl")
        assert (qs.questions[0].intents, qs.questions[0].needs) == (("injury",), ("readiness_injury",))

    def test_csv_with_labels(self) -> None:
        text = ("Question,athlete,intents,needs\n"
                "Should I train through this pain?,maya,training;injury,readiness_training readiness_injury\n"
                "thanks!,,general,\n"
                "What about my knee?,tom,injuri,\n"
                "And my hip?,tom,injury,readiness_hip\n")
        qs = parse_questions(text, "csv", "log.csv")
        assert [(q.question, q.athlete, q.intents, q.needs) for q in qs.questions] == [
            ("Should I train through this pain?", "maya", ("training", "injury"),
             ("readiness_training", "readiness_injury")),
            ("thanks!", None, ("general",), ())]
        assert qs.skipped == ((3, "intents: unknown intent 'injuri'"), (4, "needs: unknown fragment 'readiness_hip'"))

    def test_an_unclosed_quote_costs_its_own_row_named_by_the_line_it_opened_on(self) -> None:
        text = "question,athlete\nrun today,maya\n\"unterminated quote,maya\n" + "".join(
            f"question {i},maya\n" for i in range(10))
        qs = parse_questions(text, "csv", "swallow.csv")
        assert [q.question for q in qs.questions] == ["run today"] + [f"question {i}" for i in range(10)]
        assert qs.skipped == ((2, "line 3: not valid CSV: a quoted cell opened on this line is never closed"),)

    def test_a_quote_closed_lines_later_is_skipped_and_the_lines_it_swallowed_are_read(self) -> None:
        text = 'question,athlete\n"opened,maya\nsecond,tom\n"closed" late,maya\nlast,omar\n'
        qs = parse_questions(text, "csv", "log.csv")
        assert [(q.question, q.athlete) for q in qs.questions] == [("second", "tom"), ("last", "omar")]
        assert qs.skipped == (
            (1, "line 2: not valid CSV: a quoted cell opened on this line runs to line 4, where text follows its "
                'closing quote (an unclosed quote?); inside a quoted cell write a quote as ""'),
            (3, "line 4: not valid CSV: text follows the closing quote of a cell; inside a quoted cell write a "
                'quote as ""'))

    def test_a_stray_quote_or_an_extra_cell_skips_the_row_and_a_quoted_newline_or_empty_extra_cell_is_kept(
            self) -> None:
        text = ('question,athlete\n"a"b,maya\nok,maya,extra\nfine,maya,,\n'
                '"two\nlines, ""quoted""",tom\n\nsaid 5" today,ines\n')
        qs = parse_questions(text, "csv", "log.csv")
        assert [(q.row, q.question, q.athlete) for q in qs.questions] == [
            (3, "fine", "maya"), (4, 'two\nlines, "quoted"', "tom"), (5, 'said 5" today', "ines")]
        assert qs.skipped == (
            (1, 'line 2: not valid CSV: text follows the closing quote of a cell; inside a quoted cell write a '
                'quote as ""'),
            (2, "line 3: 3 cells but the header names 2 columns (the extra 'extra' would be lost)"))

    @pytest.mark.parametrize(("name", "text", "match"), [
        ("log.csv", "text,athlete\nhello,maya\n", r"^log\.csv: no `question` \(or `q`\) column; the header has: text, athlete$"),
        ("log.csv", "\ufeff\ufeffquestion\nknee pain\n", r"^log\.csv: no `question` \(or `q`\) column; the header has: "
                                                    r"\\ufeffquestion \(it starts with a byte order mark, U\+FEFF: the "
                                                    r"file has two\?\)$"),
        ("log.txt", "hello", r"^log\.txt: unknown question set format '\.txt'; use one of \.yaml, \.yml, \.jsonl"),
        ("set.yaml", "questions: 3", r"^set\.yaml: expected a list of questions"),
        ("set.yaml", "questions: [{q: ''}]", r"^set\.yaml: no questions found \(row 1: the question is empty\)$"),
        ("set.yaml", "questions: [", r"^set\.yaml: not valid YAML"),
    ])
    def test_unusable_files(self, tmp_path: Path, name: str, text: str, match: str) -> None:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=match.replace(name.replace(".", r"\."), ".*" + name.replace(".", r"\."), 1)):
            read_questions(path)

    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(InputError, match=r"nope\.jsonl: no such file$"):
            read_questions(tmp_path / "nope.jsonl")


class TestSameAsSelect:
    """The fast path must decide exactly as select() does (without a model)."""

    def check(self, questions: list[Question], policy: Policy, bundles: dict[str, Bundle]) -> None:
        report = run_impact(questions, policy, policy)
        assert report.skipped == () and len(report.rows) == len(questions)
        for row in report.rows:
            q = row.question
            d = select(q.question, bundles[row.athlete], policy, scope=q.scope, tier=row.tier)
            assert (row.base.intent, row.base.source, row.base.contenders, row.base.scope, row.base.selected,
                    row.base.withheld, row.base.tokens) == decided(d), q.question
            assert row.base == row.candidate and not row.changed

    def test_every_athlete(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        texts = [q.question for q in read_questions(DEV_QUESTIONS).questions] + EXTRA
        self.check([Question(i, t, athlete=a) for i, t in enumerate(texts) for a in bundles], policy, bundles)

    def test_every_scope_and_tier(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        texts = [q.question for q in read_questions(DEV_QUESTIONS).questions] + EXTRA
        self.check([Question(i, t, scope=s, tier=tier) for i, t in enumerate(texts)
                    for s in ("auto", "today", "week", "months") for tier in ("free", "paid")], policy, bundles)

    def test_a_policy_with_another_vocabulary(self, bundles: dict[str, Bundle]) -> None:
        small = load_policy(SMALL)
        texts = [q.question for q in read_questions(DEV_QUESTIONS).questions] + EXTRA
        self.check([Question(i, t) for i, t in enumerate(texts)], small, bundles)


class TestReport:
    def test_dropping_a_primary_shows_in_needs_recall(self, policy: Policy) -> None:
        report = run_impact(read_questions(DEV_QUESTIONS), policy, worse(policy), candidate_name="worse")
        b, c = report.base_metrics, report.candidate_metrics
        assert b.needs_total == c.needs_total > 0
        assert c.needs_met < b.needs_met
        assert c.needs_recall is not None and b.needs_recall is not None and c.needs_recall < b.needs_recall
        lost = [r for r in report.changed_rows() if "-readiness_nutrition" in r.changes]
        assert lost and all("nutrition" in r.base.contenders for r in lost)
        assert "How much protein per day?" in {r.question.question for r in lost}
        # the routes did not change, only what injury questions see
        assert b.route_correct == c.route_correct and b.confusion == c.confusion
        assert report.summary()["intent_changed"] == 0
        assert report.summary()["changed"] == len(report.changed_rows()) < len(report.rows)

    def test_metrics_on_a_small_labelled_set(self) -> None:
        small = load_policy(SMALL)
        qs = [Question(1, "I want to train hard", intents=("training",), needs=("readiness_training",)),
              Question(2, "my knee is an injury", intents=("injury",), needs=("readiness_injury", "chronotype")),
              Question(3, "thanks", intents=("recovery",), needs=()),
              Question(4, "hello there", expected_scope="today"),
              Question(5, "train today", expected_scope="today")]
        m = run_impact(qs, small, small).base_metrics
        assert (m.questions, m.route_labelled, m.route_correct) == (5, 3, 2)
        assert (m.needs_total, m.needs_met, m.needs_rows, m.needs_rows_met) == (3, 2, 3, 2)
        assert (m.scope_labelled, m.scope_correct) == (2, 1)
        assert m.confusion["training"]["training"] == m.confusion["injury"]["injury"] == 1
        assert m.confusion["recovery"]["general"] == 1
        assert sum(sum(row.values()) for row in m.confusion.values()) == 3

    def test_undecidable_rows_are_skipped_with_reasons(self, policy: Policy) -> None:
        no_free = policy.model_dump(mode="json")
        del no_free["tiers"]["free"]
        qs = QuestionSet("log", (Question(1, "hi", athlete="nobody"), Question(2, "hi", tier="free"),
                                 Question(3, "hi")), skipped=((9, "the question is empty"),))
        report = run_impact(qs, policy, validate_policy(no_free))
        assert [r.question.row for r in report.rows] == [3]
        assert report.skipped == ((1, "unknown athlete 'nobody'"), (2, "unknown tier 'free' in candidate"),
                                  (9, "the question is empty"))

    def test_progress_is_reported_to_the_end(self, policy: Policy) -> None:
        calls: list[tuple[int, int]] = []
        qs = [Question(i, f"question {i} about sleep") for i in range(250)]
        run_impact(qs, policy, policy, progress=lambda done, total: calls.append((done, total)))
        assert calls[-1] == (250, 250) and len(calls) <= 101
        assert [d for d, _ in calls] == sorted(d for d, _ in calls)

    def test_text_and_json(self, policy: Policy) -> None:
        report = run_impact(read_questions(DEV_QUESTIONS), policy, worse(policy), base_name="default",
                            candidate_name="worse")
        text = render_impact(report, changed_only=True)
        assert text.splitlines()[0].startswith("impact of worse (") and " against default (" in text
        assert "needs recall" in text and "confusion, candidate" in text
        assert "questions (changed only, " in text and "    changed    -readiness_nutrition" in text
        assert "    same  " not in text
        data = report.to_json(changed_only=True)
        assert data["summary"]["changed"] == len(data["rows"]) > 0
        assert all(row["changed"] for row in data["rows"])
        assert data["metrics"]["candidate"]["needs_recall"] < data["metrics"]["base"]["needs_recall"]
        assert len(report.table()) == 27 and len(report.table(changed_only=True)) == len(data["rows"])


class TestCommand:
    def test_files_and_store_versions(self, policy: Policy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        url = f"sqlite:///{tmp_path}/s.sqlite"
        with PolicyStore(url) as store:
            store.save(policy_to_yaml(policy), message="as checked in", author="ana", label="live")
        bad = tmp_path / "worse.yaml"
        bad.write_text(policy_to_yaml(worse(policy)), encoding="utf-8")
        code = main(["impact", str(DEV_QUESTIONS), "--base", "live", "--candidate", str(bad), "--store", url, "--json",
                     "--changed-only"])
        out = capsys.readouterr().out
        assert code == 0
        data = json.loads(out)
        assert (data["base"]["name"], data["candidate"]["name"]) == ("store:live", str(bad))
        assert data["metrics"]["candidate"]["needs_met"] < data["metrics"]["base"]["needs_met"]
        assert main(["impact", str(DEV_QUESTIONS), "--base", "1", "--candidate", "live", "--store", url]) == 0
        assert "0 changed" in capsys.readouterr().out

    @pytest.mark.parametrize(("argv", "message"), [
        (["impact", "missing.yaml", "--base", "policy/default.yaml", "--candidate", "policy/default.yaml"],
         r"^coachctx: missing\.yaml: no such file$"),
        (["impact", str(DEV_QUESTIONS), "--base", "live", "--candidate", "policy/default.yaml"],
         r"^coachctx: no version or label 'live' in the store \(labels: none yet\)$"),
        (["impact", str(DEV_QUESTIONS), "--base", "policy/default.yaml", "--candidate", "nowhere.yaml"],
         r"^coachctx: invalid policy nowhere\.yaml: no such file$"),
    ])
    def test_bad_input_exits_2_with_one_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        PolicyStore(f"sqlite:///{tmp_path}/s.sqlite").close()  # empty, not missing: a missing store is refused first
        code = main([*argv, "--store", f"sqlite:///{tmp_path}/s.sqlite"])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert len(err.splitlines()) == 1 and re.match(message, err), err


class TestArguments:
    """`run_impact` took arguments of the wrong kind as they came: tracebacks, and `changed_only="no"`
    read as true, `cost_mode="x"` accepted (an adversarial pass). Each is an InputError naming it."""

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"questions": None}, "questions: expected a QuestionSet or a sequence of Question"),
        ({"questions": ["knee pain"]}, "questions: expected a QuestionSet or a sequence of Question"),
        ({"questions": "knee pain"}, "questions: expected a QuestionSet or a sequence of Question"),
        ({"base": "policy/default.yaml"}, "base: expected a Policy"),
        ({"candidate": None}, "candidate: expected a Policy"),
        ({"default_athlete": 5}, "default_athlete: 5 is not an athlete id"),
        ({"cost_mode": "x"}, "cost_mode: unknown cost mode 'x'"),
        ({"upstream": "x"}, "upstream: expected an Upstream"),
        ({"jobs": 10**9}, "jobs must be a whole number from 1 to 256"),
        ({"jobs": True}, "jobs must be a whole number from 1 to 256"),
        ({"progress": 5}, "progress: expected a function of (done, total)"),
        ({"changed_only": "no"}, "changed_only: expected True or False, got 'no'"),
        ({"base_name": "x" * 10**6}, "base_name: expected a name of 1 to 1,000 characters"),
    ], ids=["none", "strings", "a_string", "base_path", "candidate_none", "athlete_int", "cost_mode", "upstream",
            "jobs_huge", "jobs_bool", "progress", "changed_only", "base_name"])
    def test_an_argument_of_the_wrong_kind_is_refused_by_name(self, policy: Policy, kwargs: dict[str, Any],
                                                             message: str) -> None:
        args = {"questions": parse_questions('{"question": "knee pain"}\n', "jsonl"), "base": policy,
                "candidate": policy, **kwargs}
        with pytest.raises(InputError) as refused:
            run_impact(args.pop("questions"), args.pop("base"), args.pop("candidate"), **args)
        assert str(refused.value).startswith(message) and len(str(refused.value)) < 400

    def test_the_right_kinds_still_run(self, policy: Policy) -> None:
        questions = parse_questions('{"question": "knee pain"}\n', "jsonl")
        report = run_impact(list(questions.questions), policy, policy, changed_only=False, cost_mode="measured",
                            progress=lambda done, total: None, jobs=1)
        assert len(report.rows) == 1
