"""The versioned policy store: versions, labels, optimistic saves, crash safety, and its CLI."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coachctx.cli import main
from coachctx.errors import CoachctxError, PolicyError
from coachctx.tools.store import (
    DEFAULT_STORE_FILE,
    NoChangeError,
    PolicyStore,
    StaleSaveError,
    StoreError,
    UnknownVersionError,
    based_on,
    default_store_url,
    export_text,
    resolve_policy,
)

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "small.yaml"
TEXT = SMALL.read_text(encoding="utf-8")


def edited(words: int) -> str:
    """The small policy with general's max_words changed: a real, valid edit."""
    assert "max_words: 150" in TEXT
    return TEXT.replace("max_words: 150", f"max_words: {words}")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/s.sqlite"


@pytest.fixture
def store(url: str) -> PolicyStore:
    with PolicyStore(url) as s:
        yield s  # type: ignore[misc]


class TestVersions:
    def test_round_trip_keeps_text_and_facts(self, store: PolicyStore) -> None:
        v = store.save(TEXT, message="first import", author="ana", label="live")
        got = store.get(v.number)
        assert got == v
        assert got.yaml == TEXT  # comments and layout as the coach wrote them
        assert got.policy().digest == got.digest == store.resolve("live").digest
        assert (got.author, got.message, got.parent) == ("ana", "first import", None)
        assert got.created_at.tzinfo is not None and abs(time.time() - got.created_at.timestamp()) < 60

    def test_reopening_the_file_finds_the_versions(self, url: str) -> None:
        with PolicyStore(url) as s:
            s.save(TEXT, message="one", author="ana", label="live")
        with PolicyStore(url) as s:
            assert [v.message for v in s.history()] == ["one"]
            assert s.labels()["live"].version == 1

    def test_resolve_by_number_v_number_and_label(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        two = store.save(edited(140), message="two", author="bo", label="draft")
        assert store.resolve("2") == store.resolve("v2") == store.resolve(2) == store.resolve("draft") == two

    def test_history_is_newest_first(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        store.save(edited(140), message="two", author="ana", label="live", base=1)
        assert [(v.number, v.parent) for v in store.history()] == [(2, 1), (1, None)]
        assert [v.number for v in store.history(limit=1)] == [2]

    def test_an_invalid_policy_is_never_stored(self, store: PolicyStore) -> None:
        with pytest.raises(PolicyError, match=r"^invalid policy draft.yaml: intents\.general\.max_words: "):
            store.save(edited(0), message="broken", author="ana", source="draft.yaml")
        assert store.history() == []

    @pytest.mark.parametrize(("message", "author", "label", "match"), [
        ("  ", "ana", None, r"^message is empty"),
        ("ok", "", None, r"^author is empty"),
        ("ok", "ana", "Live!", r"^label 'Live!' is not valid"),
        ("ok", "ana", "li\u200bve", r"^label 'li\\u200bve' is not valid"),  # escaped once, not twice
        ("x" * 501, "ana", None, r"^message is 501 characters; the limit is 500$"),
    ])
    def test_bad_metadata_is_refused(self, store: PolicyStore, message: str, author: str, label: str | None,
                                     match: str) -> None:
        with pytest.raises(StoreError, match=match):
            store.save(TEXT, message=message, author=author, label=label)
        assert store.history() == []

    def test_unknown_versions_and_labels_say_what_exists(self, store: PolicyStore) -> None:
        with pytest.raises(UnknownVersionError, match=r"^no version 3 in the store \(it is empty\)$"):
            store.get(3)
        store.save(TEXT, message="one", author="ana", label="live")
        with pytest.raises(UnknownVersionError, match=r"^no version 3 in the store \(versions 1 to 1\)$"):
            store.resolve("3")
        with pytest.raises(UnknownVersionError, match=r"^no version or label 'staging' in the store \(labels: live\)$"):
            store.resolve("staging")
        assert issubclass(UnknownVersionError, CoachctxError)

    def test_a_bad_url_is_a_store_error(self) -> None:
        with pytest.raises(StoreError, match=r"is not a database URL"):
            PolicyStore("not a url://")


class TestOptimisticSave:
    def test_a_save_based_on_an_old_head_is_refused_and_stores_nothing(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        store.save(edited(140), message="longer general replies", author="ana", label="live", base=1)
        with pytest.raises(StaleSaveError, match=r"^refused: your policy is based on version 1, but 'live' has moved "
                                                 r"on: version 2 by ana at .* \('longer general replies'\); load version 2"):
            store.save(edited(130), message="bo's change", author="bo", label="live", base=1)
        assert [v.number for v in store.history()] == [2, 1]
        assert store.labels()["live"].version == 2

    def test_moving_a_label_needs_a_base(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        with pytest.raises(StaleSaveError, match=r"^label 'live' already points at version 1; say which version"):
            store.save(edited(140), message="two", author="bo", label="live")

    def test_the_exported_first_line_is_the_base(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        exported = export_text(store.resolve("live"), store.labels())
        assert exported.startswith("# coachctx policy version 1 (live), saved ") and based_on(exported) == 1
        two = store.save(exported.replace("max_words: 150", "max_words: 140"), message="two", author="bo",
                         label="live")
        assert two.parent == 1 and not two.yaml.startswith("# coachctx policy version")
        with pytest.raises(StaleSaveError, match=r"based on version 1, but 'live' has moved on"):
            store.save(exported.replace("max_words: 150", "max_words: 130"), message="late", author="cy",
                       label="live")

    def test_a_save_without_a_label_checks_nothing(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        v = store.save(edited(140), message="an experiment", author="bo", base=1)
        assert v.parent == 1 and store.labels()["live"].version == 1

    def test_saving_the_same_policy_again_is_refused(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        with pytest.raises(NoChangeError, match=r"^nothing to save: the policy is identical to version 1$"):
            store.save("# only a comment differs\n" + TEXT, message="same", author="ana", label="live", base=1)

    def test_a_base_that_does_not_exist(self, store: PolicyStore) -> None:
        with pytest.raises(UnknownVersionError, match=r"^the policy is based on version 7, which is not in the store"):
            store.save(TEXT, message="one", author="ana", base=7)


class TestLabels:
    def test_revert_points_live_back_and_the_log_shows_it(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        store.save(edited(140), message="two", author="ana", label="live", base=1)
        move = store.set_label("live", "1", author="bo")
        assert (move.version, move.previous, move.kind) == (1, 2, "label")
        assert store.resolve("live").number == 1
        assert [(m.version, m.previous, m.kind, m.author) for m in store.label_log("live")] == [
            (1, 2, "label", "bo"), (2, 1, "save", "ana"), (1, None, "save", "ana")]
        # after a revert, a save based on the reverted-to version is the fresh one
        three = store.save(edited(120), message="three", author="cy", label="live", base=1)
        assert three.parent == 1 and store.resolve("live") == three

    def test_a_label_can_point_where_another_points(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="draft")
        store.set_label("live", "draft", author="ana")
        assert store.labels()["live"].version == 1

    def test_an_expected_head_guards_the_move(self, store: PolicyStore) -> None:
        store.save(TEXT, message="one", author="ana", label="live")
        store.save(edited(140), message="two", author="ana", label="live", base=1)
        with pytest.raises(StaleSaveError, match=r"based on version 1, but 'live' has moved on"):
            store.set_label("live", 1, author="bo", expected=1)
        assert store.resolve("live").number == 2

    def test_unknown_version(self, store: PolicyStore) -> None:
        with pytest.raises(UnknownVersionError, match=r"^no version 4 in the store"):
            store.set_label("live", 4, author="ana")


class TestWhere:
    def test_default_is_a_file_in_the_home_directory(self) -> None:
        assert default_store_url({}) == f"sqlite:///{DEFAULT_STORE_FILE.expanduser()}"

    def test_env_takes_a_url_or_a_path(self, tmp_path: Path) -> None:
        assert default_store_url({"COACHCTX_STORE": "postgresql://u:p@db/coach"}) == "postgresql://u:p@db/coach"
        assert default_store_url({"COACHCTX_STORE": str(tmp_path / "p.sqlite")}) == f"sqlite:///{tmp_path}/p.sqlite"

    def test_the_file_is_created_on_first_use(self, tmp_path: Path) -> None:
        with PolicyStore(f"sqlite:///{tmp_path}/s.sqlite") as s:
            assert s.history() == []
        assert (tmp_path / "s.sqlite").is_file()

    def test_no_directory_is_created_but_the_default_one(self, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match=r"the directory .*/a/b does not exist, and coachctx creates no "
                                             r"directories but its default .*; use a SQLite file in an existing"):
            PolicyStore(f"sqlite:///{tmp_path}/a/b/s.sqlite")
        assert list(tmp_path.iterdir()) == []

    def test_resolve_policy_takes_files_versions_and_labels(self, store: PolicyStore) -> None:
        store.save(edited(140), message="one", author="ana", label="live")
        from_file = resolve_policy(str(SMALL), store)
        assert (from_file.version, from_file.source) == (None, str(SMALL))
        by_label = resolve_policy("live", store)
        assert (by_label.version, by_label.source, by_label.policy.intent("general").max_words) == (1, "store:live", 140)
        assert resolve_policy("1", store).source == "store:v1"
        with pytest.raises(PolicyError, match=r"missing\.yaml: no such file"):
            resolve_policy("missing.yaml", store)


# --- a process killed mid-save ------------------------------------------------------------------

CHILD = r"""
import sys, time
import sqlalchemy as sa
from coachctx.tools.store import PolicyStore

url, path, mode = sys.argv[1:4]
text = open(path, encoding="utf-8").read()
store = PolicyStore(url)
base = store.resolve("live").number
if mode == "hold":
    @sa.event.listens_for(store.engine, "after_cursor_execute")
    def hold(conn, cursor, statement, *args):
        # the last statement of a save: the version and the label move are written, not committed
        if statement.startswith("INSERT INTO policy_label_moves"):
            print("inside", flush=True)
            time.sleep(60)
i = 0
while True:
    i += 1
    v = store.save(text.replace("max_words: 150", f"max_words: {150 + i}"), message=f"save {i}",
                   author="child", label="live", base=base)
    base = v.number
    print(v.number, flush=True)
"""


def _spawn(url: str, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, url, str(SMALL), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def _assert_sound(url: str, path: Path) -> None:
    with sqlite3.connect(path) as raw:  # a plain connection first: it rolls back a hot journal
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with PolicyStore(url) as s:
        assert s.verify() == []
        versions = s.history()
        live = s.resolve("live")
        assert live.number == versions[0].number  # the label moved with every committed save
        for v in versions:
            assert v.policy().digest == v.digest
            assert v.parent == (v.number - 1 if v.number > 1 else None)


class TestKilledMidSave:
    def test_killed_inside_the_transaction_leaves_no_trace(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/s.sqlite"
        with PolicyStore(url) as s:
            s.save(TEXT, message="one", author="ana", label="live")
        child = _spawn(url, "hold")
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "inside", child.stderr.read() if child.stderr else ""
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait(10)
        _assert_sound(url, tmp_path / "s.sqlite")
        with PolicyStore(url) as s:
            assert [v.number for v in s.history()] == [1]
            assert [m.version for m in s.label_log("live")] == [1]

    def test_killed_at_random_while_saving_in_a_loop(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/s.sqlite"
        with PolicyStore(url) as s:
            s.save(TEXT, message="one", author="ana", label="live")
        rng = random.Random(4)
        printed: list[int] = []
        for _ in range(2):
            child = _spawn(url, "loop")
            try:
                assert child.stdout is not None
                for _ in range(3):  # a few whole saves, then a kill at an arbitrary point of the next ones
                    line = child.stdout.readline()
                    assert line.strip().isdigit(), child.stderr.read() if child.stderr else line
                    printed.append(int(line))
                time.sleep(rng.uniform(0, 0.03))
                child.send_signal(signal.SIGKILL)
            finally:
                child.kill()
                child.wait(10)
            _assert_sound(url, tmp_path / "s.sqlite")
        with PolicyStore(url) as s:
            numbers = [v.number for v in s.history()]
        assert set(printed) <= set(numbers)  # every save the child reported is there, whole


# --- the CLI -----------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class TestPolicyCommands:
    def test_save_show_edit_save_history_diff_revert(self, url: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
        code, out, _ = run(capsys, "policy", "save", str(SMALL), "-m", "first", "--label", "live", "--author", "ana",
                           "--store", url)
        assert (code, out) == (0, "saved version 1 (digest adf297fda308); live -> 1\n")
        code, shown, _ = run(capsys, "policy", "show", "live", "--store", url)
        assert code == 0 and shown.startswith("# coachctx policy version 1 (live), saved ")
        draft = tmp_path / "draft.yaml"
        draft.write_text(shown.replace("max_words: 150", "max_words: 120"), encoding="utf-8")
        code, out, _ = run(capsys, "policy", "save", str(draft), "-m", "shorter", "--label", "live", "--author", "bo",
                           "--store", url)
        assert code == 0 and out.startswith("saved version 2 (digest ") and out.endswith(", parent 1); live -> 2\n")
        code, out, _ = run(capsys, "policy", "history", "--store", url)
        assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["2", "1"]
        assert "(live)  shorter" in out.splitlines()[0]
        code, out, _ = run(capsys, "policy", "diff", "1", "live", "--store", url)
        assert out.splitlines()[1:] == ["intents", "  general", "    max_words: 150 -> 120"]
        code, out, _ = run(capsys, "policy", "label", "live", "1", "--author", "ana", "--store", url)
        assert (code, out) == (0, "live -> 1 (was 2)\n")
        code, out, _ = run(capsys, "policy", "history", "--label", "live", "--store", url)
        assert [line.split("  ")[1] for line in out.splitlines()] == ["live -> 1 (was 2)", "live -> 2 (was 1)",
                                                                       "live -> 1"]

    def test_explain_records_the_store_version(self, url: str, capsys: pytest.CaptureFixture[str]) -> None:
        run(capsys, "policy", "save", str(SMALL), "-m", "first", "--label", "live", "--store", url)
        code, out, _ = run(capsys, "explain", "Should I train through this pain?", "--athlete", "maya",
                           "--policy-version", "live", "--store", url, "--json")
        assert code == 0
        assert json.loads(out)["policy"] == {"source": "store:live", "digest": "adf297fda308", "version": "1"}

    def test_replay_with_a_store_version(self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        run(capsys, "policy", "save", str(SMALL), "-m", "first", "--label", "live", "--store", url)
        trace = tmp_path / "t.json"
        run(capsys, "explain", "Is a nap good for recovery?", "--athlete", "maya", "--policy-version", "1",
            "--store", url, "--trace-out", str(trace))
        code, out, _ = run(capsys, "replay", str(trace), "--policy-version", "live", "--store", url)
        assert code == 0 and "the same decision" in out and "(store:live)" in out

    @pytest.mark.parametrize(("argv", "message"), [
        (["policy", "show", "9"], r"^coachctx: no version 9 in the store \(it is empty\)$"),
        (["policy", "diff", "live", "1"], r"^coachctx: no version or label 'live' in the store \(labels: none yet\)$"),
        (["policy", "label", "live", "3"], r"^coachctx: no version 3 in the store \(it is empty\)$"),
        (["policy", "save", "nowhere.yaml", "-m", "x"], r"^coachctx: invalid policy nowhere.yaml: no such file$"),
        (["policy", "history", "--label", "live"], r"^coachctx: label 'live' has never been set; labels: none yet$"),
        (["explain", "hi", "--athlete", "maya", "--policy-version", "2"], r"^coachctx: no version 2 in the store"),
        (["explain", "hi", "--athlete", "maya", "--policy-version", "1", "--policy", str(SMALL)],
         r"^coachctx: use --policy FILE or --policy-version V, not both$"),
        (["explain", "hi", "--athlete", "maya", "--policy-version", "x.yaml"],
         r"^coachctx: --policy-version takes a version number or a label, got 'x.yaml' \(for a file, use --policy\)$"),
    ])
    def test_bad_input_exits_2_with_one_line(self, url: str, capsys: pytest.CaptureFixture[str], argv: list[str],
                                             message: str) -> None:
        PolicyStore(url).close()  # an empty store: one that does not exist is refused before these checks
        code, out, err = run(capsys, *argv, "--store", url)
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1
        assert re.match(message, err.strip()), err

    def test_a_stale_save_exits_2(self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        run(capsys, "policy", "save", str(SMALL), "-m", "first", "--label", "live", "--store", url)
        _, shown, _ = run(capsys, "policy", "show", "live", "--store", url)
        mine, theirs = tmp_path / "mine.yaml", tmp_path / "theirs.yaml"
        mine.write_text(shown.replace("max_words: 150", "max_words: 120"), encoding="utf-8")
        theirs.write_text(shown.replace("max_words: 150", "max_words: 130"), encoding="utf-8")
        assert run(capsys, "policy", "save", str(theirs), "-m", "theirs", "--label", "live", "--store", url)[0] == 0
        code, out, err = run(capsys, "policy", "save", str(mine), "-m", "mine", "--label", "live", "--store", url)
        assert (code, out) == (2, "")
        assert err.startswith("coachctx: refused: your policy is based on version 1, but 'live' has moved on: "
                              "version 2 by ") and len(err.splitlines()) == 1

    def test_an_invalid_file_exits_2_naming_the_path_inside(self, url: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text(TEXT.replace("primary: [athlete_profile]", "primary: [athlete_profil]"), encoding="utf-8")
        code, out, err = run(capsys, "policy", "save", str(bad), "-m", "typo", "--store", url)
        assert (code, out) == (2, "")
        assert err == (f"coachctx: invalid policy {bad}: intents.general.primary[0]: unknown fragment "
                       "'athlete_profil' (did you mean 'athlete_profile'?)\n")
