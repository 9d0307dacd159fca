"""The rules learn from a miss, in a real browser: a coach labels a question the rules routed
wrong, sees the suggestion it produces with its evidence, applies it to the draft, checks the
impact on the labelled question and saves a version. The server and the browser are this
folder's conftest.py fixtures (a store of the server's own, headless Chromium)."""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import QUESTION, UI_TIMEOUT_MS, commit, no_exception, opened, tab_button
from browser_support import wait_for_script as wait_for_rerun

pytestmark = pytest.mark.browser
GLUTE = "glute medius niggle again after the long run"
SETTLE_MS = 2 * UI_TIMEOUT_MS
"""Each step reruns the whole page (the Suggest tab learns again when the draft changes): on a
loaded two-core machine a rerun has taken over 30 s."""


def wait_for_script(page: Any) -> None:
    wait_for_rerun(page, SETTLE_MS)


def pick(page: Any, combobox: Any, option: str) -> None:
    """Open the drop-down and choose `option`. A rerun that lands while it is open (the page writes
    its address once after the first screen) closes it again, so open it until the option shows."""
    for _ in range(5):
        combobox.click()
        choice = page.get_by_role("option", name=option, exact=True)
        try:
            choice.wait_for(state="visible", timeout=5_000)
        except Exception:  # noqa: BLE001  (playwright's TimeoutError: the list closed; open it again)
            wait_for_script(page)
            continue
        choice.click()
        return
    raise AssertionError(f"the option {option!r} never showed")


def test_label_a_miss_apply_its_suggestion_check_the_impact_and_save(browser: Any, server: str) -> None:
    from playwright.sync_api import expect

    with opened(browser, server, 1400, 2400, settle_ms=SETTLE_MS) as page:
        commit(page, page.get_by_label(QUESTION), GLUTE)
        expect(page.get_by_text("This should be… (routed to training (best guess)")).to_be_visible(
            timeout=SETTLE_MS)

        page.get_by_text("This should be…").first.click()
        intents = page.get_by_role("combobox", name="This question should go to")
        expect(intents).to_be_visible(timeout=SETTLE_MS)
        pick(page, intents, "injury")
        wait_for_script(page)
        page.keyboard.press("Escape")
        commit(page, page.get_by_label("Labelled by"), "ana")
        store = page.get_by_role("button", name="Store this label")
        expect(store).to_be_enabled(timeout=SETTLE_MS)
        store.click()
        expect(page.get_by_text("Stored label 1")).to_be_visible(timeout=SETTLE_MS)

        tab_button(page, "Suggest").click()
        first = page.locator(".st-key-suggestion_0")
        expect(first).to_contain_text("add 'glute medius': 1 to vocabulary.injury.en", timeout=SETTLE_MS)
        expect(first).to_contain_text(f"fixes row 1: “{GLUTE}” → injury (label 1 by ana)")
        apply = page.get_by_role("button", name="Apply 0 ticked suggestion(s) to the draft")
        expect(apply).to_be_disabled()
        first.get_by_test_id("stCheckbox").locator("label").first.click()
        wait_for_script(page)
        page.get_by_role("button", name="Apply 1 ticked suggestion(s) to the draft").click()
        expect(page.get_by_text("Applied 1 edit(s) to the draft: add 'glute medius'")).to_be_visible(
            timeout=SETTLE_MS)
        wait_for_script(page)  # the status is drawn first; the diff after the suggestions are learned again
        expect(page.locator(".st-key-suggest_diff")).to_contain_text("glute medius", timeout=SETTLE_MS)

        page.get_by_role("button", name="Check the impact").click()
        changed = page.get_by_test_id("stMetric").filter(has_text="Intent changed")
        expect(changed).to_contain_text("1", timeout=SETTLE_MS)
        expect(page.get_by_text("before the suggestions").first).to_be_visible()

        saver = page.get_by_label("Saved by")
        expect(saver).to_have_value("ana")  # the name given with the label is the session's author
        page.get_by_role("button", name="Save the draft as a version").click()
        expect(page.get_by_text("Saved version 1")).to_be_visible(timeout=SETTLE_MS)

        tab_button(page, "Decision").click()
        expect(page.get_by_text("This should be… (routed to injury")).to_be_visible(timeout=SETTLE_MS)
        no_exception(page)
