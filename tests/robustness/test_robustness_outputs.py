"""Outputs and traces (issue 12): what the CLI writes survives any text, and `--trace-out` writes
only a new or regular file and leaves nothing behind when it cannot. (A replay that says "exactly
as recorded": test_robustness_replay.py.)

The CLI runs in-process with stdout and stderr as a terminal would have them: text streams over
bytes, strict about their encoding (UTF-8 unless a test says Latin-1).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import ChatBehaviour, ChatServer
from repo_paths import ROOT
from robustness_support import Result, TerminalRun, model_threads, terminal_cli

from coachctx.engine.policy import DEFAULT_POLICY_PATH
from coachctx.engine.services import SAMPLE_ATHLETES_DIR
from coachctx.tools.store import PolicyStore
from coachctx.tools.trace import json_text, parse_trace

UNSURE = "Should I train through this pain?"
LONE = "\udc80"
"""What a byte that is not UTF-8 becomes in a command-line argument (surrogateescape)."""
TIMEOUT = pytest.mark.timeout(20)
pytestmark = TIMEOUT  # every case, not only those marked one by one
Run = TerminalRun


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Run:
    """`coachctx ARGS` in-process, with terminal-like stdout/stderr in `encoding`."""
    return terminal_cli(monkeypatch, cached_policy=True)


@pytest.fixture(autouse=True)
def _no_model_threads_left() -> Iterator[None]:
    yield
    assert model_threads() == []


@pytest.fixture
def athletes(tmp_path: Path) -> Callable[[Callable[[dict[str, Any]], None]], str]:
    """A copy of the sample athletes with maya's file changed by `edit`; returns the directory."""

    def make(edit: Callable[[dict[str, Any]], None]) -> str:
        root = tmp_path / "athletes"
        shutil.copytree(ROOT / "sample_athletes", root)
        maya = json.loads((root / "maya.json").read_text(encoding="utf-8"))
        edit(maya)
        # ensure_ascii writes a lone surrogate as \udXXX and NaN/Infinity as such: json reads both back
        (root / "maya.json").write_text(json.dumps(maya, ensure_ascii=True), encoding="utf-8")
        return str(root)

    return make


def leftovers(directory: Path, *expected: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in expected)


# --- any text in, no crash out -----------------------------------------------------------------


class TestAnyText:
    @TIMEOUT
    @pytest.mark.parametrize("question", [f"Should I train through this pain{LONE}?", f"{LONE}\ud800 knee pain",
                                          "pain \U0001F9B5\u202e\u0000\x1b[2J"],
                             ids=["lone_low_surrogate", "two_lone_surrogates", "emoji_rtl_nul_escape"])
    def test_json_is_strict_and_gives_the_question_back_as_decided(self, cli: Run, question: str) -> None:
        # a lone surrogate (a byte that was not UTF-8) is read as U+FFFD; everything else as typed
        decided = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in question)
        r = cli("explain", question, "--athlete", "maya", "--json")
        assert (r.code, r.err) == (0, "")
        doc = r.json()
        assert doc["question"] == decided
        assert doc["prompt"]["messages"][-1]["content"].endswith(decided)

    @TIMEOUT
    def test_plain_output_shows_a_byte_that_was_not_utf8_as_the_replacement_character(self, cli: Run) -> None:
        r = cli("explain", f"Should I train through this pain{LONE}?", "--athlete", "maya")
        assert (r.code, r.err) == (0, "")
        assert "question   Should I train through this pain\ufffd?" in r.out

    @TIMEOUT
    def test_the_prompt_carries_the_replacement_character(self, cli: Run) -> None:
        r = cli("explain", f"knee pain {LONE}", "--athlete", "maya", "--prompt")
        assert (r.code, r.err) == (0, "")
        assert "[user]" in r.out and "knee pain \ufffd" in r.out

    @TIMEOUT
    def test_escape_sequences_and_direction_overrides_in_a_question_reach_the_terminal_escaped(
            self, cli: Run, tmp_path: Path) -> None:
        question = "knee pain \x1b[2J\x1b]0;PWNED\x07 run \u202e"
        r = cli("explain", question, "--athlete", "maya", "--prompt", "--trace-out", str(tmp_path / "t.json"))
        assert (r.code, r.err) == (0, "")
        assert "\x1b" not in r.out and "\u202e" not in r.out and "\x07" not in r.out
        assert "knee pain \\x1b[2J\\x1b]0;PWNED\\x07 run \\u202e" in r.out.split("[user]")[1]
        doc = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
        doc["decision"]["question"] = "knee pain"  # the recorded decision differs in its question
        (tmp_path / "t.json").write_text(json.dumps(doc), encoding="utf-8")
        again = cli("replay", str(tmp_path / "t.json"))
        assert again.code == 1 and "difference(s)" in again.out  # differs: exit 1
        assert "\x1b" not in again.out and "\u202e" not in again.out

    @TIMEOUT
    def test_an_error_naming_the_bad_input_is_one_line(self, cli: Run) -> None:
        r = cli("explain", UNSURE, "--athlete", f"maya{LONE}")
        assert r.one_line_error() == "coachctx: argument 'maya\\udc80' is not valid UTF-8 text"

    @TIMEOUT
    def test_a_latin1_terminal_gets_ascii_escaped_json_and_escaped_text(self, cli: Run) -> None:
        question = "膝が痛いけど走っていい？ 🦵"
        r = cli("explain", question, "--athlete", "kenji", "--json", encoding="latin-1")
        assert (r.code, r.err) == (0, "")
        assert r.out_bytes.isascii()
        assert r.json()["question"] == question
        r = cli("explain", question, "--athlete", "kenji", encoding="latin-1")
        assert (r.code, r.err) == (0, "")
        assert "question   \\u819d\\u304c" in r.out

    @TIMEOUT
    def test_athlete_data_with_lone_surrogates_is_refused_naming_the_file(
            self, cli: Run, athletes: Callable[..., str]) -> None:
        def poison(maya: dict[str, Any]) -> None:
            maya["services"]["account"]["body"]["data"]["training_block"]["name"] = f"Marathon{LONE} build"

        r = cli("explain", "Plan my tempo run and long run", "--athlete", "maya", "--athletes-dir", athletes(poison))
        error = r.one_line_error()
        assert "maya.json" in error and "lone surrogate" in error

    @TIMEOUT
    def test_a_question_with_lone_surrogates_is_traced_as_valid_unicode_and_replays(self, cli: Run,
                                                                                   tmp_path: Path) -> None:
        trace = tmp_path / "t.json"
        r = cli("explain", f"Plan my tempo{LONE} run", "--athlete", "maya", "--json", "--trace-out", str(trace))
        assert (r.code, r.err) == (0, "")
        # the JSON and the trace hold the same question (the JSON held the surrogate, which coachctx's
        # own readers refuse: `suggest` of an `explain --json` document failed)
        assert r.json()["question"] == "Plan my tempo\ufffd run"
        assert json.loads(trace.read_text(encoding="utf-8"))["inputs"]["question"] == "Plan my tempo\ufffd run"
        again = cli("replay", str(trace))
        assert again.code == 0 and "exactly as recorded" in again.out

    @TIMEOUT
    def test_a_model_answer_with_a_lone_surrogate(self, cli: Run, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
        server = ChatServer().start()
        try:
            server.behaviour = ChatBehaviour(content=f"inj{LONE}ury")
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            r = cli("explain", UNSURE, "--athlete", "maya", "--json", "--trace-out", str(tmp_path / "t.json"))
            assert (r.code, r.err) == (0, "")
            model = r.json()["intent"]["model"]
            assert r.json()["intent"]["fallback_reason"] == "invalid_label"
            # read as U+FFFD, as the trace writes it, so the replay below is exact (it was not)
            assert model["raw"] == "inj\ufffdury"
            plain = cli("explain", UNSURE, "--athlete", "maya")
            assert plain.code == 0 and "inj\ufffdury" in plain.out
        finally:
            server.stop()
        assert (again := cli("replay", str(tmp_path / "t.json"))).code == 0, again.out


    @TIMEOUT
    def test_a_question_log_with_lone_surrogates_skips_those_rows_with_their_reason(self, cli: Run,
                                                                                   tmp_path: Path) -> None:
        log = tmp_path / "log.jsonl"
        rows = [{"question": f"knee pain {LONE} today", "athlete": "maya"},
                {"question": "easy run today", "athlete": "maya", "intents": ["training"]}]
        log.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        policy = str(DEFAULT_POLICY_PATH)
        r = cli("impact", str(log), "--base", policy, "--candidate", policy)
        assert (r.code, r.err) == (0, "")
        assert "lone surrogate" in r.out and "easy run today" not in r.err


class TestStrictJson:
    def test_non_finite_numbers_are_null_never_nan(self) -> None:
        text = json_text({"a": float("nan"), "b": [float("inf"), -float("inf")], "c": 1.5, LONE: LONE})
        assert json.loads(text) == {"a": None, "b": [None, None], "c": 1.5, LONE: LONE}
        assert "NaN" not in text and "Infinity" not in text
        text.encode("utf-8")  # writable as UTF-8: the surrogates are escapes

    @TIMEOUT
    def test_infinity_and_nan_in_athlete_data_are_refused_naming_the_file(
            self, cli: Run, athletes: Callable[..., str]) -> None:
        def poison(maya: dict[str, Any]) -> None:
            maya["services"]["readiness"]["body"]["data"]["training"]["score"] = float("inf")

        error = cli("explain", UNSURE, "--athlete", "maya", "--athletes-dir", athletes(poison)).one_line_error()
        assert "maya.json" in error


# --- --trace-out: a new or regular file, nothing else ----------------------------------------------


def explain_to(cli: Run, target: Path | str, *, force: bool = False) -> Result:
    return cli("explain", UNSURE, "--athlete", "maya", "--trace-out", str(target), *(["--force"] if force else []))


class TestTraceOut:
    @TIMEOUT
    @pytest.mark.parametrize("name", ["maya.json", "conditions.json", "a_new_trace.json"])
    def test_never_among_the_athlete_fixtures_the_command_reads(self, cli: Run, tmp_path: Path, name: str) -> None:
        """An adversarial pass wrote a trace over sample_athletes/maya.json with exit 0, and every later
        decision said her services computed nothing; a new name there would be a new athlete."""
        fixtures = tmp_path / "athletes"
        shutil.copytree(SAMPLE_ATHLETES_DIR, fixtures)
        before = {f.name: f.read_bytes() for f in fixtures.iterdir()}
        line = cli("explain", UNSURE, "--athlete", "maya", "--athletes-dir", str(fixtures),
                   "--trace-out", str(fixtures / name)).one_line_error()
        assert line == (f"coachctx: cannot write {fixtures / name}: it is in {fixtures}, a folder this command reads "
                        "whole (every JSON file there is read as input); give a file elsewhere")
        assert {f.name: f.read_bytes() for f in fixtures.iterdir()} == before

    @TIMEOUT
    @pytest.mark.skipif(not Path("/proc/version").is_file(), reason="no /proc here")
    def test_a_folder_that_takes_no_new_files_is_named(self, cli: Run) -> None:
        """It said "No such file or directory" of a file that exists (an adversarial pass)."""
        assert explain_to(cli, "/proc/version", force=True).one_line_error() == \
            "coachctx: cannot write /proc/version: /proc takes no new files (No such file or directory)"

    @TIMEOUT
    def test_a_new_file(self, cli: Run, tmp_path: Path) -> None:
        r = explain_to(cli, tmp_path / "t.json")
        assert r.code == 0 and f"trace written to {tmp_path / 't.json'}" in r.out
        assert parse_trace((tmp_path / "t.json").read_bytes()).inputs["question"] == UNSURE
        assert leftovers(tmp_path, "t.json") == []

    @TIMEOUT
    def test_a_policy_store_is_refused_and_kept(self, cli: Run, tmp_path: Path) -> None:
        """A store is a regular file, but replacing it loses every version and label (an
        adversarial pass: `--trace-out store.sqlite` and `labels export --out store.sqlite` did)."""
        store = tmp_path / "store.sqlite"
        with PolicyStore(f"sqlite:///{store}") as opened:
            opened.add_question_labels([])
        before = store.read_bytes()
        for r in (explain_to(cli, store), cli("labels", "export", "--store", str(store), "--out", str(store))):
            assert r.code == 2 and f"cannot write {store}: it is an SQLite database (a policy store?)" in r.err
        assert store.read_bytes() == before and leftovers(tmp_path, "store.sqlite") == []

    @TIMEOUT
    def test_the_policy_the_command_reads_is_refused(self, cli: Run, tmp_path: Path) -> None:
        policy = tmp_path / "mine.yaml"
        shutil.copyfile(DEFAULT_POLICY_PATH, policy)
        r = cli("explain", UNSURE, "--athlete", "maya", "--policy", str(policy), "--trace-out", str(tmp_path / "." / "mine.yaml"))
        assert r.code == 2 and f"it is {policy}, which this command reads; give another file" in r.err
        assert policy.read_bytes() == DEFAULT_POLICY_PATH.read_bytes()

    @TIMEOUT
    def test_the_default_policy_is_refused_too(self, cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """`--trace-out policy/default.yaml` without `--policy` replaced the checked-in policy (an adversarial pass)."""
        policy = tmp_path / "default.yaml"  # a copy stands in for the checked-in file
        shutil.copyfile(DEFAULT_POLICY_PATH, policy)
        monkeypatch.setattr("coachctx.cli.common.DEFAULT_POLICY_PATH", policy)
        assert explain_to(cli, policy).code == 2 and policy.read_bytes() == DEFAULT_POLICY_PATH.read_bytes()

    @TIMEOUT
    def test_a_name_at_the_file_system_limit(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / ("t" * 250 + ".json")
        assert explain_to(cli, target).code == 0
        assert parse_trace(target.read_bytes()).inputs["athlete"] == "maya"
        assert leftovers(tmp_path, target.name) == []

    @TIMEOUT
    def test_a_regular_file_is_replaced_whole(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "t.json"
        target.write_text("old", encoding="utf-8")
        assert explain_to(cli, target, force=True).code == 0
        assert parse_trace(target.read_bytes()).inputs["athlete"] == "maya"
        assert leftovers(tmp_path, "t.json") == []

    @TIMEOUT
    def test_a_replaced_file_keeps_its_permissions_and_a_new_one_follows_the_umask(self, cli: Run,
                                                                                  tmp_path: Path) -> None:
        target = tmp_path / "t.json"
        target.write_text("old", encoding="utf-8")
        target.chmod(0o640)
        assert explain_to(cli, target, force=True).code == 0
        assert stat.S_IMODE(target.stat().st_mode) == 0o640  # not the temporary file's private 0600
        umask = os.umask(0o027)
        try:
            assert explain_to(cli, tmp_path / "new.json").code == 0
        finally:
            os.umask(umask)
        assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640

    @TIMEOUT
    @pytest.mark.parametrize("dangling", [False, True], ids=["to_a_file", "dangling"])
    def test_a_symlink_is_refused_and_neither_it_nor_its_target_changes(self, cli: Run, tmp_path: Path,
                                                                         dangling: bool) -> None:
        target = tmp_path / "precious.txt"
        if not dangling:
            target.write_text("keep me", encoding="utf-8")
        link = tmp_path / "t.json"
        link.symlink_to(target)
        line = explain_to(cli, link).one_line_error()
        assert line == (f"coachctx: cannot write {link}: it is a symbolic link; give a new file or a regular "
                        "file to replace")
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert target.read_text(encoding="utf-8") == "keep me" if not dangling else not target.exists()
        assert leftovers(tmp_path, "t.json", "precious.txt") == []

    @TIMEOUT
    def test_a_directory_is_refused_by_its_own_name(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "traces"
        target.mkdir()
        line = explain_to(cli, target).one_line_error()
        assert line == f"coachctx: cannot write {target}: it is a directory; give a new file or a regular file to replace"
        assert list(target.iterdir()) == [] and leftovers(tmp_path, "traces") == []

    @TIMEOUT
    def test_a_fifo_is_refused_without_blocking(self, cli: Run, tmp_path: Path) -> None:
        fifo = tmp_path / "t.json"
        os.mkfifo(fifo)
        assert "it is a FIFO (named pipe)" in explain_to(cli, fifo).one_line_error()
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and leftovers(tmp_path, "t.json") == []

    @TIMEOUT
    def test_a_socket_is_refused(self, cli: Run, tmp_path: Path) -> None:
        path = tmp_path / "s"
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))
            assert "it is a socket" in explain_to(cli, path).one_line_error()
        assert leftovers(tmp_path, "s") == []

    @TIMEOUT
    def test_a_device_node_is_refused(self, cli: Run, tmp_path: Path) -> None:
        device = tmp_path / "null"
        try:  # a private copy of /dev/null: never point a test at the real one
            os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("creating a device node needs root (CAP_MKNOD)")
        assert "it is a device" in explain_to(cli, device).one_line_error()
        assert stat.S_ISCHR(os.lstat(device).st_mode) and leftovers(tmp_path, "null") == []

    @TIMEOUT
    def test_a_missing_parent_directory(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "no" / "such" / "t.json"
        line = explain_to(cli, target).one_line_error()
        assert line == (f"coachctx: cannot write {target}: No such file or directory "
                        f"(the directory {target.parent} does not exist)")
        assert leftovers(tmp_path) == []

    @TIMEOUT
    def test_a_parent_that_is_a_file(self, cli: Run, tmp_path: Path) -> None:
        (tmp_path / "file").write_text("x", encoding="utf-8")
        line = explain_to(cli, tmp_path / "file" / "t.json").one_line_error()
        assert line.endswith(f"Not a directory ({tmp_path / 'file'} is not a directory)")
        assert leftovers(tmp_path, "file") == []

    @TIMEOUT
    def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(self, cli: Run, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        target = tmp_path / "t.json"
        target.write_text("old", encoding="utf-8")

        def disk_full(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fsync", disk_full)
        line = explain_to(cli, target, force=True).one_line_error()
        assert line == f"coachctx: cannot write {target}: No space left on device"
        assert target.read_text(encoding="utf-8") == "old" and leftovers(tmp_path, "t.json") == []

    @TIMEOUT
    def test_an_unwritable_directory(self, cli: Run, tmp_path: Path) -> None:
        if os.geteuid() == 0:
            pytest.skip("root writes anywhere")
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        try:
            line = explain_to(cli, locked / "t.json").one_line_error()
            assert line == f"coachctx: cannot write {locked / 't.json'}: Permission denied"
        finally:
            locked.chmod(0o700)
        assert list(locked.iterdir()) == []


@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_an_answer_that_cannot_be_written_says_standard_output() -> None:
    """`coachctx explain ... > /dev/full` (a full disk): one line naming standard output, exit 2."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "coachctx.cli", "explain", "pain", "--athlete", "maya"],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == "coachctx: cannot write standard output: No space left on device\n"
