"""The Decision tab's fixed parts as blocks of HTML: the headline (how it was routed, five figures,
what is sent and withheld, the audit) and the two lists of facts sent and withheld.

Each block is one element on the page. A Streamlit element costs a rerun about a millisecond of
the browser's time whatever it holds, and these were fifteen (five metrics, their row, the lines
around them, two columns of lists); as two they look the same. Every value is escaped
(`inline_html`): a detail can quote the athlete's data.
"""

from __future__ import annotations

import html
from typing import Final

from coachctx.engine.decision import Decision, FragmentDecision
from coachctx.playground.fact_rows import inline_html
from coachctx.playground.words import (
    FRAGMENT_TITLES,
    REASON_LABELS,
    SOURCE_WORDS,
    explain_fragment,
    fragment_title,
    routing_headline,
)

CSS: Final = (
    ".coachctx-figures {display: flex; flex-wrap: wrap; gap: 1rem; margin: 0.5rem 0 1rem 0;}"
    ".coachctx-figures > div {flex: 1 1 9rem; min-width: 0;}"
    ".coachctx-figures .label {font-size: 0.875rem; color: rgb(49, 51, 63);}"
    ".coachctx-figures .help {display: inline-block; margin-left: 0.3rem; width: 1rem; height: 1rem; "
    "line-height: 0.9rem; text-align: center; border: 1px solid rgba(49, 51, 63, 0.6); border-radius: 50%; "
    "font-size: 0.7rem; color: rgba(49, 51, 63, 0.6); cursor: help;}"
    ".coachctx-figures .value {font-size: 2.25rem; line-height: 1.4; overflow-wrap: anywhere;}"
    ".coachctx-figures .delta {display: inline-block; font-size: 0.8rem; padding: 0.1rem 0.4rem; "
    "border-radius: 0.5rem; background: rgba(49, 51, 63, 0.08); color: rgba(49, 51, 63, 0.7);}"
    ".coachctx-headline .sent, .coachctx-lists .sent {color: rgb(33, 195, 84);}"
    ".coachctx-headline .held, .coachctx-lists .held {color: rgb(255, 43, 43);}"
    ".coachctx-audit {padding: 1rem; border-radius: 0.5rem; margin: 0.75rem 0;}"
    ".coachctx-audit.ok {background: rgba(33, 195, 84, 0.1); color: rgb(23, 114, 51);}"
    ".coachctx-audit.warn {background: rgba(255, 189, 69, 0.2); color: rgb(146, 108, 5);}"
    ".coachctx-lists {display: flex; gap: 1.5rem; flex-wrap: wrap;}"
    ".coachctx-lists > div {flex: 1 1 20rem; min-width: 0;}"
    ".coachctx-lists ul {padding-left: 1.25rem;} .coachctx-lists li {margin-bottom: 0.25rem;}"
)

FIGURE_HELP: Final = {
    "Decided by": "Routing source `{source}`: keywords (`rules`) were decisive, the model chose (`model`), or the "
                  "rules were unsure and no model answered (`fallback`: a best guess from the keyword scores).",
    "Facts sent": "Fragments: the eleven facts the services can supply about an athlete.",
    "Coverage": "Share of the requested facts the services supplied.",
    "Confidence": "Coverage × routing factor: 1.0 keywords, 0.85 model, 0.6 best guess, 0.4 nothing matched.",
    "Prompt tokens": "A prompt with everything in it (the naive prompt: the whole bundle as JSON) would be "
                     "{naive} tokens.",
}


def headline_html(d: Decision) -> str:
    """How it was routed, the five figures (each with its explanation on hover), what is sent and
    what is withheld with the reason, and the audit's verdict."""
    i = d.intent
    figures = [
        ("Decided by", SOURCE_WORDS.get(i.source, i.source), ""),
        ("Facts sent", f"{len(d.selected)} of {len(d.fragments)}", ""),
        ("Coverage", f"{d.coverage:.0%}", ""),
        ("Confidence", f"{d.confidence:.0%}", ""),
        ("Prompt tokens", str(d.tokens.prompt), f"{d.tokens.saved_pct:g}% smaller"),
    ]
    boxes = "".join(_figure(label, value, delta, FIGURE_HELP[label].format(source=i.source, naive=d.tokens.naive))
                    for label, value, delta in figures)
    sent = [FRAGMENT_TITLES.get(f.name, f.name) for f in d.fragments if f.status == "selected"]
    held = [f"{FRAGMENT_TITLES.get(f.name, f.name)} ({REASON_LABELS.get(f.reasons[0].code, f.reasons[0].code)})"
            if f.reasons else FRAGMENT_TITLES.get(f.name, f.name) for f in d.fragments if f.status == "withheld"]
    audit = ("".join(f'<div class="coachctx-audit warn" role="alert">⚠ {inline_html(f"**Audit warning:** {w}")}</div>'
                     for w in d.warnings) if d.warnings else
             '<div class="coachctx-audit ok">✓ Audit: no warnings for this decision.</div>')
    return (f'<div class="coachctx-headline"><p>{inline_html(routing_headline(d))}</p>'
            f'<div class="coachctx-figures">{boxes}</div>'
            f'<p><strong class="sent">Sent:</strong> {html.escape(", ".join(sent) or "nothing")}<br>'
            f'<strong class="held">Withheld:</strong> {html.escape(", ".join(held) or "nothing")}</p>{audit}</div>')


def _figure(label: str, value: str, delta: str, help_text: str) -> str:
    plain = help_text.replace("`", "")
    tip = f'<span class="help" title="{html.escape(plain)}" aria-label="{html.escape(plain)}">?</span>'
    below = f'<span class="delta">{html.escape(delta)}</span>' if delta else ""
    return (f'<div><div class="label">{html.escape(label)}{tip}</div>'
            f'<div class="value">{html.escape(value)}</div>{below}</div>')


def fragment_lists_html(d: Decision) -> str:
    """The facts sent, in prompt order, and the facts withheld, side by side, each with why."""
    sent = [f for f in d.fragments if f.status == "selected"]
    withheld = [f for f in d.fragments if f.status == "withheld"]
    return (f'<div class="coachctx-lists"><div class="coachctx-sent"><p><strong class="sent">Sent to the model '
            f'({len(sent)})</strong>, in prompt order</p>{_items(sent, d)}</div>'
            f'<div class="coachctx-withheld"><p><strong class="held">Withheld ({len(withheld)})</strong></p>'
            f'{_items(withheld, d)}</div></div>')


def _items(fragments: list[FragmentDecision], d: Decision) -> str:
    if not fragments:
        return "<p><em>nothing</em></p>"
    return "<ul>" + "".join(f"<li>{inline_html(f'**{fragment_title(f.name)}** — {explain_fragment(f, d)}')}</li>"
                            for f in fragments) + "</ul>"
