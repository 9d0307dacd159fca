"""The routing chart: keyword score per intent against the threshold and the margin, drawn as one
block of HTML and the page's CSS.

A Vega-Lite chart cost a rerun about 35 ms of the browser's time (its spec compiled and its view
built again for every question) and the server about 15 ms (its data converted to Arrow); bars of
plain HTML cost what any element costs. Every value is escaped: an intent's matched terms are a
coach's words.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Final

from coachctx.engine.decision import Decision
from coachctx.playground.words import score_rows

STANDING_COLORS: Final[Mapping[str, str]] = {"routed": "#1f77b4", "contender": "#ff7f0e", "other": "#b0b0b0"}
ROW_HEIGHT_REM: Final = 1.6

CSS: Final = (
    ".coachctx-chart {display: grid; grid-template-columns: max-content 1fr; column-gap: 0.75rem; "
    "font-size: 0.8rem; margin: 0.25rem 0 0.5rem 0;}"
    ".coachctx-chart .names {padding-top: 2.4rem;}"
    f".coachctx-chart .names div {{height: {ROW_HEIGHT_REM}rem; line-height: {ROW_HEIGHT_REM}rem; text-align: right;}}"
    ".coachctx-chart .plot {position: relative; padding-top: 2.4rem; margin-right: 2.5rem; "
    "border-left: 1px solid rgba(49, 51, 63, 0.4);}"
    f".coachctx-chart .lane {{position: relative; height: {ROW_HEIGHT_REM}rem;}}"
    ".coachctx-chart .bar {position: absolute; left: 0; top: 0.25rem; bottom: 0.25rem; min-width: 1px;}"
    ".coachctx-chart .value {position: absolute; top: 0; line-height: 1.6rem; padding-left: 0.3rem; "
    "color: rgba(49, 51, 63, 0.8);}"
    ".coachctx-chart .band {position: absolute; top: 2.4rem; bottom: 1.4rem; background: rgba(255, 127, 14, 0.12);}"
    ".coachctx-chart .rule {position: absolute; top: 1.2rem; bottom: 1.4rem; border-left: 2px dashed #d62728;}"
    ".coachctx-chart .note {position: absolute; white-space: nowrap; line-height: 1.2rem;}"
    ".coachctx-chart .ticks {position: relative; height: 1.4rem; border-top: 1px solid rgba(49, 51, 63, 0.4);}"
    ".coachctx-chart-key {font-size: 0.875rem; color: rgba(49, 51, 63, 0.6);}"
    ".coachctx-chart .ticks span {position: absolute; top: 0.1rem; transform: translateX(-50%); "
    "color: rgba(49, 51, 63, 0.7);}"
)


def routing_chart_html(d: Decision) -> str:
    """A bar per intent (blue: routed, orange: a contender, grey: the rest), the confidence
    threshold as a dashed red rule and the margin as a shaded band below the top score: a
    runner-up inside it makes routing unsure. The threshold's label sits a line below the
    margin's, so both read when they fall at the same place."""
    rows = score_rows(d)
    threshold, margin = d.intent.threshold, d.intent.required_margin
    top = max((float(r["score"]) for r in rows), default=0.0)
    extent = max(top, threshold, 0.5) * 1.25 + 0.25  # room past the top score and the threshold for labels

    def at(x: float) -> str:
        return f"{100 * min(max(x, 0.0), extent) / extent:.2f}%"

    names = "".join(f"<div>{html.escape(str(r['intent']))}</div>" for r in rows)
    lanes = "".join(
        f'<div class="lane" title="{html.escape(_tooltip(r), quote=True)}">'
        f'<div class="bar" style="width: {at(float(r["score"]))}; '
        f'background: {STANDING_COLORS.get(str(r["standing"]), "#b0b0b0")}"></div>'
        f'<span class="value" style="left: {at(float(r["score"]))}">{float(r["score"]):g}</span></div>'
        for r in rows)
    marks = []
    if top > 0:
        start = max(top - margin, 0.0)
        label = f"margin {margin:g}: a runner-up in here makes the rules unsure"
        marks += [f'<div class="band" style="left: {at(start)}; width: calc({at(top)} - {at(start)})" '
                  f'title="{html.escape(label)}"></div>',
                  f'<div class="note" style="top: 0; left: {at(start)}; color: #c45f00">margin {margin:g}</div>']
    marks += [f'<div class="rule" style="left: {at(threshold)}" title="threshold {threshold:g}"></div>',
              f'<div class="note" style="top: 1.2rem; left: {at(threshold)}; color: #d62728">&nbsp;threshold '
              f'{threshold:g}</div>']
    ticks = "".join(f'<span style="left: {at(t)}">{t:g}</span>' for t in _ticks(extent))
    return (f'<div class="coachctx-chart" role="img" aria-label="{html.escape(_summary(rows, threshold, margin))}">'
            f'<div class="names">{names}<div></div></div>'
            f'<div class="plot">{"".join(marks)}{lanes}<div class="ticks">{ticks}</div></div></div>')


def _tooltip(row: Mapping[str, str | float]) -> str:
    return f"{row['intent']}: score {float(row['score']):g} ({row['standing']}); matched {row['matched']}"


def _summary(rows: list[dict[str, str | float]], threshold: float, margin: float) -> str:
    """The chart in words, for a screen reader."""
    scores = ", ".join(f"{r['intent']} {float(r['score']):g}" for r in rows)
    return f"Keyword score per intent: {scores}; threshold {threshold:g}, margin {margin:g}"


def _ticks(extent: float) -> list[float]:
    """Round values from 0 to `extent`, at most about six of them."""
    raw = extent / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [round(i * step, 10) for i in range(int(extent / step + 1e-9) + 1)]
