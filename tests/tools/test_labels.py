"""Question labels: the store's table, its checks, and `coachctx labels export|import`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from coachctx.cli import main
from coachctx.engine.policy import load_policy
from coachctx.tools.store import PolicyStore, QuestionLabel, StoreError, check_question_label
from coachctx.tools.suggest import read_labelled, suggest

GLUTE = "glute medius niggle again after the long run"


def label(**changes: object) -> QuestionLabel:
    fields: dict[str, object] = {"question": GLUTE, "intents": ("injury",), "author": "ana", "athlete": "maya",
                                 "needs": ("readiness_injury",), "policy_digest": "2e64e8cc84e5",
                                 "route_source": "fallback", "routed": "training"}
    fields.update(changes)
    return QuestionLabel(**fields)  # type: ignore[arg-type]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/labels.sqlite"


class TestStore:
    def test_a_label_survives_closing_and_reopening_the_store(self, url: str) -> None:
        with PolicyStore(url) as store:
            stored = store.add_question_label(label())
        assert stored.id is not None and stored.created_at is not None
        with PolicyStore(url, create=False) as reopened:
            [back] = reopened.question_labels()
        assert back == stored
        assert (back.question, back.intents, back.needs, back.athlete) == (GLUTE, ("injury",), ("readiness_injury",),
                                                                          "maya")
        assert (back.route_source, back.routed, back.policy_digest) == ("fallback", "training", "2e64e8cc84e5")

    def test_the_same_label_twice_is_stored_once_and_a_different_one_is_added(self, url: str) -> None:
        with PolicyStore(url) as store:
            first = store.add_question_label(label())
            again = store.add_question_label(label())
            other = store.add_question_label(label(intents=("injury", "training")))
            assert again.id == first.id
            assert other.id != first.id
            assert [x.id for x in store.question_labels()] == [first.id, other.id]

    @pytest.mark.parametrize("n", [3, 40], ids=["few, each looked up", "many, the stored ones read once"])
    def test_an_import_stores_each_label_once_whether_stored_before_or_twice_in_it(self, url: str, n: int) -> None:
        with PolicyStore(url) as store:
            before = store.add_question_label(label(question="q 0"))
            batch = [label(question=f"q {i % n}") for i in range(2 * n)] + [label(question="q 0", athlete=None)]
            out = store.add_question_labels(batch)
            stored = store.question_labels()
        assert len(stored) == n + 1 and out[0] == before and out[n] == before
        assert [x.id for x in out[:n]] == [x.id for x in out[n:2 * n]] == [x.id for x in stored[:n]]
        assert out[-1] == stored[-1] and out[-1].athlete is None and out[-1].id not in {x.id for x in out[:n]}
        with PolicyStore(url, create=False) as reopened:
            assert reopened.question_labels() == stored

    def test_a_deleted_label_is_gone(self, url: str) -> None:
        with PolicyStore(url) as store:
            stored = store.add_question_label(label())
            assert store.delete_question_label(stored.id or 0) is True
            assert store.delete_question_label(stored.id or 0) is False
            assert store.question_labels() == []

    def test_one_bad_label_stores_none_of_the_batch(self, url: str) -> None:
        with PolicyStore(url) as store:
            with pytest.raises(StoreError, match=r"^intents: unknown intent 'injry' \(did you mean 'injury'\?\)"):
                store.add_question_labels([label(), label(intents=("injry",))])
            assert store.question_labels() == []

    @pytest.mark.parametrize(("changes", "message"), [
        ({"question": "  "}, r"^question is empty"),
        ({"question": "why\nnow"}, r"^question holds the control character U\+000A"),
        ({"question": "x" * 2001}, r"^question is 2001 characters; the limit is 2000$"),
        ({"intents": ()}, r"^intents is empty"),
        ({"intents": "injury"}, r"^intents: expected a list of intent names"),
        ({"needs": ("readiness_knee",)}, r"^needs: unknown fragment 'readiness_knee' \(did you mean"),
        ({"author": ""}, r"^author is empty"),
        ({"author": "ana\x1b[2J"}, r"^author holds the control character U\+001B"),
        ({"author": "a" * 101}, r"^author is 101 characters; the limit is 100$"),
        ({"athlete": "maya; drop table"}, r"^athlete: 'maya; drop table' is not valid; an athlete id is lower-case "
                                          r"letters, digits, - and _$"),
        # never a path, never a line break, never another case: the ids the services take
        *[({"athlete": bad}, r"^athlete: .* is not valid; an athlete id is") for bad in ("..", "maya\n", "Maya", "a.b")],
        ({"scope": "year"}, r"^scope: 'year' is not valid; use one of today, week, months$"),
        ({"lang": "xx"}, r"^lang: 'xx' is not valid; use one of en, "),
        ({"origin": "robot"}, r"^origin: 'robot' is not valid; use one of coach, model$"),
        ({"route_source": "guess"}, r"^route_source: 'guess' is not valid; use one of rules, model, fallback$"),
        ({"policy_digest": "not hex"}, r"^policy_digest: 'not hex' is not valid$"),
        ({"created_at": datetime(9999, 12, 31, 23, 59, tzinfo=timezone(-timedelta(hours=23, minutes=59)))},
         r"^at: 9999-12-31T23:59:00-23:59 is outside the years 1 to 9999 once converted to UTC$"),
        ({"created_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}, r"^at: 0001-01-01T00:00:00\+05:00 is"),
        ({"created_at": "2026-01-01"}, r"^at: expected a datetime, got str$"),
    ])
    def test_bad_fields_are_refused_naming_the_field(self, changes: dict[str, object], message: str) -> None:
        with pytest.raises(StoreError, match=message):
            check_question_label(label(**changes))

    def test_an_aware_time_is_stored_as_the_same_instant_in_utc_and_a_naive_one_as_utc(self, url: str) -> None:
        plus5 = datetime(2026, 1, 1, 10, tzinfo=timezone(timedelta(hours=5)))
        assert check_question_label(label(created_at=plus5)).created_at == datetime(2026, 1, 1, 5, tzinfo=UTC)
        with PolicyStore(url) as store:
            store.add_question_labels([label(created_at=plus5), label(question="naive", created_at=datetime(2026, 1, 1, 10))])
        with PolicyStore(url) as store:
            stored = [x.created_at for x in store.question_labels()]
        assert stored == [datetime(2026, 1, 1, 5, tzinfo=UTC), datetime(2026, 1, 1, 10, tzinfo=UTC)]

    def test_text_is_trimmed_and_repeated_names_kept_once(self) -> None:
        checked = check_question_label(label(question=f"  {GLUTE} ", intents=("injury", "injury", "training")))
        assert checked.question == GLUTE
        assert checked.intents == ("injury", "training")


def write(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


class TestCli:
    def test_import_then_export_round_trips_and_suggest_reads_the_export(
            self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        source = write(tmp_path / "in.jsonl",
                       {"question": GLUTE, "intents": ["injury"], "lang": "en", "athlete": "maya"},
                       {"q": "hrv tanked??", "intents": "recovery", "needs": ["readiness_recovery"], "origin": "model",
                        "author": "kai", "at": "2026-12-01T09:00:00+00:00"})
        assert main(["labels", "import", str(source), "--author", "rui", "--store", url]) == 0
        assert capsys.readouterr().out.startswith("imported 2 label(s)")
        assert main(["labels", "import", str(source), "--author", "rui", "--store", url]) == 0
        assert "imported 0 label(s)" in capsys.readouterr().out

        out = tmp_path / "out.jsonl"
        assert main(["labels", "export", "--out", str(out), "--store", url]) == 0
        lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [(x["question"], x["intents"], x["origin"], x["author"]) for x in lines] == [
            (GLUTE, ["injury"], "coach", "rui"), ("hrv tanked??", ["recovery"], "model", "kai")]
        assert lines[1]["needs"] == ["readiness_recovery"] and lines[1]["at"] == "2026-12-01T09:00:00+00:00"
        assert "needs" not in lines[0] and lines[0]["lang"] == "en"

        rows = read_labelled(out)
        assert [(r.question, r.intents, r.origin) for r in rows] == [(GLUTE, ("injury",), "coach"),
                                                                     ("hrv tanked??", ("recovery",), "model")]
        assert any(s.fixes == (1,) and s.edit.intent == "injury" for s in suggest(rows, load_policy()))

        assert main(["labels", "export", "--store", url]) == 0
        assert capsys.readouterr().out == out.read_text(encoding="utf-8")

    @pytest.mark.parametrize(("line", "message"), [
        ('{"question": "x", "intents": ["trainig"]}', r"line 2: intents: unknown intent 'trainig' \(did you mean"),
        ('{"question": "x", "intnets": ["training"]}', r"line 2: unknown field 'intnets' \(did you mean 'intents'\?\)"),
        # the column on this line, not "line 2: line 1, column 17" (an adversarial pass)
        ('{"question": "x"', r"line 2: column 17: not valid JSON: Expecting ',' delimiter$"),
        ('["x"]', r"line 2: expected a JSON object, got list"),
        ('{"question": "x", "intents": ["training"], "at": "yesterday"}', r"line 2: at: 'yesterday' is not an ISO"),
        ('{"intents": ["training"]}', r"line 2: question is empty"),
        ('{"q": "x", "question": "y", "intents": ["training"]}', r"line 2: both `question` and `q` are given"),
        ('{"question": "x", "intents": ["training"], "author": 5}', r"line 2: author: expected text, got int 5$"),
        ('{"question": ["x"], "intents": ["training"]}', r"line 2: question: expected text, got list \['x'\]$"),
        ('{"question": "x", "intents": ["training"], "origin": false}',
         r"line 2: origin: False is not valid; use one of coach, model$"),
        ('{"question": "x", "intents": ["training"], "at": "9999-12-31T23:59:59-23:59"}',
         r"line 2: at: 9999-12-31T23:59:59-23:59 is outside the years 1 to 9999 once converted to UTC$"),
    ])
    def test_a_bad_line_is_named_and_nothing_is_imported(
            self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str) -> None:
        source = write(tmp_path / "in.jsonl", {"question": GLUTE, "intents": ["injury"]}, line)
        assert main(["labels", "import", str(source), "--author", "rui", "--store", url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"coachctx: {source}: line 2")
        assert re.search(message, err), err
        with PolicyStore(url) as store:
            assert store.question_labels() == []

    def test_an_offset_is_kept_as_the_same_instant_and_a_naive_time_read_as_utc(
            self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        source = write(tmp_path / "in.jsonl",
                       {"question": "tz test", "intents": ["training"], "at": "2026-01-01T10:00:00+05:00"},
                       {"question": "naive", "intents": ["training"], "at": "2026-01-01T10:00:00"})
        assert main(["labels", "import", str(source), "--author", "rui", "--store", url]) == 0
        capsys.readouterr()
        assert main(["labels", "export", "--store", url]) == 0
        exported = [json.loads(line)["at"] for line in capsys.readouterr().out.splitlines()]
        assert exported == ["2026-01-01T05:00:00+00:00", "2026-01-01T10:00:00+00:00"]

    def test_an_empty_file_says_there_are_no_labels(self, url: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
        source = write(tmp_path / "in.jsonl", "", "  ")
        assert main(["labels", "import", str(source), "--store", url]) == 2
        assert "no labels" in capsys.readouterr().err

    def test_export_is_atomic_and_refuses_a_directory(self, url: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
        with PolicyStore(url) as store:
            store.add_question_label(label(created_at=datetime(2026, 12, 4, tzinfo=UTC)))
        target = tmp_path / "out"
        target.mkdir()
        assert main(["labels", "export", "--out", str(target), "--store", url]) == 2
        assert "it is a directory" in capsys.readouterr().err
        assert list(tmp_path.glob(".out.*")) == []
        kept = tmp_path / "kept.jsonl"
        kept.write_text("old\n", encoding="utf-8")
        assert main(["labels", "export", "--out", str(tmp_path / "missing" / "x.jsonl"), "--store", url]) == 2
        assert main(["labels", "export", "--out", str(kept), "--store", url, "--force"]) == 0
        assert json.loads(kept.read_text(encoding="utf-8"))["question"] == GLUTE

    def test_export_of_a_store_that_does_not_exist_creates_nothing(self, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
        missing = tmp_path / "none.sqlite"
        assert main(["labels", "export", "--store", str(missing)]) == 2
        assert "does not exist" in capsys.readouterr().err
        assert not missing.exists()


class TestListAndDelete:
    def test_list_shows_the_ids_and_delete_removes_only_those(self, url: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
        with PolicyStore(url) as store:
            first, second = store.add_question_labels([label(), label(question="hrv tanked??", intents=("recovery",))])
        assert main(["labels", "list", "--store", url]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split("\t")[0] for line in lines] == [str(first.id), str(second.id)]
        assert lines[1].endswith("\tana\tcoach\trecovery\thrv tanked??")
        assert main(["labels", "delete", str(first.id), "--store", url]) == 0
        assert capsys.readouterr().out.startswith("deleted 1 label(s)")
        with PolicyStore(url) as store:
            assert [x.id for x in store.question_labels()] == [second.id]

    def test_an_empty_store_says_so(self, url: str, capsys: pytest.CaptureFixture[str]) -> None:
        with PolicyStore(url) as store:
            store.add_question_labels([])
        assert main(["labels", "list", "--store", url]) == 0
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("no question labels in sqlite:///")

    def test_an_unknown_id_deletes_nothing_and_names_it(self, url: str, capsys: pytest.CaptureFixture[str]) -> None:
        with PolicyStore(url) as store:
            stored = store.add_question_label(label())
        assert main(["labels", "delete", str(stored.id), "999", "--store", url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no label 999" in err and "nothing deleted" in err
        with PolicyStore(url) as store:
            assert [x.id for x in store.question_labels()] == [stored.id]

    @pytest.mark.parametrize("value", ["0", "-3", "x", "1.5"])
    def test_an_id_is_a_whole_number(self, url: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as e:
            main(["labels", "delete", value, "--store", url])
        assert e.value.code == 2 and "a label id is a whole number" in capsys.readouterr().err
