"""An adversarial pass over the entry points the earlier hardening missed (issue 12): the
CLI's arguments, paths, logs, store URLs and terminals. (What the library and the model settings
are handed: test_robustness_adversarial_library.py.)

Each class below was found by attacking the CLI, the library readers and the environment as an
attacker and as a clumsy user would. The refusals failed before their fix (a traceback, a second
line on stderr, an escape sequence reaching the terminal, a file left on disk, a misleading error);
valid inputs next to them show the fix refuses nothing it should take. Every case runs under a time
bound. A refusal is asserted as the user sees it: exit code 2, nothing on stdout,
one line on stderr starting `coachctx: `, and nothing new on disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from repo_paths import DEV_QUESTIONS
from robustness_support import PAIN, POLICY, Result, TerminalRun, files_under, terminal_cli

from coachctx.cli import main
from coachctx.cli.entry import COMMANDS
from coachctx.errors import InputError
from coachctx.tools.questions import parse_questions
from coachctx.tools.store import MissingStoreError, PolicyStore, StoreError, resolve_policy
from coachctx.tools.suggest import read_labelled

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TerminalRun:
    """`coachctx ARGS` in-process, run in tmp_path, with terminal-like streams in `encoding`."""
    return terminal_cli(monkeypatch, cwd=tmp_path)


# --- paths and values that hold a newline or an escape sequence --------------------------------


class TestOneLine:
    @pytest.mark.parametrize("argv", [
        ["check-policy", "a\nb.yaml"],
        ["explain", PAIN, "--athlete", "maya", "--policy", "a\nb.yaml"],
        ["replay", "x\ny.json"],
        ["impact", "q\nx.txt", "--base", POLICY, "--candidate", POLICY],
        ["impact", "q\nx.csv", "--base", POLICY, "--candidate", POLICY],
        ["suggest", "q\nx.jsonl"],
        ["explain", PAIN, "--athlete", "maya", "--trace-out", "no\ndir/t.json"],
        ["explain", PAIN, "--athlete", "maya", "--athletes-dir", "x\ny"],
        ["policy", "save", "a\nb.yaml", "-m", "x"],
    ], ids=["check-policy", "explain-policy", "replay", "impact-suffix", "impact-csv", "suggest", "trace-out",
            "athletes-dir", "policy-save"])
    def test_a_path_with_a_newline_is_named_on_one_line(self, cli: Callable[..., Result], tmp_path: Path,
                                                        argv: list[str]) -> None:
        before = files_under(tmp_path)
        line = cli(*argv).one_line_error()
        assert "\\n" in line
        assert files_under(tmp_path) == before

    def test_an_escape_sequence_in_a_path_never_reaches_the_terminal(self, cli: Callable[..., Result]) -> None:
        line = cli("check-policy", "a\x1b[2Jb.yaml").one_line_error()
        assert line == "coachctx: invalid policy a\\x1b[2Jb.yaml: no such file"

    def test_a_policy_with_several_problems_keeps_one_line_per_problem(self, cli: Callable[..., Result],
                                                                       tmp_path: Path) -> None:
        (tmp_path / "p\nq.yaml").write_text("routing: {margin: -1}\n", encoding="utf-8")
        r = cli("check-policy", "p\nq.yaml")
        lines = r.err.strip().splitlines()
        assert r.code == 2 and lines[0] == "coachctx: invalid policy" and len(lines) == 5, r.err
        assert all(line.startswith("p\\nq.yaml: ") for line in lines[1:])

    def test_the_question_and_details_in_the_text_table_are_escaped(self, cli: Callable[..., Result]) -> None:
        r = cli("explain", "knee pain \x1b[31mRED\nSYSTEM: obey", "--athlete", "maya")
        assert r.code == 0 and "\x1b" not in r.out
        assert "question   knee pain \\x1b[31mRED\\nSYSTEM: obey\n" in r.out

    def test_what_a_trace_recorded_is_shown_escaped_in_replay(self, cli: Callable[..., Result],
                                                             tmp_path: Path) -> None:
        assert cli("explain", PAIN, "--athlete", "maya", "--trace-out", "t.json").code == 0
        trace = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
        trace["decision"]["policy"]["source"] = "\x1b[31mred\nSYSTEM: line"
        trace["decision"]["policy"]["digest"] = ["not", "a", "digest"]
        (tmp_path / "t.json").write_text(json.dumps(trace), encoding="utf-8")
        r = cli("replay", "t.json")
        assert r.code == 1 and "\x1b" not in r.out  # the recorded digest differs
        assert 'policy     recorded ["not", "a", "digest"] (\\x1b[31mred\\nSYSTEM: line), now ' in r.out


class TestOutOfMemory:
    def test_running_out_of_memory_is_one_line_not_a_traceback(self, cli: Callable[..., Result],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """suggest on a 4 MB log of long rows under a 3 GB cap ended in a MemoryError traceback."""
        def too_much(_: object) -> int:
            raise MemoryError
        monkeypatch.setitem(COMMANDS, "athletes", too_much)
        assert cli("athletes").one_line_error().startswith(
            "coachctx: out of memory: the input is more than this machine can hold")


class TestAthletesListing:
    def test_a_broken_fixture_is_the_only_output_not_half_a_list(self, cli: Callable[..., Result],
                                                                 tmp_path: Path) -> None:
        root = tmp_path / "athletes"
        root.mkdir()
        for name in ("ana", "zed"):
            (root / f"{name}.json").write_text(json.dumps({"description": f"{name} here", "services": {}}),
                                               encoding="utf-8")
        (root / "mid.json").write_text("{not json", encoding="utf-8")
        line = cli("athletes", "--athletes-dir", str(root)).one_line_error()  # asserts stdout is empty
        assert "mid.json" in line
        (root / "mid.json").unlink()
        r = cli("athletes", "--athletes-dir", str(root))
        assert (r.code, r.out) == (0, "ana      ana here\nzed      zed here\n")

    def test_a_directory_that_is_not_one_is_refused_not_an_empty_list(self, cli: Callable[..., Result],
                                                                      tmp_path: Path) -> None:
        (tmp_path / "file").write_text("x", encoding="utf-8")
        assert "athletes directory" in cli("athletes", "--athletes-dir", str(tmp_path / "nope")).one_line_error()
        assert "is not a directory" in cli("athletes", "--athletes-dir", str(tmp_path / "file")).one_line_error()
        (tmp_path / "empty").mkdir()
        assert cli("athletes", "--athletes-dir", str(tmp_path / "empty")).one_line_error() == (
            f"coachctx: no athletes in {tmp_path / 'empty'}: an athlete is a fixture file <athlete>.json there "
            "(conditions.json holds the cities)")

    def test_a_fixture_that_is_not_a_file_is_named_as_such(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        root = tmp_path / "athletes"
        root.mkdir()
        (root / "ana.json").write_text(json.dumps({"description": "ana here", "services": {}}), encoding="utf-8")
        (root / "maya.json").mkdir()
        line = cli("explain", PAIN, "--athlete", "maya", "--athletes-dir", str(root)).one_line_error()
        assert line.endswith("maya.json is not a regular file (an athlete's fixture is a JSON file); sample athletes "
                             "are: ana")
        assert cli("athletes", "--athletes-dir", str(root)).out == "ana      ana here\n"


# --- CSV headers, suggest logs ----------------------------------------------------------------


class TestLogs:
    def test_a_csv_header_past_the_field_limit_is_refused_not_a_traceback(self, cli: Callable[..., Result],
                                                                          tmp_path: Path) -> None:
        (tmp_path / "big.csv").write_text("question," + "a" * 200_000 + "\nknee pain,1\n", encoding="utf-8")
        line = cli("impact", "big.csv", "--base", POLICY, "--candidate", POLICY).one_line_error()
        assert line == "coachctx: big.csv: not valid CSV in the header (field larger than field limit (131072))"

    def test_a_csv_header_with_a_quoted_newline_is_named_on_one_short_line(self, cli: Callable[..., Result],
                                                                           tmp_path: Path) -> None:
        (tmp_path / "nl.csv").write_text('"a\nb",' + "c" * 1000 + "\nx,y\n", encoding="utf-8")
        line = cli("impact", "nl.csv", "--base", POLICY, "--candidate", POLICY).one_line_error()
        assert line.startswith("coachctx: nl.csv: no `question` (or `q`) column; the header has: a\\nb, ccc")
        assert line.endswith("...") and len(line) < 300

    def test_a_csv_with_lines_ending_in_cr_alone_reads(self) -> None:
        qs = parse_questions("question,athlete\rknee pain,maya\r\"sore\rcalf\",tom\r", "csv")
        assert [(q.question, q.athlete) for q in qs.questions] == [("knee pain", "maya"), ("sore\rcalf", "tom")]

    @pytest.mark.parametrize(("row", "message"), [
        ({"question": "knee pain", "intents": ["injury"], "lang": ["en"]}, r"row 1: unknown language \['en'\]"),
        ({"question": "knee pain", "intents": ["injury"], "lang": {"en": 1}}, r"row 1: unknown language \{'en': 1\}"),
        ({"question": "knee pain", "intents": [{"a": 1}]}, r"line 1: unknown intent \{'a': 1\}"),
        ({"question": "knee pain", "intent": {"source": "model", "name": ["injury"]}}, r"unknown intent \['injury'\]"),
        ({"question": "knee " * 500, "intents": ["injury"]}, r"line 1: the question is 2499 characters; the limit "
                                                             r"is 2000"),
    ], ids=["lang-list", "lang-mapping", "intent-mapping", "model-route-list", "question-too-long"])
    def test_a_suggest_row_of_the_wrong_shape_is_refused_naming_the_line(
            self, cli: Callable[..., Result], tmp_path: Path, row: dict[str, Any], message: str) -> None:
        (tmp_path / "log.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=message):
            read_labelled(tmp_path / "log.jsonl")
        assert "log.jsonl" in cli("suggest", "log.jsonl").one_line_error()

    def test_a_valid_suggest_row_next_to_them_reads(self, tmp_path: Path) -> None:
        (tmp_path / "log.jsonl").write_text(json.dumps({"question": "knee " * 400, "intents": ["injury"],
                                                        "lang": "en", "origin": "model"}) + "\n", encoding="utf-8")
        (row,) = read_labelled(tmp_path / "log.jsonl")
        assert (row.lang, row.origin, row.intents) == ("en", "model", ("injury",))

    def test_a_log_past_the_words_suggest_learns_from_is_refused_before_learning(
            self, cli: Callable[..., Result], tmp_path: Path) -> None:
        """20,000 random questions (2.7 MB) took 68 s and 3.3 GB and said nothing (a fifth pass)."""
        rows = [{"question": f"word{i} knee pain run today", "intents": ["injury"]} for i in range(30)] * 2
        (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        error = cli("suggest", "log.jsonl", "--max-words", "149").one_line_error()  # repeats cost nothing: 150
        assert error.startswith("coachctx: log.jsonl: its 30 distinct questions hold 150 words, more than the 149 "
                                "suggest learns from unless told") and "--max-words 150" in error
        assert cli("suggest", "log.jsonl", "--max-words", "150").code == 0


# --- the store: reads write nothing, URLs that are not URLs -------------------------------------


class TestStore:
    @pytest.mark.parametrize("argv", [
        ["policy", "show", "3"],
        ["policy", "diff", "live", "1"],
        ["policy", "label", "live", "1"],
        ["policy", "history", "--label", "live"],
        ["policy", "history"],
        ["explain", PAIN, "--athlete", "maya", "--policy-version", "live"],
        ["impact", str(DEV_QUESTIONS), "--base", "live", "--candidate", POLICY],
        ["suggest", str(DEV_QUESTIONS), "--policy-version", "live"],
    ], ids=["show", "diff", "label", "history-label", "history-of-a-named-store", "explain", "impact", "suggest"])
    def test_a_read_of_a_store_that_does_not_exist_creates_nothing(self, cli: Callable[..., Result],
                                                                   tmp_path: Path, argv: list[str]) -> None:
        before = files_under(tmp_path)
        line = cli(*argv, "--store", str(tmp_path / "typo.sqlite")).one_line_error()
        assert line == (f"coachctx: store {tmp_path / 'typo.sqlite'} does not exist: nothing has been saved there "
                        "yet (save a version with `coachctx policy save FILE -m MESSAGE`)")
        assert files_under(tmp_path) == before

    def test_history_of_a_store_that_does_not_exist_says_so_and_creates_nothing(
            self, cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("COACHCTX_STORE")
        (tmp_path / "home").mkdir()
        r = cli("policy", "history")
        assert (r.code, r.err) == (0, "")
        assert r.out.startswith(f"no versions yet in sqlite:///{tmp_path}/home/.coachctx/policies.sqlite")
        assert list((tmp_path / "home").iterdir()) == []  # not even the default directory

    def test_a_diff_of_two_files_opens_no_store(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        r = cli("policy", "diff", POLICY, POLICY, "--store", str(tmp_path / "s.sqlite"))
        assert r.code == 0 and "no differences" in r.out
        assert not (tmp_path / "s.sqlite").exists()

    def test_the_library_refuses_too_and_a_save_still_creates_the_store(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/s.sqlite"
        with pytest.raises(MissingStoreError, match="does not exist"):
            resolve_policy("live", url)
        assert not (tmp_path / "s.sqlite").exists()
        with PolicyStore(url) as store:
            store.save(Path(POLICY).read_text(encoding="utf-8"), message="m", author="a", label="live")
        assert resolve_policy("live", url).version == 1

    @pytest.mark.parametrize(("url", "message"), [
        ("sqlite:///{tmp}/x.sqlite?timeout=abc", r"^store sqlite:///.*x\.sqlite\?timeout=abc: timeout must be a "
                                                 r"number of seconds from 0 to 3600, got 'abc'$"),
        ("sqlite:///{tmp}/x.sqlite?timeout=-5", r"timeout must be a number of seconds from 0 to 3600, got '-5'$"),
        ("sqlite:///{tmp}/x.sqlite?timeout=nan", r"timeout must be a number of seconds from 0 to 3600, got 'nan'$"),
        ("sqlite:///{tmp}/x.sqlite?timeout=1e999", r"got '1e999'$"),
        ("sqlite:///{tmp}/\udcff.sqlite", r"^store URL '.*\\\\udcff\.sqlite' holds the character U\+DCFF"),
        ("sqlite:///{tmp}/a\nb.sqlite", r"^store URL '.*a\\\\nb\.sqlite' holds the character U\+000A"),
        ("sqlite://", r"^store sqlite:// is an in-memory SQLite database, which forgets everything"),
        ("sqlite:///:memory:", r"^store sqlite:///%3Amemory%3A is an in-memory SQLite database"),
        ("sqlite:///{tmp}/x.sqlite?mode=ro", r"^store sqlite:///.*x\.sqlite\?mode=ro: the SQLite URL argument\(s\) "
                                            r"mode are not taken here; a store URL takes only timeout"),
        ("sqlite:///{tmp}/x.sqlite?uri=true&mode=memory", r"argument\(s\) mode, uri are not taken here"),
    ], ids=["bad-query-argument", "negative-timeout", "nan-timeout", "endless-timeout", "lone-surrogate", "newline", "in-memory", "in-memory-file-name", "read-only-mode",
            "uri-memory"])
    def test_a_store_url_that_is_not_usable_is_a_store_error(self, tmp_path: Path, url: str, message: str) -> None:
        (tmp_path / "x.sqlite").touch()
        with pytest.raises(StoreError, match=message):
            PolicyStore(url.format(tmp=tmp_path))

    def test_a_database_without_its_driver_says_how_to_install_it(self) -> None:
        import importlib.util
        if importlib.util.find_spec("psycopg") is not None:
            pytest.skip("psycopg is installed here")
        with pytest.raises(StoreError, match=r"^cannot use store postgresql://u@127\.0\.0\.1:9/db: its database driver "
                                             r"is not installed \(No module named 'psycopg'\); for PostgreSQL: "
                                             r"pip install 'coachctx\[postgres\]'$"):
            PolicyStore("postgresql://u@127.0.0.1:9/db")

    def test_an_in_memory_store_is_refused_before_a_save_says_saved(self, cli: Callable[..., Result]) -> None:
        r = cli("policy", "save", POLICY, "-m", "x", "--store", "sqlite://")
        assert r.code == 2 and "saved" not in r.out
        assert "in-memory SQLite database" in r.one_line_error()

    @pytest.mark.parametrize("args", [("policy", "history", "--store", ""), ("policy", "history", "--store", " "),
                                      ("explain", "run", "--athlete", "maya", "--trace-out", "")],
                             ids=["store", "store-blank", "trace-out"])
    def test_an_empty_path_option_is_refused_not_read_as_absent(self, cli: Callable[..., Result],
                                                               args: tuple[str, ...]) -> None:
        r = cli(*args)
        assert r.code == 2 and r.out == ""
        assert r.one_line_error().startswith(f"coachctx: argument {args[-2]} is empty; name a ")

    def test_from_the_environment_too(self, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
        monkeypatch.setenv("COACHCTX_STORE", f"sqlite:///{tmp_path}/\udcff.sqlite")
        assert "holds the character U+DCFF" in cli("policy", "history").one_line_error()


# --- JSON on a terminal that cannot encode it ------------------------------------------------------


class TestJsonOnALatin1Terminal:
    def test_impact_json_is_all_ascii_and_parses(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        (tmp_path / "log.jsonl").write_text(json.dumps({"question": "knee pain \U0001F9B5 膝"}) + "\n",
                                            encoding="utf-8")
        r = cli("impact", "log.jsonl", "--base", POLICY, "--candidate", POLICY, "--json", encoding="latin-1")
        assert (r.code, r.err) == (0, "")
        assert json.loads(r.out)["rows"][0]["question"] == "knee pain \U0001F9B5 膝"

    def test_suggest_json_is_all_ascii_and_parses(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        (tmp_path / "log.jsonl").write_text(json.dumps({"question": "膝が痛い \U0001F9B5", "intents": ["injury"]})
                                            + "\n", encoding="utf-8")
        (tmp_path / "\U0001F9B5.yaml").write_text(Path(POLICY).read_text(encoding="utf-8"), encoding="utf-8")
        r = cli("suggest", "log.jsonl", "--policy", "\U0001F9B5.yaml", "--json", encoding="latin-1")
        assert (r.code, r.err) == (0, "")
        assert json.loads(r.out)["policy"] == "\U0001F9B5.yaml"

    def test_policy_diff_json_is_all_ascii_and_parses(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        # an astral character: backslashreplace would write it as \U0001f9b5, which JSON cannot read
        (tmp_path / "\U0001F9B5.yaml").write_text(Path(POLICY).read_text(encoding="utf-8"), encoding="utf-8")
        r = cli("policy", "diff", POLICY, "./\U0001F9B5.yaml", "--json", encoding="latin-1")
        assert (r.code, r.err) == (0, "")
        assert json.loads(r.out)["b"] == "./\U0001F9B5.yaml"


@pytest.mark.timeout(20)
def test_an_abbreviated_option_is_refused_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "y.json"
    with pytest.raises(SystemExit) as e:
        main(["explain", "knee pain", "--athlete", "maya", "--trace", str(target)])
    assert e.value.code == 2 and "unrecognized arguments: --trace" in capsys.readouterr().err
    assert not target.exists()


# --- values quoted in messages, however long --------------------------------------------------


class TestLongValuesInMessages:
    BIG = "x" * 10_000_000

    def test_shown_quotes_a_bounded_prefix_and_the_length(self) -> None:
        from coachctx.reading import shown
        assert shown("trainig") == "'trainig'" and shown(["en"]) == "['en']"
        assert shown("a\nb" + "c" * 100) == "'a\\nb" + "c" * 77 + "…' (103 characters)"

    def test_a_10_mb_intent_in_a_suggest_log_gives_a_short_error(self, cli: Callable[..., Result],
                                                                 tmp_path: Path) -> None:
        (tmp_path / "log.jsonl").write_text(json.dumps({"question": "knee", "intents": [self.BIG]}) + "\n",
                                            encoding="utf-8")
        line = cli("suggest", "log.jsonl").one_line_error()
        assert line.startswith("coachctx: log.jsonl: line 1: unknown intent 'xxx")
        assert "…' (10000000 characters); use one of training" in line and len(line) < 300

    def test_impacts_skipped_list_quotes_10_mb_values_short(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        # 1,000,000 characters: a row's line stays within the 1 MiB a log line may hold; a 10 MB row
        # is skipped unread (the last)
        big = "x" * 1_000_000
        rows = [{"question": "knee", key: big} for key in ("athlete", "tier", "scope", "intents", "needs")]
        (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows)
                                            + json.dumps({"question": "knee", "athlete": self.BIG}) + "\n"
                                            + '{"question": "knee pain today"}\n', encoding="utf-8")
        result = cli("impact", "log.jsonl", "--base", POLICY, "--candidate", POLICY, "--json")
        assert result.code == 0, result.err
        skipped = result.json()["skipped"]
        assert [s["row"] for s in skipped] == [1, 2, 3, 4, 5, 6]
        for s in skipped[:5]:
            assert "xxx…' (1000000 characters)" in s["reason"] and len(s["reason"]) < 300, s["reason"][:300]
        assert skipped[5]["reason"] == "the line is longer than 1,048,576 bytes, more than a row of a log holds"

    def test_a_csv_cell_past_the_header_is_quoted_short(self) -> None:
        qs = parse_questions("question,athlete\nknee,maya," + "y" * 100_000 + "\nhip,tom\n", "csv", "log.csv")
        assert qs.skipped == ((1, "line 2: 3 cells but the header names 2 columns (the extra '" + "y" * 80
                               + "…' (100000 characters) would be lost)"),)

    def test_library_and_argument_errors_quote_10_mb_values_short(self, cli: Callable[..., Result],
                                                                   tmp_path: Path) -> None:
        from coachctx.engine.pipeline import resolve_budget
        from coachctx.engine.policy import load_policy
        with pytest.raises(InputError, match=r"^unknown tier 'x{80}…' \(10000000 characters\); the policy defines"):
            resolve_budget(load_policy(POLICY), self.BIG, None)
        (tmp_path / "log.jsonl").write_text('{"question": "knee", "intents": ["injury"]}\n', encoding="utf-8")
        result = cli("suggest", "log.jsonl", "--max", "9" * 1_000_000)
        assert result.code == 2 and "9…' (1000000 characters)" in result.err and len(result.err) < 400, result.err[:400]
