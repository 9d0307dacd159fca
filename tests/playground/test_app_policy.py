"""The Policy editor tab under AppTest: the YAML draft decides, its problems name the line and the
path, its diff names each change; import and export keep the file.

The form beside the YAML has its own file, test_app_policy_form.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from app_support import (
    CHECKED_IN_TEXT,
    READINESS,
    all_text,
    comment_lines,
    decision,
    draft_with,
    new_app,
    set_margin_zero,
    started,
    texts,
)

from coachctx import cli
from coachctx import playground as pg
from coachctx.engine.policy import Policy, load_policy, parse_policy
from coachctx.errors import PolicyError
from coachctx.tools.policy_diff import diff_policies


class TestPolicyEditor:
    def test_yaml_edit_changes_the_decision(self) -> None:
        at = started("Policy editor")
        before = decision(at)
        assert before["intent"]["source"] != "rules"
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        assert not at.exception
        after = decision(at)
        assert after["policy"]["digest"] != before["policy"]["digest"]
        # margin 0: the tie is "certain", yet the other intent has evidence in the question, so its exclude
        # cannot remove the readiness signal it holds as primary
        assert after["intent"]["source"] == "rules"
        assert set(after["selected"]) >= READINESS
        assert any(r["code"] == "kept_despite_exclude" and "evidence in the question" in r["detail"]
                   for f in after["fragments"] for r in f["reasons"] if f["name"] in READINESS)

    def test_draft_set_through_session_state_changes_the_decision(self) -> None:
        at = new_app()
        at.session_state["policy_yaml"] = draft_with(lambda d: d["tiers"].update(paid=0))
        at.run()
        assert not at.exception
        d = decision(at)
        assert d["budget"] == 0
        assert all(f["role"] != "secondary" or f["status"] == "withheld" for f in d["fragments"])

    def test_invalid_draft_shows_the_error_and_keeps_the_working_policy(self) -> None:
        at = started("Policy editor")
        good = decision(at)
        bad = draft_with(lambda d: d["intents"]["injury"]["primary"].__setitem__(0, "readiness_injry"))
        at.text_area(key="policy_yaml").set_value(bad).run()
        assert not at.exception
        text = all_text(at)
        assert "intents.injury.primary[0]" in text
        assert "intent injury → primary list → item 1" in text
        assert "did you mean 'readiness_injury'" in text
        assert any("problem" in e.value for e in at.error)
        after = decision(at)
        assert after["policy"]["digest"] == good["policy"]["digest"]
        assert after["selected"] == good["selected"]
        assert at.session_state["policy_yaml"] == bad  # the coach's text is kept to be fixed

    def test_yaml_syntax_error_names_the_line(self) -> None:
        at = started("Policy editor")
        good = decision(at)["policy"]["digest"]
        at.text_area(key="policy_yaml").set_value("tiers: {free: 50}\nrouting: {margin: [1\n").run()
        assert not at.exception
        assert "**line 2**" in all_text(at)  # where the unclosed mapping starts, not where the text ends
        assert decision(at)["policy"]["digest"] == good

    def test_diff_lists_the_changed_setting(self) -> None:
        at = started("Policy editor")
        at.text_area(key="policy_yaml").set_value(draft_with(set_margin_zero)).run()
        changes = next(df.value for df in at.dataframe if list(df.value.columns) == list(pg.DIFF_COLUMNS))
        row = changes[changes["path"] == "routing.margin"].iloc[0]
        assert (row["section"], row["change"], row["kind"]) == ("Routing thresholds", "margin: 1 -> 0", "changed")
        assert any("`margin: 1 -> 0`" in m for m in (e.value for e in at.markdown))

    def test_import_through_the_uploader_replaces_the_draft(self) -> None:
        at = started("Policy editor")
        exported = pg.export_policy_yaml(parse_policy(draft_with(set_margin_zero)))
        at.file_uploader(key="policy_upload").set_value(("mine.yaml", exported.encode(), "application/x-yaml")).run()
        assert not at.exception
        assert at.session_state["policy_yaml"] == exported
        assert decision(at)["policy"]["digest"] == parse_policy(exported).digest

    def test_import_of_a_bad_file_keeps_the_draft(self) -> None:
        at = started("Policy editor")
        draft = at.session_state["policy_yaml"]
        at.file_uploader(key="policy_upload").set_value(("bad.yaml", b"!!python/object:os.system {}",
                                                         "application/x-yaml")).run()
        assert not at.exception
        assert at.session_state["policy_yaml"] == draft
        assert any("was not imported" in e.value for e in at.error)

    def test_a_yaml_error_is_reported_once_at_its_line_with_the_line_shown(self) -> None:
        at = started("Policy editor")
        lines = CHECKED_IN_TEXT.splitlines()
        assert lines[10].startswith("  margin:")
        lines[10] = "  margin: [1.0, 2.0"  # line 11: a list never closed
        at.text_area(key="policy_yaml").set_value("\n".join(lines) + "\n").run()
        assert not at.exception
        problems = [m.value for m in at.markdown if m.value.startswith("- **line")]
        assert len(problems) == 1 and problems[0].startswith("- **line 11**"), problems
        assert "line 13" not in problems[0]
        snippet = next(c.value for c in at.code if "> 11 |" in c.value)
        assert "margin: [1.0, 2.0" in snippet and " 10 |" in snippet


class TestLint:
    def test_an_exclude_that_drops_a_shared_signal_is_flagged_beside_the_editor(self, store_url: str) -> None:
        at = started("Policy editor")
        assert any("Lint: no findings" in c for c in texts(at.caption))
        at.text_area(key="policy_yaml").set_value(
            draft_with(lambda d: d["vocabulary"]["training"]["en"].update(pain=1.0))).run()
        assert not at.exception
        conflict = [e for e in texts(at.warning) if "exclude-conflict" in e]
        assert conflict and "readiness_injury" in conflict[0] and "'pain'" in conflict[0]
        assert conflict[0].startswith("**Warning")
        assert any("shared-term" in w and w.startswith("**Warning") for w in texts(at.warning))
        assert decision(at)["policy"]["digest"] != load_policy().digest  # still a valid draft, in use


class TestEditorWords:
    """How the editor names a problem and a change, called directly."""

    def test_describe_path_speaks_the_coach_s_language(self) -> None:
        assert pg.describe_path("intents.injury.primary[1]") == "intent injury → primary list → item 2"
        assert pg.describe_path("vocabulary.training.en.pain") == "vocabulary of training → language en → term 'pain'"
        assert pg.describe_path("scopes.week.modifiers[0].fragment") == "time horizon week → modifier 1 → fragment"
        assert pg.describe_path("line 3, column 2") == "line 3, column 2"

    def test_line_of_points_into_the_draft(self) -> None:
        text = "routing:\n  margin: -1\nintents:\n  injury:\n    primary:\n      - a\n      - b\n"
        assert pg.line_of(text, "routing.margin") == 2
        assert pg.line_of(text, "intents.injury.primary[1]") == 7

    def test_a_draft_with_many_problems_is_composed_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each problem composed the whole draft again in pure Python: 21 problems in the checked-in
        policy held an edit for 45 s (an adversarial pass). Every line is still found."""
        start = CHECKED_IN_TEXT.index("\nvocabulary:")
        weights = iter(range(25))
        text = CHECKED_IN_TEXT[:start] + re.sub(
            r"(\{?[a-z][a-z ]+: )1\.0", lambda m: m.group(1) + ("-1.0" if next(weights, 99) < 25 else "1.0"),
            CHECKED_IN_TEXT[start:])
        composed = []
        real = yaml.compose
        monkeypatch.setattr(yaml, "compose", lambda *a, **k: composed.append(1) or real(*a, **k))
        problems = pg.check_draft(text).problems
        assert len(problems) > 20 and len(composed) == 1
        lines = text.splitlines()
        for p in problems[:20]:
            term = p.path.rsplit(".", 1)[-1]
            assert p.line is not None and term in lines[p.line - 1] and "-1.0" in lines[p.line - 1], p

    def test_diff_frame_names_each_change_and_the_line_diff_shows_it(self, policy: Policy) -> None:
        draft = parse_policy(draft_with(lambda d: d["intents"]["general"].update(max_words=99)))
        changes = pg.diff_frame(diff_policies(policy, draft))
        assert list(changes["path"]) == ["intents.general.max_words"]
        assert list(changes["change"]) == ["max_words: 150 -> 99"]
        added = [line for line in pg.yaml_diff(policy, draft).splitlines() if line.startswith("+ ")]
        assert any("max_words: 99" in line for line in added)


class TestExportImport:
    def test_export_keeps_the_drafts_comments_and_imports_back(self, tmp_path: Path) -> None:
        text = CHECKED_IN_TEXT.replace("margin: 1.0 ", "margin: 0.5 ")
        policy = parse_policy(text)
        exported = pg.export_policy_yaml(policy, text)
        assert comment_lines(CHECKED_IN_TEXT)[0] in exported and "# ... and lead the runner-up" in exported
        assert cli.main(["check-policy", str(_write(tmp_path / "e.yaml", exported))]) == 0
        _, again = pg.import_policy_bytes(exported.encode(), "e.yaml")
        assert again.digest == policy.digest
        assert pg.export_policy_yaml(again, exported) == exported  # no second header on a re-export


    def test_export_round_trips_and_check_policy_accepts_it(self, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
        policy = parse_policy(draft_with(set_margin_zero))
        exported = pg.export_policy_yaml(policy)
        path = tmp_path / "exported.yaml"
        path.write_text(exported, encoding="utf-8")
        assert cli.main(["check-policy", str(path)]) == 0
        assert f"digest {policy.digest}" in capsys.readouterr().out
        text, again = pg.import_policy_bytes(path.read_bytes(), path.name)
        assert text == exported
        assert again.digest == policy.digest
        assert pg.export_policy_yaml(again) == exported

    def test_import_refuses_oversized_files_before_parsing(self) -> None:
        with pytest.raises(PolicyError, match=r"^invalid policy big\.yaml: big\.yaml is 1,048,577 bytes; a policy "
                                              r"file may be at most 1,048,576 bytes \(1 MB\)"):
            pg.import_policy_bytes(b"#" * (pg.MAX_IMPORT_BYTES + 1), "big.yaml")

    def test_import_refuses_non_utf8_and_object_tags(self) -> None:
        with pytest.raises(PolicyError, match=r"not UTF-8"):
            pg.import_policy_bytes(b"\xff\xfe\x00", "latin.yaml")
        with pytest.raises(PolicyError, match=r"YAML"):
            pg.import_policy_bytes(b"!!python/object/apply:os.system ['true']", "evil.yaml")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
