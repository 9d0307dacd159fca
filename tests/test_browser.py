"""The playground in a real browser: `streamlit run app.py` on a free 127.0.0.1 port, driven by
headless Chromium through Playwright.

Debian's /usr/bin/chromium is used (`playwright install` cannot download a browser here). When
the browser cannot start the test is skipped on a developer machine, but fails under CI=true:
a CI run that silently skipped the only real-browser check would prove nothing.

Set COACHCTX_SCREENSHOT=docs/playground.png to refresh the screenshot in the docs.
"""

from __future__ import annotations

import os
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
from coachctx.policy import parse_policy

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
CHROMIUM = os.environ.get("COACHCTX_CHROMIUM", "/usr/bin/chromium")  # Debian's package
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
START_TIMEOUT_S = 60
UI_TIMEOUT_MS = 30_000


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
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT")}
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

        page.get_by_role("tab", name="Policy editor").click()
        with page.expect_download(timeout=UI_TIMEOUT_MS) as info:
            page.get_by_role("button", name="Download policy YAML").click()
        download = info.value
        assert download.suggested_filename.endswith(".yaml")
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        policy = parse_policy(path.read_text(encoding="utf-8"), str(path))
        assert f"policy={policy.digest}" in page.url
    finally:
        context.close()


def test_save_a_version_and_run_the_impact_analysis(browser: Any, server: str) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    try:
        page.goto(server)
        wait_for_script(page)
        page.get_by_role("tab", name="Versions").click()
        for label, value in (("Your name", "ana"), ("What changed and why", "baseline from the browser")):
            field = page.get_by_label(label)
            field.fill(value)
            field.press("Enter")
            wait_for_script(page)
        page.get_by_role("button", name="Save as a new version").click()
        expect(page.get_by_text("Saved version 1")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("The decision uses stored version 1 (draft)")).to_be_visible()

        page.get_by_role("tab", name="Impact").click()
        page.get_by_role("button", name="Run impact analysis").click()
        expect(page.get_by_text("Done: 477 questions")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("No question decides differently under the candidate.")).to_be_visible()
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()
