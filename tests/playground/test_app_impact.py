"""The playground's Impact tab under AppTest: a question set through two policies. (Run against live
after an edit, it is part of the Versions tab's "done when" in test_app_versions.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from app_support import ROOT, draft_with, frame_with, open_tab, started, texts
from streamlit.testing.v1 import AppTest

from coachctx import playground as pg
from coachctx.errors import InputError


def buttons(at: AppTest) -> list[str]:
    return [str(b.key) for b in at.button]


class TestImpactUploads:
    @pytest.mark.parametrize(("name", "data", "says"), [
        ("log.csv", b"when,who\n1,2\n", "no `question` (or `q`) column"),
        ("log.jsonl", b"{not json\n[1, 2]\n", "no questions found (row 1: not valid JSON"),
        ("dev.yaml", b"thresholds: {margin: 1}\n", "expected a list of questions"),
    ])
    def test_a_bad_file_gets_a_clear_message(self, store_url: str, name: str, data: bytes, says: str) -> None:
        at = started("Impact")
        draft = at.session_state["policy_yaml"]
        assert "impact_run" in buttons(at)  # the sample log can be run
        at.radio(key="impact_source").set_value("upload").run()
        at.file_uploader(key="impact_upload").set_value((name, data, "application/octet-stream")).run()
        assert not at.exception, [e.stack_trace for e in at.exception]
        refused = [e for e in texts(at.error) if e.startswith(f"Cannot use {name}")]
        assert refused and says in refused[0], texts(at.error)
        assert "impact_run" not in buttons(at)  # a file that cannot be read cannot be run
        assert at.session_state["policy_yaml"] == draft

    def test_a_labelled_yaml_upload_runs(self, store_url: str) -> None:
        questions = {"questions": [
            {"q": "Should I train through this pain?", "intents": ["training", "injury"],
             "needs": ["readiness_training", "readiness_injury"]},
            {"q": "How much protein per day?", "intents": ["nutrition"], "needs": ["readiness_nutrition"]},
        ]}
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value(
            draft_with(lambda d: d["intents"]["nutrition"]["primary"].remove("readiness_nutrition"))).run()
        open_tab(at, "Impact")
        at.radio(key="impact_source").set_value("upload").run()
        at.file_uploader(key="impact_upload").set_value(
            ("dev.yaml", yaml.safe_dump(questions).encode(), "application/x-yaml")).run()
        at.selectbox(key="impact_base").set_value("@checked-in")
        at.button(key="impact_run").click().run()
        assert not at.exception
        report = at.session_state["impact_result"]["report"]
        assert report.summary()["questions"] == 2 and report.summary()["changed"] == 1
        # nutrition no longer asks for its own readiness line, so the protein question loses it
        assert report.candidate_metrics.needs_recall < report.base_metrics.needs_recall
        confusion = frame_with(at, "training", "injury", "general")
        assert confusion.shape == (6, 7)


class TestQuestionSets:
    """The question sets the tab reads, called directly."""

    def test_upload_limits(self) -> None:
        with pytest.raises(InputError, match=r"^big\.jsonl is 5,242,881 bytes; a question set may be at most "
                                             r"5,242,880 bytes \(5 MB\)$"):
            pg.parse_question_upload(b" " * (pg.MAX_QUESTIONS_UPLOAD_BYTES + 1), "big.jsonl")
        with pytest.raises(InputError, match=r"^l\.csv: not UTF-8 text"):
            pg.parse_question_upload(b"question\n\xff\n", "l.csv")
        with pytest.raises(InputError, match=r"^deep\.yaml: not valid YAML \(YAML error: nested deeper than 24 levels"):
            pg.parse_question_upload(b"[" * 100_000, "deep.yaml")
        with pytest.raises(InputError, match=r"^log\.txt: unknown question set format '\.txt'"):
            pg.parse_question_upload(b"question\nhello\n", "log.txt")
        parsed = pg.parse_question_upload(b"question,athlete,tier\nhow hard today?,omar,free\n", "log.csv")
        assert [(q.question, q.athlete, q.tier) for q in parsed.questions] == [("how hard today?", "omar", "free")]

    def test_the_sample_log_is_what_its_generator_writes(self, tmp_path: Path) -> None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("make_log", ROOT / "sample_logs" / "make_log.py")
        assert spec is not None and spec.loader is not None
        make_log = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(make_log)
        if not make_log.DEV.is_file():
            pytest.skip(f"{make_log.DEV} is not here to regenerate from")
        out = tmp_path / "questions.jsonl"
        assert make_log.main(["--out", str(out)]) == 0
        assert out.read_bytes() == (ROOT / "sample_logs" / "questions.jsonl").read_bytes()
