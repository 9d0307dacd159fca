"""The routing chart: keyword score per intent against the threshold and the margin, as a plain
Vega-Lite spec (a dict: no Altair objects to build and validate on every rerun).

Everything a question changes is in the spec's named `datasets`; the rest of the spec depends on
the policy alone. Streamlit sends named datasets apart from the spec, and the browser, seeing the
same spec again, swaps the data in the chart it has instead of building a new chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from coachctx.engine.decision import Decision
from coachctx.playground.words import score_rows

STANDING_COLORS: Final[Mapping[str, str]] = {"routed": "#1f77b4", "contender": "#ff7f0e", "other": "#b0b0b0"}


def routing_chart(d: Decision) -> dict[str, Any]:
    """Keyword score per intent with the confidence threshold (a red rule) and the margin (a
    shaded band below the top score: a runner-up inside it makes routing unsure)."""
    rows = score_rows(d)
    threshold = d.intent.threshold
    margin = d.intent.required_margin
    top = max((float(r["score"]) for r in rows), default=0.0)
    band = [{"start": max(top - margin, 0.0), "end": top, "short": f"margin {margin:g}",
             "label": f"margin {margin:g}: a runner-up in here makes the rules unsure"}] if top > 0 else []
    datasets = {"scores": rows, "band": band,
                "rule": [{"threshold": threshold, "label": f"threshold {threshold:g}"}],
                # the x axis runs from 0 to here: room past the top score and the threshold for the labels
                "extent": [{"x": 0.0}, {"x": max(top, threshold, 0.5) * 1.25 + 0.25}]}
    return {"height": 36 * len(rows) + 20, "datasets": datasets, "layer": _layers([str(r["intent"]) for r in rows])}


def _layers(intents: list[str]) -> list[dict[str, Any]]:
    """The chart's layers, which read their values from the named datasets."""
    scale = {"nice": False, "zero": True}

    def x(field: str) -> dict[str, Any]:
        return {"field": field, "type": "quantitative", "scale": scale}

    bars = {
        "data": {"name": "scores"}, "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "intent", "type": "nominal", "sort": intents, "title": None,
                  "axis": {"labelOverlap": False}},
            "x": {**x("score"), "title": "keyword score", "axis": {"tickCount": 6}},
            "color": {"field": "standing", "type": "nominal", "title": "standing",
                      "scale": {"domain": list(STANDING_COLORS), "range": list(STANDING_COLORS.values())}},
            "tooltip": [{"field": f} for f in ("intent", "score", "standing", "matched")],
        },
    }
    return [
        # an invisible point at each end of the axis: the scale spans it
        {"data": {"name": "extent"}, "mark": {"type": "point", "opacity": 0}, "encoding": {"x": x("x")}},
        {"data": {"name": "band"}, "mark": {"type": "rect", "opacity": 0.12, "color": "#ff7f0e"},
         "encoding": {"x": x("start"), "x2": {"field": "end"}, "tooltip": [{"field": "label"}]}},
        # the margin's label sits a line above the threshold's: both can be at the same x (a
        # runner-up at zero with threshold 1 and margin 1)
        {"data": {"name": "band"}, "mark": {"type": "text", "align": "left", "dx": 3, "dy": -18, "color": "#c45f00",
                                            "baseline": "bottom"},
         "encoding": {"x": x("start"), "y": {"value": 0}, "text": {"field": "short", "type": "nominal"}}},
        bars,
        {"data": {"name": "rule"}, "mark": {"type": "rule", "color": "#d62728", "strokeDash": [6, 4], "size": 2},
         "encoding": {"x": x("threshold"), "tooltip": [{"field": "label"}]}},
        {"data": {"name": "rule"}, "mark": {"type": "text", "align": "left", "dx": 4, "dy": -4, "color": "#d62728",
                                            "baseline": "bottom"},
         "encoding": {"x": x("threshold"), "text": {"field": "label", "type": "nominal"}, "y": {"value": 0}}},
    ]
