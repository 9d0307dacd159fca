"""The playground in a real browser: `streamlit run app.py` on a free 127.0.0.1 port, driven by
headless Chromium through Playwright.

Debian's /usr/bin/chromium is used (`playwright install` cannot download a browser here). When
the browser cannot start the test is skipped on a developer machine, but fails under CI=true:
a CI run that silently skipped the only real-browser check would prove nothing.

Set COACHCTX_SCREENSHOT=docs/playground.png to refresh the screenshot in the docs, and
COACHCTX_SCREENSHOTS=docs to refresh the first screen at each window width
(docs/playground-1024.png, -1366.png, -1920.png).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coachctx import playground as pg
from coachctx.engine.policy import parse_policy
from coachctx.model import SETTING_KEYS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
CHROMIUM = os.environ.get("COACHCTX_CHROMIUM", "/usr/bin/chromium")  # Debian's package
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
START_TIMEOUT_S = 60
UI_TIMEOUT_MS = 60_000  # a loaded CI machine (or a shared one) can take a while per rerun


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited with {proc.returncode} before it was healthy:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"streamlit was not healthy after {START_TIMEOUT_S} s:\n{log.read_text()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    # no model: the page must work fully without one (and must not reach any network); a policy
    # store of its own, never the user's ~/.coachctx one
    env = {k: v for k, v in os.environ.items() if k not in SETTING_KEYS}
    env["COACHCTX_STORE"] = f"sqlite:///{log.parent / 'store.sqlite'}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def cannot_start(why: str) -> None:
    message = f"headless Chromium cannot start: {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (CI=true: the browser test must run, so this is a failure)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        cannot_start(f"playwright is not installed ({e})")
    if not Path(CHROMIUM).exists():
        cannot_start(f"{CHROMIUM} is missing (apt-get install chromium)")
    manager = sync_playwright().start()
    try:
        try:
            chromium = manager.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as e:  # playwright raises its own Error type for every launch failure
            cannot_start(f"{type(e).__name__}: {e}")
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        manager.stop()


def wait_for_script(page: Any) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=UI_TIMEOUT_MS)


def test_pain_question_selects_both_readiness_fragments_and_the_policy_downloads(
        browser: Any, server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 2650}, accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(server)
        wait_for_script(page)
        sent = page.locator(".st-key-sent_fragments")
        withheld = page.locator(".st-key-withheld_fragments")
        question = page.get_by_label("The athlete's question")

        question.fill("")
        question.press_sequentially("How much protein per day?")
        question.press("Enter")
        expect(withheld).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)

        question.fill("")
        question.press_sequentially(pg.PAIN_QUESTION)
        question.press("Enter")
        expect(sent).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)
        expect(sent).to_contain_text("readiness_training")
        expect(withheld).not_to_contain_text("readiness_training")
        expect(withheld).not_to_contain_text("readiness_injury")
        expect(page.get_by_test_id("stException")).to_have_count(0)
        wait_for_script(page)
        assert "q=Should+I+train+through+this+pain" in page.url or "q=Should%20I%20train" in page.url

        question.blur()
        page.wait_for_timeout(1000)  # let the chart finish drawing
        page.screenshot(path=str(tmp_path / "playground.png"))
        target = os.environ.get("COACHCTX_SCREENSHOT")
        if target:
            page.screenshot(path=str(ROOT / target))

        open_tab(page, "Policy editor")
        with page.expect_download(timeout=UI_TIMEOUT_MS) as info:
            page.get_by_role("button", name="Download policy YAML").click()
        download = info.value
        assert download.suggested_filename.endswith(".yaml")
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        text = path.read_text(encoding="utf-8")
        policy = parse_policy(text, str(path))
        assert f"digest {policy.digest}" in text.splitlines()[0]
        assert "# ... and lead the runner-up by at least this much" in text  # the file's comments are kept
        assert "draft=" in page.url
    finally:
        context.close()


def test_save_a_version_and_run_the_impact_analysis(browser: Any, server: str) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    try:
        page.goto(server)
        wait_for_script(page)
        save_version(page, "baseline from the browser")
        expect(page.get_by_text("Saved version 1")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("The decision uses stored version 1 (draft)")).to_be_visible()

        open_tab(page, "Impact")
        page.get_by_role("button", name="Run impact analysis").click()
        expect(page.get_by_text("Done: 477 of 479 rows decided, 2 skipped")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("No question decides differently under the candidate.")).to_be_visible()
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()


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


def open_tab(page: Any, name: str) -> None:
    """Click a tab and wait until its run is over: only the open tab is built, on that run."""
    from playwright.sync_api import expect

    tab = page.get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=UI_TIMEOUT_MS)
    page.wait_for_timeout(500)  # the run the click asked for has started
    wait_for_script(page)


def save_version(page: Any, message: str) -> None:
    """On the Versions tab: a name, a message, Save (with the label the page proposes)."""
    open_tab(page, "Versions")
    for label, value in (("Your name", "ana"), ("What changed and why", message)):
        field = page.get_by_label(label)
        field.fill(value)
        field.press("Enter")
        wait_for_script(page)
    page.get_by_role("button", name="Save as a new version").click()


WIDTHS = {1024: 768, 1366: 768, 1920: 1080}
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


@pytest.mark.parametrize("width", list(WIDTHS))
def test_at_each_width_labels_are_readable_a_draft_survives_a_reload_and_back_restores_the_question(
        browser: Any, server: str, width: int) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": WIDTHS[width]})
    page = context.new_page()
    elsewhere: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(server) or request.url.startswith("data:")
            else elsewhere.append(request.url))
    dialogs: list[str] = []

    def confirm(dialog: Any) -> None:
        dialogs.append(dialog.type)
        dialog.accept()

    page.on("dialog", confirm)
    try:
        page.goto(server)
        wait_for_script(page)
        question = page.get_by_label("The athlete's question")
        expect(question).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
        # the decision summary is on the first screen, without scrolling
        summary = page.get_by_text("Withheld:", exact=False).first
        expect(summary).to_be_visible(timeout=UI_TIMEOUT_MS)
        box = summary.bounding_box()
        assert box is not None and box["y"] + box["height"] <= WIDTHS[width], box
        page.wait_for_timeout(500)
        target = os.environ.get("COACHCTX_SCREENSHOTS")
        if target:
            page.screenshot(path=str(ROOT / target / f"playground-{width}.png"))
        assert clipped_labels(page) == []

        # Back restores the previous question
        question.fill("How much protein per day?")
        question.press("Enter")
        expect(page.locator(".st-key-withheld_fragments")).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        assert "protein" in page.url
        page.go_back()
        expect(question).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
        expect(page.locator(".st-key-sent_fragments")).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)
        assert page.url.startswith(server), "Back must not leave the app"
        page.go_forward()
        expect(question).to_have_value("How much protein per day?", timeout=UI_TIMEOUT_MS)
        page.go_back()
        expect(question).to_have_value(pg.PAIN_QUESTION, timeout=UI_TIMEOUT_MS)
        wait_for_script(page)

        # the open tab is in the address and in history: Back returns to the tab before
        open_tab(page, "Versions")
        page.wait_for_function("() => window.location.search.includes('tab=versions')", timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        page.go_back()
        expect(page.get_by_role("tab", name="Decision")).to_have_attribute("aria-selected", "true",
                                                                            timeout=UI_TIMEOUT_MS)
        wait_for_script(page)

        # long text sits in expandable rows: opened, a fact's reason is read in full inside the window
        row = page.locator(".st-key-fact_rows [data-testid='stExpander']").first
        row.locator("summary").click()
        why = row.get_by_text("Why:", exact=False)
        expect(why).to_be_visible(timeout=UI_TIMEOUT_MS)
        box = why.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box

        # a draft edit survives a reload (the browser asks first: the edit is not a saved version)
        for tab in ("Policy editor", "Versions", "Impact", "Reproduce a trace"):
            open_tab(page, tab)
            assert clipped_labels(page) == [], tab
        open_tab(page, "Policy editor")
        assert_line_numbers_follow_the_text(page)
        margin = page.get_by_role("spinbutton", name="Margin over the runner-up")
        margin.fill("0.5")
        margin.press("Enter")
        wait_for_script(page)
        expect(page.get_by_label("Policy YAML (the draft)")).to_contain_text("margin: 0.5", timeout=UI_TIMEOUT_MS)
        page.wait_for_function("() => window.location.search.includes('draft=')", timeout=UI_TIMEOUT_MS)
        page.reload()
        wait_for_script(page)
        assert dialogs == ["beforeunload"]
        open_tab(page, "Policy editor")
        expect(page.get_by_label("Policy YAML (the draft)")).to_contain_text("margin: 0.5", timeout=UI_TIMEOUT_MS)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        assert elsewhere == [], "no request may leave the machine"
    finally:
        context.close()


def test_a_coach_asks_sees_why_changes_a_rule_saves_reloads_reverts_and_exports(
        browser: Any, server: str, tmp_path: Path) -> None:
    """The issue's "done when", on a 1366×768 laptop, with nothing but the page."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        page.goto(server)
        wait_for_script(page)
        question = page.get_by_label("The athlete's question")
        question.fill("How hard should tonight's interval session be?")
        question.press("Enter")
        page.wait_for_function("() => window.location.search.includes('tonight')", timeout=UI_TIMEOUT_MS)
        sent = page.locator(".st-key-sent_fragments")
        expect(sent).to_contain_text("readiness_training", timeout=UI_TIMEOUT_MS)
        expect(page.locator(".st-key-withheld_fragments")).to_contain_text("readiness_recovery")
        wait_for_script(page)

        # change a rule in the form: training no longer withholds recovery readiness; the editor says that
        # alone sends nothing, and one click adds it as an optional fact
        open_tab(page, "Policy editor")
        page.get_by_role("button", name="Remove Recovery and sleep today").click(timeout=UI_TIMEOUT_MS)
        offer = page.get_by_role("button", name=re.compile(r"^Add .* to training's secondary list$"))
        expect(offer).to_be_visible(timeout=UI_TIMEOUT_MS)
        offer.click()
        expect(page.get_by_text("Done: add", exact=False)).to_be_visible(timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        open_tab(page, "Decision")
        expect(sent).to_contain_text("readiness_recovery", timeout=UI_TIMEOUT_MS)  # its effect

        # save it as a version, then reload: nothing is lost
        save_version(page, "training sees recovery")
        expect(page.get_by_text("Saved version", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        page.reload()
        wait_for_script(page)
        expect(page.get_by_role("tab", name="Versions")).to_have_attribute("aria-selected", "true",
                                                                            timeout=UI_TIMEOUT_MS)
        expect(question).to_have_value("How hard should tonight's interval session be?")
        open_tab(page, "Decision")
        expect(sent).to_contain_text("readiness_recovery", timeout=UI_TIMEOUT_MS)

        # a second change, saved too: the label moves on, and a revert moves it back
        open_tab(page, "Policy editor")
        margin = page.get_by_role("spinbutton", name="Margin over the runner-up")
        margin.fill("0.5")
        margin.press("Enter")
        expect(page.get_by_label("Policy YAML (the draft)")).to_contain_text("margin: 0.5", timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        save_version(page, "a smaller margin")
        expect(page.get_by_text("Saved version", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        revert = page.get_by_role("button", name=re.compile(r"^Revert \S+ to version \d+$"))
        name = revert.inner_text()
        revert.click()
        target = name.rsplit(" ", 1)[-1]
        expect(page.get_by_text(f"now points at version {target}", exact=False).first).to_be_visible(
            timeout=UI_TIMEOUT_MS)
        expect(page.get_by_test_id("stException")).to_have_count(0)

        # export the YAML: the checked-in file's comments are still there
        open_tab(page, "Policy editor")
        with page.expect_download(timeout=UI_TIMEOUT_MS) as info:
            page.get_by_role("button", name="Download policy YAML").click()
        path = tmp_path / info.value.suggested_filename
        info.value.save_as(path)
        text = path.read_text(encoding="utf-8")
        assert "# ... and lead the runner-up by at least this much" in text
        assert "readiness_recovery" in parse_policy(text, str(path)).intents["training"].secondary
    finally:
        context.close()


CJK_QUESTION = "足首が痛いのですが、走ってもいいですか？"


def test_a_japanese_question_is_readable(browser: Any, server: str) -> None:
    """A CJK question needs a CJK font on the machine (Debian: fonts-noto-cjk); the page routes it
    and shows it. COACHCTX_SCREENSHOTS=docs writes docs/playground-cjk.png."""
    from playwright.sync_api import expect

    fonts = subprocess.run(["fc-list", ":lang=ja", "family"], capture_output=True, text=True, check=False).stdout
    if not fonts.strip():
        pytest.skip("no Japanese font installed (apt-get install fonts-noto-cjk)")
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        page.goto(server)
        wait_for_script(page)
        question = page.get_by_label("The athlete's question")
        question.fill(CJK_QUESTION)
        question.press("Enter")
        expect(page.locator(".st-key-sent_fragments")).to_contain_text("readiness_injury", timeout=UI_TIMEOUT_MS)
        wait_for_script(page)
        expect(question).to_have_value(CJK_QUESTION)
        question.blur()
        page.wait_for_timeout(500)
        target = os.environ.get("COACHCTX_SCREENSHOTS")
        if target:
            page.screenshot(path=str(ROOT / target / "playground-cjk.png"))
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()
