"""Hostile arguments to the policy store: labels that read as versions, text that is not one line,
and store URLs that would leave files where they should not.

Every case runs under a time bound. A refusal is asserted as the user sees it: exit code 2 and
one line on stderr starting `coachctx: ` (no traceback) from the CLI, or the exception and its
message from the library; and nothing new on disk. A valid input next to each class shows the
limit does not refuse what it should not."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from robustness_support import Run, replaced
from test_robustness_policy import MINIMAL_POLICY

from coachctx.tools.store import NoChangeError, PolicyStore, StoreError


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/s.sqlite"


@pytest.fixture
def saved(store_url: str) -> str:
    with PolicyStore(store_url) as store:
        store.save(MINIMAL_POLICY, message="first", author="ana", label="live")
    return store_url


class TestStore:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("label", ["v2", "v0007", "v12345678901"])
    def test_a_label_that_reads_as_a_version_is_refused(self, saved: str, label: str) -> None:
        with PolicyStore(saved) as store, pytest.raises(StoreError, match=rf"^label '{label}' is not valid: it "
                                                                          r"reads as a version number"):
            store.set_label(label, 1, author="ana")

    @pytest.mark.timeout(10)
    def test_the_cli_refuses_it_too(self, refused: Callable[..., str], saved: str) -> None:
        assert "label 'v2' is not valid" in refused("policy", "label", "v2", "1", "--store", saved)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("message", "author", "refusal"), [
        ("line one\nSYSTEM: line two", "ana", "message holds the control character U+000A"),
        ("red \x1b[31malert\x1b[0m", "ana", "message holds the control character U+001B"),
        ("one\u2028two", "ana", "message holds the control character U+2028"),
        ("fine", "ana\tbob", "author holds the control character U+0009"),
    ], ids=["newline", "escape", "line-separator", "tab-in-author"])
    def test_a_message_or_author_that_is_not_one_line_is_refused(self, store_url: str, message: str, author: str,
                                                                  refusal: str) -> None:
        with PolicyStore(store_url) as store:
            with pytest.raises(StoreError, match=rf"^{re.escape(refusal)}; write it as one line of plain text$"):
                store.save(MINIMAL_POLICY, message=message, author=author)
            assert store.history() == []

    @pytest.mark.timeout(10)
    def test_rows_stored_before_the_check_are_escaped_in_every_table(self, cli: Run, saved: str,
                                                                      tmp_path: Path) -> None:
        with sqlite3.connect(tmp_path / "s.sqlite") as raw:
            raw.execute("UPDATE policy_versions SET message = ?, author = ?", ("a\nb\x1b[2J", "eve\r\nroot"))
        code, out, _ = cli("policy", "history", "--store", saved)
        assert code == 0 and len(out.splitlines()) == 1
        assert "a b\\x1b[2J" in out and "eve root" in out and "\x1b" not in out
        code, out, _ = cli("policy", "history", "--label", "live", "--store", saved)
        assert code == 0 and len(out.splitlines()) == 1 and "\x1b" not in out
        code, out, _ = cli("policy", "show", "live", "--store", saved)
        assert code == 0 and out.splitlines()[0].endswith("by eve root: a b\\x1b[2J")

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("value", [1765121131, "garbage", "2026-13-40 99:00:00"])
    def test_a_time_edited_by_hand_is_named_not_a_traceback(self, refused: Callable[..., str], cli: Run, saved: str,
                                                             tmp_path: Path, value: object) -> None:
        """A created_at of 1765121131 was a TypeError in every command that read the row (an adversarial pass)."""
        with sqlite3.connect(tmp_path / "s.sqlite") as raw:
            raw.execute("UPDATE policy_versions SET created_at = ?", (value,))
        expected = f"coachctx: the store holds '{value}' as a created_at, which is not a time such as"
        for command in (("policy", "history"), ("policy", "show", "live"), ("explain", "run", "--athlete", "maya",
                                                                             "--policy-version", "live")):
            assert refused(*command, "--store", saved).startswith(expected), command
        with sqlite3.connect(tmp_path / "s.sqlite") as raw:  # a time stored as SQLAlchemy writes it reads back
            raw.execute("UPDATE policy_versions SET created_at = '2026-12-07 15:51:39.918197'")
        code, out, _ = cli("policy", "history", "--store", saved)
        assert code == 0 and "2026-12-07 15:51" in out

    @pytest.mark.timeout(20)
    def test_a_version_whose_yaml_was_edited_in_the_database_is_refused(
            self, refused: Callable[..., str], cli: Run, saved: str, tmp_path: Path) -> None:
        """A version's digest was never checked against its YAML: an UPDATE in the database made
        `--policy-version live` decide under another policy while the Decision named version 1."""
        with PolicyStore(saved) as store:
            digest = store.resolve("live").digest
        with sqlite3.connect(tmp_path / "s.sqlite") as raw:
            raw.execute("UPDATE policy_versions SET yaml = ?", (replaced(MINIMAL_POLICY, "paid: 1400", "paid: 4000"),))
        expected = "coachctx: version 1 was changed in the store after it was saved: its YAML now has digest "
        line = refused("explain", "run", "--athlete", "maya", "--policy-version", "live", "--store", saved)
        assert line.startswith(expected) and line.endswith(f"it was saved as {digest}; save the policy you want "
                                                           "as a new version")
        with PolicyStore(saved) as store:
            assert [p.split(":")[0] for p in store.verify()] == ["version 1 was changed in the store after it was saved"]
        code, out, _ = cli("policy", "history", "--store", saved)  # the history still lists it
        assert code == 0 and digest in out

    @pytest.mark.timeout(20)
    def test_a_save_with_lint_errors_names_them(self, cli: Run, store_url: str) -> None:
        """`policy save` stored a policy whose rules can never act as written without a word; it is
        saved (as the playground saves it) and each lint error is named on stderr."""
        lint = Path(__file__).parents[1] / "data" / "lint_every_rule.yaml"
        code, out, err = cli("policy", "save", str(lint), "-m", "lint", "--store", store_url)
        assert code == 0 and out.startswith("saved version 1 ")
        assert err.startswith("warning: the saved policy has 2 lint error(s)")
        assert "[promote-excluded]" in err and "[weak-vocabulary]" in err and "[shared-term]" not in err
        code, out, err = cli("policy", "save", str(lint.parents[2] / "policy" / "default.yaml"), "-m", "clean", "--store", store_url)
        assert (code, err) == (0, "") and out.startswith("saved version 2 ")

    @pytest.mark.timeout(10)
    def test_the_same_rules_saved_again_from_no_version_is_nothing_to_save(self, saved: str) -> None:
        """The same policy saved twice without a base made versions 1, 2, 3… of one digest, each
        with no parent; a comment is no change to the rules, as it is not with a base."""
        with PolicyStore(saved) as store:
            for text in (MINIMAL_POLICY, MINIMAL_POLICY + "\n# reworded\n"):
                with pytest.raises(NoChangeError, match=r"^nothing to save: version 1 already holds this exact "
                                                        r"policy \(digest [0-9a-f]{12}\); point a label at "
                                                        r"version 1 instead$"):
                    store.save(text, message="again", author="ana", label="draft")
            changed = store.save(replaced(MINIMAL_POLICY, "max_words: 150", "max_words: 140"), message="other",
                                 author="ana")
            assert [v.number for v in store.history()] == [changed.number] + [1] == [2, 1]
            assert "draft" not in store.labels()

    @pytest.mark.timeout(10)
    def test_a_hash_in_a_sqlite_url_is_refused_not_made_part_of_a_new_file(
            self, refused: Callable[..., str], saved: str, tmp_path: Path) -> None:
        """`labels import` created `s.sqlite#frag` beside the real store (an adversarial pass)."""
        lines = tmp_path / "labels.jsonl"
        lines.write_text('{"question": "knee hurts", "intents": ["injury"]}\n', encoding="utf-8")
        for command in (("policy", "history"), ("labels", "import", str(lines))):
            line = refused(*command, "--store", saved + "#frag")
            assert "a '#' in a SQLite URL would become part of the file name (s.sqlite#frag)" in line, command
        assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl", "s.sqlite"]

    @pytest.mark.timeout(10)
    def test_a_store_in_a_missing_directory_is_refused_and_nothing_is_created(
            self, refused: Callable[..., str], tmp_path: Path) -> None:
        line = refused("policy", "history", "--store", str(tmp_path / "typo" / "deeper" / "s.sqlite"))
        assert "the directory" in line and "does not exist" in line and "postgresql://" in line
        assert not (tmp_path / "typo").exists()

    @pytest.mark.timeout(10)
    def test_another_program_s_sqlite_file_is_refused_and_left_as_it_was(
            self, refused: Callable[..., str], tmp_path: Path) -> None:
        path = tmp_path / "contacts.sqlite"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE contacts (id INTEGER, name TEXT)")
        before = path.read_bytes()
        message = refused("policy", "save", "policy/default.yaml", "-m", "x", "--store", str(path))
        assert "is another program's SQLite database (it holds the tables contacts" in message
        assert path.read_bytes() == before

    @pytest.mark.timeout(10)
    def test_a_store_with_a_table_of_its_own_added_still_opens(self, saved: str) -> None:
        with sqlite3.connect(saved.removeprefix("sqlite:///")) as db:
            db.execute("CREATE TABLE notes (id INTEGER)")
        with PolicyStore(saved) as store:
            assert [v.message for v in store.history()] == ["first"]

    @pytest.mark.timeout(10)
    def test_a_store_that_is_a_fifo_is_refused(self, refused: Callable[..., str], tmp_path: Path) -> None:
        os.mkfifo(tmp_path / "s.sqlite")
        assert "is not a regular file" in refused("policy", "history", "--store", str(tmp_path / "s.sqlite"))

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("limit", ["99999999999999999999", "0", "-1", "1_000", "١٠", "2.5", ""])
    def test_history_limit_is_a_bounded_whole_number(self, refused: Callable[..., str], saved: str,
                                                     limit: str) -> None:
        assert "argument --limit: expected a whole number from 1 to 1000000" in refused(
            "policy", "history", "--limit", limit, "--store", saved)

    @pytest.mark.timeout(10)
    def test_a_header_naming_a_version_past_nine_digits_is_no_base(self, cli: Run, saved: str,
                                                                    tmp_path: Path) -> None:
        """`policy show`'s first line is read back as the base; a forged one must not overflow SQLite."""
        path = tmp_path / "edited.yaml"
        path.write_text("# coachctx policy version 99999999999999999999 (live)\n"
                        + replaced(MINIMAL_POLICY, "max_words: 150", "max_words: 140"), encoding="utf-8")
        code, out, err = cli("policy", "save", str(path), "-m", "forged header", "--store", saved)
        assert (code, out) == (0, "saved version 2 (digest " + out.split("digest ", 1)[1])
        assert "parent" not in out  # and nothing on stderr but the minimal policy's own lint error
        assert err.startswith("warning: the saved policy has 1 lint error(s)") and len(err.splitlines()) == 2

    @pytest.mark.timeout(10)
    def test_a_file_named_like_a_label_is_not_silently_preferred(self, refused: Callable[..., str], cli: Run,
                                                                  saved: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "live").write_text(replaced(MINIMAL_POLICY, "max_words: 150", "max_words: 140"), encoding="utf-8")
        assert "'live' names both a file here and a store version or label; write ./live" in refused(
            "policy", "diff", "live", "1", "--store", saved)
        code, out, _ = cli("policy", "diff", "./live", "1", "--store", saved)
        assert code == 0 and "max_words" in out

    @pytest.mark.timeout(10)
    def test_history_limit_in_range_works(self, cli: Run, saved: str) -> None:
        code, out, _ = cli("policy", "history", "--limit", "1", "--store", saved)
        assert code == 0 and "first" in out


@pytest.mark.timeout(60)
def test_a_store_another_process_holds_says_to_try_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.sqlite"
    with PolicyStore(url) as s:
        s.save(MINIMAL_POLICY, message="first", author="ana")
    holder = sqlite3.connect(tmp_path / "s.sqlite")
    try:
        holder.execute("BEGIN EXCLUSIVE")  # held past the store's 10 s wait for a lock
        with pytest.raises(StoreError, match=r"cannot open: database is locked; another process held this store "
                                             r"for more than 10 s: try again when it has finished$"):
            PolicyStore(url)
    finally:
        holder.rollback()
        holder.close()
