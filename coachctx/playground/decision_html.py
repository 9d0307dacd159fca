"""The Decision tab as three blocks of HTML: the headline (how it was routed, five figures, what is
sent and withheld, the audit), routing (the chart and why) and selection (the two lists, the
eleven facts, the services).

Each block is one element on the page. A Streamlit element costs a rerun one to three milliseconds
of the browser's time whatever it holds, and these were about twenty-five (five metrics, their
row, columns, headings, the lines around them); as three they look the same. Every value is escaped
(`inline_html`): a detail can quote the athlete's data.
"""

from __future__ import annotations

import html
from typing import Final

from coachctx.engine.decision import Decision, FragmentDecision
from coachctx.playground.chart import routing_chart_html
from coachctx.playground.fact_rows import fact_rows_html, inline_html
from coachctx.playground.words import (
    COST_LABELS,
    FRAGMENT_TITLES,
    REASON_LABELS,
    SOURCE_WORDS,
    explain_fragment,
    fragment_title,
    model_answer,
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
    ".coachctx-audit.info {background: rgba(28, 131, 225, 0.1); color: rgb(0, 66, 128);}"
    ".coachctx-routing {display: flex; flex-wrap: wrap; gap: 1.5rem;}"
    ".coachctx-routing > div:first-child {flex: 3 1 24rem; min-width: 0;}"
    ".coachctx-routing > div:last-child {flex: 2 1 16rem; min-width: 0; overflow-wrap: anywhere;}"
    ".coachctx-terms {border-collapse: collapse; margin-bottom: 1rem; font-size: 0.9rem;}"
    ".coachctx-terms th, .coachctx-terms td {border: 1px solid rgba(49, 51, 63, 0.1); padding: 0.25rem 0.75rem;}"
    ".coachctx-terms td:last-child, .coachctx-terms th:last-child {text-align: right;}"
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


# --- 1 · Routing ---------------------------------------------------------------------------------


def routing_html(d: Decision) -> str:
    """The routing section: its heading, the chart and its key, and beside it why this route, the
    contenders, what the model said, the terms that matched and the time horizon."""
    i = d.intent
    key = (f'<p class="coachctx-chart-key">Confident only if the top score ≥ threshold {i.threshold:g} (red line) '
           f"and it leads the runner-up by ≥ margin {i.required_margin:g} (a runner-up inside the orange band means "
           "unsure).</p>")
    notes = "".join(f"<p>{inline_html(note)}</p>" for note in routing_notes(d))
    if i.matched_nothing:
        notes += ('<div class="coachctx-audit info">' + html.escape(
            f"No vocabulary matched. Scripts seen in the question: {', '.join(i.scripts) or 'none'}. Add terms in "
            "this language to the vocabulary (Policy editor) to route it by rules.") + "</div>")
    notes += matched_terms_html(d) + f"<p>{inline_html(time_horizon(d))}</p>"
    return (f'<h3>1 · Routing: which intent is this question?</h3><div class="coachctx-routing">'
            f'<div>{routing_chart_html(d)}{key}</div><div>{notes}</div></div>')


def routing_notes(d: Decision) -> list[str]:
    """Why this route, the contenders when it was unsure, and what the model said (Markdown marks
    `inline_html` reads)."""
    i = d.intent
    notes = [f"**Why:** {i.reason}"]
    if i.source != "rules" and len(i.contenders) > 1:
        notes.append(f"**Possible intents** (contenders): {', '.join(i.contenders)} — routing is uncertain, "
                     "so every one of them gets its essential facts, and a fact one of them needs is kept even "
                     "if another excludes it.")
    elif i.source != "rules":
        notes.append(f"**Possible intents** (contenders): only {i.contenders[0]} — no other intent is "
                     "within the margin.")
    if i.model is not None:
        notes.append(f"**Model:** {model_answer(i.model)}")
    return notes


def matched_terms_html(d: Decision) -> str:
    """The terms that matched as a table (intent, term, weight); nothing when none did."""
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{html.escape(term)}</td><td>{float(weight):.2g}</td></tr>"
                   for name, terms in d.intent.matched.items() for term, weight in terms)
    return ('<table class="coachctx-terms"><thead><tr><th>intent</th><th>term</th><th>weight</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>") if rows else ""


def time_horizon(d: Decision) -> str:
    scope = d.scope
    if not scope.effective:
        return "**Time horizon:** none — no scope words in the question, so no scope modifiers apply"
    how = (f"inferred from {', '.join(repr(w) for w in scope.inferred_from)}" if scope.inferred_from
           else "chosen above")
    return f"**Time horizon:** {scope.effective} ({how})"


# --- 2 · Selection -------------------------------------------------------------------------------


def selection_html(d: Decision) -> str:
    """The selection section: its heading and the budget, the two lists, the eleven facts one per
    row (fact_rows.py) and, in a row that opens, the services' state for this athlete."""
    mode = COST_LABELS.get(d.tokens.cost_mode, d.tokens.cost_mode)
    budget = inline_html(f"Tier **{d.tier}**: {d.budget}-token budget for secondary context, "
                         f"{d.tokens.budget_spent} spent · costs counted **{mode}** (`{d.tokens.cost_mode}`). "
                         "Primary context is never cut by the budget.")
    services = "".join(f"<li>{'✓' if s.status == 'ok' else '⚠'} {inline_html(f'**{name}**: {s.status} — {s.detail}')}</li>"
                       for name, s in d.services.items())
    return (f"<h3>2 · Selection: what the model sees, and why</h3><p>{budget}</p>{fragment_lists_html(d)}"
            f"{fact_rows_html(d)}"
            f'<div class="coachctx-facts"><details data-fact="services"><summary>Services for this athlete</summary>'
            f"<div><ul>{services}</ul></div></details></div>")
