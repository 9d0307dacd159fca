"""The playground in a real browser: `streamlit run app.py` on a free 127.0.0.1 port, driven by
headless Chromium through Playwright (the server and the browser: conftest.py; the steps:
browser_support.py).

Set COACHCTX_SCREENSHOT=docs/playground.png to refresh the screenshot in the docs, and
COACHCTX_SCREENSHOTS=docs to refresh the first screen at each window width
(docs/playground-1024.png, -1366.png, -1920.png).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    DRAFT,
    QUESTION,
    UI_TIMEOUT_MS,
    ask,
    assert_line_numbers_follow_the_text,
    clipped_labels,
    commit,
    download_policy,
    expect_listed,
    no_exception,
    open_tab,
    opened,
    save_version,
    screenshot,
    set_margin,
    settled_box,
    tab_button,
    wait_for_script,
)

from coachctx import playground as pg
from coachctx.engine.policy import parse_policy

pytestmark = pytest.mark.browser
KEPT_COMMENT = "# ... and lead the runner-up by at least this much"  # the checked-in file's comments are kept


def test_pain_question_selects_both_readiness_fragments_and_the_policy_downloads(
        browser: Any, server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with opened(browser, server, 1400, 2650, accept_downloads=True) as page:
        sent = page.locator(".coachctx-sent")
        withheld = page.locator(".coachctx-withheld")
        question = page.get_by_label(QUESTION)

        commit(page, question, "How much protein per day?")
        expect(withheld).to_have_count(1, timeout=UI_TIMEOUT_MS)
        expect(withheld).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)

        commit(page, question, pg.PAIN_QUESTION)
        expect(sent).to_have_count(1, timeout=UI_TIMEOUT_MS)
        expect(sent).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)
        expect(sent).to_contain_text("readiness_training")
        expect(withheld).not_to_contain_text("readiness_training")
        expect(withheld).not_to_contain_text("readiness_injury")
        no_exception(page)
        wait_for_script(page)
        assert "q=Should+I+train+through+this+pain" in page.url or "q=Should%20I%20train" in page.url

        question.blur()
        page.wait_for_timeout(1000)  # let the chart finish drawing
        page.screenshot(path=str(tmp_path / "playground.png"))
        screenshot(page, "COACHCTX_SCREENSHOT")

        path = download_policy(page, tmp_path)
        text = path.read_text(encoding="utf-8")
        policy = parse_policy(text, str(path))
        assert f"digest {policy.digest}" in text.splitlines()[0]
        assert KEPT_COMMENT in text
        assert "draft=" in page.url


def test_save_a_version_and_run_the_impact_analysis(browser: Any, server: str) -> None:
    from playwright.sync_api import expect

    with opened(browser, server, 1400, 1600) as page:
        save_version(page, "baseline from the browser")
        expect(page.get_by_text("Saved version 1")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("The decision uses stored version 1 (draft)")).to_be_visible()

        open_tab(page, "Impact")
        page.get_by_role("button", name="Run impact analysis").click()
        expect(page.get_by_text("Done: 477 of 479 rows decided, 2 skipped")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("No question decides differently under the candidate.")).to_be_visible()
        no_exception(page)


# --- at each window width --------------------------------------------------------------------------


WIDTHS = {1024: 768, 1366: 768, 1920: 1080}


def first_screen_is_readable(page: Any, width: int) -> None:
    """The pain question is asked; the decision summary is on the first screen, without scrolling;
    no label is clipped."""
    from playwright.sync_api import expect

    expect(page.get_by_label(QUESTION)).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
    summary = page.get_by_text("Withheld:", exact=False).first
    expect(summary).to_be_visible(timeout=UI_TIMEOUT_MS)
    box = settled_box(page, summary)
    assert box is not None and box["y"] + box["height"] <= WIDTHS[width], box
    page.wait_for_timeout(500)
    screenshot(page, "COACHCTX_SCREENSHOTS", f"playground-{width}.png")
    assert clipped_labels(page) == []


def back_and_forward_restore_the_question(page: Any, server: str) -> None:
    from playwright.sync_api import expect

    question = ask(page, "How much protein per day?")
    expect_listed(page, "withheld", "readiness_injury")
    wait_for_script(page)
    assert "protein" in page.url
    page.go_back()
    expect(question).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
    expect_listed(page, "sent", "readiness_injury")
    assert page.url.startswith(server), "Back must not leave the app"
    page.go_forward()
    expect(question).to_have_value("How much protein per day?", timeout=UI_TIMEOUT_MS)
    page.go_back()
    expect(question).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
    wait_for_script(page)


def back_returns_to_the_tab_before(page: Any) -> None:
    """The open tab is in the address and in history."""
    from playwright.sync_api import expect

    open_tab(page, "Versions")
    page.wait_for_function("() => window.location.search.includes('tab=versions')", timeout=UI_TIMEOUT_MS)
    wait_for_script(page)
    page.go_back()
    expect(tab_button(page, "Decision")).to_have_attribute("aria-checked", "true",
                                                                        timeout=UI_TIMEOUT_MS)
    wait_for_script(page)


def a_fact_s_reason_is_read_in_full(page: Any, width: int) -> None:
    """Long text sits in expandable rows: opened, a fact's reason is inside the window."""
    from playwright.sync_api import expect

    row = page.locator(".coachctx-facts details").first
    row.locator("summary").click()
    why = row.get_by_text("Why:", exact=False)
    expect(why).to_be_visible(timeout=UI_TIMEOUT_MS)
    box = settled_box(page, why)
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


def a_draft_edit_survives_a_reload(page: Any, dialogs: list[str]) -> None:
    """The browser asks first (the edit is not a saved version); after the reload the draft is there."""
    from playwright.sync_api import expect

    open_tab(page, "Policy editor")
    assert_line_numbers_follow_the_text(page)
    set_margin(page, "0.5")
    page.wait_for_function("() => window.location.search.includes('draft=')", timeout=UI_TIMEOUT_MS)
    page.reload()
    wait_for_script(page)
    assert dialogs == ["beforeunload"]
    open_tab(page, "Policy editor")
    expect(page.get_by_label(DRAFT)).to_contain_text("margin: 0.5", timeout=UI_TIMEOUT_MS)


@pytest.mark.parametrize("width", list(WIDTHS))
def test_at_each_width_labels_are_readable_a_draft_survives_a_reload_and_back_restores_the_question(
        browser: Any, server: str, width: int) -> None:
    elsewhere: list[str] = []
    dialogs: list[str] = []

    def request(request: Any) -> None:
        if not request.url.startswith((server, "data:")):
            elsewhere.append(request.url)

    def confirm(dialog: Any) -> None:
        dialogs.append(dialog.type)
        dialog.accept()

    with opened(browser, server, width, WIDTHS[width], on={"request": request, "dialog": confirm}) as page:
        first_screen_is_readable(page, width)
        back_and_forward_restore_the_question(page, server)
        back_returns_to_the_tab_before(page)
        a_fact_s_reason_is_read_in_full(page, width)
        for tab in ("Policy editor", "Versions", "Impact", "Reproduce a trace"):
            open_tab(page, tab)
            assert clipped_labels(page) == [], tab
        a_draft_edit_survives_a_reload(page, dialogs)
        no_exception(page)
        assert elsewhere == [], "no request may leave the machine"


# --- the "done when" -----------------------------------------------------------------------


INTERVALS = "How hard should tonight's interval session be?"


def training_sees_recovery_through_the_form(page: Any) -> None:
    """Training no longer withholds recovery readiness: the editor says that alone sends nothing,
    and one click adds it as an optional fact, which the Decision tab then sends."""
    from playwright.sync_api import expect

    open_tab(page, "Policy editor")
    page.get_by_role("button", name="Remove Recovery and sleep today").click(timeout=UI_TIMEOUT_MS)
    offer = page.get_by_role("button", name=re.compile(r"^Add .* to training's secondary list$"))
    expect(offer).to_be_visible(timeout=UI_TIMEOUT_MS)
    offer.click()
    expect(page.get_by_text("Done: add", exact=False)).to_be_visible(timeout=UI_TIMEOUT_MS)
    wait_for_script(page)
    open_tab(page, "Decision")
    expect_listed(page, "sent", "readiness_recovery")


def saved(page: Any, message: str) -> None:
    from playwright.sync_api import expect

    save_version(page, message)
    expect(page.get_by_text("Saved version", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
    wait_for_script(page)


def a_reload_loses_nothing(page: Any) -> None:
    """The open tab, the question and the saved rule are all there after a reload."""
    from playwright.sync_api import expect

    page.reload()
    wait_for_script(page)
    expect(tab_button(page, "Versions")).to_have_attribute("aria-checked", "true",
                                                                        timeout=UI_TIMEOUT_MS)
    expect(page.get_by_label(QUESTION)).to_have_value(INTERVALS)
    open_tab(page, "Decision")
    expect_listed(page, "sent", "readiness_recovery")


def revert_moves_the_label_back(page: Any) -> None:
    from playwright.sync_api import expect

    revert = page.get_by_role("button", name=re.compile(r"^Revert \S+ to version \d+$"))
    name = revert.inner_text()
    revert.click()
    target = name.rsplit(" ", 1)[-1]
    expect(page.get_by_text(f"now points at version {target}", exact=False).first).to_be_visible(
        timeout=UI_TIMEOUT_MS)


def test_a_coach_asks_sees_why_changes_a_rule_saves_reloads_reverts_and_exports(
        browser: Any, server: str, tmp_path: Path) -> None:
    """The issue's "done when", on a 1366×768 laptop, with nothing but the page."""

    with opened(browser, server, 1366, 768, on={"dialog": lambda dialog: dialog.accept()},
                accept_downloads=True) as page:
        ask(page, INTERVALS)
        page.wait_for_function("() => window.location.search.includes('tonight')", timeout=UI_TIMEOUT_MS)
        expect_listed(page, "sent", "readiness_training")
        expect_listed(page, "withheld", "readiness_recovery")
        wait_for_script(page)

        training_sees_recovery_through_the_form(page)
        saved(page, "training sees recovery")
        a_reload_loses_nothing(page)

        # a second change, saved too: the label moves on, and a revert moves it back
        open_tab(page, "Policy editor")
        set_margin(page, "0.5")
        saved(page, "a smaller margin")
        revert_moves_the_label_back(page)
        no_exception(page)

        path = download_policy(page, tmp_path)
        text = path.read_text(encoding="utf-8")
        assert KEPT_COMMENT in text
        assert "readiness_recovery" in parse_policy(text, str(path)).intents["training"].secondary


CJK_QUESTION = "足首が痛いのですが、走ってもいいですか？"


def test_a_japanese_question_is_readable(browser: Any, server: str) -> None:
    """A CJK question needs a CJK font on the machine (Debian: fonts-noto-cjk); the page routes it
    and shows it. COACHCTX_SCREENSHOTS=docs writes docs/playground-cjk.png."""
    from playwright.sync_api import expect

    fonts = subprocess.run(["fc-list", ":lang=ja", "family"], capture_output=True, text=True, check=False).stdout
    if not fonts.strip():
        pytest.skip("no Japanese font installed (apt-get install fonts-noto-cjk)")
    with opened(browser, server, 1366, 768) as page:
        question = ask(page, CJK_QUESTION)
        expect_listed(page, "sent", "readiness_injury")
        wait_for_script(page)
        expect(question).to_have_value(CJK_QUESTION)
        question.blur()
        page.wait_for_timeout(500)
        screenshot(page, "COACHCTX_SCREENSHOTS", "playground-cjk.png")
        no_exception(page)
