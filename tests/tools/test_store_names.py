"""Names and numbers the store and the address take are the whole text, in ASCII: a trailing line
break passed `^...$` (Python's `$` matches before a final newline), and `\\d` and `str.isdigit` read
Arabic-Indic and full-width digits as a version or label number (an adversarial pass saved the label
"live\\n" and deleted label 3 given "٣"). A label moved where it already points is not a move."""

from __future__ import annotations

from pathlib import Path

import pytest

from coachctx.cli import main
from coachctx.engine.policy import DEFAULT_POLICY_PATH
from coachctx.engine.services import ATHLETE_ID
from coachctx.playground.url_state import _BUDGET, _DIGEST
from coachctx.tools.store import PolicyStore, StoreError, UnknownVersionError, check_label
from coachctx.tools.store.drafts import DRAFT_ID_PATTERN

LINE_BREAKS = ("\n", "\r\n")
OTHER_DIGITS = ("٣", "５", "३", "²")


@pytest.mark.parametrize("name", [f"live{end}" for end in LINE_BREAKS] + ["draft\n"])
def test_a_label_with_a_line_break_is_refused(name: str) -> None:
    with pytest.raises(StoreError, match=r"^label .* is not valid: use lower-case letters"):
        check_label(name)


@pytest.mark.parametrize(("pattern", "good"), [
    (ATHLETE_ID, "maya"), (DRAFT_ID_PATTERN, "3QNkPAHp_Bk5"), (_DIGEST, "c2795f56cbd2"), (_BUDGET, "1400")])
def test_an_identifier_is_the_whole_text(pattern: object, good: str) -> None:
    assert pattern.match(good)  # type: ignore[attr-defined]
    assert not any(pattern.match(good + end) for end in LINE_BREAKS)  # type: ignore[attr-defined]


def test_a_version_is_named_in_ascii_digits(tmp_path: Path) -> None:
    with PolicyStore(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
        store.save(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"), message="first", author="ana")
        assert store.resolve("1").number == store.resolve("v1").number == 1
        for digit in ("١", "１", "v١"):
            with pytest.raises(UnknownVersionError, match="no version or label"):
                store.resolve(digit)


@pytest.mark.parametrize("digit", OTHER_DIGITS)
def test_a_label_id_is_ascii_digits(digit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["labels", "delete", digit, "--store", f"sqlite:///{tmp_path / 's.sqlite'}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "a label id is a whole number from 1" in err and "_label_id" not in err, err


def test_a_label_moved_where_it_already_points_records_nothing(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    with PolicyStore(url) as store:
        store.save(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"), message="first", author="ana", label="live")
        before = store.label_log("live")
    assert main(["policy", "label", "live", "1", "--store", url]) == 0
    assert capsys.readouterr().out == "live already points at version 1; nothing changed\n"
    with PolicyStore(url) as store:
        assert store.label_log("live") == before and len(before) == 1
