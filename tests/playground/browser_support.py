"""Shared by the browser tests: starting the server and the browser (the fixtures are in
conftest.py), a page per test, and the steps a coach takes on it.

Debian's /usr/bin/chromium is used (`playwright install` cannot download a browser here). When
the browser cannot start the test is skipped on a developer machine, but fails under CI=true:
a CI run that silently skipped the only real-browser check would prove nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

from bench.playground_server import wait_healthy as server_problem

ROOT = Path(__file__).resolve().parents[2]
UI_TIMEOUT_MS = 60_000  # a loaded CI machine (or a shared one) can take a while per rerun
QUESTION = "The athlete's question"
DRAFT = "Policy YAML (the draft)"


# --- the server and the browser --------------------------------------------------------------------


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    problem = server_problem(url, proc)
    if problem is not None:
        pytest.fail(f"{problem}:\n{log.read_text()}")


def cannot_start(why: str) -> NoReturn:
    message = f"headless Chromium cannot start: {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (CI=true: the browser test must run, so this is a failure)")
    pytest.skip(message)


@contextmanager
def opened(browser: Any, server: str, width: int, height: int, *, on: Mapping[str, Callable[[Any], None]] | None = None,
           settle_ms: int = UI_TIMEOUT_MS, **options: Any) -> Iterator[Any]:
    """A page of its own (a new browser context) on the app, after the first run is over (waited
    for up to `settle_ms`); `on` names page event handlers, attached before the page loads."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    try:
        page = context.new_page()
        for event, handler in (on or {}).items():
            page.on(event, handler)
        page.goto(server)
        wait_for_script(page, settle_ms)
        yield page
    finally:
        context.close()


# --- steps on the page -----------------------------------------------------------------------------


def wait_for_script(page: Any, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout_ms)


def settled_box(page: Any, locator: Any, timeout_ms: int = UI_TIMEOUT_MS) -> dict[str, float] | None:
    """Where an element is once the page has stopped moving it: the same box read twice, 250 ms
    apart. Streamlit draws a run's elements as they arrive, so the first frame after a load can
    place one lower than the finished page does (seen once in a few loads, for a frame)."""
    box, waited = locator.bounding_box(), 0
    while waited < timeout_ms:
        page.wait_for_timeout(250)
        waited += 250
        again = locator.bounding_box()
        if again == box:
            return box
        box = again
    return box


def tab_button(page: Any, name: str) -> Any:
    """The button of the tab with this label, in the strip above the tabs (a radio group)."""
    return page.locator(".st-key-tab").get_by_role("radio", name=name, exact=True)


def open_tab(page: Any, name: str) -> None:
    """Click a tab and wait until its run is over: only the open tab is built, on that run."""
    from playwright.sync_api import expect

    tab = tab_button(page, name)
    tab.click()
    expect(tab).to_have_attribute("aria-checked", "true", timeout=UI_TIMEOUT_MS)
    page.wait_for_timeout(500)  # the run the click asked for has started
    wait_for_script(page)


def commit(page: Any, field: Any, value: str) -> None:
    """Type into a field, press Enter and wait until the run that starts is over, as a coach waits
    for the page before the next field: a field typed while the last one's run is still going can
    be reset to what that run drew (Streamlit's page redraws the fields of the part that reran)."""
    field.fill(value)
    field.press("Enter")
    page.wait_for_timeout(500)  # the run Enter asked for has started
    wait_for_script(page)


def ask(page: Any, question: str) -> Any:
    """Type a question and press Enter; the question box."""
    box = page.get_by_label(QUESTION)
    box.fill(question)
    box.press("Enter")
    return box


def expect_listed(page: Any, which: str, fragment: str) -> None:
    """The decision's `which` list ("sent" or "withheld") names `fragment`, once the run that drew it
    is over. While a run is drawing, Streamlit can still show the last run's list beside the new one
    (both faded in and out for a moment), so the list is looked for by its text first, then the page
    is waited for and the one list left is checked."""
    from playwright.sync_api import expect

    lists = page.locator(f".coachctx-{which}")
    expect(lists.filter(has_text=fragment).first).to_be_visible(timeout=UI_TIMEOUT_MS)
    wait_for_script(page)
    expect(lists).to_have_count(1, timeout=UI_TIMEOUT_MS)
    expect(lists).to_contain_text(fragment)


def set_margin(page: Any, value: str) -> None:
    """On the Policy editor tab: the routing margin through the form, seen in the YAML."""
    from playwright.sync_api import expect

    margin = page.get_by_role("spinbutton", name="Margin over the runner-up")
    margin.fill(value)
    margin.press("Enter")
    expect(page.get_by_label(DRAFT)).to_contain_text(f"margin: {value}", timeout=UI_TIMEOUT_MS)
    wait_for_script(page)


def save_version(page: Any, message: str) -> None:
    """On the Versions tab: a name, a message, Save (with the label the page proposes)."""
    open_tab(page, "Versions")
    for label, value in (("Your name", "ana"), ("What changed and why", message)):
        commit(page, page.get_by_label(label), value)
    page.get_by_role("button", name="Save as a new version").click()


def download_policy(page: Any, folder: Path) -> Path:
    """On the Policy editor tab: Download policy YAML, saved into `folder`."""
    open_tab(page, "Policy editor")
    with page.expect_download(timeout=UI_TIMEOUT_MS) as info:
        page.get_by_role("button", name="Download policy YAML").click()
    download = info.value
    assert download.suggested_filename.endswith(".yaml")
    path = folder / download.suggested_filename
    download.save_as(path)
    return path


def no_exception(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stException")).to_have_count(0)


def screenshot(page: Any, variable: str, name: str | None = None) -> None:
    """Refresh a screenshot in the docs when the environment variable names where: the file itself
    (`name` None) or the folder it goes in."""
    target = os.environ.get(variable)
    if target:
        page.screenshot(path=str(ROOT / target if name is None else ROOT / target / name))


# --- checks ----------------------------------------------------------------------------------------


# Every control's label, every button's and every tab's text: the element that holds the text must
# not be wider than its box (clipped or cut with an ellipsis) nor reach past the window's edges.
CLIPPED_LABELS_JS = """() => {
  const selectors = ["[data-testid='stWidgetLabel']", "[data-testid^='stBaseButton']", "button[role='tab']",
                     "[data-testid='stMetricLabel']"];
  const out = [];
  for (const el of document.querySelectorAll(selectors.join(","))) {
    if (el.offsetParent === null || !el.innerText.trim()) continue;
    if (el.closest("[data-testid='stSidebar']") || el.closest("[data-testid='stPopoverBody']")) continue;
    const box = el.getBoundingClientRect();
    const inner = [el, ...el.querySelectorAll("*")];
    const cut = inner.some((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow !== "visible");
    if (cut || box.left < 0 || box.right > window.innerWidth + 1) out.push(el.innerText.trim().slice(0, 60));
  }
  return out;
}"""


def clipped_labels(page: Any) -> list[str]:
    found: list[str] = page.evaluate(CLIPPED_LABELS_JS)
    return found


def assert_line_numbers_follow_the_text(page: Any) -> None:
    """The YAML box has a line number per line, on the same lines, scrolling with the text."""
    page.wait_for_function("() => document.querySelector('.coachctx-gutter')", timeout=UI_TIMEOUT_MS)
    state = page.evaluate("""() => {
      const area = document.querySelector('.st-key-policy_yaml textarea');
      const gutter = document.querySelector('.coachctx-gutter');
      area.scrollTop = 20 * parseFloat(getComputedStyle(area).lineHeight);
      area.dispatchEvent(new Event('scroll'));
      return {lines: area.value.split('\\n').length, numbers: gutter.textContent.split('\\n'),
              area: getComputedStyle(area).lineHeight, gutter: getComputedStyle(gutter).lineHeight,
              top: [area.getBoundingClientRect().top, gutter.getBoundingClientRect().top],
              scroll: [area.scrollTop, gutter.scrollTop]};
    }""")
    assert state["numbers"] == [str(n) for n in range(1, state["lines"] + 1)]
    assert state["area"] == state["gutter"] and abs(state["top"][0] - state["top"][1]) <= 1, state
    assert abs(state["scroll"][0] - state["scroll"][1]) <= 1, state
