"""Hostile inputs to everything coachctx reads: files that are not files, files that never end,
documents that expand or nest without bound, names that are paths, and command-line arguments that
are not numbers or not text. (What a policy may hold: test_robustness_policy_values.py; the store's
arguments: test_robustness_store.py.)

Every case runs under a time bound. A refusal is asserted as the user sees it: exit code 2 and
one line on stderr starting `coachctx: ` (no traceback) from the CLI, or the exception and its
message from the library; and nothing new on disk. A valid input next to each class shows the
limit does not refuse what it should not."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from robustness_support import PAIN, Run

from coachctx.engine.services import SAMPLE_ATHLETES_DIR, FixtureUpstream
from coachctx.errors import InputError, TraceError
from coachctx.reading import MAX_JSON_DEPTH, ReadError, parse_json, read_bytes, read_text
from coachctx.tools.questions import MAX_LINE_BYTES, parse_questions, read_questions
from coachctx.tools.trace import MAX_TRACE_BYTES, parse_trace, read_trace

ATHLETES = "ines, kenji, lucia, maya, omar, priya, tom"


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    yield path


@pytest.fixture
def pain_trace(cli: Run, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("trace") / "t.json"
    code, _, _ = cli("explain", PAIN, "--athlete", "maya", "--trace-out", str(out), "--json")
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


# --- 1. the bounded reader: only regular files, sizes counted while reading -------------------


class TestNotAFile:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("command", [
        ("check-policy", "{p}"),
        ("explain", PAIN, "--athlete", "maya", "--policy", "{p}"),
        ("replay", "{p}"),
        ("policy", "save", "{p}", "-m", "from a pipe"),
        ("policy", "diff", "{p}", "policy/default.yaml"),
    ], ids=["check-policy", "explain", "replay", "policy-save", "policy-diff"])
    def test_a_fifo_is_refused_at_once_never_waited_on(self, refused: Callable[..., str], fifo: Path,
                                                        command: tuple[str, ...]) -> None:
        line = refused(*(a.format(p=fifo) for a in command))
        assert f"{fifo}: is a FIFO (named pipe), expected a" in line

    @pytest.mark.timeout(10)
    def test_a_fifo_question_log_is_refused(self, refused: Callable[..., str], tmp_path: Path) -> None:
        log = tmp_path / "log.jsonl"
        os.mkfifo(log)
        line = refused("impact", str(log), "--base", "policy/default.yaml", "--candidate", "policy/default.yaml")
        assert line == f"coachctx: {log}: is a FIFO (named pipe), expected a question set file"

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("command", [
        ("check-policy", "{p}"),
        ("replay", "{p}"),
        ("impact", "{p}", "--base", "policy/default.yaml", "--candidate", "policy/default.yaml"),
        ("explain", PAIN, "--athlete", "maya", "--policy", "{p}"),
    ], ids=["check-policy", "replay", "impact", "explain"])
    def test_dev_zero_is_refused_not_read_forever(self, refused: Callable[..., str], tmp_path: Path,
                                                  command: tuple[str, ...]) -> None:
        zero = tmp_path / "zero.jsonl"  # a suffix impact accepts, pointing at a device that never ends
        zero.symlink_to("/dev/zero")
        line = refused(*(a.format(p=zero) for a in command))
        assert f"{zero}: is a character device, expected a" in line

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("command", [("check-policy", "{p}"), ("replay", "{p}"),
                                         ("impact", "{p}", "--base", "1", "--candidate", "1")],
                             ids=["check-policy", "replay", "impact"])
    def test_a_directory_is_refused(self, refused: Callable[..., str], tmp_path: Path,
                                    command: tuple[str, ...]) -> None:
        folder = tmp_path / "set.yaml"
        folder.mkdir()
        assert f"{folder}: is a directory, expected a" in refused(*(a.format(p=folder) for a in command))

    @pytest.mark.timeout(5)
    def test_the_size_is_counted_while_reading_not_taken_from_stat(self) -> None:
        """/proc files say they are 0 bytes long and are not."""
        status = Path("/proc/self/status")
        assert status.stat().st_size == 0
        with pytest.raises(ReadError, match=r"^/proc/self/status: file is more than 64 bytes; the limit is 64$"):
            read_bytes(status, 64)
        assert len(read_bytes(status, 1 << 20)) > 64

    @pytest.mark.timeout(5)
    def test_a_sparse_trace_over_the_limit_is_refused_before_reading(self, tmp_path: Path) -> None:
        trace = tmp_path / "big.json"
        with trace.open("wb") as f:
            f.truncate(MAX_TRACE_BYTES + 1)  # no disk used, nothing read
        with pytest.raises(TraceError, match=rf"big\.json: file is {MAX_TRACE_BYTES + 1} bytes; the limit is"):
            read_trace(trace)

    @pytest.mark.timeout(5)
    def test_a_file_that_is_not_utf8_names_line_and_column(self, tmp_path: Path) -> None:
        path = tmp_path / "log.csv"
        path.write_bytes(b"question\nhow far today\nr\xe9cup\xe9ration?\n")
        with pytest.raises(InputError, match=r"log\.csv: line 3, column 2: not UTF-8 text \(byte 24\)$"):
            read_questions(path)

    @pytest.mark.timeout(5)
    def test_a_jsonl_row_that_is_not_utf8_is_skipped_alone(self, tmp_path: Path) -> None:
        """A log is many rows: one bad byte costs its row, as a row of bad JSON does."""
        path = tmp_path / "log.jsonl"
        path.write_bytes(b'{"question": "how far today"}\n{"question": "r\xe9cup\xe9ration?"}\n'
                         b'{"question": "\\udc80 escaped, not a byte"}\n{"question": "rest day?"}\n')
        got = read_questions(path)
        assert [q.question for q in got.questions] == ["how far today", "rest day?"]
        assert got.skipped[0] == (2, "not UTF-8 text (column 16)")
        assert got.skipped[1][0] == 3 and "surrogate" in got.skipped[1][1]

    @pytest.mark.timeout(10)
    def test_a_jsonl_line_longer_than_a_row_is_skipped_unread(self, tmp_path: Path) -> None:
        """One emoji in a 500 MB line made the log 4 bytes a character in memory, twice over (7 GB
        peak, an adversarial pass): a line longer than any row is skipped before it is decoded."""
        path = tmp_path / "log.jsonl"
        long_line = '{"question": "\U0001F3C3' + "a" * MAX_LINE_BYTES + '"}'
        path.write_text(f'{{"question": "how far today"}}\n{long_line}\r\n{{"question": "rest day?"}}\n', encoding="utf-8")
        got = read_questions(path)
        assert [q.question for q in got.questions] == ["how far today", "rest day?"]
        assert got.skipped == ((2, "the line is longer than 1,048,576 bytes, more than a row of a log holds"),)

    @pytest.mark.timeout(10)
    def test_a_csv_line_longer_than_a_row_refuses_the_file_naming_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "log.csv"
        path.write_text(f'question\nhow far today\n"\U0001F3C3{"a" * MAX_LINE_BYTES}"\nrest day?\n', encoding="utf-8")
        with pytest.raises(InputError, match=r"log\.csv: line 3 is longer than 1,048,576 bytes, more than a row of a "
                                             r"log holds \(an unclosed quote, or not a log\?\)$"):
            read_questions(path)

    @pytest.mark.timeout(20)
    def test_a_csv_header_of_a_hundred_thousand_columns_is_read_once(self, tmp_path: Path) -> None:
        """A header just under the line limit: the long-line check and the duplicate-column check each
        read it once (an adversarial pass, 2026-12-07: 270 s, scanning the line again from each byte)."""
        columns = [f"c{i}" for i in range(120_000)]
        path = tmp_path / "wide.csv"
        path.write_text(",".join([*columns, "question"]) + "\n" + "x," * len(columns) + "pain\n", encoding="utf-8")
        assert path.stat().st_size < 2 * MAX_LINE_BYTES
        assert [q.question for q in read_questions(path).questions] == ["pain"]
        path.write_text(",".join([*columns, "C7", "question"]) + "\n" + "x," * (len(columns) + 1) + "pain\n",
                        encoding="utf-8")
        with pytest.raises(InputError, match=r"wide\.csv: line 1: the column 'c7' appears twice in the header"):
            read_questions(path)

    @pytest.mark.timeout(5)
    def test_a_regular_file_within_the_limit_is_read(self, tmp_path: Path) -> None:
        path = tmp_path / "ok.txt"
        path.write_text("ça va\n", encoding="utf-8")
        assert read_text(path, 7) == "ça va\n"  # 7 bytes exactly: the limit is inclusive


# --- 2. JSON and YAML that nest, expand or hold values Python cannot use ----------------------


class TestJson:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("text", "message"), [
        ("[" * 100_000 + "]" * 100_000, r"nested deeper than 64 levels"),
        ('{"a": ' * 70 + "1" + "}" * 70, r"nested deeper than 64 levels \(under a\.a\.a\)"),
        ('{"budget": NaN}', r"not valid JSON: NaN is not a JSON number"),
        ('{"budget": -Infinity}', r"not valid JSON: -Infinity is not a JSON number"),
        ('{"pace": 1e400}', r"not valid JSON: 1e400 is too large for a number"),
        ('{"n": ' + "7" * 5000 + "}", r"not valid JSON: an integer of 5000 digits; the limit is 20"),
        ('{"name": "Maya \\ud800"}', r"name: text holds a lone surrogate"),
        ('{"\\udfff": 1}', r"\(top level\): a key holds a lone surrogate"),
        ("{'single': 1}", r"line 1, column 2: not valid JSON: Expecting property name"),
        ('{"q": "knee\x00pain"}', r"line 1, column 12: not valid JSON: a raw control character U\+0000 inside a "
                                   r"string; write it as \\u0000$"),
        ('{"question": "a", "question": "b"}', r"the key 'question' appears twice in one object"),
        ('[{"q": 1}, {"n": {"x": 1, "x": 1}}]', r"the key 'x' appears twice in one object"),
    ], ids=["deep-list", "deep-object", "nan", "minus-infinity", "overflow", "5000-digits", "surrogate",
            "surrogate-key", "not-json", "raw-nul", "duplicate-key", "duplicate-nested-key"])
    def test_refused_with_where(self, text: str, message: str) -> None:
        with pytest.raises(ReadError, match=rf"^doc\.json: .*{message}"):
            parse_json(text, "doc.json")

    @pytest.mark.timeout(5)
    def test_nesting_at_the_limit_is_fine(self) -> None:
        assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "ok") == \
            json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("change", "message"), [
        (lambda t: {**t, "inputs": {**t["inputs"], "question": "pain \ud800"}}, "inputs.question: text holds a lone"),
        (lambda t: {**t, "inputs": {**t["inputs"], "budget": True}},
         "inputs.budget: expected a whole number from 0 to 1000000 or null, got True"),
        (lambda t: {**t, "inputs": {**t["inputs"], "budget": 10 ** 15}}, "inputs.budget: expected a whole number"),
        (lambda t: {**t, "inputs": {**t["inputs"], "athlete": "maya\x1b[2J"}},
         "inputs.athlete: holds the control character U+001B"),
        (lambda t: {**t, "bundle": json.loads("[" * 3000 + "]" * 3000)}, "nested deeper than 64 levels"),
        (lambda t: {**t, "inputs": {**t["inputs"], "athlete": "../../etc"}},
         "inputs.athlete: '../../etc' is not an athlete id (lower-case letters, digits, '-' and '_'; never a path)"),
        (lambda t: {**t, "inputs": {**t["inputs"], "athlete": "omar"}},
         "inputs.athlete is 'omar' but the bundle was fetched for 'maya': the trace was edited"),
    ], ids=["surrogate-question", "budget-true", "budget-huge", "escape-in-athlete", "deep-bundle", "path-as-athlete",
            "another-athlete"])
    def test_a_hostile_trace_exits_2(self, refused: Callable[..., str], tmp_path: Path,
                                     pain_trace: dict[str, Any], change: Callable[[dict[str, Any]], Any],
                                     message: str) -> None:
        path = tmp_path / "t.json"
        # written by hand: json.dumps would refuse the depth and writes the surrogate as an escape
        text = json.dumps(change(json.loads(json.dumps(pain_trace))), ensure_ascii=True) \
            if "deep" not in message else json.dumps(pain_trace)[:-1] + ', "deep": ' + "[" * 3000 + "]" * 3000 + "}"
        path.write_text(text, encoding="utf-8")
        assert message in refused("replay", str(path))

    @pytest.mark.timeout(5)
    def test_an_uploaded_trace_that_is_not_utf8_names_line_and_column(self) -> None:
        """The app hands `parse_trace` the upload's bytes: the same strict reading applies."""
        with pytest.raises(TraceError, match=r"^upload\.json: line 2, column 14: not UTF-8 text \(byte 15\)$"):
            parse_trace(b'{\n  "format": "\xff"}', "upload.json")

    @pytest.mark.timeout(10)
    def test_the_untouched_trace_replays(self, cli: Run, tmp_path: Path, pain_trace: dict[str, Any]) -> None:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(pain_trace), encoding="utf-8")
        code, out, _ = cli("replay", str(path))
        assert code == 0 and "the same decision" in out

    @pytest.mark.timeout(10)
    def test_a_log_skips_hostile_rows_and_decides_the_rest(self) -> None:
        rows = [
            json.dumps({"question": "how hard should I train today?"}),
            '{"question": ' + "[" * 5000 + "]" * 5000 + "}",
            '{"question": "sore \\ud83d knee"}',
            '{"question": "rest day?", "athlete": NaN}',
            '{"question": "was ist mit \u2028 dem Wetter?"}',  # a raw U+2028 is JSON text, not a line end
            '{"question": "rest day?", "question": "sore knee?"}',  # which one was asked?
            '{"q": "rest day?", "question": "sore knee?"}',  # nor here
        ]
        questions = parse_questions("\n".join(rows) + "\n", "jsonl", "log.jsonl")
        assert [q.row for q in questions.questions] == [1, 5]
        assert dict(questions.skipped) == {
            2: "nested deeper than 64 levels",
            3: "question: text holds a lone surrogate (not valid Unicode)",
            4: "not valid JSON: NaN is not a JSON number",
            6: "the key 'question' appears twice in one object (which value is meant?)",
            7: "both `question` and `q` are given (which one is meant?)",
        }

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("text", "message"), [
        ("a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [" + ", ".join([f"*{p}"] * 8) + "]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True))
         + "questions: [*h]\n", "expands to more than"),
        ("questions:\n- q: when?\n  at: 2024-13-45\n", "'2024-13-45' is not a valid timestamp"),
        ("questions: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 24 levels"),
        ("questions:\n- q: \"sore \\ud800 knee\"\n", "text holds a lone surrogate"),
    ], ids=["alias-bomb", "bad-date", "deep", "surrogate"])
    def test_a_hostile_yaml_question_set_is_refused(self, text: str, message: str) -> None:
        with pytest.raises(InputError, match=r"^set\.yaml: ") as caught:
            parse_questions(text, "yaml", "set.yaml")
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)

    @pytest.mark.timeout(10)
    def test_a_broken_fixture_is_named_not_a_traceback(self, refused: Callable[..., str], tmp_path: Path) -> None:
        athletes = tmp_path / "athletes"
        shutil.copytree(SAMPLE_ATHLETES_DIR, athletes)
        (athletes / "maya.json").write_text('{"athlete": "maya", services: {}}', encoding="utf-8")
        (athletes / "ines.json").write_text('{"description": "x \\udc00"}', encoding="utf-8")
        assert refused("explain", PAIN, "--athlete", "maya", "--athletes-dir", str(athletes)) == (
            f"coachctx: {athletes}/maya.json: line 1, column 21: not valid JSON: Expecting property name "
            "enclosed in double quotes")
        assert refused("athletes", "--athletes-dir", str(athletes)).endswith(
            "ines.json: description: text holds a lone surrogate (not valid Unicode)")

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("entry", "detail"), [
        ({"status": True, "body": {"data": {}}}, "status: expected a whole number from 100 to 599, got True"),
        ({"status": "200", "body": {"data": {}}}, "status: expected a whole number from 100 to 599, got '200'"),
        ({"fault": "timeout", "after_ms": 1e300}, "after_ms: expected a whole number from 0 to 600000"),
    ], ids=["status-true", "status-text", "after-ms-huge"])
    def test_a_fixture_entry_with_bad_numbers_is_an_unreachable_service(self, tmp_path: Path, entry: dict[str, Any],
                                                                        detail: str) -> None:
        athletes = tmp_path / "athletes"
        shutil.copytree(SAMPLE_ATHLETES_DIR, athletes)
        data = json.loads((athletes / "maya.json").read_text(encoding="utf-8"))
        data["services"]["readiness"] = entry
        (athletes / "maya.json").write_text(json.dumps(data), encoding="utf-8")
        from coachctx.engine.services import fetch_bundle

        result = fetch_bundle(FixtureUpstream(athletes), "maya")["readiness"]
        assert result.status == "unreachable"
        assert detail in result.detail


# --- 3. athletes are ids, never paths --------------------------------------------------------


class TestAthletes:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("athlete", ["../sample_athletes/maya", str(SAMPLE_ATHLETES_DIR / "maya"), "a/b",
                                         "maya.json", "MAYA", ".", ""])
    def test_refused_with_the_valid_ids(self, refused: Callable[..., str], athlete: str) -> None:
        line = refused("explain", PAIN, "--athlete", athlete)
        assert line.endswith(f"; sample athletes are: {ATHLETES}")
        assert "not an athlete id" in line or "unknown athlete" in line

    @pytest.mark.timeout(10)
    def test_impact_refuses_a_path_as_the_default_athlete(self, refused: Callable[..., str]) -> None:
        line = refused("impact", "tests/data/questions/dev.yaml", "--base", "policy/default.yaml",
                       "--candidate", "policy/default.yaml", "--athlete", "/etc/passwd")
        assert line.startswith("coachctx: athlete '/etc/passwd' is not an athlete id")

    @pytest.mark.timeout(10)
    def test_a_log_row_naming_a_path_is_skipped(self) -> None:
        from coachctx.engine.policy import load_policy
        from coachctx.tools.impact import run_impact

        rows = parse_questions('{"question": "rest?", "athlete": "../sample_athletes/maya"}\n'
                               '{"question": "rest?", "athlete": "maya"}\n', "jsonl", "log.jsonl")
        policy = load_policy()
        report = run_impact(rows, policy, policy)
        assert [r.question.row for r in report.rows] == [2]
        assert report.skipped[0][0] == 1 and "unknown athlete" in report.skipped[0][1]


    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("fixture, message", [
        ({}, "expected a `services` object (account, baselines, readiness; one left out answers 404), got none"),
        ({"services": []}, "expected a `services` object (account, baselines, readiness; one left out answers 404), "
                           "got a list"),
        ({"services": {"readines": {}}}, "services.readines: not a service of an athlete's fixture (did you mean "
                                         "'readiness'?); those are account, baselines, readiness (conditions are "
                                         "per city, in conditions.json)"),
    ])
    def test_a_fixture_without_its_services_is_refused_not_read_as_nothing_computed(
            self, refused: Callable[..., str], tmp_path: Path, fixture: dict[str, Any], message: str) -> None:
        # an adversarial pass, 2026-12-07: `{}` or a trace saved among the fixtures read as four
        # services that computed nothing, the injury context gone without a word
        athletes = tmp_path / "athletes"
        shutil.copytree(SAMPLE_ATHLETES_DIR, athletes)
        (athletes / "broken.json").write_text(json.dumps(fixture), encoding="utf-8")
        line = refused("explain", PAIN, "--athlete", "broken", "--athletes-dir", str(athletes))
        assert line == f"coachctx: {athletes / 'broken.json'}: {message}"


# --- 4. CLI numbers and argument text ----------------------------------------------------------


class TestCliArguments:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("budget", ["1_000", "٣٠٠", "1e3", "10000001", "-1", "0x10", " "])
    def test_budget_is_a_bounded_whole_number(self, refused: Callable[..., str], budget: str) -> None:
        assert "argument --budget: expected a whole number from 0 to 1000000, got" in refused(
            "explain", PAIN, "--athlete", "maya", "--budget", budget)

    @pytest.mark.timeout(10)
    def test_budget_at_the_limit_decides(self, cli: Run) -> None:
        code, out, _ = cli("explain", PAIN, "--athlete", "maya", "--budget", "1000000", "--json")
        assert code == 0 and json.loads(out)["budget"] == 1_000_000

    @pytest.mark.timeout(10)
    def test_an_argument_that_is_not_utf8_is_refused(self, refused: Callable[..., str]) -> None:
        not_utf8 = b"ma\xffya".decode("utf-8", "surrogateescape")  # what Python makes of such argv bytes
        assert refused("explain", "pain", "--athlete", not_utf8) == \
            "coachctx: argument 'ma\\udcffya' is not valid UTF-8 text"
