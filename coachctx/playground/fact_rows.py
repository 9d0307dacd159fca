"""The Decision tab's eleven fact rows as one piece of HTML: a `<details>` row per fact, with the
title and the text `fragment_row` writes, so the page draws one element for them instead of eleven
expanders (each element costs every rerun its time in the browser). A row opens without a rerun.

`KEEP_OPEN` is the page's script that keeps a row open across reruns: the HTML is new when the
question changes, and a new row would start closed.
"""

from __future__ import annotations

import html
import re
from typing import Final

from coachctx.engine.decision import Decision
from coachctx.playground.words import fragment_row

INTRO: Final = ("**All eleven facts**, one per row — open a row for why in full, the line sent, both costs and the "
                "technical names")

# Looks like Streamlit's expanders (a bordered box per row); the page's CSS.
CSS: Final = (".coachctx-facts details {border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem; "
              "margin-bottom: 0.5rem;}"
              ".coachctx-facts summary {padding: 0.6rem 1rem; cursor: pointer; font-size: 0.875rem;}"
              ".coachctx-facts details > div {padding: 0 1rem 0.75rem 1rem;}"
              ".coachctx-facts p {margin-bottom: 0.75rem;}"
              ".coachctx-facts code {font-size: 0.75em; padding: 0.1em 0.25em; border-radius: 0.25rem; "
              "background: rgba(49, 51, 63, 0.05); color: #09ab3b;}")

KEEP_OPEN: Final = """<script>
if (!window.coachctxOpenFacts) {
  window.coachctxOpenFacts = new Set();
  document.addEventListener("toggle", (event) => {
    const fact = event.target.dataset && event.target.dataset.fact;
    if (!fact) return;
    if (event.target.open) window.coachctxOpenFacts.add(fact); else window.coachctxOpenFacts.delete(fact);
  }, true);
  new MutationObserver(() => {
    for (const row of document.querySelectorAll("details[data-fact]:not([data-seen])")) {
      row.dataset.seen = "1";
      if (window.coachctxOpenFacts.has(row.dataset.fact)) row.open = true;
    }
  }).observe(document.body, {childList: true, subtree: true});
}
</script>"""


def fact_rows_html(d: Decision) -> str:
    """The intro line and a row per fact, open on a click."""
    rows = []
    for f in d.fragments:
        title, body = fragment_row(f, d)
        rows.append(f'<details data-fact="{html.escape(f.name)}"><summary>{inline_html(title)}</summary>'
                    f"<div>{inline_html(body)}</div></details>")
    return f'<div class="coachctx-facts"><p>{inline_html(INTRO)}</p>{"".join(rows)}</div>'


def inline_html(markdown: str) -> str:
    """The few Markdown marks `fragment_row` uses (bold, code, a hard line break) as HTML; every
    other character is escaped, so a fact's data shows as written."""
    text = html.escape(markdown, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return text.replace("  \n", "<br>")
