"""A playground rerun as a coach meets it: `streamlit run app.py` on a free 127.0.0.1 port, headless
Chromium (Debian's /usr/bin/chromium through Playwright), a question typed into the box, and the time
from the Enter key to the end of the rerun as the page meets it: the server's script-finished message
arriving, or the page drawing its script state back to `notRunning` when that comes later, read in the
page's own clock.

    python -m bench.server_rerun            print the figures for the dev questions
    python -m bench.server_rerun --rounds 3 each question typed three times (more samples, one server)

AppTest (`bench.measure.measure_app`) times the script in process; this adds the server, the
websocket round trip and the browser's rendering of the answer. Nothing leaves the machine: no model
is configured and the server runs with its own throwaway policy store.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.playground_server import CHROMIUM, CHROMIUM_ARGS, running_server, wait_healthy
from bench.speed import AppResult
from bench.workload import dev_rows

UI_TIMEOUT_MS: Final = 60_000

# The end of a rerun is the server's `script_finished` message (ForwardMsg field 6, value 0:
# FINISHED_SUCCESSFULLY, or 3: FINISHED_FRAGMENT_RUN_SUCCESSFULLY when only a fragment reran) reaching the page, read off the websocket before the app handles it. The
# page's script-state attribute alone misses a quick rerun: its "running" and "notRunning" updates
# can be drawn in one frame, so the attribute never changes. Installed before the page loads.
_WATCH_SOCKET: Final = """(() => {
  window.__finishes = [];
  const scriptFinished = (buffer) => {  // the value of field 6 of a ForwardMsg, or null
    const bytes = new Uint8Array(buffer);
    let i = 0;
    const varint = () => {
      let value = 0, shift = 0, byte;
      do { byte = bytes[i++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80 && i < bytes.length);
      return value;
    };
    while (i < bytes.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag % 8;
      if (field === 6 && wire === 0) return varint();
      if (wire === 0) varint();
      else if (wire === 2) { const length = varint(); i += length; }  // not `i += varint()`: i is read first
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return null;
    }
    return null;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        const status = event.data instanceof ArrayBuffer ? scriptFinished(event.data) : null;
        if (status === 0 || status === 3) {  // the whole script, or a fragment of it, finished
          window.__finishes.push(performance.now());
        }
      });
    }
  };
})();"""
# Records every change of the app's script state with the page's clock: when the page draws
# "notRunning" after the finish message arrived, the rerun ends there instead.
_WATCH_STATE: Final = """() => {
  window.__states = [];
  if (window.__watching) return;
  window.__watching = true;
  const app = document.querySelector("[data-testid='stApp']");
  new MutationObserver(() => window.__states.push([performance.now(), app.getAttribute('data-test-script-state')]))
    .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
_MARK: Final = "() => { window.__pressed = performance.now(); }"
_FINISHED: Final = """() => window.__finishes.some((t) => t > window.__pressed)
  && document.querySelector("[data-testid='stApp']").getAttribute('data-test-script-state') === 'notRunning'"""
_ELAPSED_MS: Final = """() => {
  const end = window.__finishes[window.__finishes.length - 1];
  const drawn = window.__states.filter(([t, s]) => t >= end && s === 'notRunning');
  return (drawn.length ? drawn[drawn.length - 1][0] : end) - window.__pressed;
}"""


def _type_and_time(page: Any, question: str) -> float:
    """Seconds from Enter to the end of the rerun it starts (the clock starts just before the key
    press is sent, so Playwright's own round trip counts against us, not for us)."""
    box = page.get_by_label("The athlete's question")
    box.fill(question)
    page.evaluate(_WATCH_STATE)
    page.evaluate(_MARK)
    box.press("Enter")
    page.wait_for_function(_FINISHED, timeout=UI_TIMEOUT_MS)
    return float(page.evaluate(_ELAPSED_MS)) / 1000


def _drive(url: str, questions: Sequence[str]) -> tuple[float, list[float]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as manager:
        browser = manager.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.add_init_script(_WATCH_SOCKET)
            started = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                                   timeout=UI_TIMEOUT_MS)
            first = time.perf_counter() - started
            _type_and_time(page, "warm-up question")  # the first rerun compiles what the first run did not
            return first, [_type_and_time(page, q) for q in questions]
        finally:
            browser.close()


def measure_server_rerun(questions: Sequence[str]) -> AppResult:
    """The first page load, then one rerun per question typed in, against a real server."""
    try:
        import playwright  # noqa: F401
    except ImportError as e:
        return AppResult(False, f"playwright is not installed ({e}): not measured")
    if not Path(CHROMIUM).exists():
        return AppResult(False, f"{CHROMIUM} is missing (apt-get install chromium): not measured")
    with tempfile.TemporaryDirectory(prefix="coachctx-bench-server-") as workdir, \
            running_server(Path(workdir)) as (url, proc):
        problem = wait_healthy(url, proc)
        if problem is not None:
            return AppResult(False, f"{problem}: not measured")
        try:
            first, reruns = _drive(url, questions)
        except Exception as e:  # a browser that cannot start is a figure not measured, not a crash
            return AppResult(False, f"the browser run failed ({type(e).__name__}: {str(e).splitlines()[0]})")
    return AppResult(True, "`streamlit run` on 127.0.0.1 and headless Chromium, Enter to the end of the rerun",
                     first, reruns, questions[0])


def percentile(values: Sequence[float], share: float) -> float:
    """The value `share` of the way up the sorted values (nearest rank): p90 is `percentile(v, 0.9)`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_rerun", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1,
                        help="type the ten dev questions this many times (a repeated question is a cached decision)")
    args = parser.parse_args(argv)
    result = measure_server_rerun([r.q for r in dev_rows()[:10]] * max(1, args.rounds))
    if not result.measured:
        print(result.note)
        return 1
    ms = [s * 1000 for s in result.reruns_s]
    print(f"{result.note}\nfirst page load {result.first_run_s:.2f} s; rerun median {statistics.median(ms):.0f} ms, "
          f"p90 {percentile(ms, 0.9):.0f} ms, max {max(ms):.0f} ms over {len(ms)} reruns "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
