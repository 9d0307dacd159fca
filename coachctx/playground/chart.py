"""The routing chart: keyword score per intent against the threshold and the margin, as a plain Vega-Lite spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import altair as alt
import pandas as pd

from coachctx.decision import Decision
from coachctx.playground.words import scores_frame

STANDING_COLORS: Final[Mapping[str, str]] = {"routed": "#1f77b4", "contender": "#ff7f0e", "other": "#b0b0b0"}


def routing_chart(d: Decision) -> alt.LayerChart:
    """Keyword score per intent with the confidence threshold (a red rule) and the margin (a
    shaded band below the top score: a runner-up inside it makes routing unsure)."""
    df = scores_frame(d)
    threshold = float(d.intent.get("threshold", 1.0))
    margin = float(d.intent.get("required_margin", 1.0))
    top = float(df["score"].max()) if not df.empty else 0.0
    x_max = max(top, threshold, 0.5) * 1.25 + 0.25
    x = alt.X("score:Q", title="keyword score", scale=alt.Scale(domain=[0, x_max]), axis=alt.Axis(tickCount=6))
    bars = alt.Chart(df).mark_bar().encode(
        y=alt.Y("intent:N", sort=list(df["intent"]), title=None, axis=alt.Axis(labelOverlap=False)),
        x=x,
        color=alt.Color("standing:N", title="standing",
                        scale=alt.Scale(domain=list(STANDING_COLORS), range=list(STANDING_COLORS.values()))),
        tooltip=["intent", "score", "standing", "matched"],
    )
    layers: list[alt.Chart] = []
    if top > 0:
        band = pd.DataFrame([{"start": max(top - margin, 0.0), "end": top,
                              "label": f"margin {margin:g}: a runner-up in here makes the rules unsure"}])
        layers.append(alt.Chart(band).mark_rect(opacity=0.12, color="#ff7f0e").encode(
            x=alt.X("start:Q", scale=alt.Scale(domain=[0, x_max])), x2="end:Q", tooltip=["label"]))
        # the margin's label sits a line above the threshold's: both can be at the same x (a
        # runner-up at zero with threshold 1 and margin 1)
        layers.append(alt.Chart(band).mark_text(align="left", dx=3, dy=-18, color="#c45f00", baseline="bottom").encode(
            x=alt.X("start:Q", scale=alt.Scale(domain=[0, x_max])), y=alt.value(0),
            text=alt.value(f"margin {margin:g}")))
    rule_df = pd.DataFrame([{"threshold": threshold, "label": f"threshold {threshold:g}"}])
    rule = alt.Chart(rule_df).mark_rule(color="#d62728", strokeDash=[6, 4], size=2).encode(
        x=alt.X("threshold:Q", scale=alt.Scale(domain=[0, x_max])), tooltip=["label"])
    text = alt.Chart(rule_df).mark_text(align="left", dx=4, dy=-4, color="#d62728", baseline="bottom").encode(
        x=alt.X("threshold:Q", scale=alt.Scale(domain=[0, x_max])), text="label:N", y=alt.value(0))
    return alt.LayerChart(layer=[*layers, bars, rule, text]).properties(height=36 * len(df) + 20)
